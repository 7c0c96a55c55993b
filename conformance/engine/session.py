"""One worker's conformance run: the path of each case of each item, in one direction.

`ConformanceRun.check(spec, case)` is the path of one case (docs/architecture.md): the case's context
from the cache (input, reference, the op's run on the target, shared with the variant's other items) ->
the check's outcome -> judgement against the known issues in scope -> the item's ledger -> a record ->
a failure raised with a rerun line.  The parts, each with one job: the frozen `RunConfig`, `CaseSources`
(where cases come from), `CaseCache`, `IssueBook` (which entries apply, strictness across a cell),
`ItemState` (an item's ledger), `CaseRecorder`, `IsaPrefetch`.  The plugin turns what this returns
(`ItemEnd`, a skip reason, `CaseNotRunnable`) into pytest's outcomes.
"""

from __future__ import annotations

import contextlib
import unittest
from collections.abc import Callable, Iterable
from typing import Any

from conformance.checks.registry import CheckOutcome, value_checks
from conformance.devices import deadline
from conformance.devices.compiled_target import COMPILE_STATS
from conformance.engine import interrupts
from conformance.engine.case_sources import CaseSources, PlannedFailure, drawn_choices, from_config
from conformance.engine.cases import CaseCache
from conformance.engine.config import RunConfig
from conformance.engine.issue_book import IssueBook
from conformance.engine.judgement import ConformanceFailure, Judgement, failure_class, failure_message, judge
from conformance.engine.ledger import ItemEnd, ItemInfo, ItemState, shown_warnings, verdict
from conformance.engine.ordering import variant_group
from conformance.engine.prefetch import IsaPrefetch
from conformance.engine.recorder import CaseRecorder
from conformance.engine.run_folders import release_run_dir
from conformance.engine.worst import WorstCases
from conformance.spec import known_issues as ki
from conformance.spec.item_ids import variant_key
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import Case
from conformance.store import compile_stats
from conformance.store.disk import DiskFull
from conformance.store.outputs import OutputRecorder
from conformance.store.records import RecordWriter
from conformance.store.repro_command import repro_line, rerun_line

__all__ = ["CaseNotRunnable", "ConformanceFailure", "ConformanceRun", "PlannedFailure"]


class CaseNotRunnable(unittest.SkipTest):
    """The target cannot run the op at all (a virtual device lacks what it needs): the item is skipped.  A
    SkipTest, which hypothesis passes on without shrinking and pytest reports as a skip."""


class ConformanceRun:
    def __init__(self, cfg: RunConfig, environment: Callable[[], dict[str, Any]]) -> None:
        self.cfg = cfg
        self._environment = environment
        COMPILE_STATS.clear()  # this run's counts only (an earlier session in this process, pytester's, kept its own)
        self.targets = {t.name: t for t in cfg.targets}
        self.run_dir, self.worker, self.replay = cfg.run_dir, cfg.worker, cfg.replay
        self.sources: CaseSources
        self.sources, baseline = from_config(cfg)
        self.cache = CaseCache(overrides=cfg.overrides, baseline=baseline, timeout_s=cfg.case_timeout_s)
        self.options: frozenset[str] = frozenset({"baseline"} if baseline is not None else ()) | cfg.relations
        self.issues = IssueBook(cfg.known_issue_files, value_checks())
        folder = cfg.record_outputs or (cfg.run_dir / "outputs" if baseline is not None else None)
        self.recorder = CaseRecorder(
            RecordWriter(cfg.run_dir, cfg.worker, environment),
            OutputRecorder(folder, cfg.worker) if folder is not None else None,
        )
        self.prefetch = IsaPrefetch(cfg.targets, self.cache)
        self.narrowed: dict[str, str] = {}  # op -> why its inputs are narrowed for the imported library
        self.knows_items = False
        # items whose failure is in the store (an unexpected example, an item-level fail or error): any other item
        # that pytest fails gets an item-level error record, so the summary never counts it as a pass
        self.failures_recorded: set[str] = set()
        self._applicable: dict[tuple[str, ...], list[ki.KnownIssue]] = {}  # the known issues an item is about

    def __repr__(self) -> str:  # shown in hypothesis' "Failing test case" block
        return f"ConformanceRun({str(self.run_dir)!r})"

    @property
    def environment(self) -> dict[str, Any]:
        """What this process runs on (collected on first use: versions, devices)."""
        return self._environment()

    @property
    def disk_full(self) -> str | None:  # the write a full disk refused: nothing is recorded after it, the run stops
        return self.recorder.records.store.full

    def close(self) -> None:
        self.recorder.close()
        for target in self.cfg.targets:
            target.close_worker()
        with contextlib.suppress(DiskFull):  # the store said it, with the first file the disk refused
            compile_stats.write(self.run_dir, self.worker, COMPILE_STATS)
        if self.worker == "main":  # the process that claimed the folder, after every worker's end
            release_run_dir(self.run_dir)

    def learn_items(self, items: Iterable[ItemInfo]) -> None:
        """The session's conformance items in run order (once): strictness is judged at a cell's last item, and
        cases are handed to the ISA workers only for ops with items there."""
        found = list(items)
        self.issues.learn_order(i.nodeid for i in found)
        self.prefetch.learn_items(found)
        self.knows_items = True

    # -- per item ----------------------------------------------------------------------
    def replay_mismatch(self, info: ItemInfo) -> str | None:
        """Why this item is skipped under --replay (the replayed case is another op's or dtype's), or None."""
        if self.replay is not None and (self.replay.op != info.spec.name or self.replay.recipe.dtype != info.dtype):
            return f"--replay case is for op {self.replay.op!r} dtype {self.replay.recipe.dtype!r}"
        return None

    def begin_item(self, info: ItemInfo) -> ItemState:
        """Start an item: its state, which its caller hands to `check`, `plan`, `run_plan` and `end_item` (raises
        KnownIssuesError for a broken file)."""
        spec = info.spec
        issues = self.issues.entries(self.issues.files_for(info.module_path))
        key = (str(info.module_path), spec.name, info.target, info.dtype, info.mode, info.check)
        applicable = self._applicable.get(key)
        if applicable is None:
            applicable = self._applicable[key] = [
                i for i in issues if i.applies_to(spec.name, info.target, info.dtype, info.mode, info.check)
            ]
        member = spec.member
        shared_key = (
            (info.nodeid.split("::")[0], f"operation:{member.operation.name}", info.dtype, info.mode)
            if member is not None and member.shares_cases
            else None
        )
        state = ItemState(
            info,
            self.targets[info.target],
            applicable,
            plan_key=variant_key(info.nodeid, info.test, info.dtype, info.mode),
            shared_key=shared_key,
        )
        if member is not None and info.check == "reference":
            state.worst = WorstCases()
        group = variant_group(info.nodeid, info.test, info.dtype, info.mode, spec)
        self.cache.begin_group(group)
        self.prefetch.enter_group(group)
        self.recorder.item_started(state, self.issues.first_seen(issues), self.issues.first_applying(applicable))
        return state

    def end_item(
        self, state: ItemState, passed: bool, interrupted: bool = False, raised: BaseException | None = None
    ) -> ItemEnd:
        """After the item's cases: what it comes to (an xfail, an item-level failure, a skip, warnings).  An item
        that raised something other than a recorded finding (the harness, a sampler or a module's constructor
        raising before any check) is recorded as an item-level error, never left as a pass."""
        info = state.info
        if state.failure_seen:
            self.failures_recorded.add(info.nodeid)
        elif not passed and not interrupted and raised is not None:  # None: skipped (a target that cannot run it)
            self.recorder.item_verdict(state, "error", raised_before_checks(raised))
            self.failures_recorded.add(info.nodeid)
        staleness = (
            ki.Staleness()
            if self.replay is not None
            else self.issues.stale(  # one replayed case says nothing
                info.nodeid, info.check, info.spec.name, state.applicable, state.in_scope, state.reproduced
            )
        )
        self.recorder.item_ended(state, staleness, interrupted=interrupted)
        if not passed:
            return ItemEnd(warnings=shown_warnings(state))
        if state.source == "hypothesis":
            self.sources.remember(state.plan_key, state.drawn)
            if state.shared_key is not None:
                self.sources.remember(state.shared_key, state.drawn)
        ended = verdict(state, staleness)
        if ended.fail:
            self.recorder.item_verdict(state, "fail", ended.fail)
            self.failures_recorded.add(info.nodeid)
        return ended

    def record_skip(self, info: ItemInfo, reason: str) -> None:
        base = self.recorder.records.base(info.test, info.spec.name, self.targets[info.target], info.dtype, info.mode)
        self.recorder.skipped(base, info.nodeid, info.check, reason)

    def record_failed(self, info: ItemInfo, when: str, message: str) -> None:
        """pytest failed the item outside its cases (its setup or teardown, or a warning under --fail-on-warning)
        and nothing in the store says so yet: an item-level error, so the summary agrees with pytest."""
        if info.nodeid in self.failures_recorded:
            return
        self.failures_recorded.add(info.nodeid)
        base = self.recorder.records.base(info.test, info.spec.name, self.targets[info.target], info.dtype, info.mode)
        message = f"the item failed in its {when}: {message}"
        self.recorder.records.item_verdict(base, info.nodeid, info.check, "error", message)

    # -- cases shared across targets ---------------------------------------------------
    def plan(self, state: ItemState) -> list[Case] | None:
        """Cases to check in order instead of drawing: another target's draw, saved ones, or the cases
        another implementation of the same operation drew (relabelled with this op's name)."""
        found = self.sources.planned(state.plan_key)
        if found is None and state.shared_key is not None and self.sources.kind == "drawn":
            shared = self.sources.planned(state.shared_key)
            if shared is not None:
                found = [c.relabelled(state.spec.name) for c in shared]
                for case, relabelled in zip(shared, found, strict=True):
                    self.sources.note_drawn(case, None, also=relabelled)
                self.sources.remember(state.plan_key, found)
        return found

    def run_plan(self, state: ItemState, cases: list[Case]) -> PlannedFailure | None:
        """Check the planned cases in order; the first unexpected failure is returned, not raised."""
        state.source = "plan"
        for case in cases:
            try:
                self.check(state, state.spec, case)
            except ConformanceFailure as failure:
                state.source = "shrink"  # the caller now lets hypothesis shrink it
                return PlannedFailure(failure, case, self.sources.choices_of(case))
        return None

    def case_strategy(self, spec: OpSpec, dtype: str, mode: str) -> Any:
        return self.sources.strategy(spec, dtype, mode)

    # -- per example: the path of one case ---------------------------------------------
    def check(self, state: ItemState, spec: OpSpec, case: Case) -> None:
        """Run the item's check on one case; raise if it fails outside the known issues."""
        interrupts.raise_if_requested()  # a stop another frame swallowed ends the item at its next case
        if case.key in state.settled:
            return  # drawn again (choices differ, values do not): checking it again would find the same
        self.prefetch.hand_over(state, case)
        if state.source == "hypothesis" and not state.failure_seen and self.replay is None:
            state.drawn.append(case)  # generated (or the database's), before any shrinking: a plan
            self.sources.note_drawn(case, drawn_choices())
        mode = state.info.mode
        stamp = deadline.next_check()
        if not self.cache.has_context(spec, case, state.target, mode):
            self.recorder.case_started(state, case, stamp)  # the op runs now: if it kills or hangs the process
        ctx = self.cache.context(spec, case, state.target, mode)
        if ctx.run.not_run is not None:
            raise CaseNotRunnable(state.target.not_run_message(ctx.run.not_run))
        if ctx.run.resource is not None:  # out of memory: recorded, and the next case runs
            state.out_of_memory += 1
            self.recorder.resource(state, case, ctx.run.resource)
            return
        outcome = self.cache.outcome(ctx, state.check)
        features = spec.case_features(case, ctx.sampled) if state.applicable else {}
        state.features_seen.update(features)
        judged = judge(outcome, state.applicable, features) if outcome is not None else Judgement("pass")
        phase = state.phase(judged.unexpected, self.replay is not None)
        if phase.counted:
            state.examples += 1
            if state.worst is not None and outcome is not None:
                state.worst.observe(ctx, outcome)
            self.recorder.output(state, ctx)
        if outcome is None:  # nothing for this check to look at in this case (e.g. the op raised)
            state.settled.add(case.key)
            return
        state.count(judged, self._scoped(state, outcome, judged, features), phase)
        repro = rerun_line(state.info.rerun_id, case.to_json(), state.target.facts()) if not outcome.passed else None
        standing = judged.unexpected and state.source == "plan" and self.sources.choices_of(case) is None  # saved
        self.recorder.example(state, case, ctx, outcome, judged, phase, repro, standing=standing)
        if judged.unexpected:
            state.failure_seen = True
            raise failure_class(state.check, outcome.cause or "failed")(
                failure_message(
                    state.where,
                    outcome,
                    judged,
                    case.to_json(),
                    str(self.run_dir),
                    repro or "",
                    repro_line(state.info.rerun_id, state.check, self.run_dir),
                )
            )
        state.settled.add(case.key)

    @staticmethod
    def _scoped(
        state: ItemState, outcome: CheckOutcome, judged: Judgement, features: dict[str, Any]
    ) -> list[ki.KnownIssue]:
        """The entries in whose scope this case was; an entry that also covers a failure another entry explained
        could not show in it."""
        scoped = [i for i in state.applicable if i.in_scope(features)]
        if judged.issue is not None:
            scoped = [i for i in scoped if i is judged.issue or not i.covers(outcome.check, outcome.message, features)]
        return scoped


def raised_before_checks(raised: BaseException) -> str:
    """What an item that raised outside the checks' findings is recorded as saying (its exception's first line)."""
    first = (str(raised).strip().splitlines() or [""])[0]
    return f"the item raised before any check was recorded: {type(raised).__name__}: {first}"[:2000]
