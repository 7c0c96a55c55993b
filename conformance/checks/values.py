"""The value checks: `reference` (the float64 reference), `fidelity` (lossy ops, against the input)
and `cross_device` (an accelerator against the cpu, saying which side diverges)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from conformance.checks.context import CaseContext
from conformance.checks.registry import (
    Check,
    CheckOutcome,
    compare_check,
    compared_with_cpu,
    data_range,
    identical,
    register,
    valid_inputs,
    verdict,
)
from conformance.checks.requests import Steps
from conformance.spec.tolerances import Metrics


def check_reference(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    """The output against the reference; an operation's implementation also carries the cross-library
    measurement against the other libraries (`details["peers"]`, a measurement, not a verdict)."""
    if not ctx.returned_tensor or ctx.spec.reference_in(ctx.mode) is None:  # a swept transform has no reference
        return None
    tolerance = ctx.tolerance("reference")
    cpu = ctx.twin
    found = None
    if cpu is not None and identical(ctx.output64, cpu.output64):
        # bit-identical to the cpu output under the same tolerance: the cpu's outcome is this one's
        on_cpu = yield from verdict(cpu, "reference")
        if on_cpu is not None and on_cpu.tolerance is tolerance:
            found = replace(on_cpu, details=None)
    if found is None:
        assert ctx.output64 is not None
        found = compare_check("reference", ctx.output64, ctx.expected, tolerance, ctx.output_dtype, "reference")
    peers = ctx.peers[0]
    if peers:
        found.details = {"peers": peers}
    return found


# dB: an rms error of 1% of the range (2.5 levels of 255). A lossy op that close to its input counts as
# faithful, so a reference that happens to be lossless (a constant image) does not set an impossible bar.
PSNR_CEILING = 40.0


def psnr(actual: np.ndarray, expected: np.ndarray, peak: float) -> float:
    """PSNR in dB, capped at PSNR_CEILING."""
    mse = float(np.mean((actual - expected) ** 2)) if actual.size else 0.0
    return PSNR_CEILING if mse == 0 else min(PSNR_CEILING, 10 * np.log10(peak**2 / mse))


def check_fidelity(ctx: CaseContext) -> CheckOutcome | None:
    """A lossy op may lose at most `margin` dB more than the reference does, both against the input."""
    if not ctx.returned_tensor or ctx.spec.fidelity is None:
        return None
    margin, reason = ctx.spec.fidelity
    output64, input64 = ctx.output64, ctx.source.values
    assert output64 is not None
    if output64.shape != input64.shape:
        return CheckOutcome(
            "fidelity", False, f"output shape {output64.shape} differs from the input's {input64.shape}", cause="shape"
        )
    peak = data_range(ctx.output_dtype)
    ours, theirs = psnr(output64, input64, peak), psnr(ctx.expected, input64, peak)
    details = {"psnr_vs_input": ours, "reference_psnr_vs_input": theirs, "margin_db": margin}
    if ours >= theirs - margin:
        return CheckOutcome("fidelity", True, details=details)
    return CheckOutcome(
        "fidelity",
        False,
        f"PSNR against the input {ours:.2f} dB, the reference's {theirs:.2f} dB: "
        f"more than {margin:g} dB worse ({reason})",
        details=details,
        cause="psnr",
    )


def diverging_side(ctx: CaseContext, twin: str, judge: str = "reference") -> Steps[str]:
    """Which side of a difference from the twin is off what `judge` compares with (the reference; the
    gradient estimate): `twin`, the target's name, "both", or "undetermined" (both within that check's
    tolerance, yet too far from each other)."""
    other = ctx.twin
    assert other is not None
    mine = yield from verdict(ctx, judge)
    theirs = yield from verdict(other, judge)
    twin_off = other.run.error is not None or (theirs is not None and not theirs.passed)
    target_off = mine is not None and not mine.passed
    if twin_off and target_off:
        return "both"
    if twin_off:
        return twin
    return ctx.target.name if target_off else "undetermined"


def _against_twin(ctx: CaseContext, check: str, twin: str, named: str) -> Steps[CheckOutcome | None]:
    """The target's output against its twin's for the same case (the cpu for an accelerator, eager for a
    compiled target).  When they differ and the reference shows the twin is the side that is off, the
    failure belongs to the twin's cells (its reference or error check), and this outcome passes, saying so.
    `twin`: its key in records ("cpu"), `named`: in sentences ("the cpu")."""
    other = ctx.twin
    if other is None or not ctx.returned_tensor:
        return None
    tolerance = ctx.tolerance("cross_device")
    if other.run.error is not None:
        found = CheckOutcome(
            check,
            False,
            f"{twin} raised {other.run.error}; {ctx.target.name} returned a result",
            traceback=other.run.error_text,
            tolerance=tolerance,
            cause=f"{twin} raised",
            against=twin,
        )
    elif identical(ctx.output64, other.output64):
        assert ctx.output64 is not None
        return CheckOutcome(check, True, metrics=Metrics.identical(ctx.output64.size), tolerance=tolerance)
    else:
        assert ctx.output64 is not None and other.output64 is not None
        found = compare_check(check, ctx.output64, other.output64, tolerance, ctx.output_dtype, twin)
        if found.passed:
            return found
    side = yield from diverging_side(ctx, twin)
    found.diverges = side
    if side == twin:
        return replace(
            found,
            passed=True,
            cause="",
            message=f"{found.message}; {ctx.target.name} matches the reference, {named} does not: the divergence "
            f"is {named}'s (see its reference or error check)",
        )
    where = {
        "both": f"both {named} and this target are off the reference",
        "undetermined": "both are within the reference tolerance, yet farther apart than the cross-device one",
    }
    found.message += f"; {where.get(side, f'this target is off the reference, {named} is not')}"
    found.cause = f"{found.cause}, {side if side in where else 'target'} diverges"
    return found


def check_cross_device(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    """An accelerator's (or ISA path's) output against the cpu's."""
    return (yield from _against_twin(ctx, "cross_device", ctx.target.twin_label, "the cpu"))


def check_compiled(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    """A compiled target's output against eager on the same device."""
    return (yield from _against_twin(ctx, "compiled", ctx.target.twin_label, "eager"))


register(
    Check(
        "reference",
        40,
        "reference",
        "output vs the independent float64 reference, under the op's tolerance",
        lambda spec, target, mode: spec.reference_in(mode) is not None and valid_inputs(spec, target, mode),
        check_reference,
        output_only=True,
        judges_values=True,
        reads_peers=True,
    )
)
register(
    Check(
        "fidelity",
        50,
        "input",
        "lossy ops: PSNR against the input more than the op's margin below the reference's",
        lambda spec, target, mode: (
            spec.fidelity is not None and spec.reference_in(mode) is not None and valid_inputs(spec, target, mode)
        ),
        check_fidelity,
        output_only=True,
        judges_values=True,
    )
)
register(
    Check(
        "cross_device",
        60,
        "cpu",
        "an accelerator's output vs the cpu output for the same case (the side "
        "that is off the reference carries the failure)",
        compared_with_cpu,
        check_cross_device,
        output_only=True,
        judges_values=True,
    )
)


register(
    Check(
        "compiled",
        61,
        "eager",
        "a compiled target's output vs eager on the same device for the same case (the side that is off the "
        "reference carries the failure)",
        lambda spec, target, mode: target.twin_check == "compiled" and valid_inputs(spec, target, mode),
        check_compiled,
        output_only=True,
        judges_values=True,
    )
)
