"""`python -m conformance repro`: the failure a repro script reproduces, read from a run (an item id) or made from a
case JSON on this machine's cpu.

A run keeps each failure's arrays (`artifacts/*.npz`: the input, the reference, this target's output, the cpu's),
its tolerance and its message: the script holds the item's target to the same expected output under the same
tolerance.  A case given alone is checked on the cpu here, which gives the same arrays.  Anything that does not name
one reproducible failure is a `ReproError`: one line, the CLI's usage error.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from conformance.checks.registry import applicable
from conformance.devices.discovery import discover
from conformance.devices.facts import FactsBook, TargetFacts
from conformance.devices.targets import CPU
from conformance.engine.cases import CaseCache, check_case
from conformance.spec.item_ids import parse_item_id
from conformance.spec.loading import load_specs
from conformance.spec.opspec import SOURCES, OpSpec
from conformance.spec.recipes import Case, RecipeError
from conformance.store import examples
from conformance.store.examples import StoreError
from conformance.store.reader import known_issue_entries
from conformance.store.repro_command import SCRIPTED_CHECKS, rerun_id
from conformance.store.tally import SHOWN_PHASES, Phase
from conformance.suite.stock import stock_cases

SUPPORTED = SCRIPTED_CHECKS
FAILED = ("fail", "error", "known_issue")  # a known issue is a failure the suite expects: worth a repro upstream


class ReproError(ValueError):
    """Why no repro can be written: said in one line."""


@dataclass
class Failure:
    """One failure to reproduce: where it was found, its case, the arrays a run keeps of it, and its tolerance."""

    spec: OpSpec
    case: Case
    target: str
    mode: str
    check: str
    against: str  # what the output is held to: "reference", "cpu", "eager", "expected error", ...
    arrays: dict[str, np.ndarray]
    tolerance: dict[str, Any]
    message: str
    case_folder: Path
    nodeid: str = ""
    run: str = ""  # the run folder it was read from ("" for a case checked here)
    rerun: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    failed: bool = True  # False: a case given alone that passes on the cpu here
    known_issue: str = ""  # the suite's known-issue entry that explains it, with its link
    facts: TargetFacts | None = None  # what the run recorded of the target (None: nothing, a name alone)

    @property
    def stem(self) -> str:
        return "-".join((self.spec.name, self.target, self.case.recipe.dtype, self.mode, self.check))


def _load(case_paths: list[Path], op: str) -> OpSpec | None:
    """The op's spec from the first of these case modules that defines it (the op registry left as it was)."""
    kept = dict(SOURCES)
    try:
        for path in case_paths:
            found = {spec.name: spec for spec in load_specs([path])}
            if op in found:
                return found[op]
    finally:
        SOURCES.clear()
        SOURCES.update(kept)
    return None


def _modules(folder: Path, op: str) -> list[Path]:
    """A folder's case modules, those that spell the op (or its operation) first."""
    files = sorted(folder.glob("test_*.py")) if folder.is_dir() else []
    stem = op.rpartition("_")[0] or op
    return sorted(files, key=lambda p: (op not in (text := p.read_text(errors="replace")), stem not in text))


def from_run(item: str, run_dir: Path) -> Failure:
    """The item's failure in a run: its final (shrunk) failing case with the arrays the run kept."""
    if parse_item_id(item) is None:
        raise ReproError(
            f"{item!r} is neither a case JSON nor an item id (cases/test_x.py::test_op[target-dtype-mode-check])"
        )
    if not (run_dir / "outcomes").is_dir():
        raise ReproError(f"{run_dir} is not a run folder (no outcomes/); name one with --run")
    try:
        rows = _rows(item, run_dir)
    except StoreError as exc:
        raise ReproError(str(exc)) from None
    if not rows:
        raise ReproError(_unknown(item, run_dir))
    given, item = item, str(rows[0]["nodeid"])  # the id as a rerun line gave it, and pytest's
    failed = [r for r in rows if r.get("verdict") in FAILED and r.get("phase") != Phase.SHRINK.value]
    if not failed:
        counts = ", ".join(f"{sum(r['verdict'] == v for r in rows)} {v}" for v in sorted({r["verdict"] for r in rows}))
        raise ReproError(f"{item} did not fail in {run_dir} ({counts}): there is nothing to reproduce")
    failed.sort(key=lambda r: (r["verdict"] == "known_issue", r.get("phase") not in SHOWN_PHASES))
    kept = [r for r in failed if r.get("artifact")]
    if not kept:
        raise ReproError(f"{item} failed in {run_dir} but kept no arrays; rerun it with: {failed[0].get('repro', '')}")
    record = kept[0]
    if record.get("known_issue"):  # its entry (and link) from the journal, read only then: a run's journal is long
        issue = str(record["known_issue"].get("id"))
        record["known_issue"] = known_issue_entries(run_dir).get(issue) or {"id": issue}
    check = str(record["check"])
    if check not in SUPPORTED:
        raise ReproError(
            f"a {check} failure is not written as a script (only {', '.join(SUPPORTED)}); "
            f"rerun it with: {record.get('repro', '')}"
        )
    artifact = run_dir / str(record["artifact"])
    try:
        with np.load(artifact, allow_pickle=False) as stored:
            arrays = {name: np.asarray(stored[name], dtype=np.float64) for name in stored.files}
    except (OSError, ValueError) as exc:
        raise ReproError(f"the arrays of {item} cannot be read: {artifact} ({exc})") from None
    case = _case(json.dumps(record.get("case")))
    environment = _environment(run_dir, record.get("machine"))
    module = _module_file(given, run_dir) or _module_file(item, run_dir)
    spec = _load([module], str(record["op"])) if module is not None else None
    if spec is None or module is None:
        raise ReproError(f"no case module defines {record['op']} where {item} names it (looked beside {Path.cwd()})")
    return Failure(
        spec=spec,
        case=case,
        target=str(record["target"]),
        mode=str(record["mode"]),
        check=check,
        against=str(record.get("against") or "reference"),
        arrays=arrays,
        tolerance=dict(record.get("tolerance") or {}),
        message=str(record.get("message", "")),
        case_folder=module.parent,
        nodeid=item,
        run=_shown(run_dir),
        rerun=str(record.get("repro", "")),
        versions=_versions(environment),
        facts=FactsBook.of_environment(environment)[str(record["target"])],
        known_issue=" ".join(str((record.get("known_issue") or {}).get(k) or "") for k in ("id", "link")).strip(),
    )


def _rows(item: str, run_dir: Path) -> list[dict[str, Any]]:
    """The item's rows: by pytest's id, or by the id its rerun lines name it by (a case module outside the folder
    the run was started in, which those lines name from there)."""
    import pyarrow.compute as pc

    def read(where: Any) -> list[dict[str, Any]]:
        table, _ = examples.read_table(run_dir, where=where)
        return [examples.record(values) for values in table.to_pylist()]

    rows = read(pc.field("nodeid") == item)
    if rows or "::" not in item:
        return rows
    alike = read(pc.ends_with(pc.field("nodeid"), "::" + item.partition("::")[2]))
    named = {str(r["nodeid"]) for r in alike if rerun_id(str(r.get("repro") or "")) == item}
    return [r for r in alike if r["nodeid"] in named] if len(named) == 1 else []


def _shown(run_dir: Path) -> str:
    """The run folder a link such as reports/latest points to, relative to here where it is below here."""
    resolved = run_dir.resolve()
    try:
        return str(resolved.relative_to(Path.cwd()))
    except ValueError:
        return str(resolved)


def _unknown(item: str, run_dir: Path) -> str:
    """Why an item id names nothing in the run, with the closest id where one is spelt almost alike."""
    table, _ = examples.read_table(run_dir, columns=["nodeid"])
    ids = sorted({str(n) for n in table.column("nodeid").unique().to_pylist() if n})
    close = difflib.get_close_matches(item, ids, n=1, cutoff=0.8)
    return f"no item {item} in {run_dir}" + (f" (did you mean {close[0]}?)" if close else "")


def _module_file(item: str, run_dir: Path) -> Path | None:
    """The case module an item id names: beside the current folder, beside the run's reports/ folder, or in the
    installed stock suite (whose ids read `cases/test_x.py::...` everywhere)."""
    relative = Path(item.split("::")[0])
    stock = stock_cases()
    for base in (Path.cwd(), run_dir.resolve().parent.parent, *([stock.parent] if stock else [])):
        if (base / relative).is_file():
            return (base / relative).resolve()
    return None


def _environment(run_dir: Path, machine: Any) -> dict[str, Any]:
    """What the run recorded of the machine that found the failure (in a merged run, one of several)."""
    for path in sorted((run_dir / "environment").glob("*.json")):
        try:
            environment = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not machine or machine in (environment.get("machine_label"), environment.get("machine")):
            return environment if isinstance(environment, dict) else {}
    return {}


def _versions(environment: dict[str, Any]) -> dict[str, str]:
    """The library versions the run recorded."""
    return {str(k): str(v) for k, v in (environment.get("packages") or {}).items()}


def _case(text: str) -> Case:
    try:
        return Case.from_json(text)
    except RecipeError as exc:
        raise ReproError(f"not a case: {exc}") from None


def from_case(argument: str, target: str, mode: str | None, cases: Path) -> Failure:
    """A case JSON (a file, or the JSON itself) checked on the cpu here; `target`: where the script runs it."""
    path = Path(argument)
    if argument.endswith(".json") and not path.is_file():
        raise ReproError(f"no such case JSON file: {argument}")
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() else argument
    except OSError as exc:
        raise ReproError(f"cannot read {argument}: {exc}") from None
    case = _case(text)
    spec = _load(_modules(cases, case.op), case.op)
    if spec is None:
        raise ReproError(f"no case module in {cases} defines the op {case.op!r} (name the folder with --cases)")
    dtype = case.recipe.dtype
    modes = [m for d, m in spec.variant_pairs() if d == dtype]
    chosen = mode or ("default" if "default" in modes else (modes or [""])[0])
    if chosen not in modes:
        raise ReproError(f"{spec.name} has no mode {chosen!r} for {dtype} (its modes: {', '.join(modes) or 'none'})")
    result = check_case(spec, case, CPU, CaseCache(), chosen)
    if not result.arrays:
        raise ReproError(f"the case did not run on the cpu here: {result.not_run or result.resource}")
    arrays = dict(result.arrays)
    names = [c.name for c in applicable(spec, CPU, chosen, dtype=dtype)]
    failing = [o for o in result.failures if o.check in SUPPORTED]
    if target == "cpu" and failing:
        check, message = failing[0].check, failing[0].message
    else:
        check = "error" if chosen in spec.error_modes else "reference" if "reference" in names else "invariants"
        check = "cross_device" if target != "cpu" and check == "invariants" else check
        message = "passes on the cpu here" if target == "cpu" else f"checked on the cpu here; the script runs {target}"
    if check == "cross_device":
        arrays["cpu"] = arrays["output"]
    try:
        tolerance = spec.tolerance("cross_device" if check == "cross_device" else "reference", dtype, chosen, target)
    except LookupError:  # an op without value rules (a swept transform): nothing holds its values here
        tolerance = None
    return Failure(
        spec=spec,
        case=case,
        target=target,
        facts=FactsBook(t.facts() for t in discover())[target],
        mode=chosen,
        check=check,
        against="cpu" if check == "cross_device" else "reference",
        arrays=arrays,
        tolerance=tolerance.to_dict() if tolerance is not None else {},
        message=message,
        case_folder=cases.resolve(),
        failed=target == "cpu" and bool(failing),
    )
