"""The `pil` check: a functional that takes PIL images gives, for one, the reference's answer and the tensor path's.

torchvision's functionals (v1 and v2) accept a PIL image wherever they accept a tensor and take a code path of
their own for it (Pillow's resampling, Pillow's enhancers, a PIL crop): a pipeline that decodes with Pillow never
reaches the tensor kernels the other checks call.  On the cpu, one image of each case (which one, chosen by the
case's seed, as the batch check does) is handed over as a PIL image in the mode its channels make (L, RGB, RGBA
for uint8), and the PIL image that comes back is held to the same reference under the op's tolerance.  Where the
two paths differ and the PIL one matches the reference, the divergence is the tensor path's, which its own
reference item carries: the outcome passes, saying so, as cross_device does for the cpu.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from conformance.checks.context import CaseContext
from conformance.checks.registry import Check, CheckOutcome, compare_check, register, valid_inputs
from conformance.checks.requests import Steps, call
from conformance.devices.targets import Target
from conformance.devices.virtual.tensor import host_tensor
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import to_float64

PIL_MODES = {1: "L", 3: "RGB", 4: "RGBA"}  # uint8 images by channel count (2 channels: no plain Pillow mode)
PIL_DTYPES = ("uint8",)


def to_pil(image: np.ndarray) -> Any:
    """A (C, H, W) uint8 array as a Pillow image of the mode its channels make."""
    from PIL import Image

    planes = np.ascontiguousarray(np.moveaxis(image, 0, -1)).astype(np.uint8)
    return Image.fromarray(planes[..., 0] if planes.shape[-1] == 1 else planes, mode=PIL_MODES[image.shape[0]])


def from_pil(output: Any) -> np.ndarray:
    """What the PIL path returned, as (C, H, W) float64: a PIL image's bands, or a tensor as it is."""
    if isinstance(output, torch.Tensor):
        return to_float64(host_tensor(output))
    planes = np.asarray(output, dtype=np.float64)
    return planes[None] if planes.ndim == 2 else np.moveaxis(planes, -1, 0)


def _sample(values: np.ndarray, index: int) -> np.ndarray:
    """One image of a (..., C, H, W) array, by its index among the flattened batch."""
    return values.reshape(-1, *values.shape[-3:])[index]


def check_pil(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    recipe = ctx.case.recipe
    if recipe.channels not in PIL_MODES or recipe.empty or ctx.sampled is not None:
        return None  # no Pillow mode holds it (or a random module's replayed parameters are for a batch)
    images = math.prod(recipe.batch)
    index = recipe.seed % images
    picture = to_pil(_sample(ctx.source.values, index))
    run = yield from call(ctx.spec, picture, ctx.case, ctx.target)
    if run.not_run is not None or run.resource is not None:
        return None
    tensor_path = None if ctx.output64 is None else _sample(ctx.output64, index)
    if run.error is not None:
        if tensor_path is None:
            return None  # both paths raise: the error check's
        message = f"a PIL image raises {run.error} where the tensor path returns a result"
        return CheckOutcome("pil", False, message, traceback=run.error_text, cause="raises", against="reference")
    found = compare_check(
        "pil", from_pil(run.output), _sample(ctx.expected, index), ctx.tolerance("pil"), ctx.output_dtype, "reference"
    )
    details: dict[str, Any] = {"image": index, "mode": picture.mode}
    if tensor_path is not None:
        versus = compare_check(
            "pil", from_pil(run.output), tensor_path, ctx.tolerance("pil"), ctx.output_dtype, "the tensor path"
        )
        details["tensor_path"] = {"max_abs": versus.metrics.max_abs if versus.metrics else None, "same": versus.passed}
        if found.passed and not versus.passed:
            found.message = (
                f"the PIL path matches the reference, the tensor path does not ({versus.message}): the divergence is "
                f"the tensor path's (see its reference item)"
            )
    found.details = details
    if not found.passed:
        found.message = f"image {index} as a PIL {picture.mode} image: " + found.message
    return found


def _applies(spec: OpSpec, target: Target, mode: str) -> bool:
    """On the host cpu itself (a PIL image lives on the host), for a function that documents PIL input."""
    return bool(spec.pil_input) and target.twin is None and not target.moves_inputs and valid_inputs(spec, target, mode)


register(
    Check(
        "pil",
        66,
        "reference",
        "a function that takes PIL images: one image of the case as a PIL image, the result vs the reference "
        "(and vs the tensor path)",
        _applies,
        check_pil,
        judges_values=True,
        variant=lambda spec, dtype, mode: dtype in PIL_DTYPES,
    )
)
