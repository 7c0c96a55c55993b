"""The `axes` relation: a sampled displacement moves pixels as far whatever the image's aspect ratio.

A random warp samples a displacement field and hands it to `grid_sample` as a grid, laid out (..., H, W, 2) with x
then y, in the grid's normalised units: x must be scaled by the width and y by the height.  torchvision 0.25's
ElasticTransform divided by the wrong sides, so its displacements in pixels grew with the aspect ratio; every check
that replays the module's own sampled field (its reference does) reproduces the wrong one.  A displacement documented
in pixels ("alpha: magnitude of displacements") does not depend on the image's other side, and a field of isotropic
noise on a transposed image has the same distribution.  So for the first case of a variant, on the cpu (what a module
samples does not depend on the device), the module's parameters are drawn DRAWS times for a landscape image and for a
portrait one (the landscape transposed), every sampled grid-shaped field is converted to pixels (x * W / 2,
y * H / 2), and each axis' mean square in the two must be within FACTOR of each other: a field scaled by the wrong
sides differs by the aspect ratio to the fourth power (256 at 4:1), independent draws by far less.  Items only for
module ops whose spec's `needs` names a class that documents an argument as a displacement (torchvision's
ElasticTransform, kornia's RandomElasticTransform, read from their docstrings).
"""

from __future__ import annotations

import inspect
from functools import cache
from typing import Any

import torch

from conformance.checks.context import CaseContext
from conformance.checks.forms import eager_tensor_call, first_cases
from conformance.checks.registry import Check, CheckOutcome, register
from conformance.checks.requests import Steps, draws
from conformance.devices.targets import CPU, Target
from conformance.spec.opspec import OpSpec
from conformance.spec.sampled import named_leaves
from conformance.spec.signatures import docstring_entries
from conformance.spec.versions import resolved

DRAWS = 24
FACTOR = 4.0  # of the mean squares: a factor of 2 in the displacement's size
SIDES = (32, 128)  # the landscape image's height and width (4:1; torchvision's blur reflects 20 pixels)


def fields(params: Any, height: int, width: int) -> dict[str, torch.Tensor]:
    """The sampled tensors laid out as a grid displacement of the image: (..., height, width, 2)."""
    return {
        name: value
        for name, value in named_leaves(params).items()
        if isinstance(value, torch.Tensor)
        and value.is_floating_point()
        and value.ndim >= 3
        and tuple(value.shape[-3:]) == (height, width, 2)
    }


def mean_squares(drawn: list[Any], height: int, width: int) -> dict[str, tuple[float, float]]:
    """Each grid field's mean square in pixels along x and along y, over the draws for a height x width image."""
    sums: dict[str, list[float]] = {}
    for params in drawn:
        for name, field in fields(params, height, width).items():
            pixels = field.double() * torch.tensor([width / 2, height / 2], dtype=torch.float64)
            total = sums.setdefault(name, [0.0, 0.0])
            total[0] += float(pixels[..., 0].square().mean()) / len(drawn)
            total[1] += float(pixels[..., 1].square().mean()) / len(drawn)
    return {name: (x, y) for name, (x, y) in sums.items()}


def _drawn(form: OpSpec, ctx: CaseContext, height: int, width: int) -> Steps[dict[str, tuple[float, float]]]:
    """The module's fields' mean squares over DRAWS draws (seeded from the case's seed on) for a height x width
    image; what its constructor or sampler raises is raised."""
    image = torch.rand(1, ctx.case.recipe.channels, height, width)
    seeds = tuple(ctx.case.recipe.seed + index for index in range(DRAWS))
    drawn = yield from draws(form, dict(ctx.case.params), image, seeds)
    return mean_squares(drawn, height, width)


def check_axes(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    form = ctx.spec.module_form()
    if form is None or form.module is None or not (yield from first_cases(ctx, "axes", 1)):
        return None
    height, width = SIDES
    try:
        landscape = yield from _drawn(form, ctx, height, width)
        portrait = yield from _drawn(form, ctx, width, height)
    except Exception:  # noqa: BLE001 - a sampler that refuses these images: the sampling check's finding
        return None
    compared = [name for name in landscape if name in portrait and max(*landscape[name], *portrait[name]) > 0]
    if not compared:
        return None
    for name in compared:
        for axis, letter in enumerate("xy"):
            wide, tall = landscape[name][axis], portrait[name][axis]
            if max(wide, tall) > FACTOR * max(min(wide, tall), 1e-12):
                said = (
                    f"the sampled {name}'s mean square displacement along {letter}, in pixels, is {wide:.4g} for a "
                    f"{height}x{width} image and {tall:.4g} for a {width}x{height} one: it scales with the image's "
                    "other side"
                )
                return CheckOutcome("axes", False, said, cause="displacement axes", details={"fields": compared})
    return CheckOutcome("axes", True, details={"fields": compared})


@cache
def _documents_displacement(dotted: str) -> bool:
    """Whether the class `dotted` names documents an argument as a displacement (its docstring's Args)."""
    found = resolved(dotted)
    entries = docstring_entries(found) if inspect.isclass(found) else {}
    return any("displacement" in " ".join(str(part) for part in entry).lower() for entry in entries.values())


def _applies(spec: OpSpec, target: Target, mode: str) -> bool:
    """Module ops whose spec names a class that documents a displacement, on the cpu (sampling is the device's own
    generator's business elsewhere)."""
    documented = any(_documents_displacement(dotted) for dotted in spec.needs)
    return (
        documented
        and spec.module_form() is not None
        and target.name == CPU.name
        and eager_tensor_call(spec, target, mode)
    )


register(
    Check(
        "axes",
        77,
        "the transposed image",
        "a sampled grid displacement's size in pixels, along each axis, is the same for an image and its transpose",
        _applies,
        check_axes,
        relation=True,
        variant=lambda spec, dtype, mode: dtype == "float32",
        nothing="the module samples no grid-shaped displacement (..., H, W, 2), or its sampler refuses the images, or "
        "the first case of the variant was checked already",
    )
)
