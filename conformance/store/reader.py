"""Reading a run's journal back, one record at a time (never the whole journal at once).

The journal (`outcomes/<worker>.jsonl`) holds one record per item event: its start, its end with
its tally, item-level verdicts, the worst cases of an operation's implementations, operations, the
case each process is about to run; examples are in the examples table (`conformance.store.examples`).
A store written by an older conformance (format 1: a record per check and example) is refused with a
one-line `StoreError` that says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conformance.store import examples
from conformance.store.examples import StoreError

__all__ = [
    "LoadedIssues",
    "RunRecords",
    "StoreError",
    "file_records",
    "known_issue_entries",
    "load_environment",
    "read_outcomes",
    "was_complete",
]

OLD_KINDS = ("example", "case")  # format 1: one record per example, cases written once per file


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


def file_records(path: Path) -> Iterator[tuple[int, bool, dict[str, Any] | None]]:
    """(line number, is it the last line, the record or None where the line is not a JSON object) for
    each line of a journal file; a format-1 record raises StoreError."""
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
        if record.get("kind") in OLD_KINDS:
            raise StoreError(
                f"{path.parent.parent} was written by an older conformance (store format 1, a record per "
                f"check and example): its summary.json and index.html stay readable, but this version "
                f"cannot read its records; use conformance 0.1.0 for it"
            )
        yield number, last, record


def journal_files(run_dir: Path) -> list[Path]:
    folder = run_dir / "outcomes"
    return sorted(p for p in folder.glob("*.jsonl") if not p.is_symlink()) if folder.is_dir() else []


class RunRecords:
    """A run's journal records in file order, streamed; `torn` counts the lines skipped so far
    (complete once iterated)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir, self.torn = run_dir, 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self.torn = 0
        for path in journal_files(self.run_dir):
            for _, _, record in file_records(path):
                if record is None:
                    self.torn += 1
                else:
                    yield record


class LoadedIssues:
    """The known-issue entries a run's journal names, fed its records (`add`): `ids`, every entry its processes
    loaded, and `entries`, each that applied to an item, whole, by id (rows of the examples table name them by id).
    Journals written before entries had records of their own embedded them in item records: read too."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.entries: dict[str, Any] = {}

    def add(self, record: dict[str, Any]) -> None:
        kind = record.get("kind")
        if kind == "known_issues":
            self.ids.update(str(i) for i in record.get("loaded") or ())
        elif kind == "known_issue" and isinstance(record.get("entry"), dict) and "id" in record["entry"]:
            self.entries[str(record["entry"]["id"])] = record["entry"]
            self.ids.add(str(record["entry"]["id"]))
        elif kind == "item" and isinstance(record.get("known_issues_loaded"), dict):
            self.entries.update(record["known_issues_loaded"])
            self.ids.update(record["known_issues_loaded"])


def known_issue_entries(run_dir: Path) -> dict[str, Any]:
    """Every known-issue entry that applied to an item of the run, by id."""
    found = LoadedIssues()
    for record in RunRecords(run_dir):
        found.add(record)
    return found.entries


def read_outcomes(run_dir: Path) -> tuple[list[dict[str, Any]], int]:
    """Every record of a run in one list: the journal's, then one `outcome` record per row of the examples
    table (with its case, metrics, tolerance and known issue), and how many torn lines and batches were
    skipped: for tests and small runs (the summary and the report stream the journal instead)."""
    records, issues = RunRecords(run_dir), LoadedIssues()
    found = list(records)
    for record in found:
        issues.add(record)
    table, torn = examples.read_table(run_dir)
    for batch in table.to_batches(max_chunksize=4096):
        found.extend(examples.record(values, issues.entries) for values in batch.to_pylist())
    return found, records.torn + torn


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


ENDED = "ended.json"  # the session's last word: {"complete": bool}, beside summary.json


def was_complete(run_dir: Path) -> bool:
    """Whether the run finished: its summary.json says so, or, where that was lost or damaged, the marker the
    session wrote when it ended (neither: no)."""
    for name in ("summary.json", ENDED):
        try:
            found = json.loads((run_dir / name).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if isinstance(found, dict) and "complete" in found:
            return bool(found["complete"])
    return False
