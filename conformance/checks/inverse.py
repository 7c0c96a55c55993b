"""The `inverse` relation: what a library pairs as inverses undoes itself.

A library says an operation has an inverse in two ways, and code relies on each (a colour space visited and left,
an augmentation undone to map a prediction back):

- **By name.**  kornia.color's `rgb_to_X` beside `X_to_rgb`, kornia.enhance's `normalize` beside `denormalize`,
  torchvision's `rgb_to_grayscale` beside `grayscale_to_rgb`: a callable the op's spec `needs` (a class: the
  function it wraps) and the function its name pairs it with (`a_to_b` / `b_to_a`, `x` / `dex`), found in the same
  module or its package.  With f the op's and g its pair, both on the target with the arguments the case's call
  gave f (a class: its constructor's) that each accepts:
  g(f(x)) is a projection (applying it again changes nothing: g(f(g(f(x)))) = g(f(x))), or f(g(f(x))) = f(x).  A
  lossy pair (to grayscale) keeps the first where an exact one keeps both; the second holds where the first's space
  is ill-conditioned (a hue where the saturation is 0).  A pair that is not inverse fails both.
- **`inverse()`.**  A kornia geometric augmentation undoes its last call with `module.inverse(output)`: the output
  warped back with the inverse of the reported matrix.  Where an input pixel's image lies a pixel inside the output,
  the inverse must hold the output sampled there (the module's resampling, in float64), as `transform_matrix` holds
  the forward warp.

Inputs in [0, 1] (the domain the conversions document), float32 and float64 images, the first cases of a variant.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import torch

from conformance.checks.context import CaseContext
from conformance.checks.entered import entered
from conformance.checks.forms import eager_tensor_call, first_cases, usable
from conformance.checks.matrix import content_tolerance, geometric_warp, warped
from conformance.checks.registry import Check, CheckOutcome, compare_check, register
from conformance.checks.requests import Steps, call
from conformance.devices.targets import Target
from conformance.devices.virtual.tensor import host_tensor
from conformance.spec.domain import Returns
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import to_float64
from conformance.spec.signatures import function_twin
from conformance.spec.tolerances import Tolerance
from conformance.spec.versions import resolved

INVERSE_CASES = 5
ROUNDINGS = 512  # roundings of the dtype, of the compared values' size, two conversions there and back allow
FLOOR = 1e-5  # of the values' size, whatever the dtype: libraries regularise their divisions (kornia's HSV: eps=1e-8)


def paired_name(name: str) -> str:
    """The name a library gives the inverse of `name` (`rgb_to_hsv` -> `hsv_to_rgb`, `normalize` <-> `denormalize`)."""
    if "_to_" in name:
        source, _, destination = name.partition("_to_")
        return f"{destination}_to_{source}"
    return name[2:] if name.startswith("de") else f"de{name}"


@cache
def named_pair(dotted: str) -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    """The function `dotted` names (a class: the function it wraps) and its inverse by name, or None."""
    found = resolved(dotted)
    if inspect.ismodule(found):  # a function named as its module is (kornia.enhance.normalize)
        owner, _, name = dotted.rpartition(".")
        found = getattr(resolved(owner), name, None)
    function = function_twin(found) if inspect.isclass(found) else found
    if not inspect.isfunction(function):
        return None
    wanted = paired_name(function.__name__)
    for owner in (function.__module__, function.__module__.rpartition(".")[0]):
        other = getattr(sys.modules.get(owner), wanted, None)
        if inspect.isfunction(other) and other is not function:
            return function, other
    return None


def _pair(spec: OpSpec) -> tuple[Callable[..., Any], Callable[..., Any]] | None:
    if spec.samples:
        return None  # a random module calls its function with what it samples: its inverse is inverse()
    return next((pair for dotted in spec.needs if (pair := named_pair(dotted)) is not None), None)


@cache
def _augmentation(dotted: str) -> bool:
    found = resolved(dotted)
    return inspect.isclass(found) and any(cls.__name__ == "GeometricAugmentationBase2D" for cls in found.__mro__)


def _arguments(function: Callable[..., Any], params: dict[str, Any]) -> dict[str, Any]:
    """The case's arguments `function` accepts by name (not its first, the image)."""
    names = list(inspect.signature(function).parameters)[1:]
    return {name: value for name, value in params.items() if name in names}


def _binds(function: Callable[..., Any], image: torch.Tensor, params: dict[str, Any]) -> bool:
    try:
        inspect.signature(function).bind(image, **_arguments(function, params))
    except TypeError:
        return False
    return True


def _round_trips(pair: tuple[Callable[..., Any], Callable[..., Any]]) -> Callable[[torch.Tensor, dict], Any]:
    forward, backward = pair

    def round_trips(image: torch.Tensor, params: dict[str, Any]) -> tuple[Any, ...]:
        if not (_binds(forward, image, params) and _binds(backward, image, params)):
            return ()  # an argument the case does not give (a module's constructor holds it)
        there = forward(image, **_arguments(forward, params))
        if not isinstance(there, torch.Tensor):
            return ()  # a pair of planes (yuv420): no single image to hold
        back = backward(there, **_arguments(backward, params))
        there_again = forward(back, **_arguments(forward, params))
        return there, back, there_again, backward(there_again, **_arguments(backward, params))

    return round_trips


def _projection(values: list[np.ndarray], dtype: str) -> tuple[CheckOutcome, CheckOutcome]:
    there, back, there_again, back_again = values

    def held(said: str, actual: np.ndarray, expected: np.ndarray) -> CheckOutcome:
        size = max(float(np.abs(expected).max(initial=0.0)), 1.0)
        atol = max(ROUNDINGS * float(torch.finfo(getattr(torch, dtype)).eps), FLOOR) * size
        why = f"{ROUNDINGS} roundings of {dtype}, at least {FLOOR} (a library's regularised division), of the size"
        tolerance = Tolerance("inverse-pair", atol=atol, reason=why)
        return compare_check("inverse", actual, expected, tolerance, dtype, said)

    return held("g(f(x))", back_again, back), held("f(x)", there_again, there)


def _given(ctx: CaseContext, forward: Callable[..., Any]) -> Steps[tuple[torch.Tensor, dict[str, Any]] | None]:
    """The image and arguments the case's call gives `forward`: those it entered it with, or, where it entered the
    class that wraps it, the case's input and the class's constructor arguments (None: it entered neither)."""
    entry, _ = yield from entered(ctx, ctx.sampled)
    if entry is None:
        return None
    if entry.callable is forward:
        first, *_ = inspect.signature(forward).parameters
        image = entry.arguments.get(first)
        rest = {k: v for k, v in entry.arguments.items() if k != first}
        return (image, rest) if isinstance(image, torch.Tensor) else None
    if inspect.isclass(entry.callable) and function_twin(entry.callable) is forward:
        return ctx.source.on(ctx.target), {k: v for k, v in entry.arguments.items() if k != "self"}
    return None


def check_named_pair(
    ctx: CaseContext, pair: tuple[Callable[..., Any], Callable[..., Any]]
) -> Steps[CheckOutcome | None]:
    given = yield from _given(ctx, pair[0])
    if given is None:
        return None
    image, arguments = given
    chain = dataclasses.replace(ctx.spec, call=_round_trips(pair), module=None, counterpart=None, returns=Returns())
    case = dataclasses.replace(ctx.case, params=arguments)
    run = yield from call(chain, image, case, ctx.target)
    forward, backward = (f"{f.__module__}.{f.__name__}" for f in pair)
    if not usable(run) or (run.error is None and not run.output):
        return None
    if run.error is not None:
        said = f"{forward} and its inverse by name {backward}, on the op's input: {run.error.splitlines()[0]}"
        return CheckOutcome("inverse", False, said, cause="raised", details={"pair": [forward, backward]})
    values = [to_float64(host_tensor(value)) for value in run.output]
    if any(a.shape != b.shape for a, b in zip(values, values[2:], strict=False)):
        shapes = [list(v.shape) for v in values]
        said = f"{forward} then {backward} do not come back to one shape: {shapes}"
        return CheckOutcome("inverse", False, said, cause="shape", details={"pair": [forward, backward]})
    projection, right_inverse = _projection(values, ctx.case.recipe.dtype)
    details = {"pair": [forward, backward], "projection": projection.passed, "right_inverse": right_inverse.passed}
    if projection.passed or right_inverse.passed:
        found = projection if projection.passed else right_inverse
        return dataclasses.replace(found, details=details)
    said = (
        f"{forward} and {backward} are not inverse: g(f(g(f(x)))) {projection.message}; "
        f"f(g(f(x))) {right_inverse.message}"
    )
    return dataclasses.replace(projection, message=said, cause="not inverse", details=details)


def _inverted(module: Any, output: torch.Tensor) -> Any:
    try:
        return module.inverse(output)
    except NotImplementedError:
        return None
    except Exception as exc:  # noqa: BLE001 - the finding
        return exc


def check_module_inverse(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    warp = yield from geometric_warp(ctx, after=_inverted)
    if warp is None or warp.after is None:
        return None
    if isinstance(warp.after, Exception):
        said = f"inverse() of its own output raised {type(warp.after).__name__}: {str(warp.after).splitlines()[0]}"
        return CheckOutcome("inverse", False, said, cause="raised")
    back = host_tensor(warp.after).double().reshape(warp.image.shape[0], -1, *warp.after.shape[-2:])
    if back.shape != warp.image.shape:
        said = f"inverse() gives {list(back.shape)} for an input of {list(warp.image.shape)}"
        return CheckOutcome("inverse", False, said, cause="shape")
    size = (int(back.shape[-2]), int(back.shape[-1]))
    expected, inside = warped(warp.output, torch.linalg.inv(warp.matrix), size, warp.mode)
    if not inside.any():
        return None
    found = compare_check(
        "inverse",
        back.numpy()[inside],
        expected[inside],
        content_tolerance(ctx),
        ctx.output_dtype,
        "the output warped back",
    )
    if not found.passed:
        said = f"inverse() against the output warped back by the reported matrix ({warp.mode}): {found.message}"
        found.message = said
        found.cause = "inverse values"
    return found


def check_inverse(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    if ctx.case.recipe.empty or ctx.output64 is None:
        return None  # the op raised or returned no values
    pair = _pair(ctx.spec)
    values = ctx.source.values
    if pair is not None and (values.min() < 0 or values.max() > 1):
        return None  # an input outside the [0, 1] the conversions document
    if not (yield from first_cases(ctx, "inverse", INVERSE_CASES)):
        return None
    return (yield from (check_named_pair(ctx, pair) if pair is not None else check_module_inverse(ctx)))


def _applies(spec: OpSpec, target: Target, mode: str) -> bool:
    inverted = _pair(spec) is not None or (spec.samples and any(_augmentation(d) for d in spec.needs))
    return inverted and eager_tensor_call(spec, target, mode)


register(
    Check(
        "inverse",
        76,
        "its inverse",
        "an op and its inverse by name (rgb_to_X / X_to_rgb, normalize / denormalize) come back to where they "
        "started; a kornia geometric augmentation's inverse() warps its output back",
        _applies,
        check_inverse,
        judges_values=True,
        relation=True,
        variant=lambda spec, dtype, mode: dtype in ("float32", "float64"),
        nothing="no case's input was in [0, 1], the op raised, the pair returned no single image, the module has no "
        f"inverse or no input pixel lands inside its output, or {INVERSE_CASES} cases were checked on this target "
        "already",
    )
)
