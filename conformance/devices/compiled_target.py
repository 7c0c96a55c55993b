"""`<device>+compile`: the op through torch.compile (Inductor) on a real device, compared with the reference and
with eager on that device.  Virtual devices are not compile targets (their dispatch is Python)."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from conformance.devices.facts import ScriptDevice, TargetFacts
from conformance.devices.placement import PlacementLog
from conformance.devices.targets import CPU, Target
from conformance.devices.torch_private import compile_counts
from conformance.spec.opspec import OpSpec

_COMPILED: dict[str, Any] = {}
COMPILED_SUFFIX = "+compile"  # `<device>+compile`
COMPILE_BUDGET_S = 120.0  # per op and process: past it, the op's further cases are not run compiled (a skip)
COMPILE_STATS: dict[str, dict[str, float]] = {}  # op -> seconds in calls that compiled, graphs, graph breaks


@dataclass(frozen=True)
class CompiledTarget(Target):
    eager: Target = CPU

    @property
    def device(self) -> torch.device:
        return self.eager.device

    @property
    def compiled(self) -> bool:
        return True

    @property
    def compared_with_cpu(self) -> bool:
        return False  # its `compiled` check compares it with eager on its own device

    @property
    def twin(self) -> Target | None:
        return self.eager

    @property
    def twin_label(self) -> str:
        return "eager"

    @property
    def twin_check(self) -> str:
        return "compiled"

    def put(self, value: Any) -> Any:
        return self.eager.put(value)

    def synchronize(self) -> None:
        self.eager.synchronize()

    def seed(self, seed: int) -> None:
        self.eager.seed(seed)

    def release_memory(self) -> None:
        self.eager.release_memory()

    def active(self, log: PlacementLog | None = None) -> Any:
        return self.eager.active(log)

    def not_run_message(self, reason: str) -> str:
        return f"not run compiled: {reason}"

    def op_function(self, spec: OpSpec) -> Callable[..., Any]:
        return compiled(spec)

    def none_run_reason(self, spec: OpSpec) -> str | None:
        """A host library's op is never compiled: one item a variant says so."""
        return f"not compiled: {spec.host_only} (torch.compile compiles torch code only)" if spec.host_only else None

    def script_device(self) -> ScriptDevice:
        return dataclasses.replace(self.eager.script_device(), compiled=True)

    def facts(self) -> TargetFacts:
        return dataclasses.replace(super().facts(), table_rank=self.eager.table_rank)

    def not_run_reason(self, spec: OpSpec) -> str | None:
        """Once the op's compile budget is spent, its further cases are not run compiled."""
        spent = _compile_seconds(spec)
        if spent < COMPILE_BUDGET_S:
            return None
        return (
            f"{spec.name} spent its compile budget in this process ({spent:.0f} s of calls that compiled, "
            f"budget {COMPILE_BUDGET_S:.0f} s): its further cases run eager only"
        )

    def call_timeout(self, spec: OpSpec, timeout_s: float) -> float:
        """Compiling is not hanging: the first calls may use what is left of the op's compile budget."""
        return timeout_s + COMPILE_BUDGET_S - _compile_seconds(spec) if timeout_s else 0.0


def _compile_seconds(spec: OpSpec) -> float:
    return COMPILE_STATS.get(spec.name, {}).get("seconds", 0.0)


def compile_targets(real: list[Target]) -> list[Target]:
    """One `+compile` target per real device."""
    return [
        CompiledTarget(
            f"{t.name}{COMPILED_SUFFIX}", t.kind, f"{t.description}, through torch.compile (Inductor)", eager=t
        )
        for t in real
    ]


def compiled(spec: OpSpec) -> Any:
    """The op's call (or module forward) through torch.compile, one per op for the whole run: shapes and
    sizes are dynamic, so the cases of every dtype and mode reuse it instead of compiling per case.  Each call
    notes what it compiled (information, never a verdict: a recompile or a graph break is not wrong)."""
    if spec.name not in _COMPILED:
        call = spec.module.forward if spec.module is not None else spec.call
        _COMPILED[spec.name] = _counted(spec.name, torch.compile(call, backend="inductor", dynamic=True))
    return _COMPILED[spec.name]


def _counted(name: str, call: Any) -> Any:
    stats = COMPILE_STATS.setdefault(name, {"seconds": 0.0, "graphs": 0, "graph_breaks": 0, "calls": 0})

    def counting(*args: Any) -> Any:
        graphs, breaks = compile_counts()
        began = time.perf_counter()
        try:
            return call(*args)
        finally:
            now_graphs, now_breaks = compile_counts()
            new_graphs = now_graphs - graphs
            stats["calls"] += 1
            stats["graphs"] += new_graphs
            stats["graph_breaks"] += now_breaks - breaks
            if new_graphs:
                stats["seconds"] += time.perf_counter() - began

    return counting
