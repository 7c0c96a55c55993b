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
from conformance.checks.forms import FirstCases, eager_tensor_call
from conformance.checks.registry import Check, CheckOutcome, register
from conformance.devices.targets import CPU, Target
from conformance.spec.opspec import OpSpec
from conformance.spec.sampled import named_leaves
from conformance.spec.signatures import docstring_entries
from conformance.spec.versions import resolved

DRAWS = 24
FACTOR = 4.0  # of the mean squares: a factor of 2 in the displacement's size
SIDES = (32, 128)  # the landscape image's height and width (4:1; torchvision's blur reflects 20 pixels)
_first_cases = FirstCases(1)


def draw(module: Any, image: torch.Tensor) -> Any:
    """The module's parameters for the image, drawn by the module's own sampler (kornia: `forward_parameters`;
    torchvision v2: `make_params`, `_get_params` before 0.21 named it), or None where it has no sampler."""
    if hasattr(module, "forward_parameters"):
        return module.forward_parameters(image.shape)
    sampler = getattr(module, "make_params", None) or getattr(module, "_get_params", None)
    return sampler([image]) if sampler is not None else None


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


def mean_squares(module: Any, channels: int, height: int, width: int, seed: int) -> dict[str, tuple[float, float]]:
    """Each grid field's mean square in pixels along x and along y, over DRAWS draws for a height x width image."""
    image = torch.rand(1, channels, height, width)
    sums: dict[str, list[float]] = {}
    with torch.random.fork_rng(devices=[]):
        for index in range(DRAWS):
            CPU.seed(seed + index)
            for name, field in fields(draw(module, image), height, width).items():
                pixels = field.double() * torch.tensor([width / 2, height / 2], dtype=torch.float64)
                total = sums.setdefault(name, [0.0, 0.0])
                total[0] += float(pixels[..., 0].square().mean()) / DRAWS
                total[1] += float(pixels[..., 1].square().mean()) / DRAWS
    return {name: (x, y) for name, (x, y) in sums.items()}


def check_axes(ctx: CaseContext) -> CheckOutcome | None:
    form = ctx.spec.module_form()
    if form is None or form.module is None or not _first_cases.take(ctx):
        return None
    try:
        module = form.module.build(dict(ctx.case.params))
        height, width = SIDES
        channels = ctx.case.recipe.channels
        landscape = mean_squares(module, channels, height, width, ctx.case.recipe.seed)
        portrait = mean_squares(module, channels, width, height, ctx.case.recipe.seed)
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
