"""The `transform_matrix` relation: the matrix a geometric augmentation reports maps its input onto its output.

kornia's geometric augmentations keep the 3x3 matrix of what they did (`module.transform_matrix`); pipelines read
it to move boxes, keypoints and masks with the image, and `inverse()` undoes the warp with it.  No value check
reads it, so a matrix that is transposed, inverted, stale or scaled for another size passes every item.  For the
first cases of a variant, the check builds the module as the case does, reads the matrix inside the call on the
target (kornia computes it lazily from the parameters of that call), and warps the case's input with it in float64
(each output pixel's source is M^-1 (x, y, 1), sampled with the module's own bilinear or nearest resampling,
pixel centres as integers).  Where that source lies at least a pixel inside the image (the border and padding are
each library's own), the module's output must hold the warped values within 1e-3 of the content's span (float32
positions move by ~1e-5 of a pixel); nearest samples whose source is within 1e-3 of a half pixel are left out.
Only modules derived from kornia's `GeometricAugmentationBase2D` (an intensity augmentation's matrix is the
identity while its values change), float32 and float64 images.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from conformance.checks.context import CaseContext
from conformance.checks.forms import eager_tensor_call, first_cases, keeping, usable
from conformance.checks.registry import Check, CheckOutcome, compare_check, register
from conformance.checks.requests import Steps, call
from conformance.devices.targets import Target
from conformance.devices.virtual.tensor import host_tensor
from conformance.spec.opspec import OpSpec
from conformance.spec.tolerances import Tolerance

MATRIX_CASES = 5
GEOMETRIC_BASE = "GeometricAugmentationBase2D"  # kornia's base class of the augmentations that report a warp
HALF_PIXEL_TIE = 1e-3
WARP_MODES = ("bilinear", "nearest")


def geometric(module: Any) -> bool:
    return any(cls.__name__ == GEOMETRIC_BASE for cls in type(module).__mro__)


def warped(image: torch.Tensor, matrix: torch.Tensor, size: tuple[int, int], mode: str) -> tuple[Any, Any]:
    """`image` (B, C, H, W) float64 warped by `matrix` (B, 3, 3) to `size`, and the mask of output pixels whose
    source lies a pixel inside the image (and, for nearest, not on a half-pixel tie)."""
    height, width = size
    ys, xs = torch.meshgrid(
        torch.arange(height, dtype=torch.float64), torch.arange(width, dtype=torch.float64), indexing="ij"
    )
    points = torch.stack([xs, ys, torch.ones_like(xs)], dim=-1).reshape(-1, 3)  # (HW, 3)
    source = points @ torch.linalg.inv(matrix).transpose(1, 2)  # (B, HW, 3)
    source = source[..., :2] / source[..., 2:]
    in_h, in_w = image.shape[-2:]
    x, y = source[..., 0], source[..., 1]
    inside = (x >= 1) & (x <= in_w - 2) & (y >= 1) & (y <= in_h - 2)
    if mode == "nearest":
        tie = lambda v: ((v - v.floor()) - 0.5).abs() < HALF_PIXEL_TIE  # noqa: E731
        inside &= ~tie(x) & ~tie(y)
    grid = torch.stack([2 * x / max(in_w - 1, 1) - 1, 2 * y / max(in_h - 1, 1) - 1], dim=-1)
    grid = grid.reshape(matrix.shape[0], height, width, 2)
    found = F.grid_sample(image, grid, mode=mode, padding_mode="zeros", align_corners=True)
    return found.numpy(), inside.reshape(matrix.shape[0], 1, height, width).expand_as(found).numpy()


@dataclass(frozen=True)
class Warp:
    """What a kornia geometric augmentation did to one case: its input and output as host float64 (B, C, H, W),
    the matrix it reported inside the call (B, 3, 3), its resampling, and what `after` returned there."""

    image: torch.Tensor
    output: torch.Tensor
    matrix: torch.Tensor
    mode: str
    after: Any = None


def geometric_warp(ctx: CaseContext, after: Callable[[Any, torch.Tensor], Any] | None = None) -> Steps[Warp | None]:
    """The case's call of a kornia geometric augmentation on the target, with its reported matrix and
    `after(module, output)` read inside the call (None: the op is no such augmentation, resamples otherwise than
    bilinear or nearest, or did not run)."""
    built: list[torch.nn.Module] = []
    spec = keeping(ctx.spec, built)

    def read(output: Any) -> tuple[Any, Any, Any]:
        module = built[-1]
        return output, getattr(module, "transform_matrix", None), after(module, output) if after else None

    run = yield from call(spec, ctx.source.on(ctx.target), ctx.case, ctx.target, ctx.sampled, then=read)
    if not usable(run) or run.error is not None or not built or not geometric(built[-1]):
        return None
    output, matrix, later = run.output
    flags = getattr(built[-1], "flags", None)
    resample = flags.get("resample", "nearest") if isinstance(flags, dict) else None  # none: whole pixels (a flip)
    mode = str(getattr(resample, "name", resample)).lower()
    if not isinstance(matrix, torch.Tensor) or not isinstance(output, torch.Tensor) or mode not in WARP_MODES:
        return None
    image = torch.from_numpy(np.array(ctx.source.values))
    image = image.reshape(-1, *image.shape[-3:])
    result = host_tensor(output).double()
    result = result.reshape(-1, *result.shape[-3:])
    matrix = host_tensor(matrix).double().reshape(-1, 3, 3)
    if matrix.shape[0] != image.shape[0] or result.shape[:2] != image.shape[:2]:
        return None
    return Warp(image, result, matrix, mode, later)


def content_tolerance(ctx: CaseContext) -> Tolerance:
    span = float(np.ptp(ctx.source.values)) or 1.0
    return Tolerance("transform-matrix", atol=1e-3 * span, reason="float32 positions: ~1e-5 of a pixel")


def check_transform_matrix(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    if (
        ctx.case.recipe.empty
        or ctx.output64 is None
        or not (yield from first_cases(ctx, "transform_matrix", MATRIX_CASES))
    ):
        return None
    warp = yield from geometric_warp(ctx)
    if warp is None:
        return None
    expected, inside = warped(
        warp.image, warp.matrix, (int(warp.output.shape[-2]), int(warp.output.shape[-1])), warp.mode
    )
    if not inside.any():
        return None
    found = compare_check(
        "transform_matrix",
        warp.output.numpy()[inside],
        expected[inside],
        content_tolerance(ctx),
        ctx.output_dtype,
        "the input warped by it",
    )
    if not found.passed:
        found.message = f"the reported transform_matrix, applied to the input ({warp.mode}): {found.message}"
        found.cause = "matrix values"
    return found


def _applies(spec: OpSpec, target: Target, mode: str) -> bool:
    random = spec.samples
    return random and eager_tensor_call(spec, target, mode)


register(
    Check(
        "transform_matrix",
        75,
        "input warped by it",
        "the transform_matrix a kornia geometric augmentation reports, applied to its input, gives its output "
        "(a pixel inside the image)",
        _applies,
        check_transform_matrix,
        judges_values=True,
        relation=True,
        variant=lambda spec, dtype, mode: dtype in ("float32", "float64"),
        nothing="the module is not a kornia geometric augmentation, resamples otherwise than bilinear or nearest, or "
        f"no output pixel's source lies inside the image, or {MATRIX_CASES} cases were checked on this target already",
    )
)
