"""`cpu:<level>`: the cpu with its kernels for a lower instruction set, run in a worker process started with
ATEN_CPU_CAPABILITY set (conformance.devices.isa).  Its cases are handed to the worker ahead of their items
(`prefetch`), so the worker computes while this process checks the other targets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from conformance.devices import isa, isa_feed
from conformance.devices.isa import ENV, lower_levels
from conformance.devices.placement import is_device_mix_error
from conformance.devices.runs import CaseTimeout, OpRun
from conformance.devices.targets import Target
from conformance.spec.opspec import SOURCES, OpSpec, Sampled
from conformance.spec.recipes import Case


@dataclass(frozen=True)
class IsaTarget(Target):
    level: str = "default"

    cpu_path = True
    prefetches = True

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def compared_with_cpu(self) -> bool:
        return True

    @property
    def out_of_process(self) -> bool:
        return True

    @property
    def child_environment(self) -> dict[str, str]:
        return {ENV: self.level}

    def run_elsewhere(self, spec: OpSpec, case: Case, sampled: Sampled | None, timeout_s: float) -> OpRun:
        """The case in the worker process (its answer may already be waiting)."""
        run = OpRun()
        request = _request(spec, case, sampled, timeout_s)
        if request is None:
            run.not_run = f"{spec.name} was not defined by a case module (no source file to load it from)"
            return run
        answer = isa_feed.worker(self.level).call((spec.name, case.key), request)
        if answer.unavailable is not None:
            run.not_run = answer.unavailable
        elif answer.error is not None:
            run.error, run.trace, run.error_message = answer.error, answer.error, answer.error_message
            run.error_type = CaseTimeout if answer.timed_out else isa.error_class(answer.error_type)
            run.timed_out = answer.timed_out
            run.mixed_devices = is_device_mix_error(answer.error_message)
        else:
            run.output = answer.output
        return run

    def prefetch(self, spec: OpSpec, case: Case, sampled: Sampled | None, timeout_s: float) -> None:
        request = _request(spec, case, sampled, timeout_s)
        if request is not None:
            isa_feed.worker(self.level).submit((spec.name, case.key), request)

    def discard_prefetched(self) -> None:
        isa_feed.worker(self.level).discard()


def _request(spec: OpSpec, case: Case, sampled: Sampled | None, timeout_s: float) -> dict[str, Any] | None:
    """What the worker needs to run the case (it rebuilds the input from the recipe); None for an op no case
    module defined (the worker could not load it)."""
    if spec.name not in SOURCES:
        return None
    return {"source": SOURCES[spec.name], "op": spec.name, "case": case.json, "timeout": timeout_s, "sampled": sampled}


def isa_targets() -> list[Target]:
    return [
        IsaTarget(f"cpu:{level}", "cpu", f"host CPU, {ENV}={level} (worker process)", level=level)
        for level in lower_levels()
    ]
