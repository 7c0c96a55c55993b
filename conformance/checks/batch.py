"""The `batch` check: a batch's output is its samples' outputs one by one.

Augmentations promise that each sample of a batch is transformed on its own (kornia: with its own row of
the drawn parameters; torchvision: with the one set drawn for the call).  A kernel that lets samples bleed
into each other, a parameter applied to the wrong sample or a batch-size-dependent branch breaks it, on one
device or on all.  One sample of each case (which one, chosen by the case's seed) is run alone on the same
target, with its share of the cpu-drawn parameters (conformance.spec.sampled) or, for a module that draws its
own, with the same seed, and compared with its slice of the batch's output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from conformance.checks.context import CaseContext
from conformance.checks.registry import Check, CheckOutcome, compare_check, register, valid_inputs
from conformance.checks.requests import Steps, call, parameters
from conformance.devices.targets import Target
from conformance.devices.virtual.tensor import holds_values, host_tensor
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import to_float64
from conformance.spec.sampled import NotSliceable, per_sample, probe_size


@dataclass
class _Probe:
    """The sampler's parameters for one sample more than the case's batch (same seed), shared by every target."""

    value: Any
    nbytes: int = 4096


def _probe(ctx: CaseContext, batch: int) -> Steps[Any]:
    def compute() -> Steps[_Probe]:
        shape = (probe_size(batch), *ctx.source.dense.shape[1:])
        return _Probe((yield from parameters(ctx.spec, torch.zeros(shape), ctx.case)))

    return (yield from ctx.inputs.derived("batch_probe", compute)).value


def check_batch(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    batch = ctx.case.recipe.batch
    if len(batch) != 1 or batch[0] < 2 or ctx.output64 is None:
        return None  # one sample, or the op raised (the error check's): nothing to split
    size = batch[0]
    whole = ctx.output64
    if whole.shape[:1] != (size,):
        return CheckOutcome("batch", False, f"a batch of {size} gave {whole.shape[0]} outputs", cause="batch size")
    # one sample a case, which one chosen by the case's seed: over an item's cases every position is tried, at
    # the cost of one more call a case instead of one a sample (a bug that bleeds or swaps shows at any position)
    index = ctx.case.recipe.seed % size
    try:
        sampled = None if ctx.sampled is None else per_sample(ctx.sampled, (yield from _probe(ctx, size)), index, size)
    except NotSliceable:
        return None  # whose parameters are whose cannot be told: nothing to compare
    alone = ctx.source.on(ctx.target)[index : index + 1]
    run = yield from call(ctx.spec, alone, ctx.case, ctx.target, sampled)
    if run.not_run is not None or run.resource is not None:
        return None
    if run.error is not None:
        message = f"sample {index} alone raises {run.error}"
        return CheckOutcome("batch", False, message, traceback=run.error_text, cause="raises alone")
    if not holds_values(run.output):  # no values to compare: the invariants check says what it returned
        return None
    found = compare_check(
        "batch",
        to_float64(host_tensor(run.output)),
        whole[index : index + 1],
        ctx.tolerance("batch"),
        ctx.output_dtype,
        f"sample {index} in the batch",
    )
    if not found.passed:
        found.message = f"sample {index} of {size} alone " + found.message
    return found


def _promised(spec: OpSpec, target: Target, mode: str) -> bool:
    return bool(spec.batch_consistent) and valid_inputs(spec, target, mode)


register(
    Check(
        "batch",
        65,
        "samples alone",
        "a batch's output differs from its samples' outputs one by one (each with its share of the parameters)",
        _promised,
        check_batch,
        judges_values=True,
    )
)
