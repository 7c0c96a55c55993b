"""Float64 reference for image resizing, written from the documented maths.

Each mode is a 1-D resampling matrix per axis (output x input); a 2-D resize
is `rows @ image @ cols.T`, which is exact for separable filters.  Semantics
follow the `torch.nn.functional.interpolate` documentation with
align_corners=False, and Pillow's convolution resampling for antialias:

* nearest:        src = floor(dst * in / out)                (exact rational)
* nearest-exact:  src = floor((dst + 0.5) * in / out)
* linear/cubic:   src = (dst + 0.5) * in / out - 0.5; linear clamps src at 0;
                  out-of-range taps read the edge pixel; cubic uses A = -0.75
* antialias:      the filter (triangle, or cubic with a = -0.5) is stretched by
                  max(in/out, 1); taps outside the image are dropped and the
                  remaining weights renormalised (as Pillow does).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache

import numpy as np

MODES = ("nearest", "nearest-exact", "bilinear", "bicubic")


def _cubic(x: np.ndarray, a: float) -> np.ndarray:
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1, near, np.where(x < 2, far, 0.0))


def _triangle(x: np.ndarray) -> np.ndarray:
    return np.clip(1.0 - np.abs(x), 0.0, None)


def _nearest_matrix(n_in: int, n_out: int, exact: bool) -> np.ndarray:
    matrix = np.zeros((n_out, n_in))
    for dst in range(n_out):
        position = (Fraction(dst) + (Fraction(1, 2) if exact else 0)) * Fraction(n_in, n_out)
        matrix[dst, min(math.floor(position), n_in - 1)] = 1.0
    return matrix


def _interp_matrix(n_in: int, n_out: int, mode: str) -> np.ndarray:
    """Plain (non-antialiased) linear or cubic interpolation with edge clamping."""
    scale = n_in / n_out
    src = (np.arange(n_out) + 0.5) * scale - 0.5
    if mode == "bilinear":
        src = np.maximum(src, 0.0)
        offsets = np.arange(0, 2)
    else:
        offsets = np.arange(-1, 3)
    base = np.floor(src).astype(np.int64)
    frac = src - base
    distance = frac[:, None] - offsets[None, :]
    weights = _triangle(distance) if mode == "bilinear" else _cubic(distance, -0.75)
    taps = np.clip(base[:, None] + offsets[None, :], 0, n_in - 1)
    matrix = np.zeros((n_out, n_in))
    np.add.at(matrix, (np.repeat(np.arange(n_out), offsets.size), taps.ravel()), weights.ravel())
    return matrix


def _antialias_matrix(n_in: int, n_out: int, mode: str) -> np.ndarray:
    """Pillow-style convolution: the filter widens by the downscale factor."""
    scale = n_in / n_out
    stretch = max(scale, 1.0)
    support = (1.0 if mode == "bilinear" else 2.0) * stretch
    matrix = np.zeros((n_out, n_in))
    for dst in range(n_out):
        center = scale * (dst + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        taps = np.arange(lo, hi)
        x = (taps - center + 0.5) / stretch
        weights = _triangle(x) if mode == "bilinear" else _cubic(x, -0.5)
        total = weights.sum()
        matrix[dst, lo:hi] = weights / total if total != 0 else weights
    return matrix


@lru_cache(maxsize=512)
def resampling_matrix(n_in: int, n_out: int, mode: str, antialias: bool) -> np.ndarray:
    """Weights mapping an input axis of n_in samples to n_out samples."""
    if mode not in MODES:
        raise ValueError(f"unknown resampling mode {mode!r}; expected one of {MODES}")
    if n_in == n_out:
        return np.eye(n_in)
    if mode in ("nearest", "nearest-exact"):
        matrix = _nearest_matrix(n_in, n_out, exact=mode == "nearest-exact")
    elif antialias:
        matrix = _antialias_matrix(n_in, n_out, mode)
    else:
        matrix = _interp_matrix(n_in, n_out, mode)
    matrix.setflags(write=False)
    return matrix


def resize(image: np.ndarray, size: tuple[int, int], mode: str, antialias: bool) -> np.ndarray:
    """Resize the last two axes of a float64 array to `size` (height, width)."""
    height, width = image.shape[-2:]
    rows = resampling_matrix(height, size[0], mode, antialias)
    cols = resampling_matrix(width, size[1], mode, antialias)
    values = np.asarray(image, dtype=np.float64)
    # two matrix products, the cheaper order first (einsum's path search cost more than small products)
    out_h, out_w = size
    if out_h * height * width + out_h * width * out_w <= height * width * out_w + out_h * height * out_w:
        return (rows @ values) @ cols.T
    return rows @ (values @ cols.T)


def short_edge_size(height: int, width: int, size: int, max_size: int | None) -> tuple[int, int]:
    """Output size when only the shorter edge is given, as torchvision documents it."""
    short, long = (height, width) if height <= width else (width, height)
    new_short, new_long = size, size * long // short
    if max_size is not None and new_long > max_size:
        new_short, new_long = max_size * new_short // new_long, max_size
    return (new_short, new_long) if height <= width else (new_long, new_short)
