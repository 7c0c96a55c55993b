"""Colour adjustments and conversions in float64, from their documented maths.

Images are (..., C, H, W) float64 arrays whose valid range is [0, peak] (peak 1 for float images,
255 for uint8 ones: the harness rounds and saturates a uint8 reference itself).

- Luma: ITU-R BT.601 (Rec. 601-7, section 2.5.1), Y' = 0.299 R' + 0.587 G' + 0.114 B'.
- Blends (the adjustments of torchvision, Pillow's ImageEnhance and kornia's ColorJitter):
  out = clamp(factor * image + (1 - factor) * other, 0, peak), where `other` is black (brightness),
  the mean of the image's luma over the image (contrast; the mean of the image for one channel) or
  the luma of each pixel (saturation; a one-channel image is returned as it is).
- HSV: the hexcone model of A. R. Smith, "Color gamut transform pairs", SIGGRAPH 1978: V = max,
  S = (max - min) / max (0 for black), H in turns [0, 1), 0 for grays (max = min).
- kornia's ColorJiggle primitives, as its docs define them: brightness adds (factor - 1), contrast
  scales the raw values, saturation scales S in HSV; each clamped to [0, 1].
"""

from __future__ import annotations

import numpy as np

LUMA_601 = (0.299, 0.587, 0.114)


def luma(image: np.ndarray) -> np.ndarray:
    """(..., 3, H, W) -> (..., 1, H, W): the BT.601 weighted sum."""
    r, g, b = image[..., 0:1, :, :], image[..., 1:2, :, :], image[..., 2:3, :, :]
    return LUMA_601[0] * r + LUMA_601[1] * g + LUMA_601[2] * b


def grayscale(image: np.ndarray, channels: int = 1) -> np.ndarray:
    """Luma repeated `channels` times (r = g = b for 3)."""
    gray = luma(image)
    return np.repeat(gray, channels, axis=-3)


def blend(image: np.ndarray, other: np.ndarray | float, factor: float | np.ndarray, peak: float) -> np.ndarray:
    """clamp(factor * image + (1 - factor) * other, 0, peak); `factor` may be one value per image."""
    return np.clip(factor * image + (1.0 - factor) * other, 0.0, peak)


def brightness(image: np.ndarray, factor: float | np.ndarray, peak: float = 1.0) -> np.ndarray:
    """Blend with black: the image multiplied by the factor."""
    return blend(image, 0.0, factor, peak)


def contrast(image: np.ndarray, factor: float | np.ndarray, peak: float = 1.0) -> np.ndarray:
    """Blend with the mean luma of each image (of its one channel for a grayscale image)."""
    gray = luma(image) if image.shape[-3] == 3 else image
    return blend(image, gray.mean(axis=(-3, -2, -1), keepdims=True), factor, peak)


def saturation(image: np.ndarray, factor: float | np.ndarray, peak: float = 1.0) -> np.ndarray:
    """Blend with each pixel's luma; a one-channel image has no colour to change."""
    if image.shape[-3] == 1:
        return image.copy()
    return blend(image, luma(image), factor, peak)


def rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    """(..., 3, H, W) RGB in [0, 1] -> HSV, hue in turns [0, 1)."""
    r, g, b = rgb[..., 0, :, :], rgb[..., 1, :, :], rgb[..., 2, :, :]
    high, low = rgb.max(axis=-3), rgb.min(axis=-3)
    delta = high - low
    gray = delta == 0
    safe = np.where(gray, 1.0, delta)
    sextant = np.where(r == high, (g - b) / safe, np.where(g == high, 2.0 + (b - r) / safe, 4.0 + (r - g) / safe))
    hue = np.where(gray, 0.0, np.mod(sextant / 6.0, 1.0))
    hue = np.where(hue >= 1.0, 0.0, hue)  # a tiny negative sextant rounds to 1.0 in the modulo
    sat = np.where(high > 0, delta / np.where(high > 0, high, 1.0), 0.0)
    return np.stack([hue, sat, high], axis=-3)


def hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    """(..., 3, H, W) HSV (hue in turns, any real value: taken modulo 1) -> RGB."""
    h, s, v = hsv[..., 0, :, :], hsv[..., 1, :, :], hsv[..., 2, :, :]
    h6 = np.mod(h, 1.0) * 6.0
    sector = np.floor(h6)
    f = h6 - sector
    sector = sector.astype(np.int64) % 6
    p, q, t = v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f))
    # sector -> (r, g, b) among (v, p, q, t), the hexcone's six cases
    table = {0: (v, t, p), 1: (q, v, p), 2: (p, v, t), 3: (p, q, v), 4: (t, p, v), 5: (v, p, q)}
    out = np.zeros_like(hsv)
    for index, (red, green, blue) in table.items():
        where = sector == index
        out[..., 0, :, :] = np.where(where, red, out[..., 0, :, :])
        out[..., 1, :, :] = np.where(where, green, out[..., 1, :, :])
        out[..., 2, :, :] = np.where(where, blue, out[..., 2, :, :])
    return out


def hue(image: np.ndarray, shift: float | np.ndarray, peak: float = 1.0) -> np.ndarray:
    """Rotate the hue by `shift` turns (one value, or one per image); a one-channel image is returned as it is."""
    if image.shape[-3] == 1:
        return image.copy()
    hsv = rgb_to_hsv(image / peak)
    hsv[..., 0, :, :] = np.mod(hsv[..., 0, :, :] + np.asarray(shift)[..., None, None], 1.0)
    return hsv_to_rgb(hsv) * peak


def per_image(factors: np.ndarray) -> np.ndarray:
    """(B,) factors -> (B, 1, 1, 1), to scale a (B, C, H, W) batch image by image."""
    return np.asarray(factors, dtype=np.float64).reshape(-1, 1, 1, 1)


# -- kornia's ColorJiggle primitives (a different documented meaning from the blends above) -------
def brightness_additive(image: np.ndarray, factor: float | np.ndarray) -> np.ndarray:
    """Add (factor - 1): the ColorJiggle brightness step, clamped to [0, 1]."""
    return np.clip(image + (factor - 1.0), 0.0, 1.0)


def contrast_multiplicative(image: np.ndarray, factor: float | np.ndarray) -> np.ndarray:
    """Scale the raw values: the ColorJiggle contrast step, clamped to [0, 1]."""
    return np.clip(image * factor, 0.0, 1.0)


def saturation_hsv(image: np.ndarray, factor: float | np.ndarray) -> np.ndarray:
    """Scale S in HSV and clamp it to [0, 1]: the ColorJiggle saturation step."""
    hsv = rgb_to_hsv(image)
    hsv[..., 1, :, :] = np.clip(hsv[..., 1, :, :] * np.asarray(factor)[..., None, None], 0.0, 1.0)
    return hsv_to_rgb(hsv)
