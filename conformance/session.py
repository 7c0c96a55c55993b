"""One pytest session's conformance state: targets, store, known issues, verdicts.

The plugin owns one `ConformanceRun`; spec tests reach it through the
session-scoped `conformance_run` fixture.  Each test item is one check of one
op on one target, dtype and mode: here each checked example becomes an outcome
record, known issues are applied within their envelopes, and a failure is
raised (with a class per check and cause) with a message that ends in a
one-line rerun command.
"""
from __future__ import annotations

import os
import shlex
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from conformance import environment as env_info
from conformance import profiles
from conformance import known_issues as ki
from conformance.checks import SharedCases, CheckOutcome
from conformance.checks.baseline import output_key, output_record
from conformance.context import CaseContext
from conformance.judgement import (ConformanceFailure, ConformanceWarning, Judgement, failure_class, failure_message,
                                  judge)
from conformance.outputs import OutputRecorder
from conformance.recipes import Case
from conformance.results import Store, check_entry, safe_name
from conformance.spec import OpSpec, parse_item_id, variant_key
from conformance.targets import Target


__all__ = ["ConformanceFailure", "ConformanceRun", "ConformanceWarning"]


@dataclass
class ItemState:
    """What one test item (one check of one op, target, dtype and mode) has seen across its examples."""

    nodeid: str
    test: str
    spec: OpSpec
    target: Target
    dtype: str
    mode: str
    check: str
    applicable: list[ki.KnownIssue]
    exercised: set[str] = field(default_factory=set)
    reproduced: set[str] = field(default_factory=set)
    saved_known: set[str] = field(default_factory=set)
    in_scope: Counter = field(default_factory=Counter)  # issue id -> counted cases in its scope
    reproductions: Counter = field(default_factory=Counter)  # issue id -> counted cases it explained
    warnings: Counter = field(default_factory=Counter)  # warning message -> cases
    checked: int = 0  # cases the check applied to (it has nothing to look at when, e.g., the op raised)
    failure_seen: bool = False
    examples: int = 0
    plan_key: tuple[str, ...] = ()
    drawn: list[Case] = field(default_factory=list)  # hypothesis' generated cases, in order, once each
    settled: set[str] = field(default_factory=set)  # cases already checked without an unexpected failure
    source: str = "hypothesis"  # "plan": replaying another item's cases; "shrink": hypothesis after that


def _is_final_example() -> bool:
    """True while hypothesis replays the minimal failing example for its report."""
    try:
        from hypothesis.control import current_build_context

        return bool(getattr(current_build_context(), "is_final", False))
    except Exception:  # noqa: BLE001 - outside a hypothesis context
        return False


@dataclass
class ItemEnd:
    """What the plugin does when an item's examples are done."""

    xfail: str | None = None  # every failure was a known issue within its envelope
    fail: str | None = None  # an item-level failure: a stale strict entry, or an issue reproducing too often
    skip: str | None = None  # the check applied to none of the cases
    warnings: list[str] = field(default_factory=list)


Cell = tuple[str, str, str, str]  # (module::test, target, dtype, mode): the items of one op variant on one target


def _cell(nodeid: str) -> tuple[Cell, str] | None:
    parsed = parse_item_id(nodeid)
    if parsed is None:
        return None
    return (f"{parsed.module}::{parsed.test}", parsed.target, parsed.dtype, parsed.mode), parsed.check


class ConformanceRun:
    def __init__(self, *, targets: list[Target], run_dir: Path, worker: str, replay: Case | None,
                 known_issue_files: list[Path]) -> None:
        self.targets = {t.name: t for t in targets}
        self.run_dir = run_dir
        self.worker = worker
        self.replay = replay
        self.shared = SharedCases()
        self.item: ItemState | None = None
        # Cases hypothesis drew for a (module, test, dtype, mode), replayed on the other targets.
        self.plans: dict[tuple[str, ...], list[Case]] = {}
        self.group_by = "variant"  # xdist grouping (plugin's --group-by)
        self.cases_from: Path | None = None  # --cases-from: only these cases, no drawing
        self.narrowed: dict[str, str] = {}  # op -> why its inputs are narrowed for the imported library
        self._explicit_issue_files = known_issue_files
        self._issues_by_file: dict[Path, list[ki.KnownIssue]] = {}
        self._store: Store | None = None
        self._environment: dict[str, Any] | None = None
        self._issues_written: set[str] = set()
        self._cells: dict[Cell, list[tuple[str, str]]] | None = None  # cell -> (nodeid, check) in run order
        self._strictness: dict[tuple[str, Cell], list[bool]] = {}  # (issue, cell) -> [exercised, reproduced]
        self.report_path: Path | None = None
        self.report_error: str | None = None
        self.options: frozenset[str] = frozenset()  # optional checks this run turned on ("baseline")
        self.recorder: OutputRecorder | None = None  # each checked output, for baselines and `compare`

    def __repr__(self) -> str:  # shown in hypothesis' "Failing test case" block
        return f"ConformanceRun({str(self.run_dir)!r})"

    # -- setup -------------------------------------------------------------------------
    @property
    def environment(self) -> dict[str, Any]:
        if self._environment is None:
            self._environment = env_info.collect(list(self.targets.values()))
            self._environment["hypothesis_profile"] = profiles.current_profile()
        return self._environment

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.run_dir, self.worker, self.environment)
        return self._store

    def close(self) -> None:
        if self.recorder is not None:
            self.recorder.flush()
        if self._store is not None:
            self._store.close()

    def issue_files_for(self, module_path: Path) -> list[Path]:
        if self._explicit_issue_files:
            return self._explicit_issue_files
        beside = module_path.parent / "known_issues.toml"
        return [beside] if beside.exists() else []

    def known_issues(self, files: list[Path]) -> list[ki.KnownIssue]:
        """Entries from these files; raises KnownIssuesError on a malformed file."""
        found = []
        for path in files:
            if path not in self._issues_by_file:
                self._issues_by_file[path] = ki.load(path)
            found.extend(self._issues_by_file[path])
        return found

    # -- per item ----------------------------------------------------------------------
    def begin_item(self, item: pytest.Item, spec: OpSpec, target: str, dtype: str, mode: str, check: str) -> None:
        if self.replay is not None and (self.replay.op != spec.name or self.replay.recipe.dtype != dtype):
            pytest.skip(f"--replay case is for op {self.replay.op!r} dtype {self.replay.recipe.dtype!r}")
        try:
            issues = self.known_issues(self.issue_files_for(Path(str(item.path))))
        except ki.KnownIssuesError as exc:
            pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
        applicable = [i for i in issues if i.applies_to(spec.name, target, dtype, mode, check)]
        self.item = ItemState(item.nodeid, item.originalname, spec, self.targets[target], dtype, mode, check,
                              applicable, plan_key=variant_key(item.nodeid, item.originalname, dtype, mode))
        if self._cells is None:
            self._cells = {}
            for other in item.session.items:
                found = _cell(other.nodeid)
                if found is not None:
                    self._cells.setdefault(found[0], []).append((other.nodeid, found[1]))
        new = [i for i in issues if i.id not in self._issues_written]  # each entry once per outcome file
        self._issues_written.update(i.id for i in new)
        self.store.append({
            "kind": "item", "nodeid": item.nodeid, "worker": self.worker,
            "known_issues_loaded": {i.id: i.to_dict() for i in new},
            "known_issues_applied": [i.id for i in applicable],
        })

    def end_item(self, passed: bool) -> ItemEnd:
        """After the item's examples: xfail, an item-level failure, a skip, warnings to show."""
        state, self.item = self.item, None
        if state is None:
            return ItemEnd()
        shown = [f"{state.spec.name} on {state.target.name} [{state.dtype}, {state.mode}]: {state.check} in "
                 f"{count} of {state.examples} cases: {message}" for message, count in state.warnings.items()]
        stale = self._stale(state) if self.replay is None else []  # one replayed case says nothing of an entry
        if not passed:
            return ItemEnd(warnings=shown)
        if state.source == "hypothesis" and self.replay is None and state.drawn:
            self.plans[state.plan_key] = state.drawn
        if stale:
            names = ", ".join(f"{i.id} ({i.link})" for i in stale)
            message = (f"unexpected pass: known issue {names} did not reproduce in the {state.check} or any other "
                       f"item of {state.spec.name} on {state.target.name} [{state.dtype}, {state.mode}] it applies "
                       f"to, though cases in its scope were drawn; it may be fixed in this build: delete the entry "
                       f"from {stale[0].source.split(' [[')[0]}")
            self._record_item_verdict(state, "fail", message)
            return ItemEnd(fail=message, warnings=shown)
        too_often = [m for i in state.applicable
                     if (m := i.too_often(state.reproductions[i.id], state.in_scope[i.id])) is not None]
        if too_often:
            message = "; ".join(too_often)
            self._record_item_verdict(state, "fail", message)
            return ItemEnd(fail=message, warnings=shown)
        if state.reproduced:
            hit = [i for i in state.applicable if i.id in state.reproduced]
            return ItemEnd(xfail="; ".join(f"known issue {i.id}: {i.reason} ({i.link})" for i in hit), warnings=shown)
        if state.examples and not state.checked:
            return ItemEnd(skip=f"the {state.check} check applied to none of the {state.examples} cases (the op "
                                f"raised in each: see the item of the check that failed)", warnings=shown)
        return ItemEnd(warnings=shown)

    def _stale(self, state: ItemState) -> list[ki.KnownIssue]:
        """Strict entries that no item of this cell reproduced although cases in their scope were drawn,
        judged at the cell's last item the entry applies to (an entry listing several checks needs to
        reproduce in one of them, not in each)."""
        found = _cell(state.nodeid)
        if found is None:
            return []
        cell, _ = found
        items = (self._cells or {}).get(cell, [(state.nodeid, state.check)])
        position = next((n for n, (nodeid, _) in enumerate(items) if nodeid == state.nodeid), len(items) - 1)
        stale = []
        for issue in state.applicable:
            if not issue.strict:
                continue
            seen = self._strictness.setdefault((issue.id, cell), [False, False])
            seen[0] |= issue.id in state.exercised
            seen[1] |= issue.id in state.reproduced
            later = [check for _, check in items[position + 1:]
                     if issue.applies_to(state.spec.name, state.target.name, state.dtype, state.mode, check)]
            if not later and seen[0] and not seen[1]:
                stale.append(issue)
        return stale

    def record_skip(self, item: pytest.Item, target: str, dtype: str, mode: str, check: str, reason: str) -> None:
        spec: OpSpec = item.function.conformance_spec  # type: ignore[attr-defined]
        self.store.append(self._base_record(item.originalname, spec.name, self.targets[target], dtype, mode) | {
            "kind": "outcome", "nodeid": item.nodeid, "check": check, "verdict": "skipped", "phase": "item",
            "message": reason})

    def record_crash(self, nodeid: str, message: str) -> None:
        """An item whose worker process died: its test id tells the op, target, dtype, mode and check."""
        parsed = parse_item_id(nodeid)
        test = parsed.test if parsed else nodeid.rpartition("::")[2]
        target, dtype, mode, check = parsed[2:] if parsed else ("?", "?", "?", "?")
        self.store.append({
            "kind": "outcome", "nodeid": nodeid, "test": test, "op": test.removeprefix("test_"), "target": target,
            "virtual": target.startswith("vcuda"), "dtype": dtype, "mode": mode, "worker": self.worker,
            "pid": os.getpid(), "check": check, "verdict": "error", "phase": "item", "crash": True,
            "message": f"the worker process died while running this item: {message}"})

    # -- cases shared across targets ---------------------------------------------------
    def plan(self) -> list[Case] | None:
        """The cases another target's item drew for this item's op, dtype and mode, if any.

        Hypothesis costs about as much per example as a small case's op and reference
        together, so it draws once per (op, dtype, mode) and the other targets run the same
        cases: the cross-device comparison then always has its cpu baseline at hand too.
        """
        state = self.item
        if state is None or self.replay is not None:
            return None
        return self.plans.get(state.plan_key)

    def use_saved_cases(self, source: Path, plans: dict[tuple[str, ...], list[Case]]) -> None:
        self.cases_from = source
        self.plans.update(plans)

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

    # -- per example -------------------------------------------------------------------
    def case_strategy(self, spec: OpSpec, dtype: str, mode: str) -> st.SearchStrategy[Case]:
        if self.replay is not None:
            return st.just(self.replay)
        return spec.cases(dtype, mode)

    def check(self, spec: OpSpec, case: Case) -> None:
        """Run the item's check on one drawn case; raise if it fails outside the known issues."""
        state = self.item
        assert state is not None, "conformance tests run only inside the conformance plugin"
        if case.key in state.settled:
            return  # drawn again (choices differ, values do not): checking it again would find the same
        if state.source == "hypothesis" and not state.failure_seen and self.replay is None:
            state.drawn.append(case)  # generated (or the database's), before any shrinking: a plan
        ctx = self.shared.context(spec, case, state.target, state.mode)
        if ctx.run.not_emulatable is not None:
            pytest.skip(f"not emulatable on a virtual device: {ctx.run.not_emulatable}")
        if ctx.run.resource is not None:  # out of memory: recorded, and the next case runs
            self.store.append(self._base_record(state.test, spec.name, state.target, state.dtype, state.mode) | {
                "kind": "outcome", "nodeid": state.nodeid, "check": state.check, "verdict": "resource",
                "phase": "explore", "example": state.examples, "case": case.to_dict(), "message": ctx.run.resource})
            return
        outcome = ctx.outcome(state.check)
        features = spec.case_features(case) if state.applicable else {}
        judged = judge(outcome, state.applicable, features) if outcome is not None else Judgement("pass")
        phase = self._phase(state, judged.unexpected)
        counted = phase in ("explore", "final", "replay")
        if counted:
            state.examples += 1
            if self.recorder is not None and not self.recorder.has(output_key(ctx)):
                self.recorder.add(*output_record(ctx), plan=state.plan_key[:2])
        if outcome is None:  # nothing for this check to look at in this case (e.g. the op raised)
            state.settled.add(case.key)
            return
        state.checked += 1
        scoped = [i for i in state.applicable if i.in_scope(features)]
        state.exercised.update(i.id for i in scoped)
        if counted:
            state.in_scope.update(i.id for i in scoped)
        if judged.issue is not None:
            state.reproduced.add(judged.issue.id)
            if counted:
                state.reproductions[judged.issue.id] += 1
        if judged.verdict == "warning" and counted:
            state.warnings[outcome.message] += 1
        repro = self.repro_command(state.nodeid, case) if not outcome.passed else None
        self._record_example(state, case, ctx, outcome, judged, phase, repro)
        if judged.unexpected:
            state.failure_seen = True
            where = f"{spec.name} on {state.target.name}{' (virtual)' if state.target.virtual else ''} " \
                    f"[{state.dtype}, {state.mode}]"
            raise failure_class(state.check, outcome.cause or "failed")(
                failure_message(where, outcome, judged, case.to_json(), str(self.run_dir), repro or ""))
        state.settled.add(case.key)

    def _phase(self, state: ItemState, unexpected: bool) -> str:
        if state.source == "plan":
            return "explore"  # each planned case once, as hypothesis' generation would have it
        if _is_final_example():
            return "replay" if self.replay is not None else "final"
        if unexpected or state.failure_seen or state.source == "shrink":
            # hypothesis reruns the minimal failure as its final example; after a planned case
            # failed, its rerun of the earlier cases was counted already
            return "shrink"
        return "replay" if self.replay is not None else "explore"

    def repro_command(self, nodeid: str, case: Case) -> str:
        return f"python -m pytest {shlex.quote(nodeid)} --replay {shlex.quote(case.to_json())}"

    def _base_record(self, test: str, op: str, target: Target, dtype: str, mode: str) -> dict[str, Any]:
        return {"test": test, "op": op, "target": target.name, "virtual": target.virtual, "dtype": dtype,
                "mode": mode, "worker": self.worker, "pid": os.getpid()}

    def _record_item_verdict(self, state: ItemState, verdict: str, message: str) -> None:
        self.store.append(self._base_record(state.test, state.spec.name, state.target, state.dtype, state.mode) | {
            "kind": "outcome", "nodeid": state.nodeid, "check": state.check, "verdict": verdict, "phase": "item",
            "message": message})

    def _record_example(self, state: ItemState, case: Case, ctx: CaseContext, outcome: CheckOutcome,
                        judged: Judgement, phase: str, repro: str | None) -> None:
        artifact = None
        keep = phase in ("final", "replay") and judged.unexpected
        new_known = judged.issue is not None and judged.issue.id not in state.saved_known and phase == "explore"
        if keep or new_known:
            artifact = self.store.save_arrays(state.nodeid, ctx.arrays())
            if judged.issue is not None:
                state.saved_known.add(judged.issue.id)
        message = f"{outcome.message} [{judged.outside}]" if judged.outside else outcome.message
        entry = check_entry(outcome, judged.verdict, message, judged.issue.to_dict() if judged.issue else None)
        record = self._base_record(state.test, state.spec.name, state.target, state.dtype, state.mode) | {
            "kind": "example", "nodeid": state.nodeid, "phase": phase, "example": state.examples,
            "checks": [entry]}
        if repro is not None:
            record["repro"] = repro
        if artifact is not None:
            record["artifact"] = artifact
        self.store.append_example(record, case.json)


def warn(messages: list[str]) -> None:
    """Show an item's lesser findings in pytest's warnings summary (once per item and message)."""
    for message in messages:
        warnings.warn(ConformanceWarning(message), stacklevel=2)


def default_run_name() -> str:
    import time

    return time.strftime("%Y%m%d-%H%M%S")


def unique_run_dir(reports_dir: Path, name: str) -> Path:
    candidate, n = reports_dir / safe_name(name), 1
    while candidate.exists():
        n += 1
        candidate = reports_dir / f"{safe_name(name)}-{n}"
    return candidate
