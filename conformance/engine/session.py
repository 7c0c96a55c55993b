"""One worker's conformance run: the life of a test item and the judgement of each of its cases.

A test item is one check of one op on one target, dtype and mode.  `ConformanceRun.check` is
the path of one case (docs/architecture.md): its context (input, reference, the op's run on
the target, shared with the variant's other items) -> the check's outcome -> judgement against
the known issues in scope -> a record -> a failure raised with a rerun line.  Configuration
comes frozen (`RunConfig`), cases from `CaseSources`, known-issue bookkeeping from `IssueBook`,
records go through `RecordWriter`; pytest hooks live in plugin.py.
"""
from __future__ import annotations

import math
import shlex
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.spec import known_issues as ki
from conformance.devices.calls import prefetch_on_isa
from conformance.devices.isa_feed import close_all as close_isa_workers
from conformance.devices.isa_feed import worker as isa_worker
from conformance.engine.case_sources import is_final_example
from conformance.checks import CheckOutcome, SharedCases
from conformance.checks.baseline import output_key, output_record
from conformance.engine.config import RunConfig
from conformance.checks.context import CaseContext
from conformance.engine.issue_book import IssueBook, unknown_where_keys
from conformance.spec.item_ids import variant_key
from conformance.engine.ordering import variant_group
from conformance.engine.judgement import ConformanceFailure, Judgement, failure_class, failure_message, judge
from conformance.spec.recipes import Case
from conformance.store.records import RecordWriter
from conformance.spec.opspec import OpSpec
from conformance.devices.targets import Target
from conformance.engine.worst import WorstCases

__all__ = ["ConformanceFailure", "ConformanceRun"]

PREFETCH_BYTES = 512 * 2**20  # estimated outputs held for a variant group's ISA items, at most


@dataclass
class ItemState:
    """What one test item has seen across its examples."""

    nodeid: str
    test: str
    spec: OpSpec
    target: Target
    dtype: str
    mode: str
    check: str
    applicable: list[ki.KnownIssue]
    reproduced: set[str] = field(default_factory=set)
    in_scope: Counter = field(default_factory=Counter)  # issue id -> counted cases in its scope
    reproductions: Counter = field(default_factory=Counter)  # issue id -> counted cases it explained
    warnings: Counter = field(default_factory=Counter)  # warning message -> cases
    features_seen: set[str] = field(default_factory=set)  # feature names of its cases (for `where` typos)
    checked: int = 0  # cases the check applied to (it has nothing to look at when, e.g., the op raised)
    failure_seen: bool = False
    examples: int = 0
    plan_key: tuple[str, ...] = ()
    shared_key: tuple[str, ...] | None = None  # an operation's cases, shared by its implementations
    drawn: list[Case] = field(default_factory=list)  # hypothesis' generated cases, in order, once each
    settled: set[str] = field(default_factory=set)  # cases already checked without an unexpected failure
    source: str = "hypothesis"  # "plan": replaying another item's cases; "shrink": hypothesis after that
    worst: WorstCases | None = None  # an operation implementation's reference item: its worst cases
    base: dict[str, Any] = field(default_factory=dict)  # the item's fields in every record of it

    @property
    def where(self) -> str:
        return f"{self.spec.name} on {self.target.name}{' (virtual)' if self.target.virtual else ''} " \
               f"[{self.dtype}, {self.mode}]"


@dataclass
class ItemEnd:
    """What the plugin does when an item's examples are done."""

    xfail: str | None = None  # every failure was a known issue within its envelope
    fail: str | None = None  # an item-level failure: a stale strict entry, an issue reproducing too often
    skip: str | None = None  # the check applied to none of the cases
    warnings: list[str] = field(default_factory=list)  # lesser findings (in the store; the terminal aggregates them)


class ConformanceRun:
    def __init__(self, cfg: RunConfig, environment: Any) -> None:
        from conformance.devices.calls import set_case_timeout
        from conformance.engine.case_sources import from_config

        self.cfg = cfg
        self.targets = {t.name: t for t in cfg.targets}
        self.run_dir, self.worker, self.replay = cfg.run_dir, cfg.worker, cfg.replay
        self.sources, baseline = from_config(cfg)
        self.shared = SharedCases(overrides=cfg.overrides)
        self.shared.baseline = baseline
        self.options: frozenset[str] = frozenset({"baseline"} if baseline is not None else ())
        self.issues = IssueBook(cfg.known_issue_files)
        self._environment = environment
        self.records = RecordWriter(cfg.run_dir, cfg.worker, lambda: self.environment)
        self.recorder = None  # each checked output, for baselines and `compare`
        folder = cfg.record_outputs or (cfg.run_dir / "outputs" if baseline is not None else None)
        if folder is not None:
            from conformance.store.outputs import OutputRecorder

            self.recorder = OutputRecorder(folder, cfg.worker)
        self.item: ItemState | None = None
        self.narrowed: dict[str, str] = {}  # op -> why its inputs are narrowed for the imported library
        self.operations_recorded: set[str] = set()
        self._worst_written: dict[tuple[str, str, str], tuple[float, str]] = {}  # (op, target, against) -> kept
        self._known_arrays: set[tuple[str, str, str]] = set()  # (issue, op, target) whose arrays are kept
        self.isa_targets = [t for t in cfg.targets if getattr(t, "level", None) is not None]
        self._isa_items: set[tuple[str, str, str, str]] | None = None  # (test, dtype, mode, target) on ISA targets
        self._group: tuple[str, ...] | None = None  # the variant group the running items belong to
        self._prefetched: set[str] = set()  # cases of the group already handed to the ISA workers
        self._prefetched_bytes = 0
        self._prefetch_plans: dict[tuple[str, str, str], list[tuple[OpSpec, list[Any]]]] = {}
        self._applicable: dict[tuple[str, ...], list[ki.KnownIssue]] = {}  # the known issues an item is about
        set_case_timeout(cfg.case_timeout_s)  # the op timer is process-wide (a signal), set once per process

    def __repr__(self) -> str:  # shown in hypothesis' "Failing test case" block
        return f"ConformanceRun({str(self.run_dir)!r})"

    @property
    def environment(self) -> dict[str, Any]:
        return self._environment() if callable(self._environment) else self._environment

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.flush()
        self.records.close()
        close_isa_workers()

    # -- per item ----------------------------------------------------------------------
    def begin_item(self, item: pytest.Item, spec: OpSpec, target: str, dtype: str, mode: str, check: str) -> None:
        if self.replay is not None and (self.replay.op != spec.name or self.replay.recipe.dtype != dtype):
            pytest.skip(f"--replay case is for op {self.replay.op!r} dtype {self.replay.recipe.dtype!r}")
        try:
            issues = self.issues.entries(self.issues.files_for(Path(str(item.path))))
        except ki.KnownIssuesError as exc:
            pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
        key = (str(item.path), spec.name, target, dtype, mode, check)
        applicable = self._applicable.get(key)
        if applicable is None:
            applicable = self._applicable[key] = [i for i in issues if i.applies_to(spec.name, target, dtype, mode,
                                                                                      check)]
        member = spec.member
        shared_key = (item.nodeid.split("::")[0], f"operation:{member.operation.name}", dtype, mode) \
            if member is not None and member.shares_cases else None
        self.item = ItemState(item.nodeid, item.originalname, spec, self.targets[target], dtype, mode, check,
                              applicable, plan_key=variant_key(item.nodeid, item.originalname, dtype, mode),
                              shared_key=shared_key)
        if member is not None:
            if check == "reference":
                self.item.worst = WorstCases()
            if member.operation.name not in self.operations_recorded:
                self.operations_recorded.add(member.operation.name)
                self.records.operation(member.operation.describe())
        self.issues.learn_order(item.session.items)  # once per session: the run order of every item
        self._enter_group(item, spec)
        self.records.item_started(self._base(self.item), item.nodeid, check,
                                  {i.id: i.to_dict() for i in self.issues.first_seen(issues)},
                                  [i.id for i in applicable])

    def end_item(self, passed: bool, interrupted: bool = False) -> ItemEnd:
        """After the item's examples: xfail, an item-level failure, a skip, warnings to show."""
        state, self.item = self.item, None
        if state is None:
            return ItemEnd()
        self._write_worst(state)
        shown = [f"{state.where}: {state.check} in {count} of {state.examples} cases: {message}"
                 for message, count in state.warnings.items()]
        judged = ki.Staleness() if self.replay is not None else self.issues.stale(  # one replayed case says nothing
            state.nodeid, state.check, state.spec.name, state.applicable, state.in_scope, state.reproduced)
        notes = [{"issue": issue.id, "op": state.spec.name, "target": state.target.name, "dtype": state.dtype,
                  "mode": state.mode, "in_scope": cases, "needed": issue.cases_to_call_fixed(), "link": issue.link}
                 for issue, cases in judged.too_few]
        self.records.item_ended(self._base(state), state.nodeid, state.check, interrupted=interrupted,
                                issue_scope={i.id: (state.in_scope[i.id], state.reproductions[i.id])
                                             for i in state.applicable if state.in_scope[i.id]}, notes=notes)
        if not passed:
            return ItemEnd(warnings=shown)
        if state.source == "hypothesis":
            self.sources.remember(state.plan_key, state.drawn)
            if state.shared_key is not None:
                self.sources.remember(state.shared_key, state.drawn)
        problems = unknown_where_keys(state.applicable, state.features_seen)
        if judged.fixed:
            names = ", ".join(f"{i.id} ({i.link})" for i, _, _ in judged.fixed)
            issue, cases, chance = judged.fixed[0]
            problems.append(
                f"unexpected pass: known issue {names} did not reproduce in the {state.check} or any other item of "
                f"{state.spec.name} on {state.target.name} [{state.dtype}, {state.mode}] it applies to, in {cases} "
                f"cases in its scope (if it still reproduced in {issue.least_case_fraction:.0%} of them, the chance "
                f"of seeing none is {chance:.1e}); it may be fixed in this build: delete the entry from "
                f"{issue.source.split(' [[')[0]}")
        problems += [m for i in state.applicable
                     if (m := i.too_often(state.reproductions[i.id], state.in_scope[i.id])) is not None]
        if problems:
            message = "; ".join(problems)
            self.records.item_verdict(self._base(state), state.nodeid, state.check, "fail", message)
            return ItemEnd(fail=message, warnings=shown)
        if state.reproduced:
            hit = [i for i in state.applicable if i.id in state.reproduced]
            return ItemEnd(xfail="; ".join(f"known issue {i.id}: {i.reason} ({i.link})" for i in hit), warnings=shown)
        if state.examples and not state.checked:
            return ItemEnd(skip=f"the {state.check} check applied to none of the {state.examples} cases (the op "
                                f"raised in each: see the item of the check that failed)", warnings=shown)
        return ItemEnd(warnings=shown)

    def _write_worst(self, state: ItemState) -> None:
        """The item's worst cases, with their arrays, for the cross-library page, which shows the worst per op,
        target and comparison: one written only where it is worse than this process's worst so far (whose
        arrays it replaces)."""
        if state.worst is None:
            return
        for against, kept in state.worst.take().items():
            key = (state.spec.name, state.target.name, against)
            previous = self._worst_written.get(key)
            if previous is not None and kept.value <= previous[0]:
                continue
            artifact = self.records.store.save_arrays(f"{state.nodeid}-worst-{against}", kept.arrays)
            self.records.worst(self._base(state), state.nodeid, state.check, against, kept.value, kept.case_json,
                               artifact, kept.extra)
            if previous is not None:
                (self.run_dir / previous[1]).unlink(missing_ok=True)
            self._worst_written[key] = (kept.value, artifact)

    def _enter_group(self, item: pytest.Item, spec: OpSpec) -> None:
        """A new variant group's items begin: answers prefetched for the last group are dropped."""
        if self._isa_items is None:
            self._isa_items = {(i.originalname, i.callspec.params["dtype"], i.callspec.params["mode"],
                                i.callspec.params["target"]) for i in item.session.items
                               if getattr(i, "callspec", None) is not None and "target" in i.callspec.params
                               and i.callspec.params["target"] in {t.name for t in self.isa_targets}}
        group = variant_group(item, spec)
        if group != self._group:
            self._group = group
            self._prefetched.clear()
            self._prefetched_bytes = 0
            for target in self.isa_targets:
                isa_worker(target.level).discard()  # type: ignore[attr-defined]

    def _prefetch(self, state: ItemState, case: Case) -> None:
        """Hand a case of this variant to the ISA targets' workers as soon as it is known, for every op of the
        group that has items there, so their outputs are computed while this process checks other targets."""
        for other, targets in self._prefetch_plan(state):
            relabelled = case.relabelled(other.name)
            self._prefetched.add(relabelled.key)  # the same case under each op's name: handed over once
            if not targets or self._prefetched_bytes > PREFETCH_BYTES:
                continue
            sampled = self.shared.sampled(other, relabelled, self.shared.input(relabelled))
            for target in targets:
                prefetch_on_isa(other, relabelled, target, sampled)
                self._prefetched_bytes += 8 * math.prod(case.recipe.shape)

    def _prefetch_plan(self, state: ItemState) -> list[tuple[OpSpec, list[Any]]]:
        """The ops that check this item's cases (the operation's implementations sharing them), each with the
        ISA targets it has items on; worked out once per op, dtype and mode."""
        key = (state.spec.name, state.dtype, state.mode)
        found = self._prefetch_plans.get(key)
        if found is None:
            spec, member = state.spec, state.spec.member
            specs = [spec] if member is None or not member.shares_cases else [
                s for s in member.operation.specs()
                if s.member.shares_cases and (state.dtype, state.mode) in s.variant_pairs()]
            found = self._prefetch_plans[key] = [
                (other, [t for t in self.isa_targets if other.runs_on(t)
                         and (f"test_{other.name}", state.dtype, state.mode, t.name) in (self._isa_items or ())])
                for other in specs]
        return found

    def record_skip(self, item: pytest.Item, target: str, dtype: str, mode: str, check: str, reason: str) -> None:
        spec: OpSpec = item.function.conformance_spec  # type: ignore[attr-defined]
        base = self.records.base(item.originalname, spec.name, self.targets[target], dtype, mode)
        self.records.item_verdict(base, item.nodeid, check, "skipped", reason)

    # -- cases shared across targets ---------------------------------------------------
    def plan(self) -> list[Case] | None:
        """Cases to check in order instead of drawing: another target's draw, saved ones, or the cases
        another implementation of the same operation drew (relabelled with this op's name)."""
        state = self.item
        if state is None:
            return None
        found = self.sources.planned(state.plan_key)
        if found is None and state.shared_key is not None and self.sources.kind == "drawn":
            shared = self.sources.planned(state.shared_key)
            if shared is not None:
                found = [c.relabelled(state.spec.name) for c in shared]
                self.sources.remember(state.plan_key, found)
        return found

    def run_plan(self, cases: list[Case]) -> ConformanceFailure | None:
        """Check the planned cases in order; the first unexpected failure is returned, not raised."""
        state = self.item
        assert state is not None
        state.source = "plan"
        for case in cases:
            try:
                self.check(state.spec, case)
            except ConformanceFailure as failure:
                state.source = "shrink"  # the caller now lets hypothesis find and shrink it
                return failure
        return None

    def case_strategy(self, spec: OpSpec, dtype: str, mode: str):
        return self.sources.strategy(spec, dtype, mode)

    # -- per example: the path of one case ---------------------------------------------
    def check(self, spec: OpSpec, case: Case) -> None:
        """Run the item's check on one case; raise if it fails outside the known issues."""
        state = self.item
        assert state is not None, "conformance tests run only inside the conformance plugin"
        if case.key in state.settled:
            return  # drawn again (choices differ, values do not): checking it again would find the same
        if self.isa_targets and case.key not in self._prefetched:
            self._prefetch(state, case)
        if state.source == "hypothesis" and not state.failure_seen and self.replay is None:
            state.drawn.append(case)  # generated (or the database's), before any shrinking: a plan
        if self.worker != "main" and not self.shared.has_context(spec, case, state.target, state.mode):
            self.records.case_started(state.nodeid, case.json)  # the op runs now: if it kills the worker
        ctx = self.shared.context(spec, case, state.target, state.mode)
        if ctx.run.not_emulatable is not None:
            pytest.skip(f"not emulatable on a virtual device: {ctx.run.not_emulatable}")
        if ctx.run.resource is not None:  # out of memory: recorded, and the next case runs
            self.records.resource(self._base(state), state.nodeid, state.check, state.examples, case.to_dict(),
                                  ctx.run.resource)
            return
        outcome = ctx.outcome(state.check)
        features = spec.case_features(case, ctx.sampled) if state.applicable else {}
        state.features_seen.update(features)
        judged = judge(outcome, state.applicable, features) if outcome is not None else Judgement("pass")
        phase = self._phase(state, judged.unexpected)
        counted = phase in ("explore", "final", "replay")
        if counted:
            state.examples += 1
            if state.worst is not None and outcome is not None:
                state.worst.observe(ctx, outcome)
            if self.recorder is not None and not self.recorder.has(output_key(ctx)):
                self.recorder.add(*output_record(ctx), plan=state.plan_key[:2])
        if outcome is None:  # nothing for this check to look at in this case (e.g. the op raised)
            state.settled.add(case.key)
            return
        scoped = [i for i in state.applicable if i.in_scope(features)]
        if judged.issue is not None:  # an entry that also covers this failure could not show: another explained it
            scoped = [i for i in scoped if i is judged.issue or not i.covers(outcome.check, outcome.message, features)]
        self._count(state, judged, scoped, counted, outcome.message if judged.verdict == "warning" else None)
        repro = self.repro_command(state.nodeid, case) if not outcome.passed else None
        self._record_example(state, case, ctx, outcome, judged, phase, repro)
        if judged.unexpected:
            state.failure_seen = True
            raise failure_class(state.check, outcome.cause or "failed")(
                failure_message(state.where, outcome, judged, case.to_json(), str(self.run_dir), repro or ""))
        state.settled.add(case.key)

    @staticmethod
    def _count(state: ItemState, judged: Judgement, scoped: list[ki.KnownIssue], counted: bool,
               warning: str | None) -> None:
        state.checked += 1
        if counted:
            state.in_scope.update(i.id for i in scoped)
        if judged.issue is not None:
            state.reproduced.add(judged.issue.id)
            if counted:
                state.reproductions[judged.issue.id] += 1
        if warning is not None and counted:
            state.warnings[warning] += 1

    def _phase(self, state: ItemState, unexpected: bool) -> str:
        if state.source == "plan":
            return "explore"  # each planned case once, as hypothesis' generation would have it
        if is_final_example():
            return "replay" if self.replay is not None else "final"
        if unexpected or state.failure_seen or state.source == "shrink":
            # hypothesis reruns the minimal failure as its final example; after a planned case
            # failed, its rerun of the earlier cases was counted already
            return "shrink"
        return "replay" if self.replay is not None else "explore"

    @staticmethod
    def repro_command(nodeid: str, case: Case) -> str:
        return f"python -m pytest {shlex.quote(nodeid)} --replay {shlex.quote(case.to_json())}"

    def _base(self, state: ItemState) -> dict[str, Any]:
        if not state.base:
            state.base = self.records.base(state.test, state.spec.name, state.target, state.dtype, state.mode)
        return state.base

    def _record_example(self, state: ItemState, case: Case, ctx: CaseContext, outcome: CheckOutcome,
                        judged: Judgement, phase: str, repro: str | None) -> None:
        artifact = None
        keep = phase in ("final", "replay") and judged.unexpected
        known = (judged.issue.id, state.spec.name, state.target.name) if judged.issue is not None else None
        new_known = known is not None and known not in self._known_arrays and phase == "explore"
        if keep or new_known:
            artifact = self.records.store.save_arrays(state.nodeid, ctx.arrays())
            if known is not None:
                self._known_arrays.add(known)
        message = f"{outcome.message} [{judged.outside}]" if judged.outside else outcome.message
        self.records.example(phase, state.examples, case.json, judged.verdict, outcome, message,
                             judged.issue.id if judged.issue else None, repro, artifact)
