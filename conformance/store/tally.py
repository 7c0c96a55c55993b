"""One test item's tally: counts per verdict, the worst example's numbers, known issues, what unmoved modules
did, which side a cross-device gap is on, the cross-library measurement and warnings.  It is the item's one count:
its ledger (conformance.engine.ledger) holds it and reads its known issues' scope and its warnings from it, the
record writer adds each counted example and writes it with the item's end, so pytest's verdict and the summary
(conformance.store.aggregate, which merges written tallies, one record per item) read the same numbers."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from itertools import islice
from typing import Any


class Phase(str, Enum):
    """Which part of an item's run a record belongs to, decided once (the engine's ledger, for examples) and carried
    to the records as this value, so the ledger and the tally cannot disagree on what counts.  Written by name."""

    EXPLORE = "explore"  # a drawn or planned case
    FINAL = "final"  # hypothesis' last example: the minimal failure, or the database's
    REPLAY = "replay"  # a case given with --replay
    ITEM = "item"  # an item-level outcome (a skip, a stale known issue, a crash), not an example
    SHRINK = "shrink"  # hypothesis minimising a failure: its minimal case comes again as the `final` one

    @property
    def counted(self) -> bool:
        """Whether it is an outcome of the item (a shrinking example is not: the failure is counted once)."""
        return self is not Phase.SHRINK

    @property
    def has_case(self) -> bool:
        """Whether its record holds a case another run can check again (a drawn, minimal or replayed one)."""
        return self in (Phase.EXPLORE, Phase.FINAL, Phase.REPLAY)

    @property
    def shows_failure(self) -> bool:
        """Whether it is the example a failure is shown by, before any other: hypothesis' minimal one, or the case
        given with --replay (an explored example is shown only where neither was recorded)."""
        return self in (Phase.FINAL, Phase.REPLAY)


COUNTED_PHASES = tuple(p.value for p in Phase if p.counted)
CASE_PHASES = tuple(p.value for p in Phase if p.has_case)
SHOWN_PHASES = tuple(p.value for p in Phase if p.shows_failure)  # the examples a failure is shown by, first
VERDICT_ORDER = ("fail", "error", "known_issue", "warning", "resource", "interrupted", "skipped", "pass")
MAX_WARNING_MESSAGES = 3
MAX_SKIP_REASONS = 5


# the keys of a check's details that say what it tried (conformance.checks: the relations' passing outcomes)
COVERED = ("callable", "pair", "tried", "parameters", "modes", "ranges", "fields")
MAX_COVERED = 24  # values kept per key and item: the report shows what was tried, not an inventory


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return math.inf if math.isnan(number) else number


def family(nodeid: str) -> str:
    """The case module an item comes from, as a family name: `cases/test_resize.py::...` -> `resize`."""
    return nodeid.split("::")[0].rpartition("/")[2].removesuffix(".py").removeprefix("test_")


@dataclass(frozen=True, kw_only=True)
class CountedExample:
    """What a tally keeps of one check outcome of one counted example."""

    verdict: str
    max_abs: Any = None
    mismatch_fraction: Any = None
    tolerance: str | None = None  # the tolerance's name
    atol: Any = None
    allowed_mismatch_fraction: Any = None
    known_issue: str | None = None  # the id of the entry that explained it
    behaviour: str | None = None
    diverges: str | None = None
    cause: str | None = None
    message: str = ""
    peers: dict[str, Any] | None = None  # the cross-library measurement


class Tally:
    """One item's (or one summary group's) outcomes, added one at a time or merged from a written tally."""

    __slots__ = (
        "behaviours",
        "causes",
        "counts",
        "covered",
        "diverges",
        "interrupted",
        "issue_scope",
        "known",
        "peers",
        "shrunk",
        "warning_cases",
        "worst",
        "worst_value",
    )

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.worst: dict[str, Any] | None = None
        self.worst_value = -math.inf
        self.known: set[str] = set()
        self.behaviours: Counter[str] = Counter()
        self.diverges: Counter[str] = Counter()
        self.interrupted = False
        self.peers: dict[str, dict[str, Any]] | None = None
        # warning message -> cases: all of an item's (its ledger shows each); `warnings` gives the first few
        self.warning_cases: Counter[str] = Counter()
        self.issue_scope: dict[str, list[int]] = {}  # known issue -> [cases in its scope, cases it explained]
        self.causes: Counter[str] = Counter()  # what kind of failure or warning, for those that did not pass
        self.shrunk = 0  # examples hypothesis ran while minimising a failure (not counted as outcomes)
        self.covered: dict[str, set[str]] = {}  # what the relations tried: entered callable, arguments, states, ...

    def add(self, record: dict[str, Any]) -> None:
        """One outcome record (an item-level verdict, or a check outcome as a dict)."""
        metrics = record.get("metrics") or {}
        tolerance = record.get("tolerance") or {}
        known = record.get("known_issue")
        details = record.get("details")
        self.add_example(
            CountedExample(
                verdict=record["verdict"],
                max_abs=metrics.get("max_abs"),
                mismatch_fraction=metrics.get("mismatch_fraction"),
                tolerance=tolerance.get("name"),
                atol=tolerance.get("atol"),
                allowed_mismatch_fraction=tolerance.get("max_mismatch_fraction"),
                known_issue=known.get("id") if isinstance(known, dict) else known,
                behaviour=record.get("behaviour"),
                diverges=record.get("diverges"),
                cause=record.get("cause"),
                message=record.get("message", ""),
                peers=details.get("peers") if isinstance(details, dict) else None,
            )
        )

    def add_example(self, example: CountedExample) -> None:
        """One check outcome of one counted example."""
        verdict = example.verdict
        self.counts[verdict] += 1
        if example.known_issue:
            self.known.add(example.known_issue)
        if example.behaviour:
            self.behaviours[example.behaviour] += 1
        if example.diverges:
            self.diverges[example.diverges] += 1
        if verdict != "pass" and example.cause:
            self.causes[example.cause] += 1
        if verdict == "warning":
            self.warning_cases[str(example.message or "")] += 1
        for name, entry in (example.peers or {}).items():
            if isinstance(entry, dict):
                self._add_peer(name, entry, 1)
        number = _number(example.max_abs) if example.max_abs is not None else None
        if number is not None and (self.worst is None or number > self.worst_value):
            self.worst_value = number
            self.worst = {
                "max_abs": example.max_abs,
                "mismatch_fraction": example.mismatch_fraction,
                "tolerance": example.tolerance,
                "atol": example.atol,
                "allowed_mismatch_fraction": example.allowed_mismatch_fraction,
            }

    @property
    def warnings(self) -> Counter[str]:
        """The first messages of warnings, with their cases (what a record and the summary keep)."""
        return Counter(dict(islice(self.warning_cases.items(), MAX_WARNING_MESSAGES)))

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
        kept = self.peers.setdefault(
            name,
            {
                "library": entry.get("library"),
                "target": entry.get("target"),
                "compared": 0,
                "max_abs": None,
                "skipped": {},
            },
        )
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

    def cover(self, details: dict[str, Any]) -> None:
        """What an outcome's details say its check tried (a relation's callable, arguments and states, pair, modes,
        ranges): kept per key, at most MAX_COVERED values each, for the report's "what was tried"."""
        for key in COVERED:
            value = details.get(key)
            if value is None:
                continue
            values = value if isinstance(value, (list, tuple)) else (value,)
            kept = self.covered.setdefault(key, set())
            for one in values:
                if len(kept) >= MAX_COVERED:
                    break
                kept.add(str(one))

    def count_issue(self, issue: str, in_scope: int, explained: int) -> None:
        """Cases in a known issue's scope and cases it explained (the item's ledger adds each counted case)."""
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
        if self.covered:
            found["covered"] = self.covered_lists()
        return found

    def covered_lists(self) -> dict[str, list[str]]:
        return {key: sorted(values) for key, values in sorted(self.covered.items())}

    def merge(self, written: dict[str, Any]) -> None:
        """Add a tally an item wrote (`to_dict`)."""
        self.counts.update({str(k): int(v) for k, v in (written.get("counts") or {}).items()})
        self.known.update(str(k) for k in written.get("known") or ())
        self.behaviours.update(written.get("behaviours") or {})
        self.diverges.update(written.get("diverges") or {})
        self.causes.update(written.get("causes") or {})
        self.shrunk += int(written.get("shrunk", 0) or 0)
        for key, values in (written.get("covered") or {}).items():
            if isinstance(values, list):
                self.cover({key: values} if key in COVERED else {})
        for message, count in (written.get("warnings") or {}).items():
            if message in self.warning_cases or len(self.warning_cases) < MAX_WARNING_MESSAGES:
                self.warning_cases[message] += int(count)
        for issue, (in_scope, explained) in (written.get("issue_scope") or {}).items():
            self.count_issue(issue, int(in_scope), int(explained))
        for name, entry in (written.get("peers") or {}).items():
            if isinstance(entry, dict):
                self._add_peer(name, entry, int(entry.get("compared", 0) or 0))
        self._consider(written.get("worst"))
