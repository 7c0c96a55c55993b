"""Float64 reference for rotation, affine and perspective warps with nearest and bilinear sampling.

Coordinates are pixel indices: x to the right, y down, pixel centres at integers, so the image
centre is ((W - 1) / 2, (H - 1) / 2) (the point W / 2, H / 2 of the half-pixel convention).  An
output pixel p takes the input at A^-1 p, where A is the forward map:

* rotate(angle):  A = C R(angle) C^-1, counter-clockwise as displayed (y down) for angle > 0;
* affine(angle, translate, scale, shear):  A = T C R_cw(angle) S SHy(shear_y) SHx(shear_x) C^-1
  (torchvision's documented order and kornia's `get_affine_matrix2d`): the angle turns clockwise
  as displayed, SHx(a) = [[1, -tan a], [0, 1]], SHy(a) = [[1, 0], [-tan a, 1]], angles in degrees.

Sampling, at the source position (u, v):

* nearest: the pixel whose cell [k - 1/2, k + 1/2) holds u (a position within 1e-9 of a cell
  edge counts as on it, so an exact tie takes the higher index); outside the image: the fill;
* bilinear: the four pixels around (u, v) weighted by their distances, the image extended by
  the fill value beyond its edges (so a sample half a pixel outside is half fill).

The inverse map is composed from the inverses of its factors (exact for multiples of 90 degrees),
never from a numerical matrix inverse.  A projective inverse (third row other than (0, 0, 1):
conformance.references.perspective solves one) maps p to its first two rows divided by its third; an
affine one takes the affine path unchanged.  `sample` reads an image at any positions (elastic
warps).  Nothing here imports a library under test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

INTERPOLATIONS = ("nearest", "bilinear")
TIE = 1e-9  # pixels: a source position this close to a cell edge counts as on it


def cos_sin(degrees: float) -> tuple[float, float]:
    """cos and sin of an angle in degrees, exact at multiples of 90 degrees."""
    turns, rest = divmod(float(degrees), 90.0)
    if rest == 0.0:
        return {0: (1.0, 0.0), 1: (0.0, 1.0), 2: (-1.0, 0.0), 3: (0.0, -1.0)}[int(turns) % 4]
    radians = math.radians(degrees)
    return math.cos(radians), math.sin(radians)


def _shift(dx: float, dy: float) -> np.ndarray:
    return np.array([[1.0, 0.0, dx], [0.0, 1.0, dy], [0.0, 0.0, 1.0]])


def _linear(a: float, b: float, c: float, d: float) -> np.ndarray:
    return np.array([[a, b, 0.0], [c, d, 0.0], [0.0, 0.0, 1.0]])


def center(height: int, width: int) -> tuple[float, float]:
    return (width - 1) / 2.0, (height - 1) / 2.0


def rotation_inverse(angle: float, height: int, width: int) -> np.ndarray:
    """Output -> input map of a counter-clockwise rotation about the image centre.  A point at
    offset (dx, dy) from the centre goes to (cos dx + sin dy, -sin dx + cos dy): to the right
    (1, 0) becomes up (0, -1) at 90 degrees.  The inverse is the rotation by -angle."""
    cx, cy = center(height, width)
    cos, sin = cos_sin(angle)
    return _shift(cx, cy) @ _linear(cos, -sin, sin, cos) @ _shift(-cx, -cy)


def affine_inverse(
    angle: float,
    translate: Sequence[float],
    scale: float | Sequence[float],
    shear: Sequence[float],
    height: int,
    width: int,
    centre: tuple[float, float] | None = None,
) -> np.ndarray:
    """Output -> input map of T C R_cw(angle) S SHy SHx C^-1 (see the module docstring); `scale` is
    one factor or (x, y) factors (kornia's RandomAffine samples them apart)."""
    cx, cy = centre if centre is not None else center(height, width)
    sx, sy = (scale, scale) if isinstance(scale, (int, float)) else scale
    cos, sin = cos_sin(angle)
    tan_x, tan_y = math.tan(math.radians(shear[0])), math.tan(math.radians(shear[1]))
    unshear_x = _linear(1.0, tan_x, 0.0, 1.0)  # SHx(a)^-1 = SHx(-a)
    unshear_y = _linear(1.0, 0.0, tan_y, 1.0)
    unscale = _linear(1.0 / sx, 0.0, 0.0, 1.0 / sy)
    unrotate = _linear(cos, sin, -sin, cos)  # R_cw(angle)^-1 = R_cw(-angle)
    return _shift(cx, cy) @ unshear_x @ unshear_y @ unscale @ unrotate @ _shift(-cx - translate[0], -cy - translate[1])


def source_positions(inverse: np.ndarray, height: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """Where each output pixel samples the input: (u, v), each height x width."""
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    u = inverse[0, 0] * xs + inverse[0, 1] * ys + inverse[0, 2]
    v = inverse[1, 0] * xs + inverse[1, 1] * ys + inverse[1, 2]
    if inverse.shape[0] == 3 and tuple(inverse[2]) != (0.0, 0.0, 1.0):  # projective: divide by the third row
        w = inverse[2, 0] * xs + inverse[2, 1] * ys + inverse[2, 2]
        with np.errstate(divide="ignore", invalid="ignore"):
            return _outside(u / w, width), _outside(v / w, height)
    return u, v


def _outside(position: np.ndarray, length: int) -> np.ndarray:
    """A projective position beyond the image (up to infinity, or none where the third row is 0) moved to 2 pixels
    outside it: it then reads the fill alone, and stays a number."""
    return np.clip(np.nan_to_num(position, nan=-2.0), -2.0, length + 1.0)


def _gather(image: np.ndarray, rows: np.ndarray, cols: np.ndarray, fill: np.ndarray) -> np.ndarray:
    """image[..., rows, cols] where the index is inside the image, else the fill (per channel)."""
    height, width = image.shape[-2:]
    inside = (rows >= 0) & (rows < height) & (cols >= 0) & (cols < width)
    taken = image[..., np.clip(rows, 0, height - 1), np.clip(cols, 0, width - 1)]
    return np.where(inside, taken, fill)


def _fill_array(fill: float | Sequence[float], channels: int) -> np.ndarray:
    values = np.broadcast_to(np.asarray(fill, dtype=np.float64).reshape(-1), (channels,))
    return values.reshape(channels, 1, 1)


def warp(image: np.ndarray, inverse: np.ndarray, interpolation: str, fill: float | Sequence[float] = 0.0) -> np.ndarray:
    """Sample a (..., C, H, W) float64 image at `inverse` applied to every output pixel (same size)."""
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"unknown interpolation {interpolation!r}; expected one of {INTERPOLATIONS}")
    height, width = np.shape(image)[-2:]
    return sample(image, *source_positions(inverse, height, width), interpolation, fill)


def sample(
    image: np.ndarray, u: np.ndarray, v: np.ndarray, interpolation: str, fill: float | Sequence[float] = 0.0
) -> np.ndarray:
    """Read a (..., C, H, W) float64 image at the source positions (u, v) (pixel indices, each H x W), as `warp`
    does (see the module docstring), the image extended by the fill."""
    if interpolation not in INTERPOLATIONS:
        raise ValueError(f"unknown interpolation {interpolation!r}; expected one of {INTERPOLATIONS}")
    image = np.asarray(image, dtype=np.float64)
    fills = _fill_array(fill, image.shape[-3])
    if interpolation == "nearest":
        cols = np.floor(u + 0.5 + TIE).astype(np.int64)
        rows = np.floor(v + 0.5 + TIE).astype(np.int64)
        return _gather(image, rows, cols, fills)
    left, top = np.floor(u), np.floor(v)
    fx, fy = u - left, v - top
    left, top = left.astype(np.int64), top.astype(np.int64)
    out = np.zeros(image.shape, dtype=np.float64)
    for dy, wy in ((0, 1.0 - fy), (1, fy)):
        for dx, wx in ((0, 1.0 - fx), (1, fx)):
            out += (wy * wx) * _gather(image, top + dy, left + dx, fills)
    return out


def _near_image(u: np.ndarray, v: np.ndarray, height: int, width: int) -> np.ndarray:
    """Samples whose four nearest pixels include one of the image's (the others read only the fill)."""
    return (u > -1) & (u < width) & (v > -1) & (v < height)


def tie_distance(inverse: np.ndarray, height: int, width: int) -> float:
    """The smallest distance, in pixels, from a sample to a nearest-neighbour cell edge (a half-integer) on
    either axis, over the samples near the image: below an implementation's coordinate error, that
    implementation may take the neighbouring pixel (or the fill, at the image's edge)."""
    return position_tie_distance(*source_positions(inverse, height, width), height, width)


def position_tie_distance(u: np.ndarray, v: np.ndarray, height: int, width: int) -> float:
    """`tie_distance` of given source positions."""
    near = _near_image(u, v, height, width)
    gaps = np.minimum(np.abs(u - np.floor(u) - 0.5), np.abs(v - np.floor(v) - 0.5))[near]
    return float(gaps.min()) if gaps.size else math.inf


def tie_gap(distance: float) -> str:
    """A tie distance in the buckets known issues name: exact ties, float32 coordinate error (torch),
    fixed-point coordinates (Pillow 16.16, OpenCV 1/1024), none."""
    return "<1e-9" if distance < TIE else "<1e-4" if distance < 1e-4 else "<1e-3" if distance < 1e-3 else ">=1e-3"


def border_samples(inverse: np.ndarray, height: int, width: int) -> bool:
    """Whether a bilinear sample mixes image pixels with the fill (less than one pixel outside the pixel
    centres' hull): where libraries that blend the fill differently disagree."""
    return position_border_samples(*source_positions(inverse, height, width), height, width)


def position_border_samples(u: np.ndarray, v: np.ndarray, height: int, width: int) -> bool:
    """`border_samples` of given source positions."""
    outside = (u < 0) | (u > width - 1) | (v < 0) | (v > height - 1)
    return bool((_near_image(u, v, height, width) & outside).any())
