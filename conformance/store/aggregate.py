"""The run's summary, aggregated while the records stream past.

Memory follows the number of groups (op, target, dtype, mode, check), not the number of
examples: a group keeps counts, its worst example's numbers and the ids it saw.  An item that
was running when the session stopped (Ctrl-C, SIGTERM, a kill) is marked `interrupted`, so a
half-checked item is never shown as a plain pass.
"""
from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance.store.reader import RunRecords, load_environment
from conformance.store.writer import write_atomically

SUMMARY_SCHEMA = "conformance.summary/1"
COUNTED_PHASES = ("explore", "final", "replay", "item")
VERDICT_ORDER = ("fail", "error", "known_issue", "warning", "resource", "interrupted", "skipped", "pass")

GroupKey = tuple[str, str, str, str, bool, str, str, str]


class _Group:
    __slots__ = ("counts", "worst", "worst_value", "known", "behaviours", "diverges", "interrupted", "peers")

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.worst: dict[str, Any] | None = None
        self.worst_value = -math.inf
        self.known: set[str] = set()
        self.behaviours: Counter[str] = Counter()
        self.diverges: Counter[str] = Counter()
        self.interrupted = False
        self.peers: dict[str, dict[str, Any]] | None = None

    def add_peers(self, peers: dict[str, Any]) -> None:
        """The cross-library measurement: per other implementation, the largest difference and how
        many cases were compared (or why not)."""
        if self.peers is None:
            self.peers = {}
        for name, entry in peers.items():
            if not isinstance(entry, dict):
                continue
            kept = self.peers.setdefault(name, {"library": entry.get("library"), "target": entry.get("target"),
                                                "compared": 0, "max_abs": None, "skipped": {}})
            if "skipped" in entry:
                reason = str(entry["skipped"])[:200]
                if reason in kept["skipped"] or len(kept["skipped"]) < 5:
                    kept["skipped"][reason] = kept["skipped"].get(reason, 0) + 1
                continue
            kept["compared"] += 1
            value = _number(entry.get("max_abs"))
            if value is None:
                continue
            # the largest difference; among equal ones the lowest PSNR, so the row does not depend on the order
            # in which workers wrote their records
            rank = (value, -(_number(entry.get("psnr")) or 0.0))
            if kept["max_abs"] is None or rank > (_number(kept["max_abs"]), -(_number(kept.get("psnr")) or 0.0)):
                kept["max_abs"], kept["mismatch_fraction"] = entry.get("max_abs"), entry.get("mismatch_fraction")
                kept["psnr"] = entry.get("psnr")

    def add(self, record: dict[str, Any]) -> None:
        self.counts[record["verdict"]] += 1
        if record.get("known_issue"):
            self.known.add(record["known_issue"]["id"])
        if record.get("behaviour"):
            self.behaviours[record["behaviour"]] += 1
        if record.get("diverges"):
            self.diverges[record["diverges"]] += 1
        peers = (record.get("details") or {}).get("peers") if isinstance(record.get("details"), dict) else None
        if isinstance(peers, dict):
            self.add_peers(peers)
        metrics = record.get("metrics") or {}
        value = metrics.get("max_abs")
        if value is None:
            return
        number = float(value)  # also parses the "inf"/"nan" strings json_safe wrote
        number = math.inf if math.isnan(number) else number
        if self.worst is None or number > self.worst_value:
            tol = record.get("tolerance") or {}
            self.worst_value = number
            self.worst = {"max_abs": value, "mismatch_fraction": metrics.get("mismatch_fraction"),
                          "tolerance": tol.get("name"), "atol": tol.get("atol"),
                          "allowed_mismatch_fraction": tol.get("max_mismatch_fraction")}


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return math.inf if math.isnan(number) else number


class Summarizer:
    """Feed it records (`add`), in any order across worker files; `summary` gives summary.json."""

    def __init__(self) -> None:
        self.groups: dict[GroupKey, _Group] = {}
        self.loaded: dict[str, Any] = {}
        self.used: set[str] = set()
        self.reproduced: set[str] = set()
        self.running: dict[tuple[str, str], tuple[str, set[GroupKey]]] = {}  # per process: item last begun
        self.operations: dict[str, Any] = {}  # operation name -> its implementations (cross-library page)

    def add(self, record: dict[str, Any]) -> None:
        if record.get("known_issue"):
            self.reproduced.add(record["known_issue"]["id"])
        stream = (str(record.get("machine", "")), str(record.get("worker", "")))
        kind = record.get("kind")
        if kind == "operation":
            described = record.get("operation")
            if isinstance(described, dict) and isinstance(described.get("name"), str):
                self.operations.setdefault(described["name"], described)
            return
        if kind == "item":
            self.loaded.update(record.get("known_issues_loaded", {}))
            self.used.update(record.get("known_issues_applied", []))
            self.running[stream] = (str(record.get("nodeid", "")), set())
            return
        if kind == "item_end":  # written when an item finishes (if the session records it)
            if self.running.get(stream, ("",))[0] == record.get("nodeid"):
                del self.running[stream]
            return
        if record.get("phase") not in COUNTED_PHASES:
            return
        key = (record.get("machine", ""), record["test"], record["op"], record["target"],
               bool(record.get("virtual")), record["dtype"], record["mode"], record["check"])
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = _Group()
        group.add(record)
        current = self.running.get(stream)
        if current is not None and current[0] == record.get("nodeid"):
            current[1].add(key)

    def _mark_interrupted(self) -> list[str]:
        """The item each process was running when the session stopped (its last one begun)."""
        try:
            from conformance.item_ids import parse_item_id
        except ImportError:  # before item ids had a module of their own
            from conformance.spec import parse_item_id

        marked = []
        for (machine, _), (nodeid, keys) in sorted(self.running.items()):
            parsed = parse_item_id(nodeid)
            if not keys and parsed is not None:  # stopped before its first example was recorded
                keys = {(machine, parsed.test, parsed.test.removeprefix("test_"), parsed.target,
                         parsed.target.startswith("vcuda"), parsed.dtype, parsed.mode, parsed.check)}
            if not keys:
                continue
            marked.append(nodeid)
            for key in keys:
                self.groups.setdefault(key, _Group()).interrupted = True
        return marked

    def summary(self, environment: dict[str, Any] | None, *, torn: int = 0, complete: bool = True) -> dict[str, Any]:
        """Counts per (machine, test, op, target, virtual, dtype, mode, check); independent of worker
        count and order."""
        interrupted = [] if complete else self._mark_interrupted()
        rows, totals = [], Counter()
        for key in sorted(self.groups):
            machine, test, op, target, virtual, dtype, mode, check = key
            group = self.groups[key]
            totals.update(group.counts)
            verdict = next(v for v in VERDICT_ORDER if group.counts.get(v) or v == "pass")
            if group.interrupted:
                verdict = min(verdict, "interrupted", key=VERDICT_ORDER.index)
            row = {"machine": machine, "test": test, "op": op, "target": target, "virtual": virtual,
                   "dtype": dtype, "mode": mode, "check": check, "verdict": verdict,
                   "examples": sum(group.counts.values()), "counts": dict(sorted(group.counts.items())),
                   "worst": group.worst, "known_issues": sorted(group.known)}
            if group.behaviours:  # what unmoved modules did
                row["behaviours"] = dict(sorted(group.behaviours.items()))
            if group.diverges:  # which side a cross-device gap is on
                row["diverges"] = dict(sorted(group.diverges.items()))
            if group.peers:  # the cross-library measurement
                row["peers"] = group.peers
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
        if self.operations:
            found["operations"] = dict(sorted(self.operations.items()))
        if interrupted:
            found["interrupted"] = interrupted
        return found


def summarize(records: Iterable[dict[str, Any]], environment: dict[str, Any] | None, *, torn: int = 0,
              complete: bool = True) -> dict[str, Any]:
    """The summary of records from any iterable (a list, or a `RunRecords` stream)."""
    summarizer = Summarizer()
    for record in records:
        summarizer.add(record)
    return summarizer.summary(environment, torn=torn, complete=complete)


def write_summary(run_dir: Path, *, complete: bool,
                  outcomes: tuple[list[dict[str, Any]], int] | None = None) -> dict[str, Any]:
    """Summarise the run's records (streamed from disk now, or the `read_outcomes` result the
    caller already has) into run_dir/summary.json."""
    if outcomes is not None:
        summary = summarize(outcomes[0], load_environment(run_dir), torn=outcomes[1], complete=complete)
    else:
        records = RunRecords(run_dir, cases=False)
        summarizer = Summarizer()
        for record in records:
            summarizer.add(record)
        summary = summarizer.summary(load_environment(run_dir), torn=records.torn, complete=complete)
    write_atomically(run_dir / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary
