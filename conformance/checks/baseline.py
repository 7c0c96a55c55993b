"""The `baseline` check: this build's output against the same case's output recorded by another
build (`run --baseline DIR`).  Beyond the variant's cross-device tolerance it fails; a bit-level
change inside it is a warning that names its size; identical digests pass.  Also what every
run with recorded outputs writes for each case and target (`output_record`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from conformance.checks.context import CaseContext
from conformance.checks.registry import Check, CheckOutcome, register, valid_inputs
from conformance.devices.virtual.tensor import host_tensor
from conformance.spec.tolerances import Tolerance
from conformance.store.drift import FALLBACK, compare_one
from conformance.store.outputs import OutputKey, Recorded, digest


def output_key(ctx: CaseContext) -> OutputKey:
    return OutputKey(ctx.spec.name, ctx.target.name, ctx.case.recipe.dtype, ctx.mode, ctx.case.json)


def current_output(ctx: CaseContext) -> tuple[np.ndarray | None, str | None]:
    """The output as a host array in its own dtype, or the class of what the op raised."""
    if ctx.run.error is not None:
        return None, ctx.run.raised or "error"
    if not ctx.returned_tensor:
        return None, f"returned {type(ctx.run.output).__name__}"
    output = host_tensor(ctx.run.output).detach().cpu()
    if output.dtype == torch.bfloat16:  # numpy has no bfloat16; float32 holds each value exactly
        output = output.float()
    return np.ascontiguousarray(output.numpy()), None


def build_tolerance(ctx: CaseContext) -> Tolerance:
    """What two runs of this variant may differ by: its cross-device tolerance."""
    try:
        return ctx.tolerance("cross_device")
    except LookupError:
        return FALLBACK


def output_record(ctx: CaseContext) -> tuple[OutputKey, np.ndarray | None, str | None, dict[str, Any]]:
    array, error = current_output(ctx)
    return output_key(ctx), array, error, build_tolerance(ctx).to_dict()


def check_baseline(ctx: CaseContext) -> CheckOutcome | None:
    baseline = ctx.baseline
    if baseline is None:
        return None
    key = output_key(ctx)
    before = baseline.index.get(key)
    if before is None:
        return None  # not in the baseline's case set: listed by `compare`, nothing to judge here
    array, error = current_output(ctx)
    tolerance = build_tolerance(ctx)
    now = Recorded(
        key,
        digest(array) if array is not None else None,
        error,
        tuple(array.shape) if array is not None else None,
        array.dtype.str if array is not None else None,
        None,
        None,
        None,
    )
    before_array = baseline.reader.load(before) if before.error is None and before.digest != now.digest else None
    change = compare_one(key, before, now, before_array, array, tolerance)
    if change is None:
        return CheckOutcome("baseline", True, tolerance=tolerance, against="baseline")
    cause = {"changed": "values", "error_changed": "error", "bit_level": "bit_level"}[change.severity]
    return CheckOutcome(
        "baseline",
        False,
        f"since the baseline: {change.message}",
        metrics=change.metrics,
        tolerance=tolerance,
        cause=cause,
        against="baseline",
        warning=change.severity == "bit_level",
    )


register(
    Check(
        "baseline",
        100,
        "baseline",
        "the output vs the same case's output recorded by another build "
        "(--baseline): beyond the cross-device tolerance fails; a change inside it is a warning with its size",
        valid_inputs,
        check_baseline,
        option="baseline",
        output_only=True,
        reads_values=True,
    )
)


def baseline_array(ctx: CaseContext) -> np.ndarray | None:
    """The baseline's output for this case and target, in float64, when it has one (for a failure's pictures)."""
    if ctx.baseline is None:
        return None
    recorded = ctx.baseline.index.get(output_key(ctx))
    if recorded is None or recorded.error is not None:
        return None
    return ctx.baseline.reader.load(recorded).astype(np.float64)
