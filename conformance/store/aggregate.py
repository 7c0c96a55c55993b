"""The run's summary: per test item, counts and the worst example, tallied as examples are checked.

A test item is one check of one op, target, dtype and mode, so it is one group of the summary.
The process running an item keeps its `Tally` (counts per verdict, the worst example's numbers,
known issues, what unmoved modules did, which side a cross-device gap is on, the cross-library
measurement, warnings) and writes it with the item's end; the summary adds up tallies and the
item-level records (skips, stale known issues, crashes, out-of-memory cases), so building it reads
one record per item, never the examples.  An item that was running when the session stopped (Ctrl-C,
SIGTERM, a kill) is marked `interrupted`, so a half-checked item is never shown as a plain pass.

summary.json is the run's one summary: the report shows it as written (`report_summary`), never a summary of
its own, so the page, the file and the terminal agree on every count and on whether the run was complete.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance.devices.facts import FactsBook
from conformance.spec.item_ids import parse_item_id
from conformance.store.reader import LoadedIssues, RunRecords, load_environment, was_complete
from conformance.store.summary_file import SCHEMA, pack
from conformance.store.summary_model import Summary
from conformance.store.summary_reader import SummaryError, read_summary
from conformance.store.tally import COUNTED_PHASES, VERDICT_ORDER, Tally, family
from conformance.store.writer import json_safe, write_atomically

SUMMARY_SCHEMA = SCHEMA  # written as `summary_file.pack` lays it out; read back flat

GroupKey = tuple[str, str, str, str, bool, str, str, str]


class Summarizer:
    """Feed it a run's journal records (`add`), in any order across worker files; `summary` gives summary.json."""

    def __init__(self) -> None:
        self.groups: dict[GroupKey, Tally] = {}
        self.loaded = LoadedIssues()
        self.used: set[str] = set()
        self.reproduced: set[str] = set()
        self.running: dict[tuple[str, str], dict[str, Any]] = {}  # per process: the item begun and not ended
        self.crashed: set[str] = set()  # items whose process died in them: a crash, not also interrupted
        self.operations: dict[str, Any] = {}  # operation name -> its implementations (cross-library page)
        self.notes: list[dict[str, Any]] = []  # known issues not reproduced in too few cases to call them fixed
        self.families: dict[GroupKey, str] = {}
        self.stopped: list[str] = []  # items that ended because the session was interrupted

    def _group(self, record: dict[str, Any]) -> Tally:
        key = (
            str(record.get("machine", "")),
            record["test"],
            record["op"],
            record["target"],
            bool(record.get("virtual")),
            record["dtype"],
            record["mode"],
            record["check"],
        )
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Tally()
            self.families[key] = family(str(record.get("nodeid", "")))
        return group

    def add(self, record: dict[str, Any]) -> None:
        stream = (str(record.get("machine", "")), str(record.get("worker", "")))
        kind = record.get("kind")
        if kind == "operation":
            described = record.get("operation")
            if isinstance(described, dict) and isinstance(described.get("name"), str):
                self.operations.setdefault(described["name"], described)
        elif kind in ("known_issues", "known_issue"):
            self.loaded.add(record)
        elif kind == "item":
            self.loaded.add(record)  # older journals embed the entries in item records
            self.used.update(record.get("known_issues_applied", []))
            self.running[stream] = record
        elif kind == "item_end":
            if self.running.get(stream, {}).get("nodeid") == record.get("nodeid"):
                del self.running[stream]
            tally = record.get("tally")
            if isinstance(tally, dict) and "test" in record:
                group = self._group(record)
                group.merge(tally)
                if record.get("interrupted"):  # Ctrl-C or SIGTERM stopped it inside its examples
                    group.interrupted = True
                    self.stopped.append(str(record.get("nodeid", "")))
                self.reproduced.update(group.known)
            self.notes.extend(n for n in record.get("notes") or () if isinstance(n, dict))
        elif kind == "outcome" and record.get("source") != "examples" and record.get("phase") in COUNTED_PHASES:
            group = self._group(record)  # item-level verdicts, out-of-memory cases, crashes
            group.add(record)
            if record.get("crash"):
                self.crashed.add(str(record.get("nodeid", "")))
            self.reproduced.update(group.known)

    def _mark_interrupted(self, targets: FactsBook) -> list[str]:
        """The item each process was running when the session stopped (its last one begun, never ended)."""
        marked = []
        for _, record in sorted(self.running.items()):
            if str(record.get("nodeid", "")) in self.crashed:  # its crash record is its verdict
                continue
            if "test" not in record:  # an item record without the item's fields: read them from its id
                parsed = parse_item_id(str(record.get("nodeid", "")))
                if parsed is None:
                    continue
                record = record | {
                    "test": parsed.test,
                    "op": parsed.test.removeprefix("test_"),
                    **targets[parsed.target].record_fields(),
                    "dtype": parsed.dtype,
                    "mode": parsed.mode,
                    "check": parsed.check,
                }
            self._group(record).interrupted = True
            marked.append(str(record.get("nodeid", "")))
        return marked

    def summary(self, environment: dict[str, Any] | None, *, torn: int = 0, complete: bool = True) -> dict[str, Any]:
        """Counts per (machine, test, op, target, virtual, dtype, mode, check); independent of worker
        count and order."""
        interrupted = ([] if complete else self._mark_interrupted(FactsBook.of_environment(environment))) + self.stopped
        rows: list[dict[str, Any]] = []
        totals: Counter[str] = Counter()
        for key in sorted(self.groups):
            machine, test, op, target, virtual, dtype, mode, check = key
            group = self.groups[key]
            totals.update(group.counts)
            verdict = next(v for v in VERDICT_ORDER if group.counts.get(v) or v == "pass")
            if group.interrupted:
                verdict = min(verdict, "interrupted", key=VERDICT_ORDER.index)
            row = {
                "machine": machine,
                "family": self.families.get(key, ""),
                "test": test,
                "op": op,
                "target": target,
                "virtual": virtual,
                "dtype": dtype,
                "mode": mode,
                "check": check,
                "verdict": verdict,
                "examples": sum(group.counts.values()),
                "counts": dict(sorted(group.counts.items())),
                "worst": group.worst,
                "known_issues": sorted(group.known),
            }
            for name in ("behaviours", "diverges", "warnings", "issue_scope", "causes"):
                if getattr(group, name):
                    row[name] = dict(sorted(getattr(group, name).items()))
            if group.covered:  # what the relations tried
                row["covered"] = group.covered_lists()
            if group.peers:  # the cross-library measurement
                row["peers"] = group.peers
            if group.shrunk:
                row["shrunk"] = group.shrunk
            if group.interrupted:
                row["interrupted"] = True
            rows.append(row)
        if interrupted:
            totals["interrupted"] = len(interrupted)
        found = {
            "schema": SUMMARY_SCHEMA,
            "complete": complete,
            "torn_lines": torn,
            "environment": environment or {},
            "totals": dict(sorted(totals.items())),
            "groups": rows,
            "unused_known_issues": sorted(self.loaded.ids - self.used),
            "unreproduced_known_issues": sorted(self.used - self.reproduced),
        }
        if self.notes:
            found["notes"] = sorted(self.notes, key=lambda n: json.dumps(n, sort_keys=True))
        if self.operations:
            found["operations"] = dict(sorted(self.operations.items()))
        if interrupted:
            found["interrupted"] = interrupted
        return found


def summarize(
    records: Iterable[dict[str, Any]], environment: dict[str, Any] | None, *, torn: int = 0, complete: bool = True
) -> dict[str, Any]:
    """The summary of journal records from any iterable (a list, or a `RunRecords` stream)."""
    summarizer = Summarizer()
    for record in records:
        summarizer.add(record)
    return summarizer.summary(environment, torn=torn, complete=complete)


def write_summary(run_dir: Path, *, complete: bool) -> dict[str, Any]:
    """Summarise the run's journal into run_dir/summary.json."""
    records = RunRecords(run_dir)
    summarizer = Summarizer()
    for record in records:
        summarizer.add(record)
    summary = summarizer.summary(load_environment(run_dir), torn=records.torn, complete=complete)
    write_summary_file(run_dir, summary)
    return summary


def write_summary_file(run_dir: Path, summary: dict[str, Any]) -> None:
    """run_dir/summary.json holding this summary (its groups as `pack` lays them out), written atomically."""
    text = json.dumps(json_safe(pack(summary)), sort_keys=True, separators=(",", ":"))
    write_atomically(run_dir / "summary.json", text + "\n")


def report_summary(run_dir: Path) -> Summary:
    """The summary the report shows: summary.json.  Where the run has none (killed before its end, a torn file)
    it is written first, as `conformance summary` writes it: complete only where the session's end said so
    (`was_complete`), so a summary made after a kill is marked incomplete and the page says so, and one made
    where the session's end was recorded is the summary that session wrote."""
    found = read_summary(run_dir)
    if found is None:
        write_summary(run_dir, complete=was_complete(run_dir))
        found = read_summary(run_dir)
    if found is None:  # written a moment ago: gone or torn again means something else writes the folder
        raise SummaryError(f"{run_dir / 'summary.json'} was written and could not be read back")
    return Summary.from_json(found)
