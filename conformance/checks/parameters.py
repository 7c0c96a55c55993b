"""The `param_gradient` relation: the op's gradient with respect to each floating parameter it accepts as a tensor
matches central differences.

kornia is differentiable in its parameters as well as its image (a brightness factor, a sigma, an angle learned by
gradient descent), and its signatures say which: `factor: Union[float, Tensor]`.  The suite's gradient check
differentiates with respect to the image only, so a parameter whose tensor is detached, turned into a Python number
(`.item()`, `float()`) or used through a path without a backward passes it.  For the first cases of each float32 and
float64 variant, on the case's image in float64, the check sees the first public library callable the call enters
(as the types relation does), gives
each float argument whose signature accepts a tensor as a float64 tensor of its documented shape that requires a
gradient, and compares autograd's <v, J u> for a random cotangent v and direction u with the central difference
<v, (g(p + hu) - g(p - hu)) / 2h> of the same call, output elements with a kink within the step (a clamp reached, a
threshold crossed: their one-sided differences disagree) left out of v.  An output that holds no gradient for the
parameter where the differences move (a threshold's derivative is zero almost everywhere, and autograd may hold
none), or a directional derivative off by more than 1e-4 of |J^T v| |u|, fails.  A random module is left out (its
parameters are ranges to sample from, not values to differentiate), as is a virtual device (its backward is walked
node by node, for the image only).
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import torch

from conformance.checks.context import CaseContext
from conformance.checks.entered import entered, given
from conformance.checks.forms import eager_tensor_call, first_cases
from conformance.checks.registry import Check, CheckOutcome, register
from conformance.checks.requests import Steps
from conformance.devices.entry import Entry
from conformance.devices.targets import Target
from conformance.devices.virtual.tensor import host_tensor
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import to_float64
from conformance.spec.signatures import accepted, encodings

PARAM_CASES = 3  # cases of a variant checked on a target, per process: a lost gradient is lost in every case
STEP = 1e-6  # the central difference's step, in the parameter's units (float64: rounding ~1e-10 of the value)
KINK = 1e-3  # one-sided differences disagreeing by more than this fraction: a kink inside the step (as for images)
ROUNDINGS = 64  # float64 roundings of an output element the central difference may carry (its noise floor)
AGREE = 1e-4  # how far the two directional derivatives may be apart, relative to |J^T v| |u|


def floating_parameters(entry: Entry, image_shape: tuple[int, ...]) -> dict[str, torch.Tensor]:
    """Each float argument the entered callable accepts as a tensor, as a float64 tensor of its documented shape."""
    documented = accepted(entry.callable)
    found = {}
    for name, value in entry.arguments.items():
        floats = isinstance(value, float) or (
            isinstance(value, (tuple, list)) and value and all(isinstance(v, float) for v in value)
        )
        if not floats or name not in documented:
            continue
        made = [e for e in encodings(value, documented[name], torch.float64, False, image_shape) if e.on_target]
        if made and made[0].value.dtype == torch.float64:
            found[name] = made[0].value
    return found


def _output(ctx: CaseContext, entry: Entry, name: str, value: torch.Tensor) -> Steps[Any]:
    image = ctx.source.dense.double()  # differences in float64 whatever the case's float dtype
    run = yield from given(ctx, entry, {name: ctx.target.place(value)}, ctx.sampled, image=image)
    if run is None or run.error is not None or not isinstance(run.output, torch.Tensor):
        return None
    return run.output


def _checked(ctx: CaseContext, entry: Entry, name: str, value: torch.Tensor) -> Steps[CheckOutcome | None]:
    rng = np.random.default_rng(zlib.crc32(f"param_gradient {name} {ctx.case.json}".encode()))
    direction = torch.from_numpy(rng.standard_normal(tuple(value.shape)))
    leaf = value.clone().requires_grad_(True)
    with torch.enable_grad():  # open while the engine runs the call
        output = yield from _output(ctx, entry, name, leaf)
    ahead = yield from _output(ctx, entry, name, value + STEP * direction)
    behind = yield from _output(ctx, entry, name, value - STEP * direction)
    if any(v is None or not v.is_floating_point() for v in (output, ahead, behind)):
        return None
    at, forward, backward = (to_float64(host_tensor(v.detach())) for v in (output, ahead, behind))
    # a kink within the step (a clamp reached, a threshold crossed): the one-sided differences disagree there
    with np.errstate(invalid="ignore"):
        scale = np.maximum(np.abs(forward - at), np.abs(at - backward))
        kink = ~np.isfinite(scale) | (np.abs((forward - at) - (at - backward)) > KINK * scale + 1e-13)
    cotangent = rng.standard_normal(at.shape)
    cotangent[kink] = 0.0
    estimate = float(np.sum(cotangent * np.where(kink, 0.0, forward - backward)) / (2 * STEP))
    lost = not output.requires_grad
    grad = torch.zeros_like(value)
    if not lost:
        v = ctx.target.put(torch.from_numpy(cotangent).to(output.dtype))
        (found,) = torch.autograd.grad(output, leaf, v, allow_unused=True)
        grad = grad if found is None else host_tensor(found).detach().double()
    analytic = float(torch.sum(grad * direction))
    bound = float(grad.norm() * direction.norm())
    # the differences' own rounding: a few float64 ulps of the output per element, over the step, summed along v
    largest = float(np.abs(at[np.isfinite(at)]).max(initial=1.0))
    noise = ROUNDINGS * np.finfo(np.float64).eps * largest * np.linalg.norm(cotangent) / STEP
    if abs(estimate - analytic) <= AGREE * max(bound, abs(estimate)) + noise:
        return None
    if lost:
        said = f"{entry.name}: the output holds no gradient for {name}, and central differences give {estimate:.6g}"
        return CheckOutcome("param_gradient", False, said, cause="gradient lost")
    off = abs(estimate - analytic) / max(bound, abs(estimate), 1e-300)
    said = (
        f"{entry.name}: gradient w.r.t. {name}: autograd <v, J u> = {analytic:.6g}, central differences "
        f"{estimate:.6g} (off by {off:.3g} of |J^T v| |u|, allowed {AGREE:g})"
    )
    return CheckOutcome("param_gradient", False, said, cause="gradient values", details={"off": off})


def check_param_gradient(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    if (
        ctx.case.recipe.empty
        or ctx.output64 is None
        or not (yield from first_cases(ctx, "param_gradient", PARAM_CASES))
    ):
        return None
    entry, _ = yield from entered(ctx, ctx.sampled)
    if entry is None:
        return None
    parameters = floating_parameters(entry, tuple(ctx.source.dense.shape))
    for name, value in parameters.items():
        found = yield from _checked(ctx, entry, name, value)
        if found is not None:
            found.details = {**(found.details or {}), "callable": entry.name, "parameters": sorted(parameters)}
            return found
    if not parameters:
        return None
    return CheckOutcome("param_gradient", True, details={"callable": entry.name, "parameters": sorted(parameters)})


def _applies(spec: OpSpec, target: Target, mode: str) -> bool:
    random = spec.samples
    return eager_tensor_call(spec, target, mode) and not random and not target.backward_by_walking


register(
    Check(
        "param_gradient",
        73,
        "central differences",
        "the gradient with respect to each float parameter the library callable accepts as a tensor (on the image in "
        "float64) "
        "against central differences of the same call",
        _applies,
        check_param_gradient,
        judges_values=True,
        relation=True,
        variant=lambda spec, dtype, mode: dtype in ("float32", "float64"),
        nothing="the library callable the op enters takes no float it accepts as a tensor, or the op raised, or "
        f"{PARAM_CASES} cases of the variant were checked on this target already",
    )
)
