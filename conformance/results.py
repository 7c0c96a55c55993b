"""The run's result store: outcome records appended as they happen.

Layout of `reports/<run>/` (schema in docs/results.md):
  outcomes/<worker>.jsonl     one JSON object per line, flushed per line; one file
                              per pytest-xdist worker ("main" without xdist)
  environment/<worker>.json   what that process ran on
  artifacts/<name>.npz        arrays of failing examples only
  summary.json                written by the controller from all outcome files
Nothing is lost on a crash: every line is complete on disk before the next
check runs, and a torn last line is skipped (and counted) when reading.
"""
from __future__ import annotations

import json
import math
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import numpy as np

SUMMARY_SCHEMA = "conformance.summary/1"
COUNTED_PHASES = ("explore", "final", "replay", "item")
VERDICT_ORDER = ("fail", "error", "known_issue", "warning", "resource", "skipped", "pass")


def json_safe(value: Any) -> Any:
    """Non-finite floats become strings ("inf", "-inf", "nan") so the JSON stays standard."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def safe_name(text: str, limit: int = 120) -> str:
    """A file-name fragment that cannot escape its folder or confuse a shell."""
    cleaned = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9_.=-]+", "_", text)).strip("._-")
    return cleaned[:limit] or "item"


class Store:
    """Appends one process's outcomes to its own file (xdist-safe without locks)."""

    def __init__(self, run_dir: Path, worker: str, environment: dict[str, Any]) -> None:
        self.run_dir = run_dir
        self.worker = worker
        self._case_ids: dict[str, int] = {}  # case JSON -> its id in this file
        (run_dir / "outcomes").mkdir(parents=True, exist_ok=True)
        (run_dir / "environment").mkdir(exist_ok=True)
        (run_dir / "environment" / f"{worker}.json").write_text(json.dumps(json_safe(environment), indent=2))
        self._file: TextIO = open(run_dir / "outcomes" / f"{worker}.jsonl", "a", encoding="utf-8")
        self._artifact_count = 0

    def append_example(self, record: dict[str, Any], case_json: str) -> None:
        """An example record; its case is written once per file (a `case` line) and referred to by id,
        since every check of every target records the same case."""
        case_id = self._case_ids.get(case_json)
        if case_id is None:
            case_id = self._case_ids[case_json] = len(self._case_ids)
            self.append({"kind": "case", "id": case_id}, encoded={"case": case_json})
        self.append(record | {"case_id": case_id})

    def append(self, record: dict[str, Any], encoded: dict[str, str] | None = None) -> None:
        """Write one record as a line; `encoded` holds fields already serialised to JSON."""
        try:
            text = json.dumps(record, sort_keys=True, allow_nan=False)
        except ValueError:  # inf or nan somewhere: spelled as strings
            text = json.dumps(json_safe(record), sort_keys=True)
        if encoded:
            fields = ",".join(f"{json.dumps(key)}:{value}" for key, value in encoded.items())
            text = f"{text[:-1]}{',' if len(text) > 2 else ''}{fields}}}"
        self._file.write(text + "\n")
        self._file.flush()

    def save_arrays(self, stem: str, arrays: dict[str, np.ndarray]) -> str:
        """Keep a failing example's arrays; returns the path relative to the run dir."""
        self._artifact_count += 1
        folder = self.run_dir / "artifacts"
        folder.mkdir(exist_ok=True)
        name = f"{self.worker}-{self._artifact_count:05d}-{safe_name(stem)}.npz"
        np.savez_compressed(folder / name, **{k: np.asarray(v) for k, v in arrays.items()})
        return f"artifacts/{name}"

    def close(self) -> None:
        self._file.close()


def check_entry(outcome: Any, verdict: str, message: str, known_issue: dict[str, Any] | None) -> dict[str, Any]:
    """One check's outcome as stored in an `example` record (schema: docs/results.md)."""
    tolerance = outcome.tolerance.to_dict() if outcome.tolerance else None
    if tolerance is not None and outcome.passed:
        tolerance.pop("reason", None)  # kept with failures; a pass needs only the numbers
    entry = {
        "check": outcome.check, "verdict": verdict, "against": outcome.against,
        "metrics": outcome.metrics.to_dict() if outcome.metrics else None, "tolerance": tolerance,
        "message": message, "traceback": outcome.traceback, "details": outcome.details,
        "cause": outcome.cause if not outcome.passed else None, "diverges": outcome.diverges,
        "behaviour": outcome.behaviour, "known_issue": known_issue,
    }
    # empty fields are left out: a long run writes hundreds of thousands of these
    return {k: v for k, v in entry.items() if v is not None and v != ""}


def expand(record: dict[str, Any]) -> list[dict[str, Any]]:
    """An `example` record (one case on one target, every check) as one `outcome` record per check;
    other records as they are.  The rerun line and artifact belong to the checks that did not pass."""
    if record.get("kind") != "example":
        return [record]
    base = {k: v for k, v in record.items() if k not in ("kind", "checks", "repro", "artifact")}
    extra = {k: record[k] for k in ("repro", "artifact") if k in record}
    return [base | {"kind": "outcome"} | check | (extra if check.get("verdict") != "pass" else {})
            for check in record.get("checks", [])]


def _lines(path: Path) -> Iterator[tuple[int, bool, dict[str, Any] | None]]:
    """(line number, is it the last line, the record or None where the line is not a JSON object)
    for each record line of an outcomes file; `case` lines are consumed here and each record that
    refers to one gets its `case` back."""
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    cases: dict[Any, Any] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if isinstance(record, dict) and record.get("kind") == "case":
            cases[record.get("id")] = record.get("case")
            continue
        if isinstance(record, dict) and "case_id" in record:
            record["case"] = cases.get(record.pop("case_id"))
        yield number, number == len(lines), record if isinstance(record, dict) else None


def read_outcomes(run_dir: Path) -> tuple[list[dict[str, Any]], int]:
    """All records of a run, in file order, one per check (see `expand`), and how many torn
    lines were skipped."""
    records: list[dict[str, Any]] = []
    torn = 0
    for path in sorted((run_dir / "outcomes").glob("*.jsonl")):
        for _, _, record in _lines(path):
            if record is None:
                torn += 1
            else:
                records.extend(expand(record))
    return records, torn


def _worst(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    best: dict[str, Any] | None = None
    for record in records:
        metrics = record.get("metrics") or {}
        value = metrics.get("max_abs")
        if value is None:
            continue
        number = float(value)  # also parses the "inf"/"nan" strings json_safe wrote
        number = math.inf if math.isnan(number) else number
        if best is None or number > best["_n"]:
            tol = record.get("tolerance") or {}
            best = {"_n": number, "max_abs": value, "mismatch_fraction": metrics.get("mismatch_fraction"),
                    "tolerance": tol.get("name"), "atol": tol.get("atol"),
                    "allowed_mismatch_fraction": tol.get("max_mismatch_fraction")}
    if best is not None:
        best.pop("_n")
    return best


def summarize(records: list[dict[str, Any]], environment: dict[str, Any] | None, *, torn: int = 0,
              complete: bool = True) -> dict[str, Any]:
    """Counts per (op, target, dtype, mode, check); independent of worker count and order."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    loaded: dict[str, dict[str, Any]] = {}
    used: set[str] = set()
    reproduced: set[str] = set()
    for record in records:
        if record.get("known_issue"):
            reproduced.add(record["known_issue"]["id"])
        if record.get("kind") == "item":
            loaded.update(record.get("known_issues_loaded", {}))
            used.update(record.get("known_issues_applied", []))
            continue
        if record.get("phase") not in COUNTED_PHASES:
            continue
        key = (record.get("machine", ""), record["test"], record["op"], record["target"],
               bool(record.get("virtual")), record["dtype"], record["mode"], record["check"])
        groups[key].append(record)

    rows = []
    totals: dict[str, int] = defaultdict(int)
    for key in sorted(groups):
        machine, test, op, target, virtual, dtype, mode, check = key
        members = groups[key]
        counts: dict[str, int] = defaultdict(int)
        for record in members:
            counts[record["verdict"]] += 1
            totals[record["verdict"]] += 1
        known = sorted({r["known_issue"]["id"] for r in members if r.get("known_issue")})
        verdict = next(v for v in VERDICT_ORDER if counts.get(v) or v == "pass")
        row = {
            "machine": machine, "test": test, "op": op, "target": target, "virtual": virtual, "dtype": dtype,
            "mode": mode,
            "check": check, "verdict": verdict, "examples": len(members), "counts": dict(sorted(counts.items())),
            "worst": _worst(members), "known_issues": known,
        }
        for field in ("behaviour", "diverges"):  # what unmoved modules did; which side a cross-device gap is on
            seen = Counter(r[field] for r in members if r.get(field))
            if seen:
                row[f"{field}s" if field == "behaviour" else field] = dict(sorted(seen.items()))
        rows.append(row)
    return {
        "schema": SUMMARY_SCHEMA,
        "complete": complete,
        "torn_lines": torn,
        "environment": environment or {},
        "totals": dict(sorted(totals.items())),
        "groups": rows,
        "unused_known_issues": sorted(set(loaded) - used),
        "unreproduced_known_issues": sorted(used - reproduced),
    }


def load_environment(run_dir: Path) -> dict[str, Any] | None:
    """The first readable environment record (a truncated one is skipped)."""
    for path in sorted((run_dir / "environment").glob("*.json")):
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(found, dict):
            return found
    return None


def was_complete(run_dir: Path) -> bool:
    """Whether the run's summary.json says it finished (a damaged or missing one: no)."""
    try:
        found = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return bool(isinstance(found, dict) and found.get("complete", False))


def write_summary(run_dir: Path, *, complete: bool,
                  outcomes: tuple[list[dict[str, Any]], int] | None = None) -> dict[str, Any]:
    """Summarise the run's records (read now, or the `read_outcomes` result the caller already has)."""
    records, torn = outcomes if outcomes is not None else read_outcomes(run_dir)
    summary = summarize(records, load_environment(run_dir), torn=torn, complete=complete)
    write_atomically(run_dir / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


def write_atomically(path: Path, text: str) -> None:
    """A temporary file renamed over `path`: a reader never sees half a file, and a symlink at `path`
    is replaced, never written through."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _fmt_number(value: Any) -> str:
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    return str(value)


def format_table(summary: dict[str, Any]) -> list[str]:
    """One line per test item variant: the worst verdict over its checks, failures first."""
    items: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in summary["groups"]:
        key = (row["op"], row["target"] + (" (virtual)" if row["virtual"] else ""), row["dtype"], row["mode"])
        items[key].append(row)
    lines = []
    header = ("op", "target", "dtype", "mode", "examples", "result", "worst check: max |diff| / atol")
    table = []
    for key, rows in items.items():
        verdict = next(v for v in VERDICT_ORDER if any(r["verdict"] == v for r in rows) or v == "pass")
        examples = max(r["examples"] for r in rows)
        worst_row = next((r for r in rows if r["verdict"] == verdict and r["worst"]), None)
        worst_row = worst_row or next((r for r in rows if r["verdict"] == verdict), None)
        detail = worst_row["check"] if worst_row and verdict != "pass" else ""
        if worst_row is not None and worst_row["worst"]:
            w = worst_row["worst"]
            detail = f"{worst_row['check']}: {_fmt_number(w['max_abs'])} / {_fmt_number(w['atol'])}"
        known = sorted({k for r in rows for k in r["known_issues"]})
        if known:
            detail += f"  [{', '.join(known)}]"
        table.append((*key, str(examples), verdict.replace("_", " "), detail))
    table.sort(key=lambda row: (VERDICT_ORDER.index(row[5].replace(" ", "_")), row[:4]))
    widths = [max(len(str(r[i])) for r in [header, *table]) for i in range(len(header))]
    for row in [header, *table]:
        lines.append("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
    return lines


def format_modules(summary: dict[str, Any]) -> list[str]:
    """What module ops did when left on the cpu with a device input (the `unmoved` check), per op and target."""
    seen: dict[tuple[str, str], Counter] = defaultdict(Counter)
    verdicts: dict[tuple[str, str], str] = {}
    for row in summary["groups"]:
        if row["check"] == "unmoved" and row.get("behaviours"):
            key = (row["op"], row["target"] + (" (virtual)" if row["virtual"] else ""))
            seen[key].update(row["behaviours"])
            worst = min(verdicts.get(key, "pass"), row["verdict"], key=VERDICT_ORDER.index)
            verdicts[key] = worst
    return [f"  {op} on {target}: " + "; ".join(f"{b} ({n} cases)" for b, n in sorted(counts.items()))
            + f" -> {verdicts[(op, target)].replace('_', ' ')}" for (op, target), counts in sorted(seen.items())]


class SavedCasesError(ValueError):
    """A --cases-from source that is missing, not a run, or holds a malformed line."""


def saved_cases(source: Path) -> dict[tuple[str, str, str, str], list[Any]]:
    """The cases a run checked, per (module, test, dtype, mode), in the order it checked them.

    `source` is a run folder or one of its outcomes/*.jsonl files.  Only JSON is read (never
    pickles); a line that does not parse is an error naming it, except a torn last line (a run
    killed mid-write).
    """
    from conformance.recipes import Case, RecipeError
    from conformance.spec import variant_key

    if source.is_dir():
        files = sorted((source / "outcomes").glob("*.jsonl"))
        if not files:
            raise SavedCasesError(f"{source} holds no outcomes/*.jsonl (not a run folder)")
    elif source.is_file():
        files = [source]
    else:
        raise SavedCasesError(f"no such run folder or outcomes file: {str(source)!r}")
    plans: dict[tuple[str, str, str, str], list[Any]] = {}
    seen: set[tuple] = set()
    for path in files:
        for number, last, record in _lines(path):
            if record is None:
                if last:
                    continue
                raise SavedCasesError(f"{path}:{number}: not a JSON record")
            for outcome in expand(record):
                if outcome.get("phase") not in ("explore", "final", "replay") or "case" not in outcome:
                    continue
                try:
                    key = variant_key(str(outcome["nodeid"]), str(outcome["test"]), str(outcome["dtype"]),
                                      str(outcome["mode"]))
                    case = Case.from_json(json.dumps(outcome["case"]))
                except (KeyError, TypeError, RecipeError) as exc:
                    raise SavedCasesError(f"{path}:{number}: not a case record ({exc})") from None
                if (key, case.key) not in seen:
                    seen.add((key, case.key))
                    plans.setdefault(key, []).append(case)
    if not plans:
        raise SavedCasesError(f"{source} holds no checked cases")
    return plans
