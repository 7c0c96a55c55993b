"""The per-case cache: each case's input, sampled parameters and reference, and each target's
`CaseContext` (the op run there), computed once and read by every check's and every target's item.

A variant's items run back to back (see conformance.engine.ordering and the plugin's parametrization),
so adding a target costs only its own op call and comparisons, and adding a check only its comparison.
Every item reads the group's cases in the same order, so the cache holds one variant group at a time
(`begin_group` empties it) and, when the group outgrows its bytes, keeps what it holds and stops adding:
evicting the least recently used entry of a cyclic scan would miss every time (it did: a float64 resize
group ran its op 2,039 times for 92 cases).  This is the only place that builds contexts: a check reads
what its context holds and never asks for another.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from conformance.checks import peers
from conformance.checks.context import CaseContext, CaseInputs, CaseMemo, InputImage, Tolerances, expected_output
from conformance.checks.evidence import arrays
from conformance.checks.registry import REGISTRY, CheckOutcome, applicable, keep_outcome
from conformance.devices.calls import run_op, sample_params
from conformance.devices.runs import OpRun
from conformance.devices.targets import CPU, Target
from conformance.engine import peer_runs
from conformance.engine.check_runs import Runner
from conformance.spec.opspec import OpSpec
from conformance.spec.overrides import Override
from conformance.spec.recipes import Case
from conformance.store.outputs import BaselineOutputs


@dataclass
class _Sized:
    """A cached value with the bytes it holds."""

    value: Any
    nbytes: int = 1024


@dataclass
class SamplerRaised:
    """A random module whose construction or sampler raised on the cpu: its parameters cannot be drawn, so its run
    on every target is that error (an error mode's expected one, e.g. a constructor refusing p = 1.1; else the
    op's error, found by the error check like any other)."""

    run: OpRun


class CaseCache:
    """Per-case values shared across checks and targets, one variant group at a time, up to `max_bytes`."""

    def __init__(
        self,
        max_bytes: int = 1024 * 2**20,
        overrides: Sequence[Override] = (),
        baseline: BaselineOutputs | None = None,
        timeout_s: float = 0.0,
    ) -> None:
        self.max_bytes = max_bytes
        self.tolerances = Tolerances(overrides)  # the run's --tolerances rules, tried before each op's own
        self.baseline = baseline  # another build's outputs, under --baseline
        self.timeout_s = timeout_s  # --case-timeout, for every op call
        self._entries: dict[tuple[str, str, str], Any] = {}
        self._bytes = 0
        self._group: Any = None
        self.refused = 0  # values not kept because the group outgrew max_bytes (each is computed again)
        self.runner = Runner(timeout_s, self.outcome)  # what checks ask for, and the count of each's first cases

    def begin_group(self, group: Any) -> None:
        """The items of another variant group begin: nothing of the last group is read again."""
        if group != self._group:
            self._group = group
            self._entries.clear()
            self._bytes = 0

    def _get(self, key: tuple[str, str, str], compute: Callable[[], Any]) -> Any:
        found = self._entries.get(key)
        if found is not None:
            return found
        value = compute()
        self.put(key, value)
        return value

    def put(self, key: tuple[str, str, str], value: Any) -> None:
        """Keep a value, unless the cache is full: then what it holds stays (see the module's docstring)."""
        held = self._entries.pop(key, None)
        if held is not None:
            self._bytes -= held.nbytes
        if self._entries and self._bytes + value.nbytes > self.max_bytes:
            self.refused += 1
            return
        self._entries[key] = value
        self._bytes += value.nbytes

    def input(self, case: Case) -> InputImage:
        """The case's input, synthesised once per recipe (an operation's implementations share it)."""
        found: InputImage = self._get(("", case.recipe_key, "input"), lambda: InputImage.make(case.recipe))
        return found

    def sampled(self, spec: OpSpec, case: Case) -> Any:
        """Random-augmentation parameters, drawn once per case on the cpu and replayed on every target (a
        `SamplerRaised` where building the module or drawing raised)."""
        if spec.module is None or spec.module.sample is None:
            return None
        source = self.input(case)

        def compute() -> _Sized:
            try:
                return _Sized(sample_params(spec, source.on(CPU), case))
            except Exception as exc:  # noqa: BLE001 - the op's outcome on every target, as if it raised there
                failed = OpRun()
                failed.fail(exc)
                return _Sized(SamplerRaised(failed))

        return self._get((spec.name, case.key, "sampled"), compute).value

    def _reference(self, spec: OpSpec, case: Case, source: InputImage, sampled: Any, mode: str) -> np.ndarray:
        def compute() -> _Sized:
            reference = spec.reference_in(mode)
            if reference is None:
                raise LookupError(f"{spec.name} has no reference in mode {mode}: no check of it may ask for one")
            ideal = reference(source.values, case) if sampled is None else reference(source.values, case, sampled)
            found = expected_output(ideal, spec.output_dtype_of(case))
            return _Sized(found, found.nbytes)

        value: np.ndarray = self._get((spec.name, case.key, "reference"), compute).value
        return value

    def inputs(self, spec: OpSpec, case: Case, mode: str) -> CaseInputs:
        source, sampled = self.input(case), self.sampled(spec, case)
        if isinstance(sampled, SamplerRaised):
            sampled = None
        return CaseInputs(
            spec,
            case,
            source,
            sampled,
            lambda: self._reference(spec, case, source, sampled, mode),
            CaseMemo(
                lambda name: self._entries.get((spec.name, case.key, name)),
                lambda name, value: self.put((spec.name, case.key, name), value),
            ),
        )

    def has_context(self, spec: OpSpec, case: Case, target: Target, mode: str) -> bool:
        """Whether the op already ran for this case on this target (else `context` runs it)."""
        return (spec.name, case.key, f"{target.name}/{mode}") in self._entries

    def context(self, spec: OpSpec, case: Case, target: Target, mode: str) -> CaseContext:
        """The case on a target, its op run there (and, for a target compared with the cpu, on the cpu first)."""
        key = (spec.name, case.key, f"{target.name}/{mode}")
        found: CaseContext | None = self._entries.get(key)
        if found is not None:
            return found
        cpu = self.context(spec, case, target.twin, mode) if target.twin is not None else None
        try:
            inputs = self.inputs(spec, case, mode)
            placed = inputs.source.on(target)
        except (MemoryError, RuntimeError) as exc:  # torch.OutOfMemoryError is a RuntimeError
            if (
                not isinstance(exc, MemoryError)
                and "alloc" not in str(exc).lower()
                and not isinstance(exc, torch.OutOfMemoryError)
            ):
                raise
            inputs = CaseInputs(spec, case, InputImage.unallocated(case.recipe), None, lambda: np.empty(0))
            tensor_in: torch.Tensor | None = None
            run = OpRun(
                resource=f"the case's input could not be allocated: {type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:200] if str(exc) else ''}"
            )
        else:
            tensor_in = placed
            raised = self.sampled(spec, case)
            if isinstance(raised, SamplerRaised):
                run = raised.run
            else:
                run = run_op(spec, placed, case, target, inputs.sampled, timeout_s=self.timeout_s)
        found = CaseContext(
            inputs, target, mode, tensor_in, run, twin=cpu, tolerances=self.tolerances, baseline=self.baseline
        )
        self.put(key, found)
        return found

    def outcome(self, ctx: CaseContext, check: str) -> CheckOutcome | None:
        """The check's outcome on this context, computed once: with the cross-library measurement made first where
        the check reads it (the earlier implementations' runs come from this cache), and what it asks run
        (conformance.engine.check_runs)."""
        if check in ctx.outcomes:
            known: CheckOutcome | None = ctx.outcomes[check]
            return known
        declared = REGISTRY[check]
        if declared.reads_peers and not ctx.peers_measured:
            entries, calls = peer_runs.plan(ctx)
            others = {name: self.context(call.spec, call.case, call.target, ctx.mode) for name, call in calls.items()}
            ctx.peers, ctx.peers_measured = peers.measure(ctx, entries, others), True
        return keep_outcome(ctx, check, self.runner.finished(declared.run(ctx)))


@dataclass
class CaseResult:
    """All outcomes of one case on one target, and the arrays behind them."""

    outcomes: list[CheckOutcome]
    arrays: dict[str, np.ndarray]
    not_run: str | None = None  # why the target did not run it (not emulatable, compile budget spent, ...)
    resource: str | None = None  # the case ran out of memory: recorded, not a verdict

    @property
    def failures(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if not o.passed]


def check_case(spec: OpSpec, case: Case, target: Target, cache: CaseCache, mode: str) -> CaseResult:
    """Run one case on one target through every applicable check (for the harness's tests and benchmarks)."""
    ctx = cache.context(spec, case, target, mode)
    if ctx.run.not_run is not None:
        return CaseResult([], {}, not_run=ctx.run.not_run)
    if ctx.run.resource is not None:
        return CaseResult([], {}, resource=ctx.run.resource)
    found = [cache.outcome(ctx, check.name) for check in applicable(spec, target, mode, dtype=case.recipe.dtype)]
    return CaseResult([o for o in found if o is not None], arrays(ctx))
