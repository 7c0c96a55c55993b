"""What a failing case keeps for its report: the input, the reference, this target's output, the cpu's
output beside it, and the baseline's output under --baseline, as float64 arrays."""

from __future__ import annotations

import numpy as np

from conformance.checks.baseline import baseline_array
from conformance.checks.context import CaseContext


def arrays(ctx: CaseContext) -> dict[str, np.ndarray]:
    kept: dict[str, np.ndarray] = {"input": ctx.source.values}
    if ctx.expected_error is None and ctx.run.error is None:
        kept["reference"] = ctx.expected
    if ctx.output64 is not None:
        kept["output"] = ctx.output64
    cpu = ctx.cpu
    if cpu is not None and cpu.output64 is not None:
        kept["cpu"] = cpu.output64
    recorded = baseline_array(ctx)
    if recorded is not None:
        kept["baseline"] = recorded
    return kept
