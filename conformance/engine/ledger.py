"""Each test item's ledger: what its cases showed, counted against the known issues that apply to it,
and the item's verdict when its cases are done.

No pytest here: `ItemEnd` says what the item comes to (pass, an item-level failure, a skip, an xfail, the
warnings to show), and the plugin turns that into pytest's outcome.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.checks.registry import REGISTRY
from conformance.devices.targets import Target
from conformance.engine.case_sources import is_final_example
from conformance.engine.issue_book import unknown_where_keys
from conformance.engine.judgement import Judgement
from conformance.engine.worst import WorstCases
from conformance.spec import known_issues as ki
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import Case
from conformance.store.tally import Phase, Tally


@dataclass(frozen=True)
class ItemInfo:
    """A conformance test item as the engine sees it (the plugin reads it off pytest's item)."""

    nodeid: str
    test: str  # the test function's name, `test_<op>`
    module_path: Path  # the case module, beside which its known-issue files are found
    spec: OpSpec
    target: str
    dtype: str
    mode: str
    check: str
    # the item as a command line started where the run was names it, where pytest's id does not (a case module
    # outside pytest's rootdir, or outside the current folder: pytest ids it from the folder or the rootdir)
    command_id: str = ""

    @property
    def rerun_id(self) -> str:
        return self.command_id or self.nodeid


@dataclass
class ItemState:
    """What one test item has seen across its cases."""

    info: ItemInfo
    target: Target
    applicable: list[ki.KnownIssue]
    plan_key: tuple[str, ...] = ()  # the variant's cases: drawn once, checked by every target's items
    shared_key: tuple[str, ...] | None = None  # an operation's cases, shared by its implementations
    reproduced: set[str] = field(default_factory=set)  # issues explaining a case, counted or not
    # the item's one count of its counted cases (the record writer's, which writes it): verdicts, known issues'
    # scope, warnings; read here, so pytest's verdict and the summary cannot disagree
    tally: Tally = field(default_factory=Tally)
    features_seen: set[str] = field(default_factory=set)  # feature names of its cases (for `where` typos)
    checked: int = 0  # cases the check applied to (it has nothing to look at when, e.g., the op raised)
    out_of_memory: int = 0  # cases that ran out of memory on the target (resource outcomes: checked by nothing)
    failure_seen: bool = False
    examples: int = 0
    drawn: list[Case] = field(default_factory=list)  # hypothesis' generated cases, in order, once each
    settled: set[str] = field(default_factory=set)  # cases already checked without an unexpected failure
    source: str = "hypothesis"  # "plan": replaying another item's cases; "shrink": hypothesis after that
    worst: WorstCases | None = None  # an operation implementation's reference item: its worst cases
    base: dict[str, Any] = field(default_factory=dict)  # the item's fields in every record of it

    @property
    def spec(self) -> OpSpec:
        return self.info.spec

    @property
    def check(self) -> str:
        return self.info.check

    @property
    def nodeid(self) -> str:
        return self.info.nodeid

    @property
    def where(self) -> str:
        info = self.info
        return f"{info.spec.name} on {self.target.label} [{info.dtype}, {info.mode}]"

    @property
    def in_scope(self) -> Counter[str]:
        """Issue id -> counted cases in its scope."""
        return Counter({issue: cases[0] for issue, cases in self.tally.issue_scope.items()})

    @property
    def reproductions(self) -> Counter[str]:
        """Issue id -> counted cases it explained."""
        return Counter({issue: cases[1] for issue, cases in self.tally.issue_scope.items()})

    def phase(self, unexpected: bool, replaying: bool) -> Phase:
        """Which phase of the item this example belongs to (the one place that decides it; `Phase.counted` says
        whether it counts, for this ledger and the records alike)."""
        if self.source == "plan":
            return Phase.EXPLORE  # each planned case once, as hypothesis' generation would have it
        if is_final_example():
            return Phase.REPLAY if replaying else Phase.FINAL
        if unexpected or self.failure_seen or self.source == "shrink":
            # hypothesis reruns the minimal failure as its final example; after a planned case
            # failed, its rerun of the earlier cases was counted already
            return Phase.SHRINK
        return Phase.REPLAY if replaying else Phase.EXPLORE

    def count(self, judged: Judgement, scoped: list[ki.KnownIssue], phase: Phase) -> None:
        """One checked case: the entries in whose scope it was and the one that explained it (which is in scope);
        its verdict and warning reach the tally with its record."""
        self.checked += 1
        if judged.issue is not None:
            self.reproduced.add(judged.issue.id)
        if phase.counted:
            for issue in scoped:
                self.tally.count_issue(issue.id, 1, int(issue is judged.issue))


@dataclass
class ItemEnd:
    """What an item comes to when its cases are done."""

    xfail: str | None = None  # every failure was a known issue within its envelope
    fail: str | None = None  # an item-level failure: a stale strict entry, an issue reproducing too often
    skip: str | None = None  # the check applied to none of the cases
    warnings: list[str] = field(default_factory=list)  # lesser findings (in the store; the terminal aggregates them)


def shown_warnings(state: ItemState) -> list[str]:
    return [
        f"{state.where}: {state.check} in {count} of {state.examples} cases: {message}"
        for message, count in state.tally.warning_cases.items()
    ]


def verdict(state: ItemState, staleness: ki.Staleness) -> ItemEnd:
    """The end of an item whose cases all ran (none failed unexpectedly): an item-level failure (a `where` key
    naming no feature, a strict entry that would have shown, an entry reproducing more often than its envelope),
    else an xfail for the known issues it saw, a skip when the check had nothing to look at, or a pass."""
    shown = shown_warnings(state)
    problems = unknown_where_keys(state.applicable, state.features_seen)
    if staleness.fixed:
        names = ", ".join(f"{i.id} ({i.link})" for i, _, _ in staleness.fixed)
        issue, cases, chance = staleness.fixed[0]
        info = state.info
        problems.append(
            f"unexpected pass: known issue {names} did not reproduce in the {info.check} or any other item of "
            f"{info.spec.name} on {info.target} [{info.dtype}, {info.mode}] it applies to, in {cases} "
            f"cases in its scope (if it still reproduced in {issue.least_case_fraction:.0%} of them, the chance "
            f"of seeing none is {chance:.1e}); it may be fixed in this build: delete the entry from "
            f"{issue.source.split(' [[')[0]}"
        )
    problems += [
        m for i in state.applicable if (m := i.too_often(state.reproductions[i.id], state.in_scope[i.id])) is not None
    ]
    if state.out_of_memory and not state.examples:  # a resource outcome each: the item checked nothing
        each = "its one case" if state.out_of_memory == 1 else f"each of its {state.out_of_memory} cases"
        problems.append(
            f"{each} ran out of memory on {state.info.target} (a resource outcome): the {state.info.check} check "
            f"checked nothing; free the device's memory or draw smaller cases"
        )
    if problems:
        return ItemEnd(fail="; ".join(problems), warnings=shown)
    if state.reproduced:
        hit = [i for i in state.applicable if i.id in state.reproduced]
        return ItemEnd(xfail="; ".join(f"known issue {i.id}: {i.reason} ({i.link})" for i in hit), warnings=shown)
    if state.examples and not state.checked:
        declared = REGISTRY.get(state.check)
        why = (
            declared.nothing
            if declared is not None and declared.nothing
            else (
                "the op raised in each: see the item of the check that failed; or none had what it compares, e.g. a "
                "batch of two"
            )
        )
        return ItemEnd(
            skip=f"the {state.check} check applied to none of the {state.examples} cases ({why})", warnings=shown
        )
    return ItemEnd(warnings=shown)
