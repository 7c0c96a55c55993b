"""What a failing case keeps for its report: the input, the reference, this target's output, the cpu's
output beside it, the baseline's output under --baseline, and the gradients where a gradient check ran,
as float64 arrays."""

from __future__ import annotations

import numpy as np

from conformance.checks.baseline import baseline_array
from conformance.checks.context import CaseContext
from conformance.checks.gradients import GRADIENT_RUN
from conformance.devices.virtual.tensor import holds_values, host_tensor
from conformance.spec.recipes import to_float64


def arrays(ctx: CaseContext) -> dict[str, np.ndarray]:
    kept: dict[str, np.ndarray] = {"input": ctx.source.values}
    if ctx.expected_error is None and ctx.run.error is None and ctx.spec.reference_in(ctx.mode) is not None:
        kept["reference"] = ctx.expected
    if ctx.output64 is not None:
        kept["output"] = ctx.output64
    cpu = ctx.twin
    if cpu is not None and cpu.output64 is not None:
        kept["cpu"] = cpu.output64
    recorded = baseline_array(ctx)
    if recorded is not None:
        kept["baseline"] = recorded
    for name, owner in (("gradient", ctx), ("cpu_gradient", cpu)):
        run = owner.derived_if_made(GRADIENT_RUN) if owner is not None else None
        if run is not None and run.error is None and holds_values(run.output):
            kept[name] = to_float64(host_tensor(run.output))
    return kept
