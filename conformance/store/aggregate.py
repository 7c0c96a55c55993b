"""The run's summary: per test item, counts and the worst example, tallied as examples are checked.

A test item is one check of one op, target, dtype and mode, so it is one group of the summary.
The process running an item keeps its `Tally` (counts per verdict, the worst example's numbers,
known issues, what unmoved modules did, which side a cross-device gap is on, the cross-library
measurement, warnings) and writes it with the item's end; the summary adds up tallies and the
item-level records (skips, stale known issues, crashes, out-of-memory cases), so building it reads
one record per item, never the examples.  An item that was running when the session stopped (Ctrl-C,
SIGTERM, a kill) is marked `interrupted`, so a half-checked item is never shown as a plain pass.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance.spec.item_ids import parse_item_id
from conformance.store.reader import RunRecords, load_environment
from conformance.store.writer import write_atomically

SUMMARY_SCHEMA = "conformance.summary/2"
COUNTED_PHASES = ("explore", "final", "replay", "item")
VERDICT_ORDER = ("fail", "error", "known_issue", "warning", "resource", "interrupted", "skipped", "pass")
MAX_WARNING_MESSAGES = 3
MAX_SKIP_REASONS = 5

GroupKey = tuple[str, str, str, str, bool, str, str, str]


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return math.inf if math.isnan(number) else number


def family(nodeid: str) -> str:
    """The case module an item comes from, as a family name: `cases/test_resize.py::...` -> `resize`."""
    return nodeid.split("::")[0].rpartition("/")[2].removesuffix(".py").removeprefix("test_")


class Tally:
    """One item's (or one summary group's) outcomes, added one at a time or merged from a written tally."""

    __slots__ = ("counts", "worst", "worst_value", "known", "behaviours", "diverges", "interrupted", "peers",
                 "warnings", "issue_scope", "causes", "shrunk")

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.worst: dict[str, Any] | None = None
        self.worst_value = -math.inf
        self.known: set[str] = set()
        self.behaviours: Counter[str] = Counter()
        self.diverges: Counter[str] = Counter()
        self.interrupted = False
        self.peers: dict[str, dict[str, Any]] | None = None
        self.warnings: Counter[str] = Counter()  # first messages of warnings, with their cases
        self.issue_scope: dict[str, list[int]] = {}  # known issue -> [cases in its scope, cases it explained]
        self.causes: Counter[str] = Counter()  # what kind of failure or warning, for those that did not pass
        self.shrunk = 0  # examples hypothesis ran while minimising a failure (not counted as outcomes)

    def add(self, record: dict[str, Any]) -> None:
        """One outcome record (an item-level verdict, or a check outcome as a dict)."""
        metrics = record.get("metrics") or {}
        tolerance = record.get("tolerance") or {}
        known = record.get("known_issue")
        details = record.get("details")
        self.add_example(record["verdict"], metrics.get("max_abs"), metrics.get("mismatch_fraction"),
                         tolerance.get("name"), tolerance.get("atol"), tolerance.get("max_mismatch_fraction"),
                         known.get("id") if isinstance(known, dict) else known, record.get("behaviour"),
                         record.get("diverges"), record.get("cause"), record.get("message", ""),
                         details.get("peers") if isinstance(details, dict) else None)

    def add_example(self, verdict: str, max_abs: Any, mismatch_fraction: Any, tolerance: str | None, atol: Any,
                    allowed_mismatch_fraction: Any, known_issue: str | None, behaviour: str | None,
                    diverges: str | None, cause: str | None, message: str, peers: dict[str, Any] | None) -> None:
        """One check outcome of one counted example, by its fields."""
        self.counts[verdict] += 1
        if known_issue:
            self.known.add(known_issue)
        if behaviour:
            self.behaviours[behaviour] += 1
        if diverges:
            self.diverges[diverges] += 1
        if verdict != "pass" and cause:
            self.causes[cause] += 1
        if verdict == "warning":
            message = str(message or "")
            if message in self.warnings or len(self.warnings) < MAX_WARNING_MESSAGES:
                self.warnings[message] += 1
        if peers:
            for name, entry in peers.items():
                if isinstance(entry, dict):
                    self._add_peer(name, entry, 1)
        if max_abs is not None:
            number = _number(max_abs)
            if number is not None and (self.worst is None or number > self.worst_value):
                self.worst_value = number
                self.worst = {"max_abs": max_abs, "mismatch_fraction": mismatch_fraction, "tolerance": tolerance,
                              "atol": atol, "allowed_mismatch_fraction": allowed_mismatch_fraction}

    def _consider(self, worst: dict[str, Any] | None) -> None:
        if not worst or worst.get("max_abs") is None:
            return
        number = _number(worst["max_abs"])
        if number is not None and (self.worst is None or number > self.worst_value):
            self.worst, self.worst_value = worst, number

    def _add_peer(self, name: str, entry: dict[str, Any], compared: int) -> None:
        """The cross-library measurement: per other implementation, the largest difference and how many
        cases were compared (or why not)."""
        if self.peers is None:
            self.peers = {}
        kept = self.peers.setdefault(name, {"library": entry.get("library"), "target": entry.get("target"),
                                            "compared": 0, "max_abs": None, "skipped": {}})
        if "skipped" in entry and "compared" not in entry:
            reason = str(entry["skipped"])[:200]
            if reason in kept["skipped"] or len(kept["skipped"]) < MAX_SKIP_REASONS:
                kept["skipped"][reason] = kept["skipped"].get(reason, 0) + 1
            return
        kept["compared"] += compared
        for reason, count in (entry.get("skipped") or {}).items() if "compared" in entry else ():
            if reason in kept["skipped"] or len(kept["skipped"]) < MAX_SKIP_REASONS:
                kept["skipped"][reason] = kept["skipped"].get(reason, 0) + count
        value = _number(entry.get("max_abs"))
        if value is None:
            return
        # the largest difference; among equal ones the lowest PSNR, so the row does not depend on the order
        # in which workers wrote their records
        rank = (value, -(_number(entry.get("psnr")) or 0.0))
        if kept["max_abs"] is None or rank > (_number(kept["max_abs"]), -(_number(kept.get("psnr")) or 0.0)):
            kept["max_abs"], kept["mismatch_fraction"] = entry.get("max_abs"), entry.get("mismatch_fraction")
            kept["psnr"] = entry.get("psnr")

    def count_issue(self, issue: str, in_scope: int, explained: int) -> None:
        scope = self.issue_scope.setdefault(issue, [0, 0])
        scope[0] += in_scope
        scope[1] += explained

    def to_dict(self) -> dict[str, Any]:
        """What an item's end record carries (empty parts left out)."""
        found: dict[str, Any] = {"counts": dict(self.counts)}
        for name in ("worst", "peers"):
            if getattr(self, name):
                found[name] = getattr(self, name)
        if self.known:
            found["known"] = sorted(self.known)
        if self.shrunk:
            found["shrunk"] = self.shrunk
        for name in ("behaviours", "diverges", "warnings", "issue_scope", "causes"):
            if getattr(self, name):
                found[name] = dict(getattr(self, name))
        return found

    def merge(self, written: dict[str, Any]) -> None:
        """Add a tally an item wrote (`to_dict`)."""
        self.counts.update({str(k): int(v) for k, v in (written.get("counts") or {}).items()})
        self.known.update(str(k) for k in written.get("known") or ())
        self.behaviours.update(written.get("behaviours") or {})
        self.diverges.update(written.get("diverges") or {})
        self.causes.update(written.get("causes") or {})
        self.shrunk += int(written.get("shrunk", 0) or 0)
        for message, count in (written.get("warnings") or {}).items():
            if message in self.warnings or len(self.warnings) < MAX_WARNING_MESSAGES:
                self.warnings[message] += int(count)
        for issue, (in_scope, explained) in (written.get("issue_scope") or {}).items():
            self.count_issue(issue, int(in_scope), int(explained))
        for name, entry in (written.get("peers") or {}).items():
            if isinstance(entry, dict):
                self._add_peer(name, entry, int(entry.get("compared", 0) or 0))
        self._consider(written.get("worst"))


class Summarizer:
    """Feed it a run's journal records (`add`), in any order across worker files; `summary` gives summary.json."""

    def __init__(self) -> None:
        self.groups: dict[GroupKey, Tally] = {}
        self.loaded: dict[str, Any] = {}
        self.used: set[str] = set()
        self.reproduced: set[str] = set()
        self.running: dict[tuple[str, str], dict[str, Any]] = {}  # per process: the item begun and not ended
        self.operations: dict[str, Any] = {}  # operation name -> its implementations (cross-library page)
        self.notes: list[dict[str, Any]] = []  # known issues not reproduced in too few cases to call them fixed
        self.families: dict[GroupKey, str] = {}
        self.stopped: list[str] = []  # items that ended because the session was interrupted

    def _group(self, record: dict[str, Any]) -> Tally:
        key = (str(record.get("machine", "")), record["test"], record["op"], record["target"],
               bool(record.get("virtual")), record["dtype"], record["mode"], record["check"])
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
        elif kind == "item":
            self.loaded.update(record.get("known_issues_loaded", {}))
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
            self.reproduced.update(group.known)

    def _mark_interrupted(self) -> list[str]:
        """The item each process was running when the session stopped (its last one begun, never ended)."""
        marked = []
        for _, record in sorted(self.running.items()):
            if "test" not in record:  # an item record without the item's fields: read them from its id
                parsed = parse_item_id(str(record.get("nodeid", "")))
                if parsed is None:
                    continue
                record = record | {"test": parsed.test, "op": parsed.test.removeprefix("test_"),
                                   "target": parsed.target, "virtual": parsed.target.startswith("vcuda"),
                                   "dtype": parsed.dtype, "mode": parsed.mode, "check": parsed.check}
            self._group(record).interrupted = True
            marked.append(str(record.get("nodeid", "")))
        return marked

    def summary(self, environment: dict[str, Any] | None, *, torn: int = 0, complete: bool = True) -> dict[str, Any]:
        """Counts per (machine, test, op, target, virtual, dtype, mode, check); independent of worker
        count and order."""
        interrupted = ([] if complete else self._mark_interrupted()) + self.stopped
        rows, totals = [], Counter()
        for key in sorted(self.groups):
            machine, test, op, target, virtual, dtype, mode, check = key
            group = self.groups[key]
            totals.update(group.counts)
            verdict = next(v for v in VERDICT_ORDER if group.counts.get(v) or v == "pass")
            if group.interrupted:
                verdict = min(verdict, "interrupted", key=VERDICT_ORDER.index)
            row = {"machine": machine, "family": self.families.get(key, ""), "test": test, "op": op,
                   "target": target, "virtual": virtual,
                   "dtype": dtype, "mode": mode, "check": check, "verdict": verdict,
                   "examples": sum(group.counts.values()), "counts": dict(sorted(group.counts.items())),
                   "worst": group.worst, "known_issues": sorted(group.known)}
            for name in ("behaviours", "diverges", "warnings", "issue_scope", "causes"):
                if getattr(group, name):
                    row[name] = dict(sorted(getattr(group, name).items()))
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
            "schema": SUMMARY_SCHEMA, "complete": complete, "torn_lines": torn, "environment": environment or {},
            "totals": dict(sorted(totals.items())), "groups": rows,
            "unused_known_issues": sorted(set(self.loaded) - self.used),
            "unreproduced_known_issues": sorted(self.used - self.reproduced),
        }
        if self.notes:
            found["notes"] = sorted(self.notes, key=lambda n: json.dumps(n, sort_keys=True))
        if self.operations:
            found["operations"] = dict(sorted(self.operations.items()))
        if interrupted:
            found["interrupted"] = interrupted
        return found


def summarize(records: Iterable[dict[str, Any]], environment: dict[str, Any] | None, *, torn: int = 0,
              complete: bool = True) -> dict[str, Any]:
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
    write_atomically(run_dir / "summary.json", json.dumps(summary, sort_keys=True, separators=(",", ":")) + "\n")
    return summary
