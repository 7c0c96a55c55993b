"""The gradient checks, for ops that promise a gradient (`OpSpec.gradient`, conformance.spec.gradients).

`gradient`: the op's vector-Jacobian product on the target for a random cotangent v, projected on random
directions u, against the directional derivative <v, (f(x + hu) - f(x - hu)) / 2h> of an independent
float64 function f: the op's reference (or, where that cannot be differentiated, the op's own forward in
float64 on the cpu: finite differences of a forward test its backward, never autograd against autograd).
A backward that drops a term, scales one wrongly or returns zeros is off by a sizeable part of the
gradient along almost every direction; rounding is not.  Errors are in units of the gradient's norm.

Where the op is not smooth (a clamp at the range's edge, a rounding, a max switching) the gradient is not
defined; such points are found, not assumed: an output element whose one-sided differences along some u
disagree, or whose differences along the u_i do not add up to the difference along their sum, has a kink
within the step, and is left out of the cotangent (details["left_out"] counts them).

`gradient_device`: the target's gradient against its twin's for the same cotangent (the cpu's for an
accelerator, eager's for a compiled target), element by element relative to the largest element; the side
that is off the estimate carries the failure, as in `cross_device`.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import torch

from conformance.checks.context import CaseContext, Derived
from conformance.checks.devices import device_problems
from conformance.checks.registry import Check, CheckOutcome, compare_check, failed, register, verdict
from conformance.checks.requests import Steps, backward, call
from conformance.checks.values import diverging_side
from conformance.devices.runs import OpRun
from conformance.devices.targets import CPU
from conformance.devices.virtual.tensor import holds_values, host_tensor
from conformance.spec.opspec import OpSpec, Sampled
from conformance.spec.recipes import INTEGER_PEAKS, Case, to_float64
from conformance.spec.tolerances import Metrics

DIRECTIONS = 2  # random directions per case: a wrong term hides from both with negligible probability
KINK = 1e-3  # one-sided differences disagreeing by more than this fraction: a kink inside the step


@dataclass
class Probe:
    """What every target's gradient of one case is checked against (host float64, made once per case)."""

    cotangent: np.ndarray  # v, zero where the op has a kink within the step
    directions: list[np.ndarray]  # u_i, the input's shape
    estimates: list[float]  # <v, (f(x + h u_i) - f(x - h u_i)) / 2h>
    left_out: int  # output elements left out of v (kinks, non-finite values)
    error: str | None = None  # the estimate could not be made (f raised): nothing to judge

    @property
    def nbytes(self) -> int:
        return self.cotangent.nbytes + sum(u.nbytes for u in self.directions) + 1024


def make_probe(
    spec: OpSpec,
    case: Case,
    values: np.ndarray,
    sampled: Sampled | None,
    at_values: Callable[[], np.ndarray] | None = None,
) -> Steps[Probe]:
    """The case's cotangent, directions and directional derivatives (seeded by the case: the same on every
    target and in every run).  `at_values`: f(values) where the caller already has it (the cached reference:
    one of the six float64 evaluations, the costliest part of a gradient item)."""
    declared = spec.gradient
    assert declared is not None
    rng = np.random.default_rng(zlib.crc32(f"gradient {case.json}".encode()))
    f = _estimated_function(spec, case, sampled)
    step = declared.step
    try:
        at = (yield from f(values)) if at_values is None else np.asarray(at_values(), dtype=np.float64)
        moves = []
        for _ in range(DIRECTIONS):
            u = rng.standard_normal(values.shape)
            ahead = yield from f(values + step * u)
            behind = yield from f(values - step * u)
            moves.append((u, ahead, behind))
        both = yield from f(values + step * sum(u for u, _, _ in moves))
    except Exception as exc:  # noqa: BLE001 - the reference or the float64 forward cannot run on this case
        return Probe(np.empty(0), [], [], 0, error=f"{type(exc).__name__}: {exc}"[:300])
    kink = ~np.isfinite(at)
    with np.errstate(invalid="ignore"):
        for _, ahead, behind in moves:  # a kink crossed along u: the two one-sided differences disagree
            forward, backward = ahead - at, at - behind
            scale = np.maximum(np.abs(forward), np.abs(backward))
            kink |= ~np.isfinite(scale) | (np.abs(forward - backward) > KINK * scale + 1e-13)
        # a corner that looks straight along each u (a piecewise-linear map symmetric under negation, as the
        # hexcone is at a gray pixel): the differences do not add up across directions
        steps = [ahead - at for _, ahead, _ in moves]
        combined = both - at
        scale = np.maximum(np.abs(combined), sum(np.abs(d) for d in steps))
        kink |= ~np.isfinite(combined) | (np.abs(combined - sum(steps)) > KINK * scale + 1e-13)
    cotangent = rng.standard_normal(at.shape)
    cotangent[kink] = 0.0
    estimates = [
        float(np.sum(cotangent * np.where(kink, 0.0, ahead - behind)) / (2 * step)) for _, ahead, behind in moves
    ]
    return Probe(cotangent, [u for u, _, _ in moves], estimates, int(kink.sum()))


def _estimated_function(spec: OpSpec, case: Case, sampled: Sampled | None) -> Callable[[np.ndarray], Steps[np.ndarray]]:
    """f: the reference, or where it cannot be differentiated the op's own forward in float64 on the cpu."""
    declared = spec.gradient
    assert declared is not None
    reference = spec.reference
    if declared.estimate == "reference" and reference is None:
        raise ValueError(f"{spec.name}: a Gradient estimated from the reference needs a reference")

    def f(x: np.ndarray) -> Steps[np.ndarray]:
        if declared.estimate == "reference":
            assert reference is not None
            found = reference(x, case) if sampled is None else reference(x, case, sampled)
            return np.asarray(found, dtype=np.float64)
        run = yield from call(spec, torch.tensor(x), case, CPU, sampled, timed=False)
        if run.error is not None or not isinstance(run.output, torch.Tensor):
            raise RuntimeError(f"the op's float64 forward on the cpu: {run.error or type(run.output).__name__}")
        return to_float64(run.output)

    return f


def probe_of(ctx: CaseContext) -> Steps[Probe]:
    # the engine's cached reference is f(values) itself where it is the unrounded reference (not a uint8 output,
    # which expected_output rounds): the same float64 values, computed once for the reference check
    reused = (
        ctx.spec.gradient is not None
        and ctx.spec.gradient.estimate == "reference"
        and ctx.output_dtype not in INTEGER_PEAKS
    )
    found: Probe = yield from ctx.inputs.derived(
        "gradient",
        lambda: make_probe(
            ctx.spec, ctx.case, ctx.source.values, ctx.sampled, (lambda: ctx.expected) if reused else None
        ),
    )
    return found


def _gradient_run(ctx: CaseContext) -> Steps[OpRun]:
    probe = yield from probe_of(ctx)
    image = ctx.source.on(ctx.target)
    return (yield from backward(ctx.spec, image, ctx.case, ctx.target, ctx.sampled, torch.from_numpy(probe.cotangent)))


GRADIENT_RUN = Derived("gradient", _gradient_run)  # the target's backward run (the report keeps its gradient)


def gradient_run(ctx: CaseContext) -> Steps[OpRun]:
    """The target's gradient of the case for the probe's cotangent, computed once per context."""
    return (yield from ctx.derive(GRADIENT_RUN))


def gradient64(ctx: CaseContext) -> Steps[np.ndarray | None]:
    run = yield from gradient_run(ctx)
    return to_float64(host_tensor(run.output)) if run.error is None and holds_values(run.output) else None


def check_gradient(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    if not ctx.returned_tensor:
        return None  # the forward failed: its error check says so
    forward = yield from verdict(ctx, "reference")
    if forward is not None and not forward.passed:
        return None  # the output is off the reference here: its reference item (or known issue) says so already
    probe = yield from probe_of(ctx)
    if probe.error is not None or not probe.cotangent.any():
        return None  # no estimate (the reference cannot run here) or every output element at a kink
    run = yield from gradient_run(ctx)
    tolerance = ctx.tolerance("gradient")
    details = {"left_out": probe.left_out, "elements": int(probe.cotangent.size), "estimates": probe.estimates}
    if run.not_run is not None:
        return None
    if run.error is not None:
        return CheckOutcome(
            "gradient",
            False,
            f"backward: {run.error}",
            traceback=run.error_text,
            cause="backward raised",
            tolerance=tolerance,
            details=details,
        )
    problems = device_problems(ctx, run, run.log, "backward: ")
    if problems:
        return failed("gradient", problems, tolerance=tolerance, details=details)
    grad = yield from gradient64(ctx)
    assert grad is not None
    if grad.shape != probe.directions[0].shape:
        return CheckOutcome(
            "gradient",
            False,
            f"gradient of shape {grad.shape} for an input of shape {probe.directions[0].shape}",
            cause="shape",
            tolerance=tolerance,
            details=details,
        )
    norm = float(np.linalg.norm(grad))
    projected = [float(np.sum(grad * u)) for u in probe.directions]
    scales = [max(norm, abs(e), 1e-300) for e in probe.estimates]
    found = compare_check(
        "gradient",
        np.array([p / s for p, s in zip(projected, scales, strict=True)]),
        np.array([e / s for e, s in zip(probe.estimates, scales, strict=True)]),
        tolerance,
        "float64",
        "estimate",
    )
    found.details = details | {"projected": projected, "gradient_norm": norm}
    if not found.passed:
        assert found.metrics is not None
        found.message = (
            f"the backward pass along {DIRECTIONS} random directions is off the central differences of the "
            f"{ctx.spec.gradient.estimate if ctx.spec.gradient else 'reference'} by up to "
            f"{found.metrics.max_abs:.3g} of the gradient's norm (tolerance {tolerance.atol:g}, "
            f"{tolerance.name!r}); <VJP, u> = {projected}, estimate {probe.estimates}"
        )
    return found


def check_gradient_device(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    twin = ctx.twin
    if twin is None or not ctx.returned_tensor or (yield from probe_of(ctx)).error is not None:
        return None
    forward = yield from verdict(ctx, ctx.target.twin_check)
    if forward is not None and not forward.passed:
        return None  # the outputs already differ here: the cross_device (compiled) item says so
    mine = yield from gradient64(ctx)
    theirs = yield from gradient64(twin)
    if mine is None or theirs is None or mine.shape != theirs.shape:
        return None  # a backward that failed or misshaped: the gradient check on that side says so
    name = ctx.target.twin_label
    tolerance = ctx.tolerance("gradient_device")
    scale = max(float(np.max(np.abs(theirs))) if theirs.size else 0.0, 1e-300)
    if np.array_equal(mine, theirs):
        return CheckOutcome(
            "gradient_device", True, metrics=Metrics.identical(mine.size), tolerance=tolerance, against=name
        )
    found = compare_check("gradient_device", mine / scale, theirs / scale, tolerance, "float64", name)
    if found.passed:
        return found
    side = yield from diverging_side(ctx, name, "gradient")
    found.diverges = side
    if side == name:
        return replace(
            found,
            passed=True,
            cause="",
            message=f"{found.message}; this target's gradient matches the estimate, {name}'s does not (see its "
            f"gradient check)",
        )
    found.message = f"gradient (in units of {name}'s largest element) {found.message}; " + {
        "both": f"both {name}'s and this target's are off the estimate",
        "undetermined": "both are within the estimate's tolerance",
    }.get(side, f"this target's is off the estimate, {name}'s is not")
    found.cause = f"values, {side if side in ('both', 'undetermined') else 'target'} diverges"
    return found


def _differentiable(spec: OpSpec, dtype: str, mode: str) -> bool:
    return spec.gradient is not None and spec.in_domain(mode) and spec.gradient.covers(dtype, mode)


register(
    Check(
        "gradient",
        62,
        "estimate",
        "the backward pass (a random cotangent's VJP along random directions) vs central differences of the "
        "float64 reference",
        lambda spec, target, mode: spec.gradient is not None and spec.in_domain(mode),
        check_gradient,
        variant=_differentiable,
        judges_values=True,
    )
)
register(
    Check(
        "gradient_device",
        63,
        "cpu",
        "an accelerator's (or compiled target's) gradient vs the cpu's (eager's) for the same cotangent",
        lambda spec, target, mode: spec.gradient is not None and spec.in_domain(mode) and target.twin is not None,
        check_gradient_device,
        variant=_differentiable,
        judges_values=True,
    )
)
