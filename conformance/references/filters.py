"""Gaussian blur in float64 numpy, from the documented meaning.

torchvision, kornia and OpenCV document the same filter: a kernel of `size` taps sampled from
exp(-d^2 / (2 sigma^2)) at the tap offsets d = i - (size - 1) / 2, normalised to sum 1
(OpenCV's getGaussianKernel formula; torchvision's linspace over +-(size - 1) / 2), one kernel per
axis, applied separably, with the border reflected without repeating the edge pixel
(torchvision's "reflection padding", kornia's 'reflect', OpenCV's BORDER_REFLECT_101).

Arrays are (..., C, H, W).  `kernel_size` and `sigma` are (x, y) pairs, x along W: torchvision's
order (kornia's is (y, x): the case module maps it).  Nothing here imports a library under test.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Pair = tuple[float, float]


def pair(value: float | Sequence[float]) -> Pair:
    """(x, y) from a number (both axes) or a one- or two-element sequence."""
    if isinstance(value, (int, float)):
        return float(value), float(value)
    values = [float(v) for v in value]
    return (values[0], values[0]) if len(values) == 1 else (values[0], values[1])


def gaussian_kernel1d(size: int, sigma: float) -> np.ndarray:
    """`size` taps of exp(-d^2 / (2 sigma^2)), d = i - (size - 1) / 2, normalised to sum 1."""
    if size < 1 or size % 2 == 0 or sigma <= 0:
        raise ValueError(f"a Gaussian kernel needs an odd positive size and a positive sigma, got {size}, {sigma}")
    offsets = np.arange(size, dtype=np.float64) - (size - 1) / 2
    weights = np.exp(-(offsets**2) / (2.0 * sigma * sigma))
    return weights / weights.sum()


def reflect_101(length: int, before: int, after: int) -> np.ndarray:
    """Source index of each padded position along an axis of `length`, mirrored about the edge pixels
    without repeating them (..., 2, 1 | 0, 1, 2, ... | n-2, n-3, ...), repeated for pads beyond
    the axis (OpenCV's borderInterpolate for BORDER_REFLECT_101; a one-pixel axis repeats it)."""
    positions = np.arange(-before, length + after)
    if length == 1:
        return np.zeros_like(positions)
    period = 2 * (length - 1)
    folded = np.mod(positions, period)
    return np.where(folded < length, folded, period - folded)


def _filter_axis(image: np.ndarray, kernel: np.ndarray, axis: int) -> np.ndarray:
    radius = len(kernel) // 2
    length = image.shape[axis]
    padded = np.take(image, reflect_101(length, radius, radius), axis=axis)
    out = np.zeros_like(image, dtype=np.float64)
    for tap, weight in enumerate(kernel):
        out += weight * np.take(padded, np.arange(tap, tap + length), axis=axis)
    return out


def gaussian_blur(image: np.ndarray, kernel_size: int | Sequence[int], sigma: float | Sequence[float]) -> np.ndarray:
    """Blur (..., C, H, W) with a kernel_size = (kx, ky), sigma = (sigma_x, sigma_y) Gaussian: along W,
    then along H (separable, so the order does not change the result)."""
    (kx, ky), (sx, sy) = pair(kernel_size), pair(sigma)
    blurred = _filter_axis(np.asarray(image, dtype=np.float64), gaussian_kernel1d(int(kx), sx), axis=-1)
    return _filter_axis(blurred, gaussian_kernel1d(int(ky), sy), axis=-2)
