"""Harness cost against a bare loop, on the same fixed cases and targets.

(a) runs pytest with the ci profile on case modules (default: all of cases/) on the selected
    targets (default: every target, as the ci profile runs them), timing the whole process:
    hypothesis draws the cases;
(b) runs pytest again with `--cases-from` that run: the same cases on the same targets, given
    instead of drawn, so this is the harness's own cost (checks, store, summary, report);
(c) reads back exactly which case ran on which target and runs them as a bare loop in a fresh
    process: per case, make the input and compute the reference once; per target, put the
    input there, call the op (build and move the module for module ops), copy the output back
    and compare it with the reference in float64.  Its process is timed the same way, imports
    included.
Prints the times and the ratios (a)/(c) and (b)/(c).

    python benchmarks/harness_overhead.py                      # the ci profile: cases/, every target
    python benchmarks/harness_overhead.py cases/test_resize.py --targets cpu --max-examples 20
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def harness(modules: list[str], targets: str, reports: Path, name: str, extra: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", *modules, "-q", "-p", "no:cacheprovider",
                           "--hypothesis-profile=ci", f"--targets={targets}", f"--reports-dir={reports}",
                           f"--run-name={name}", *extra], capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        sys.exit(f"the harness run failed (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    print(done.stdout.strip().splitlines()[-1])
    return seconds


def checked_work(run_dir: Path) -> list[dict]:
    """[{"case": ..., "targets": [...]}] in first-seen order: every counted example of the run."""
    from conformance.results import read_outcomes

    work: dict[str, dict] = {}
    for record in read_outcomes(run_dir)[0]:
        if record.get("phase") not in ("explore", "final") or "case" not in record:
            continue
        key = json.dumps(record["case"], sort_keys=True)
        entry = work.setdefault(key, {"case": record["case"], "mode": record["mode"], "targets": []})
        if record["target"] not in entry["targets"]:
            entry["targets"].append(record["target"])
    return list(work.values())


def bare(work_file: Path, modules: list[str]) -> float:
    """Run the bare loop in its own process; returns that process's wall time."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--bare-loop", str(work_file), *modules],
                          capture_output=True, text=True, cwd=ROOT)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"the bare loop failed:\n{done.stderr[-3000:]}")
    print(done.stdout.strip())
    return seconds


def bare_loop(work_file: Path, modules: list[str]) -> None:
    """The loop a careful user would write by hand, with nothing but the op, the reference and a compare."""
    start = time.perf_counter()
    import numpy as np
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from calibrate import load_specs

    from conformance.calls import sample_params
    from conformance.checks import expected_output
    from conformance.recipes import Case, materialize, to_float64
    from conformance.targets import discover

    specs = {spec.name: spec for module in modules for spec in load_specs(ROOT / module)}
    targets = {t.name: t for t in discover()}
    work = json.loads(work_file.read_text())
    imported = time.perf_counter()
    compared = 0
    for entry in work:
        case = Case.from_json(json.dumps(entry["case"]))
        spec = specs[case.op]
        host = materialize(case.recipe)
        sampled = sample_params(spec, host, case) if spec.module is not None else None
        expected = None
        if entry["mode"] not in spec.error_modes:
            ideal = spec.reference(to_float64(host), case) if sampled is None else spec.reference(
                to_float64(host), case, sampled)
            expected = expected_output(ideal, spec.output_dtype_of(case))
        for name in entry["targets"]:
            target = targets[name]
            image = materialize(case.recipe, put=target.put) if target.is_accelerator else host
            try:
                with target.active():
                    if spec.module is not None:
                        module = target.put(spec.module.build(dict(case.params)))
                        moved = None if sampled is None else {
                            k: target.put(v) if isinstance(v, torch.Tensor) else v for k, v in sampled.items()}
                        output = spec.module.forward(module, image, dict(case.params), moved)
                    else:
                        output = spec.call(image, dict(case.params))
                    target.synchronize()
                    if spec.read_output is not None:
                        output = spec.read_output(output)
            except Exception:  # noqa: BLE001 - invalid inputs on purpose, and known crashes
                continue
            if expected is None or not isinstance(output, torch.Tensor):
                continue
            actual = to_float64(output.cpu())
            tolerance = spec.tolerance("reference", case.recipe.dtype, entry["mode"], name)
            if actual.shape == expected.shape:
                bound = tolerance.atol + tolerance.rtol * np.abs(expected)
                np.count_nonzero(np.abs(actual - expected) > bound)
            compared += 1
    end = time.perf_counter()
    print(f"bare loop: {sum(len(e['targets']) for e in work)} case-target runs ({compared} compared) in "
          f"{end - imported:.1f} s after {imported - start:.1f} s of imports")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--bare-loop":
        bare_loop(Path(sys.argv[2]), sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", default=None, help="case modules (default: every cases/test_*.py)")
    parser.add_argument("--targets", default="all")
    args, extra = parser.parse_known_args()
    modules = args.modules or sorted(str(p.relative_to(ROOT)) for p in (ROOT / "cases").glob("test_*.py"))
    with tempfile.TemporaryDirectory() as tmp:
        drawing = harness(modules, args.targets, Path(tmp), "drawn", extra)
        given = harness(modules, args.targets, Path(tmp), "given", [*extra, f"--cases-from={Path(tmp) / 'drawn'}"])
        work = checked_work(Path(tmp) / "drawn")
        if checked_work(Path(tmp) / "given") != work:
            sys.exit("the --cases-from run did not check the same cases on the same targets")
        work_file = Path(tmp) / "work.json"
        work_file.write_text(json.dumps(work))
        loop = bare(work_file, modules)
    runs = sum(len(e["targets"]) for e in work)
    print(f"{len(work)} cases, {runs} case-target runs on {args.targets}; whole processes, imports included:")
    print(f"  bare loop                                      {loop:6.1f} s")
    print(f"  harness, cases given (--cases-from)            {given:6.1f} s  ratio {given / loop:.2f}x")
    print(f"  harness, cases drawn by hypothesis (ci run)    {drawing:6.1f} s  ratio {drawing / loop:.2f}x")


if __name__ == "__main__":
    main()
