"""The standard checks every op gets (the `check_kernel` idea), as a registry.

  error           the op raised; in an error mode, it did not raise the named exception class
  placement       output on the input's device; on accelerators also no device mixing, no image data
                  copied between host and device, module tensors follow `.to()`
  invariants      dtype, shape and memory format kept; input not mutated
  reference       output against the independent float64 reference
  fidelity        lossy ops: PSNR against the input close to the reference's
  cross_device    an accelerator's output against the cpu's, failing on the side that diverges
  unmoved         a module left on the cpu keeps its promise with a device input
  sampling        a random module's own sampler on the target
  constant_upload constants copied to the device on every call (a warning)
  baseline        with --baseline DIR: the output against another build's for the same case

Each is its own pytest item; `check_case` runs all that apply to one case (the harness's tests
and benchmarks use it).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from conformance.engine.shared import SharedCases, InputImage, expected_output
from conformance.checks import baseline, basic, devices, values  # noqa: F401 - each registers its checks
from conformance.checks.basic import memory_formats
from conformance.checks.registry import REGISTRY, Check, CheckOutcome, applicable, register
from conformance.checks.values import psnr
from conformance.spec.recipes import Case
from conformance.spec.opspec import OpSpec
from conformance.devices.targets import Target

ORDER = ("error", "placement", "invariants", "reference", "fidelity", "cross_device", "unmoved", "sampling",
         "constant_upload", "baseline")
for _name in ORDER:  # item order within a target: the simplest checks first
    REGISTRY[_name] = REGISTRY.pop(_name)

__all__ = ["SharedCases", "CaseResult", "Check", "CheckOutcome", "InputImage", "REGISTRY", "applicable", "check_case",
           "expected_output", "memory_formats", "psnr", "register"]


@dataclass
class CaseResult:
    """All outcomes of one case on one target, and the arrays behind them."""

    outcomes: list[CheckOutcome]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    not_emulatable: str | None = None  # a virtual target cannot run this op
    resource: str | None = None  # the case ran out of memory: recorded, not a verdict

    @property
    def failures(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if not o.passed]


def check_case(spec: OpSpec, case: Case, target: Target, shared: SharedCases, mode: str) -> CaseResult:
    """Run one case on one target through every applicable check."""
    ctx = shared.context(spec, case, target, mode)
    if ctx.run.not_emulatable is not None:
        return CaseResult([], not_emulatable=ctx.run.not_emulatable)
    if ctx.run.resource is not None:
        return CaseResult([], resource=ctx.run.resource)
    outcomes = [ctx.outcome(check.name) for check in applicable(spec, target, mode)]
    return CaseResult([o for o in outcomes if o is not None], ctx.arrays())
