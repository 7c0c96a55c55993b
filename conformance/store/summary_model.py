"""The run's summary as one typed model: what the report, the terminal, the Markdown summary and merges read.

summary.json is its JSON form (schema `conformance.summary/3`, laid out by `summary_file.pack`); `read_summary`
checks a file's fields and types and gives the JSON, `Summary.from_json` the model.  A field a reader needs is one
attribute here (and one line in `Group.from_json` / `to_json`), not a string key spelt again in each reader.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from conformance.devices.facts import target_label
from conformance.store.tally import VERDICT_ORDER

NEW_VERDICTS = ("fail", "error", "interrupted", "resource")  # an item in one of these is a new failure


def rank(verdict: str) -> int:
    """Where a verdict sorts: the worst first."""
    return VERDICT_ORDER.index(verdict) if verdict in VERDICT_ORDER else len(VERDICT_ORDER)


@dataclass(frozen=True)
class Worst:
    """An item's largest measured difference, with the tolerance it was held to."""

    max_abs: Any = None
    atol: Any = None
    mismatch_fraction: Any = None
    allowed_mismatch_fraction: Any = None
    tolerance: Any = None  # the tolerance's name (an uncalibrated one says so)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Worst | None:
        if not data:
            return None
        return cls(**{f.name: data.get(f.name) for f in fields(cls)})

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# the fields of a group written only where they hold something (the summarizer leaves them out otherwise)
OPTIONAL_GROUP_FIELDS = ("behaviours", "diverges", "warnings", "issue_scope", "causes", "covered", "peers", "shrunk")


@dataclass(frozen=True)
class Group:
    """One item (a check of one op, target, dtype and mode) of one machine: its verdict and what explains it."""

    machine: str
    family: str
    test: str
    op: str
    target: str
    virtual: bool
    dtype: str
    mode: str
    check: str
    verdict: str
    examples: int
    counts: Mapping[str, int]
    worst: Worst | None = None
    known_issues: tuple[str, ...] = ()
    behaviours: Mapping[str, int] = field(default_factory=dict)  # what unmoved modules and the like did
    diverges: Mapping[str, int] = field(default_factory=dict)  # which side a cross-device gap is on
    warnings: Mapping[str, int] = field(default_factory=dict)  # a warning's first messages, with their cases
    issue_scope: Mapping[str, list[int]] = field(default_factory=dict)  # known issue -> [in scope, explained]
    causes: Mapping[str, int] = field(default_factory=dict)
    covered: Mapping[str, list[str]] = field(default_factory=dict)  # what the relations tried
    peers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # the cross-library measurement
    shrunk: int = 0
    interrupted: bool = False

    @property
    def column(self) -> str:
        """The target's column name in the terminal's tables (`machine/target` in a merged run)."""
        return f"{self.machine}/{self.target}" if self.machine else self.target

    @property
    def first_warning(self) -> str:
        """The first warning message seen (the terminal's warnings lines and the checks table show it)."""
        return next(iter(self.warnings), "")

    @property
    def labelled_target(self) -> str:
        return target_label(self.target, self.virtual)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Group:
        return cls(
            machine=str(data.get("machine") or ""),
            family=str(data.get("family") or ""),
            test=str(data.get("test", "")),
            op=str(data.get("op", "")),
            target=str(data.get("target", "")),
            virtual=bool(data.get("virtual")),
            dtype=str(data.get("dtype", "")),
            mode=str(data.get("mode", "")),
            check=str(data.get("check", "")),
            verdict=str(data.get("verdict", "")),
            examples=int(data.get("examples", 0)),
            counts=dict(data.get("counts") or {}),
            worst=Worst.from_json(data.get("worst")),
            known_issues=tuple(data.get("known_issues") or ()),
            behaviours=dict(data.get("behaviours") or {}),
            diverges=dict(data.get("diverges") or {}),
            warnings=dict(data.get("warnings") or {}),
            issue_scope=dict(data.get("issue_scope") or {}),
            causes=dict(data.get("causes") or {}),
            covered=dict(data.get("covered") or {}),
            peers=dict(data.get("peers") or {}),
            shrunk=int(data.get("shrunk") or 0),
            interrupted=bool(data.get("interrupted")),
        )

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "machine": self.machine,
            "family": self.family,
            "test": self.test,
            "op": self.op,
            "target": self.target,
            "virtual": self.virtual,
            "dtype": self.dtype,
            "mode": self.mode,
            "check": self.check,
            "verdict": self.verdict,
            "examples": self.examples,
            "counts": dict(self.counts),
            "worst": self.worst.to_json() if self.worst is not None else None,
            "known_issues": list(self.known_issues),
        }
        for name in OPTIONAL_GROUP_FIELDS:
            if getattr(self, name):
                value = getattr(self, name)
                found[name] = dict(value) if isinstance(value, Mapping) else value
        if self.interrupted:
            found["interrupted"] = True
        return found


@dataclass(frozen=True)
class Summary:
    """A run's summary (of one machine, or of a merge of several)."""

    schema: str
    complete: bool
    torn_lines: int
    environment: Mapping[str, Any]
    totals: Mapping[str, int]
    groups: tuple[Group, ...]
    unused_known_issues: tuple[str, ...] = ()
    unreproduced_known_issues: tuple[str, ...] = ()
    notes: tuple[Mapping[str, Any], ...] = ()  # known issues not reproduced in too few cases to call them fixed
    operations: Mapping[str, Any] = field(default_factory=dict)  # operation -> its implementations (cross-library)
    interrupted: tuple[str, ...] = ()  # the items a stop cut short
    machines: tuple[str, ...] = ()  # a merge's columns
    shards: Mapping[str, Any] = field(default_factory=dict)  # a merge's shards per machine

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Summary:
        return cls(
            schema=str(data.get("schema", "")),
            complete=bool(data.get("complete", True)),  # a summary that does not say is not marked incomplete
            torn_lines=int(data.get("torn_lines") or 0),
            environment=dict(data.get("environment") or {}),
            totals=dict(data.get("totals") or {}),
            groups=tuple(Group.from_json(g) for g in data.get("groups") or ()),
            unused_known_issues=tuple(data.get("unused_known_issues") or ()),
            unreproduced_known_issues=tuple(data.get("unreproduced_known_issues") or ()),
            notes=tuple(n for n in data.get("notes") or () if isinstance(n, Mapping)),
            operations=dict(data.get("operations") or {}),
            interrupted=tuple(data.get("interrupted") or ()),
            machines=tuple(data.get("machines") or ()),
            shards=dict(data.get("shards") or {}),
        )

    def to_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "schema": self.schema,
            "complete": self.complete,
            "torn_lines": self.torn_lines,
            "environment": dict(self.environment),
            "totals": dict(self.totals),
            "groups": [g.to_json() for g in self.groups],
            "unused_known_issues": list(self.unused_known_issues),
            "unreproduced_known_issues": list(self.unreproduced_known_issues),
        }
        for name in ("notes", "operations", "interrupted", "machines", "shards"):
            value = getattr(self, name)
            if value:
                found[name] = dict(value) if isinstance(value, Mapping) else list(value)
        return found


@dataclass(frozen=True)
class PreviousRun:
    """The comparable run before this one (conformance.report.history), for what changed since."""

    name: str
    path: Path
    summary: Summary
