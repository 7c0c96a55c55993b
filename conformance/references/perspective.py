"""Float64 references for perspective warps (a homography from four point pairs) and elastic warps (a given
displacement field), with nearest and bilinear sampling through conformance.references.warp.

Homography.  `homography(src, dst)` is the 3x3 matrix H with H[2, 2] = 1 that maps each of four points
src[i] to dst[i] (x' = (h0 x + h1 y + h2) / (h6 x + h7 y + 1), y' likewise): the 8x8 linear system of the
direct linear transform, solved here by Gaussian elimination with partial pivoting in float64 (never by a
library under test).  Three collinear points among either four leave it singular: `DegeneratePoints`.

Point conventions.  torchvision and Pillow take points (and Pillow its 8 coefficients) in continuous
coordinates where pixel k covers [k, k + 1) (its centre at k + 1/2; the image's corners at 0 and W); kornia
and OpenCV in pixel indices (centres at integers).  `perspective_inverse` takes points in the former and
gives the output -> input map in pixel indices, warp's convention: the same homography conjugated by the
half-pixel shift, solved directly from the shifted points.

Elastic.  A displacement field in grid_sample's normalised units, shape (H, W, 2) with x first (torchvision:
(1, H, W, 2) added to the identity grid; kornia: its smoothed noise times alpha), moves each output pixel's
sample from the identity grid's position.  With align_corners=False a normalised coordinate g is the pixel
index ((g + 1) W - 1) / 2 and the identity grid holds pixel x at (2x + 1) / W - 1, so a displacement d moves
the sample by d W / 2 pixels; with align_corners=True g is (g + 1) (W - 1) / 2, the identity grid holds
-1 + 2x / (W - 1) (-1 for one pixel), and d moves it by d (W - 1) / 2.  `zero_padded_blur` is kornia's
smoothing of the noise (a separable Gaussian, zeros beyond the field's edges).  Nothing here imports a
library under test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from conformance.references import filters, warp

Points = Sequence[Sequence[float]]


class DegeneratePoints(ValueError):
    """Four point pairs that determine no homography (three of them collinear)."""


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with a x = b (a square), by Gaussian elimination with partial pivoting, in float64."""
    a, b = np.array(a, dtype=np.float64), np.array(b, dtype=np.float64)
    n = len(b)
    scale = max(float(np.abs(a).max()), 1.0)
    for col in range(n):
        pivot = col + int(np.argmax(np.abs(a[col:, col])))
        if abs(a[pivot, col]) <= 1e-12 * scale:
            raise DegeneratePoints("the point pairs determine no homography (three points are collinear)")
        a[[col, pivot]], b[[col, pivot]] = a[[pivot, col]], b[[pivot, col]]
        factors = a[col + 1 :, col] / a[col, col]
        a[col + 1 :] -= factors[:, None] * a[col]
        b[col + 1 :] -= factors * b[col]
    x = np.zeros(n)
    for row in range(n - 1, -1, -1):
        x[row] = (b[row] - a[row, row + 1 :] @ x[row + 1 :]) / a[row, row]
    return x


def collinear(points: Points) -> bool:
    """Whether three of four points lie on one line (up to 1e-9 of the quad's squared size)."""
    p = np.asarray(points, dtype=np.float64)
    size = max(float(np.ptp(p, axis=0).max()), 1.0)
    for i in range(4):
        a, b, c = (p[j] for j in range(4) if j != i)
        if abs((b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])) <= 1e-9 * size * size:
            return True
    return False


def homography(src: Points, dst: Points) -> np.ndarray:
    """The 3x3 H (H[2, 2] = 1) mapping the four points src[i] onto dst[i]."""
    if len(src) != 4 or len(dst) != 4:
        raise ValueError(f"a homography needs four point pairs, got {len(src)} and {len(dst)}")
    if collinear(src) or collinear(dst):
        raise DegeneratePoints("the point pairs determine no homography (three points are collinear)")
    a, b = np.zeros((8, 8)), np.zeros(8)
    for i, ((x, y), (u, v)) in enumerate(zip(src, dst, strict=True)):
        a[2 * i] = [x, y, 1.0, 0.0, 0.0, 0.0, -u * x, -u * y]
        a[2 * i + 1] = [0.0, 0.0, 0.0, x, y, 1.0, -v * x, -v * y]
        b[2 * i], b[2 * i + 1] = u, v
    return np.append(_solve(a, b), 1.0).reshape(3, 3)


def shifted(points: Points, by: float) -> list[list[float]]:
    return [[float(x) + by, float(y) + by] for x, y in points]


def perspective_inverse(startpoints: Points, endpoints: Points) -> np.ndarray:
    """Output -> input map in pixel indices of the perspective warp taking `startpoints` of the input to
    `endpoints` of the output, both in continuous coordinates (pixel k covers [k, k + 1))."""
    return homography(shifted(endpoints, -0.5), shifted(startpoints, -0.5))


def pillow_coefficients(startpoints: Points, endpoints: Points) -> tuple[float, ...]:
    """Image.transform(PERSPECTIVE)'s 8 coefficients (output -> input, Pillow's continuous coordinates): an output
    pixel (x, y) takes the input at ((a x + b y + c) / (g x + h y + 1), (d x + e y + f) / (g x + h y + 1))."""
    return tuple(float(c) for c in homography(endpoints, startpoints).ravel()[:8])


# -- elastic -------------------------------------------------------------------------------------------------------
def identity_grid(length: int, align_corners: bool) -> np.ndarray:
    """grid_sample's normalised coordinate of each pixel centre along an axis of `length`."""
    index = np.arange(length, dtype=np.float64)
    if align_corners:
        return -1.0 + 2.0 * index / (length - 1) if length > 1 else np.full(1, -1.0)
    return (2.0 * index + 1.0) / length - 1.0


def unnormalise(grid: np.ndarray, length: int, align_corners: bool) -> np.ndarray:
    """A normalised coordinate as a pixel index (grid_sample's documented convention)."""
    return (grid + 1.0) / 2.0 * (length - 1) if align_corners else ((grid + 1.0) * length - 1.0) / 2.0


def elastic_positions(
    displacement: np.ndarray, height: int, width: int, align_corners: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Source positions (u, v), pixel indices, of the identity grid plus an (H, W, 2) normalised displacement."""
    gx = identity_grid(width, align_corners)[None, :] + displacement[..., 0]
    gy = identity_grid(height, align_corners)[:, None] + displacement[..., 1]
    return unnormalise(gx, width, align_corners), unnormalise(gy, height, align_corners)


def elastic(
    image: np.ndarray,
    displacement: np.ndarray,
    interpolation: str,
    fill: float | Sequence[float] = 0.0,
    align_corners: bool = False,
    padding: str = "fill",
) -> np.ndarray:
    """Sample (..., C, H, W) at the displaced grid: beyond the image the fill ("fill"), or the position clamped to
    the outer pixel centres ("border", grid_sample's padding_mode="border")."""
    height, width = np.shape(image)[-2:]
    u, v = elastic_positions(np.asarray(displacement, dtype=np.float64), height, width, align_corners)
    if padding == "border":
        u, v = np.clip(u, 0, width - 1), np.clip(v, 0, height - 1)
    elif padding != "fill":
        raise ValueError(f"unknown padding {padding!r}")
    return warp.sample(image, u, v, interpolation, fill)


def zero_padded_blur(field: np.ndarray, kernel_size: Sequence[int], sigma: Sequence[float]) -> np.ndarray:
    """Separable Gaussian blur of (..., H, W) with zeros beyond its edges; kernel_size and sigma are (x, y)."""
    out = np.asarray(field, dtype=np.float64)
    for axis, size, s in ((-1, kernel_size[0], sigma[0]), (-2, kernel_size[1], sigma[1])):
        kernel = filters.gaussian_kernel1d(int(size), float(s))
        radius, length = len(kernel) // 2, out.shape[axis]
        pad = [(0, 0)] * out.ndim
        pad[axis] = (radius, radius)
        padded = np.pad(out, pad)
        blurred = np.zeros_like(out)
        for tap, weight in enumerate(kernel):
            blurred += weight * np.take(padded, np.arange(tap, tap + length), axis=axis)
        out = blurred
    return out


def wave_field(field: dict, height: int, width: int) -> np.ndarray:
    """An (H, W, 2) normalised displacement from a few numbers (JSON-able): for component k (x, y),
    shift[k] + amplitude[k] * sin(pi (fx X + fy Y) + phase + k pi / 2), in pixels, where (X, Y) is the pixel's
    align_corners=False grid coordinate; converted to normalised units (2 / W for x, 2 / H for y)."""
    xs, ys = identity_grid(width, False)[None, :], identity_grid(height, False)[:, None]
    fx, fy = field["frequency"]
    angle = math.pi * (fx * xs + fy * ys) + field["phase"]
    components = []
    for k, length in ((0, width), (1, height)):
        pixels = field["shift"][k] + field["amplitude"][k] * np.sin(angle + k * math.pi / 2)
        components.append(np.broadcast_to(pixels * (2.0 / length), (height, width)))
    return np.stack(components, axis=-1)
