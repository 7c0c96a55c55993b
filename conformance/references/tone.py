"""Tone curves and dtype conversions in numpy, from their documented meaning.

The 8-bit meaning is Pillow's `ImageOps` (torchvision documents following it for equalize and
autocontrast; its posterize and solarize take Pillow's definitions), transcribed from the
documented algorithm, per channel and per image:

- posterize(bits): keep the top `bits` bits of each 8-bit value (bits 0..8; 0 gives black).
- solarize(threshold): values at or above the threshold are inverted (255 - v; 1 - v for floats).
- equalize: a lookup table from the channel's histogram, `lut[v] = (cdf(v - 1) + step // 2) // step`
  with `step = (pixels - pixels at the channel's largest value) // 255`, saturated at 255; a channel
  whose step is 0 (one value, or fewer than 255 pixels below its largest value) is left unchanged.
- autocontrast: the channel's darkest value becomes 0 and its lightest 255, linearly in between,
  truncated (Pillow's `int(v * scale + offset)`); a flat channel is left unchanged.

Float images in [0, 1]: posterize and equalize are defined on 8-bit levels, and the one library that
documents float input (kornia) reads a float's level as `(x * 255).long()` computed in the input's
dtype and returns `level / 255`; a float channel left unchanged is returned as is (posterize with
8 bits too).  Solarize and autocontrast need no levels: `1 - x`, and `(x - min) / (max - min)`.

Arrays are (..., C, H, W) float64 holding the input's values; nothing here imports a library under test.
"""

from __future__ import annotations

import numpy as np

LEVELS = 256


def _planes(image: np.ndarray) -> np.ndarray:
    """(..., H, W) -> (planes, H * W): one row per channel of each image."""
    return image.reshape(-1, image.shape[-2] * image.shape[-1])


def float_levels(image: np.ndarray, dtype: str) -> np.ndarray:
    """8-bit levels of a float image in [0, 1]: x * 255 rounded to the input's dtype, then truncated
    (the product is computed in that dtype, as documented, so float32 rounding is part of the meaning)."""
    scaled = (image.astype(np.float32) * np.float32(255)).astype(np.float64) if dtype == "float32" else image * 255.0
    return np.clip(np.floor(scaled), 0, LEVELS - 1).astype(np.int64)


def posterize_levels(levels: np.ndarray, bits: int) -> np.ndarray:
    """The top `bits` bits of each 8-bit level (0 bits: every level 0)."""
    drop = 8 - bits
    return (levels >> drop) << drop


def posterize(image: np.ndarray, bits: int, dtype: str) -> np.ndarray:
    if dtype == "uint8":
        return posterize_levels(image.astype(np.int64), bits).astype(np.float64)
    if bits == 8:
        return image.copy()
    return posterize_levels(float_levels(image, dtype), bits) / 255.0


def solarize(image: np.ndarray, threshold: float, dtype: str) -> np.ndarray:
    """Values at or above the threshold (in the image's units) are inverted about the dtype's maximum."""
    top = 255.0 if dtype == "uint8" else 1.0
    return np.where(image >= threshold, top - image, image)


def equalize_lut(levels: np.ndarray) -> np.ndarray | None:
    """Pillow's equalize table for one channel's 8-bit levels, or None where it leaves the channel unchanged."""
    hist = np.bincount(levels, minlength=LEVELS)
    present = hist[hist > 0]
    step = (int(present.sum()) - int(present[-1])) // 255
    if step == 0:
        return None
    below = np.concatenate([[0], np.cumsum(hist)[:-1]])  # pixels strictly below each level
    return np.minimum((below + step // 2) // step, 255)


def equalize(image: np.ndarray, dtype: str) -> np.ndarray:
    planes = _planes(image)
    levels = planes.astype(np.int64) if dtype == "uint8" else float_levels(planes, dtype)
    out = planes.copy()
    for index, plane_levels in enumerate(levels):
        lut = equalize_lut(plane_levels)
        if lut is not None:
            mapped = lut[plane_levels].astype(np.float64)
            out[index] = mapped if dtype == "uint8" else mapped / 255.0
    return out.reshape(image.shape)


def autocontrast(image: np.ndarray, dtype: str) -> np.ndarray:
    """Per channel: min -> 0, max -> 255 (or 1.0), linear; uint8 truncates the exact quotient."""
    planes = _planes(image)
    low, high = planes.min(axis=1, keepdims=True), planes.max(axis=1, keepdims=True)
    flat = high == low
    span = np.where(flat, 1.0, high - low)
    if dtype == "uint8":
        offset, width = (planes - low).astype(np.int64), span.astype(np.int64)
        stretched = ((offset * 255) // width).astype(np.float64)  # integer arithmetic: the exact truncation
    else:
        stretched = (planes - low) / span
    return np.where(flat, planes, stretched).reshape(image.shape)


def flat_planes(image: np.ndarray) -> bool:
    """Whether some channel of some image holds one value only."""
    planes = _planes(image)
    return bool((planes.min(axis=1) == planes.max(axis=1)).any())


def smallest_span(image: np.ndarray) -> float:
    """The smallest max - min over the channels of the images (0 for a flat channel)."""
    planes = _planes(image)
    return float((planes.max(axis=1) - planes.min(axis=1)).min())


def equalize_unchanged(image: np.ndarray, dtype: str) -> str:
    """Which channels equalize leaves unchanged (lookup step 0): "all", "some" or "none"."""
    planes = _planes(image)
    levels = planes.astype(np.int64) if dtype == "uint8" else float_levels(planes, dtype)
    unchanged = [equalize_lut(plane) is None for plane in levels]
    return "all" if all(unchanged) else "some" if any(unchanged) else "none"


# -- dtype conversion ------------------------------------------------------------------------------
def convert(image: np.ndarray, source: str, target: str, scale: bool) -> np.ndarray:
    """A dtype conversion's ideal value (the harness rounds and saturates uint8 outputs).

    Scaled: uint8 -> float is v / 255; float -> uint8 is x * 255 rounded half up and saturated (the meaning
    `save_image` and `to_pil_image`'s reference use; torchvision's own equal-width bins are within one level
    of it, a tolerance); float -> float keeps the value.  Unscaled: a cast, which truncates floats toward 0.
    """
    if source == target:
        return image.copy()
    if target == "uint8":
        return np.floor(np.clip(image * 255 + 0.5, 0, 255)) if scale else np.trunc(image)
    if source == "uint8" and scale:
        return image / 255.0
    return image.copy()
