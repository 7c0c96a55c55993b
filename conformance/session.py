"""One pytest session's conformance state: targets, store, known issues, verdicts.

The plugin owns one `ConformanceRun`; spec tests reach it through the
session-scoped `conformance_run` fixture.  Here each checked example becomes
outcome records, known issues are applied, and a failure is raised with a
message that ends in a one-line rerun command.
"""
from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from conformance import environment as env_info
from conformance import profiles
from conformance import known_issues as ki
from conformance.checks import Baselines, CaseResult, CheckOutcome, check_case
from conformance.recipes import Case
from conformance.results import Store, safe_name
from conformance.spec import OpSpec, parse_item_id, variant_key
from conformance.targets import Target


class ConformanceFailure(AssertionError):
    """An op diverged: which check, which metric, by how much, and how to rerun it."""


@dataclass
class ItemState:
    """What one test item has seen so far across its hypothesis examples."""

    nodeid: str
    test: str
    spec: OpSpec
    target: Target
    dtype: str
    mode: str
    applicable: list[ki.KnownIssue]
    exercised: set[str] = field(default_factory=set)
    reproduced: set[str] = field(default_factory=set)
    saved_known: set[str] = field(default_factory=set)
    failure_seen: bool = False
    examples: int = 0
    plan_key: tuple[str, ...] = ()
    drawn: list[Case] = field(default_factory=list)  # hypothesis' generated cases, in order, once each
    settled: set[str] = field(default_factory=set)  # cases already checked without an unexpected failure
    source: str = "hypothesis"  # "plan": replaying another target's cases; "shrink": hypothesis after that


def _is_final_example() -> bool:
    """True while hypothesis replays the minimal failing example for its report."""
    try:
        from hypothesis.control import current_build_context

        return bool(getattr(current_build_context(), "is_final", False))
    except Exception:  # noqa: BLE001 - outside a hypothesis context
        return False


class ConformanceRun:
    def __init__(self, *, targets: list[Target], run_dir: Path, worker: str, replay: Case | None,
                 known_issue_files: list[Path]) -> None:
        self.targets = {t.name: t for t in targets}
        self.run_dir = run_dir
        self.worker = worker
        self.replay = replay
        self.baselines = Baselines()
        self.item: ItemState | None = None
        # Cases hypothesis drew for a (module, test, dtype, mode), replayed on the other targets.
        self.plans: dict[tuple[str, ...], list[Case]] = {}
        self.group_by = "variant"  # xdist grouping (plugin's --group-by)
        self.cases_from: Path | None = None  # --cases-from: only these cases, no drawing
        self._explicit_issue_files = known_issue_files
        self._issues_by_file: dict[Path, list[ki.KnownIssue]] = {}
        self._store: Store | None = None
        self._environment: dict[str, Any] | None = None
        self._issues_written: set[str] = set()
        self.report_path: Path | None = None
        self.report_error: str | None = None

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
    def begin_item(self, item: pytest.Item, spec: OpSpec, target: str, dtype: str, mode: str) -> None:
        if self.replay is not None and (self.replay.op != spec.name or self.replay.recipe.dtype != dtype):
            pytest.skip(f"--replay case is for op {self.replay.op!r} dtype {self.replay.recipe.dtype!r}")
        try:
            issues = self.known_issues(self.issue_files_for(Path(str(item.path))))
        except ki.KnownIssuesError as exc:
            pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
        applicable = [i for i in issues if i.applies_to(spec.name, target, dtype, mode)]
        self.item = ItemState(item.nodeid, item.originalname, spec, self.targets[target], dtype, mode, applicable,
                              plan_key=variant_key(item.nodeid, item.originalname, dtype, mode))
        new = [i for i in issues if i.id not in self._issues_written]  # each entry once per outcome file
        self._issues_written.update(i.id for i in new)
        self.store.append({
            "kind": "item", "nodeid": item.nodeid, "worker": self.worker,
            "known_issues_loaded": {i.id: i.to_dict() for i in new},
            "known_issues_applied": [i.id for i in applicable],
        })

    def end_item(self, passed: bool) -> tuple[str | None, str | None]:
        """After the item's examples: (xfail reason, unexpected-pass message)."""
        state, self.item = self.item, None
        if state is None or not passed:
            return None, None
        if state.source == "hypothesis" and self.replay is None and state.drawn:
            self.plans[state.plan_key] = state.drawn
        stale = [i for i in state.applicable
                 if i.strict and i.id in state.exercised and i.id not in state.reproduced]
        if stale:
            names = ", ".join(f"{i.id} ({i.link})" for i in stale)
            message = (f"unexpected pass: known issue {names} did not reproduce in {state.examples} examples "
                       f"in its scope; it may be fixed in this build: delete the entry from "
                       f"{stale[0].source.split(' [[')[0]}")
            self._record_item_verdict(state, "fail", "known_issue", message)
            return None, message
        if state.reproduced:
            hit = [i for i in state.applicable if i.id in state.reproduced]
            return "; ".join(f"known issue {i.id}: {i.reason} ({i.link})" for i in hit), None
        return None, None

    def record_skip(self, item: pytest.Item, target: str, dtype: str, mode: str, reason: str) -> None:
        spec: OpSpec = item.function.conformance_spec  # type: ignore[attr-defined]
        self.store.append(self._base_record(item.originalname, spec.name, self.targets[target], dtype, mode) | {
            "kind": "outcome", "nodeid": item.nodeid, "check": "-", "verdict": "skipped", "phase": "item",
            "message": reason})

    def record_crash(self, nodeid: str, message: str) -> None:
        """An item whose worker process died: its test id tells the op, target, dtype and mode."""
        _, test, target, dtype, mode = parse_item_id(nodeid) or ("", nodeid.rpartition("::")[2], "?", "?", "?")
        self.store.append({
            "kind": "outcome", "nodeid": nodeid, "test": test, "op": test.removeprefix("test_"), "target": target,
            "virtual": target.startswith("vcuda"), "dtype": dtype, "mode": mode, "worker": self.worker,
            "pid": os.getpid(), "check": "crash", "verdict": "error", "phase": "item",
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
        """Run every check on one drawn case; raise if any fails outside the known issues."""
        state = self.item
        assert state is not None, "conformance tests run only inside the conformance plugin"
        if case.key in state.settled:
            return  # drawn again (choices differ, values do not): checking it again would find the same
        if state.source == "hypothesis" and not state.failure_seen and self.replay is None:
            state.drawn.append(case)  # generated (or the database's), before any shrinking: a plan
        result = check_case(spec, case, state.target, self.baselines, state.mode)
        if result.not_emulatable is not None:
            pytest.skip(f"not emulatable on a virtual device: {result.not_emulatable}")
        if result.resource is not None:  # out of memory: recorded, and the next case runs
            self.store.append(self._base_record(state.test, spec.name, state.target, state.dtype, state.mode) | {
                "kind": "outcome", "nodeid": state.nodeid, "check": "resource", "verdict": "resource",
                "phase": "explore", "example": state.examples, "case": case.to_dict(), "message": result.resource})
            return
        features = spec.case_features(case) if state.applicable else {}
        state.exercised.update(i.id for i in state.applicable if i.in_scope(features))
        unexpected: list[CheckOutcome] = []
        matches: dict[str, ki.KnownIssue] = {}
        for outcome in result.failures:
            issue = next((i for i in state.applicable if i.covers(outcome.check, outcome.message, features)), None)
            if issue is None:
                unexpected.append(outcome)
            else:
                matches[outcome.check] = issue
                state.reproduced.add(issue.id)
        counted = "replay" if self.replay is not None else "explore"
        if state.source == "plan":
            phase = "explore"  # each planned case once, as hypothesis' generation would have it
        elif _is_final_example():
            phase = "replay" if self.replay is not None else "final"
        elif unexpected or state.failure_seen or state.source == "shrink":
            # hypothesis reruns the minimal failure as its final example; after a planned case
            # failed, its rerun of the earlier cases was counted already
            phase = "shrink"
        else:
            phase = counted
        state.failure_seen = state.failure_seen or bool(unexpected)
        if phase in ("explore", "final", "replay"):
            state.examples += 1
        repro = self.repro_command(state.nodeid, case) if result.failures else None
        self._record_example(state, case, result, matches, phase, repro)
        if unexpected:
            raise ConformanceFailure(self._failure_message(state, case, unexpected, repro))
        state.settled.add(case.key)

    def repro_command(self, nodeid: str, case: Case) -> str:
        return f"python -m pytest {shlex.quote(nodeid)} --replay {shlex.quote(case.to_json())}"

    def _base_record(self, test: str, op: str, target: Target, dtype: str, mode: str) -> dict[str, Any]:
        return {"test": test, "op": op, "target": target.name, "virtual": target.virtual, "dtype": dtype,
                "mode": mode, "worker": self.worker, "pid": os.getpid()}

    def _record_item_verdict(self, state: ItemState, verdict: str, check: str, message: str) -> None:
        self.store.append(self._base_record(state.test, state.spec.name, state.target, state.dtype, state.mode) | {
            "kind": "outcome", "nodeid": state.nodeid, "check": check, "verdict": verdict, "phase": "item",
            "message": message})

    def _record_example(self, state: ItemState, case: Case, result: CaseResult,
                        matches: dict[str, ki.KnownIssue], phase: str, repro: str | None) -> None:
        artifact = None
        keep = phase in ("final", "replay") and any(o.check not in matches for o in result.failures)
        new_known = {i.id for i in matches.values()} - state.saved_known
        if result.failures and (keep or (new_known and phase == "explore")):
            artifact = self.store.save_arrays(state.nodeid, result.arrays)
            state.saved_known |= new_known
        checks = []
        for outcome in result.outcomes:
            issue = matches.get(outcome.check)
            verdict = "pass" if outcome.passed else ("known_issue" if issue else
                                                     "error" if outcome.check == "error" else "fail")
            tolerance = outcome.tolerance.to_dict() if outcome.tolerance else None
            if tolerance is not None and outcome.passed:
                tolerance.pop("reason", None)  # kept with failures; a pass needs only the numbers
            check = {
                "check": outcome.check, "verdict": verdict,
                "metrics": outcome.metrics.to_dict() if outcome.metrics else None, "tolerance": tolerance,
                "message": outcome.message, "traceback": outcome.traceback, "details": outcome.details,
                "known_issue": issue.to_dict() if issue else None,
            }
            # Empty fields are left out: a long run writes hundreds of thousands of these.
            checks.append({k: v for k, v in check.items() if v is not None and v != ""})
        record = self._base_record(state.test, state.spec.name, state.target, state.dtype, state.mode) | {
            "kind": "example", "nodeid": state.nodeid, "phase": phase, "example": state.examples, "checks": checks}
        if repro is not None:
            record["repro"] = repro
        if artifact is not None:
            record["artifact"] = artifact
        self.store.append(record, encoded={"case": case.json})

    def _failure_message(self, state: ItemState, case: Case, failures: list[CheckOutcome], repro: str) -> str:
        lines = [f"{state.spec.name} on {state.target.name}{' (virtual)' if state.target.virtual else ''} "
                 f"[{state.dtype}, {state.mode}]: {len(failures)} check(s) failed"]
        for outcome in failures:
            lines.append(f"  {outcome.check}: {outcome.message}")
            if outcome.tolerance is not None:
                lines.append(f"    tolerance {outcome.tolerance.name!r}: {outcome.tolerance.reason}")
        lines.append(f"  case: {case.to_json()}")
        lines.append(f"  store: {self.run_dir}")
        lines.append(f"Rerun: {repro}")
        return "\n".join(lines)


def default_run_name() -> str:
    import time

    return time.strftime("%Y%m%d-%H%M%S")


def unique_run_dir(reports_dir: Path, name: str) -> Path:
    candidate, n = reports_dir / safe_name(name), 1
    while candidate.exists():
        n += 1
        candidate = reports_dir / f"{safe_name(name)}-{n}"
    return candidate
