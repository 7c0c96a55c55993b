"""Writing a repro script and the npz beside it: the input exactly as the run made it, what the output is held to,
the call as library code (conformance.report.repro_source), the comparison in float64 under the run's tolerance
(templates/repro.py.j2).  The script imports torch, numpy and the libraries its call names, never the harness."""

from __future__ import annotations

import ast
import inspect
import os
import sys
import textwrap
from pathlib import Path

import numpy as np

from conformance.devices.calls import sample_params
from conformance.devices.facts import unrecorded
from conformance.report.repro import Failure, from_case, from_run
from conformance.report.repro_names import template
from conformance.report.repro_source import render
from conformance.report.repro_trace import public_name
from conformance.spec.recipes import apply_layout, materialize, peak
from conformance.store.printable import printable
from conformance.store.writer import compact, safe_name, save_arrays, write_atomically

WIDTH = 116
EXPECTED = {
    "reference": "the independent float64 reference the harness computed (rounded and saturated for integer outputs)",
    "cpu": "the cpu's output for the same case (run again here where the device is not the cpu)",
    "eager": "the eager (uncompiled) output on the same device (run again here)",
}


def default_path(failure: Failure) -> Path:
    return Path(f"repro_{safe_name(failure.stem)}.py")


def layout_code(layout: str) -> list[str]:
    """The body of the harness's own `apply_layout` branch for this layout (read from its source, so the two
    never part)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(apply_layout)))
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    for node in function.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            compared = node.test.comparators[0]
            if isinstance(compared, ast.Constant) and compared.value == layout:
                return "\n".join(ast.unparse(statement) for statement in node.body).splitlines()
        elif isinstance(node, ast.Return):
            return ast.unparse(node).splitlines()
    return ["return tensor.contiguous()"]


def _expected(failure: Failure) -> np.ndarray | None:
    arrays = failure.arrays
    key = {"reference": "reference", "cpu": "cpu", "eager": "cpu"}.get(failure.against)
    found = arrays.get(key) if key else None
    return found if found is not None else arrays.get("reference", arrays.get("cpu"))


def _error(failure: Failure, imports: list[str]) -> tuple[str, str | None]:
    """The tuple of exception classes an error mode's input must raise, as source, and the message pattern."""
    expected = failure.spec.error_modes.get(failure.mode)
    if expected is None:
        return "None", None
    names = []
    for cls in expected.classes:
        found = public_name(cls) or ("", "Exception")
        if found[0] and f"import {found[0]}" not in imports:
            imports.append(f"import {found[0]}")
        names.append(found[1])
    return "(" + ", ".join(names) + ",)", expected.match


def _doc(failure: Failure, script: Path, how: str, notes: list[str], libraries: list[str]) -> str:
    recipe, case = failure.case.recipe, failure.case
    where = f"item {failure.nodeid} of run {failure.run}" if failure.nodeid else "a case checked on this machine's cpu"
    tolerance = failure.tolerance
    bounds = ", ".join(f"{k} {tolerance[k]}" for k in ("atol", "rtol", "max_mismatch_fraction") if k in tolerance)
    paragraphs = [
        f"Repro: {failure.spec.name} on {failure.target} ({recipe.dtype}, mode {failure.mode!r}): the {failure.check} "
        f"check{' failed' if failure.failed else ''}.",
        f"Written by `python -m conformance repro` for {where}. It needs torch, numpy and "
        f"{', '.join(libraries) or 'no other library'}; not conformance.",
        f"    python {script.name} [DEVICE]",
        "Exit status: 1 when the failure reproduces (beyond the tolerance, an invariant broken, an unexpected error "
        "or none where one is expected), 0 when it does not, 3 when it cannot run here (no such DEVICE, a library "
        "missing), 4 when the script itself fails (its own error, or the op not callable as written: no finding).",
        f"Input: a {recipe.dtype} image of shape {list(recipe.shape)} (..., channels, height, width), layout "
        f"{recipe.layout}, content {recipe.content!r} of seed {recipe.seed}, stored exactly as the harness made it "
        f"({script.with_suffix('.npz').name}, 'input').",
        f"The call (`call` below): {how}.",
        f"Held to: {EXPECTED.get(failure.against, failure.against)} ('expected' in the npz).",
        f"Tolerance {tolerance.get('name', '?')!r} ({bounds}): {tolerance.get('reason', '')}",
        f"What the harness said: {printable(failure.message)}",  # a NUL in the source would stop the script
        *([f"The suite's known issue {failure.known_issue} explains it."] if failure.known_issue else []),
        *notes,
        f"The case: {case.json}",
    ]
    if failure.rerun:
        paragraphs.append(f"Rerun with the harness: {failure.rerun}")
    text = "\n\n".join(
        p if p.startswith("    ") else textwrap.fill(p, WIDTH, break_long_words=False, break_on_hyphens=False)
        for p in paragraphs
    )
    return text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def write_repro(failure: Failure, script: Path) -> Path:
    """Write the script and `<script>.npz` beside it; returns the script's path."""
    spec, case = failure.spec, failure.case
    numbers = ("atol", "rtol", "max_mismatch_fraction", "max_mae", "min_psnr")  # the store spells inf as "inf"
    tolerance = {k: float(v) if k in numbers and isinstance(v, str) else v for k, v in failure.tolerance.items()}
    x = materialize(case.recipe)
    try:
        sampled = sample_params(spec, x, case)
    except Exception:  # noqa: BLE001 - a sampler that raises: the call is written without a sample
        sampled = None
    rendered = render(spec, case, x, sampled, str(failure.case_folder) + os.sep)
    found = (failure.facts or unrecorded(failure.target)).script
    device, isa, compiled, notes = found.device, found.cpu_capability, found.compiled, list(found.notes)
    notes += [f"{note}." for note in rendered.notes]
    imports = list(rendered.imports)
    expected_error, match = _error(failure, imports)
    expected = _expected(failure)
    data = {"input": compact(failure.arrays["input"])}
    for name in ("reference", "cpu", "output"):
        if name in failure.arrays:
            data[name] = compact(failure.arrays[name])
    if expected is not None:
        data["expected"] = compact(expected)
    data.update(rendered.arrays)
    roots = {line.split()[1].partition(".")[0] for line in imports}
    libraries = sorted(roots - {"torch", "numpy"} - sys.stdlib_module_names)
    recorded = ", ".join(f"{k} {v}" for k, v in failure.versions.items() if k in ("torch", *libraries))
    output_dtype = spec.output_dtype_of(case)
    text = template().render(
        doc=_doc(failure, script, rendered.how, notes, libraries),
        isa=isa,
        imports=imports,
        device=device,
        npz=script.with_suffix(".npz").name,
        input_dtype=f"torch.{case.recipe.dtype}",
        output_dtype=f"torch.{output_dtype}",
        seed=case.recipe.seed,
        check=failure.check,
        against=failure.against if failure.against in EXPECTED else "reference",
        tolerance={k: v for k, v in tolerance.items() if k != "reason"},
        peak=peak(output_dtype),
        keeps_format=spec.keeps_memory_format and spec.returns.read is None and not spec.returns.host,
        expected_error=expected_error,
        expected_match=match,
        compiled=compiled,
        written=rendered.written,
        layout=case.recipe.layout,
        layout_code=layout_code(case.recipe.layout),
        definitions=rendered.definitions,
        body=rendered.body,
        own=rendered.own,
        recorded=recorded or "(no run: checked here)",
        libraries=["torch", "numpy", *libraries],
    )
    script.parent.mkdir(parents=True, exist_ok=True)
    save_arrays(script.with_suffix(".npz"), data)
    write_atomically(script, text)
    return script


def make_repro(
    argument: str, run_dir: Path, output: Path | None, target: str, mode: str | None, cases: Path
) -> tuple[Path, Failure]:
    """The CLI's `repro`: an item id of a failure in `run_dir`, or a case JSON (a file or the text) checked here for
    `target`; the script goes to `output` (a .py file, else a folder for the default name).  Returns the script and
    the failure it reproduces; raises ReproError."""
    is_case = argument.lstrip().startswith("{") or argument.endswith(".json")
    failure = from_case(argument, target, mode, cases) if is_case else from_run(argument, run_dir)
    path = default_path(failure)
    if output is not None:
        path = output if output.suffix == ".py" else output / path
    return write_repro(failure, path), failure
