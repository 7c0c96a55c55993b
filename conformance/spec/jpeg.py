"""What the JPEG case modules share: Pillow's codec as their reference, and the cases they draw.

cases/test_jpeg.py (torchvision, TorchCodec and OpenCV) and cases/test_jpeg_kornia.py (kornia's
differentiable codec and RandomJPEG) are judged against the same reference: Pillow (libjpeg) encoding
and decoding at the same quality.  Pillow is a library under test elsewhere (conformance.references
imports none), and the documented meaning of JPEG here (`reference_backend` in
conformance.spec.libraries), so its codec lives in this module; the case modules never import each
other.  Both draw qualities, error modes and recipes the same way, so the same cases are drawn
whichever module declares an op.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
from functools import cache, partial
from typing import Any

import numpy as np
from hypothesis import strategies as st
from PIL import Image

from conformance.spec.opspec import ExpectedError
from conformance.spec.recipes import CONTENTS, Case, Recipe
from conformance.spec.strategies import empty_recipes, image_recipes

CHANNELS = {"gray": 1, "rgb": 3, "channels-1": 1, "channels-2": 2, "channels-4": 4}  # every other mode: 3
# Invalid inputs, each just outside a documented domain; the modes are shared by the libraries that take them.
QUALITY_MODES = {
    "quality-0": "quality 0 (documented: 1 to 100)",
    "quality-101": "a quality above 100",
    "quality-negative": "a negative quality",
}
EMPTY = {"empty-image": "an image with a side of 0 (no pixels to encode)"}


def pillow_encode(image: np.ndarray, quality: int) -> bytes:
    """C x H x W values in 0..255 -> JPEG bytes from Pillow."""
    pixels = np.clip(np.rint(image), 0, 255).astype(np.uint8).transpose(1, 2, 0)
    buffer = io.BytesIO()
    Image.fromarray(pixels[..., 0] if pixels.shape[2] == 1 else pixels).save(buffer, "JPEG", quality=int(quality))
    return buffer.getvalue()


def pillow_decode(data: bytes) -> np.ndarray:
    """JPEG bytes -> C x H x W float64 values in 0..255, as Pillow decodes them."""
    array = np.asarray(Image.open(io.BytesIO(data)))
    return (array[..., None] if array.ndim == 2 else array).transpose(2, 0, 1).astype(np.float64)


def pillow_round_trip(image: np.ndarray, quality: int) -> np.ndarray:
    """Any leading batch dims, values in 0..255."""
    flat = image.reshape(-1, *image.shape[-3:])
    out = [pillow_decode(pillow_encode(one, quality)) for one in flat]
    return np.stack(out).reshape(image.shape)


def jpeg_reference(image: np.ndarray, case: Case) -> np.ndarray:
    """Pillow's encode and decode at the case's quality."""
    return pillow_round_trip(image, case.params["quality"])


QUALITIES = {"quality-0": st.just(0), "quality-101": st.integers(101, 255), "quality-negative": st.integers(-100, -1)}


@st.composite
def quality(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """A quality from 1 to 100, or the error mode's one just outside."""
    return {"quality": draw(QUALITIES.get(mode, st.integers(1, 100)), label="quality")}


def jpeg_timing(recipe: Recipe, mode: str) -> dict[str, Any] | None:
    """Quality 75 (Pillow's default) on colour images."""
    return {"quality": 75} if recipe.channels == CHANNELS.get(mode) else None


def one_image_timing(recipe: Recipe, mode: str) -> dict[str, Any] | None:
    """`jpeg_timing` for a codec that takes one (C, H, W) image: a batched input is not timed."""
    return None if recipe.batch else jpeg_timing(recipe, mode)


def _batch_within(recipe: Recipe, batch_dims: tuple[int, int]) -> Recipe:
    batch = recipe.batch[: batch_dims[1]]
    return dataclasses.replace(recipe, batch=batch + (1,) * (batch_dims[0] - len(batch)))


@cache
def jpeg_recipes(
    dtype: str,
    mode: str,
    batch_dims: tuple[int, int] = (0, 1),
    side_multiple: int = 1,
    in_range: bool = False,
    empty_channels: tuple[int, ...] = (3, 1),
) -> st.SearchStrategy[Recipe]:
    """Odd sizes come naturally: sides are drawn from 1 to 64.  `in_range`: no out-of-range content,
    for an op documented on [0, 1] inputs only.  A mode's channel count is CHANNELS' (3 if not named);
    "empty-image" draws images with a side of 0 and as many batch dims as the op takes."""
    if mode == "empty-image":
        return empty_recipes(dtype, channels=empty_channels).map(partial(_batch_within, batch_dims=batch_dims))
    contents = [c for c in CONTENTS if c != "out_of_range"] if in_range else None
    return image_recipes(
        dtype,
        channels=(CHANNELS.get(mode, 3),),
        max_side=64,
        min_batch_dims=batch_dims[0],
        max_batch_dims=batch_dims[1],
        side_multiple=side_multiple,
        contents=contents,
    )


def exception_class(dotted: str, fallback: type[BaseException]) -> type[BaseException]:
    """An exception class of an optional library (its fallback where that library is absent)."""
    module, _, name = dotted.rpartition(".")
    try:
        found: type[BaseException] = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return fallback
    return found


def raising(modes: dict[str, str], raised: Any, match: str | None = None) -> dict[str, ExpectedError]:
    """What a library raises for each of these error modes (`match`: a regex its message must match)."""
    return {mode: ExpectedError(why, raised, match=match) for mode, why in modes.items()}
