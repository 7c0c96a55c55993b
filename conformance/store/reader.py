"""Reading a run's records back, one at a time (never the whole store at once).

A long profile writes millions of lines; the summary and the report aggregate them as they
stream past, so reading keeps one line in memory, plus the cases of the file being read when
the caller wants them back (`cases=True`).  Without them each record keeps a `case_ref` that
`attach_cases` resolves later, for the few records that are shown.
"""
from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def expand(record: dict[str, Any]) -> list[dict[str, Any]]:
    """An `example` record (one case on one target, every check) as one `outcome` record per check;
    other records as they are.  The rerun line and artifact belong to the checks that did not pass."""
    if record.get("kind") != "example":
        return [record]
    base = {k: v for k, v in record.items() if k not in ("kind", "checks", "repro", "artifact")}
    extra = {k: record[k] for k in ("repro", "artifact") if k in record}
    return [base | {"kind": "outcome"} | check | (extra if check.get("verdict") != "pass" else {})
            for check in record.get("checks", [])]


def _numbered(path: Path) -> Iterator[tuple[int, bool, str]]:
    """(line number, is it the last line, text) without reading the file whole."""
    with open(path, encoding="utf-8", errors="replace") as stream:
        number, previous = 0, None
        for line in stream:
            if previous is not None:
                yield number, False, previous
            number, previous = number + 1, line
        if previous is not None:
            yield number, True, previous


def file_records(path: Path, *, cases: bool = True) -> Iterator[tuple[int, bool, dict[str, Any] | None]]:
    """(line number, is it the last line, the record or None where the line is not a JSON object) for
    each record line of an outcomes file.  `case` lines are consumed here: with `cases`, each record
    that refers to one gets its `case` back; without, a `case_ref` for `attach_cases`."""
    known: dict[Any, Any] = {}
    source = str(path)
    for number, last, line in _numbered(path):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        if not isinstance(record, dict):
            yield number, last, None
            continue
        if record.get("kind") == "case":
            if cases:
                known[record.get("id")] = record.get("case")
            continue
        if "case_id" in record:
            case_id = record.pop("case_id")
            if cases:
                record["case"] = known.get(case_id)
            else:
                record["case_ref"] = (source, case_id)
        yield number, last, record


class RunRecords:
    """A run's records in file order, one per check (see `expand`), streamed; `torn` counts the lines
    skipped so far (complete once iterated)."""

    def __init__(self, run_dir: Path, *, cases: bool = True) -> None:
        self.run_dir, self.cases, self.torn = run_dir, cases, 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self.torn = 0
        for path in sorted((self.run_dir / "outcomes").glob("*.jsonl")):
            for _, _, record in file_records(path, cases=self.cases):
                if record is None:
                    self.torn += 1
                else:
                    yield from expand(record)


def read_outcomes(run_dir: Path) -> tuple[list[dict[str, Any]], int]:
    """All records of a run in a list, and how many torn lines were skipped: for tests and small
    runs; the summary and the report stream (`RunRecords`) instead."""
    records = RunRecords(run_dir)
    found = list(records)
    return found, records.torn


def attach_cases(records: Iterable[dict[str, Any]]) -> None:
    """Give each record with a `case_ref` its `case`: one more pass over the files they came from,
    keeping only the cases asked for."""
    wanted: dict[str, dict[Any, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        ref = record.pop("case_ref", None)
        if ref is not None:
            wanted[ref[0]][ref[1]].append(record)
    for source, by_id in wanted.items():
        for record in (r for ids in by_id.values() for r in ids):
            record["case"] = None
        try:
            for _, _, line in _numbered(Path(source)):
                if '"case"' not in line:
                    continue
                try:
                    found = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if (isinstance(found, dict) and found.get("kind") == "case"
                        and isinstance(found.get("id"), (int, str)) and found["id"] in by_id):
                    for record in by_id[found["id"]]:
                        record["case"] = found.get("case")
        except OSError:
            continue


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
