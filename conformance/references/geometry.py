"""Exact geometry in numpy: flips, rotation by quarter turns, crop, centre crop, pad, and the random
crop of an augmentation replayed from its sampled corners.

Each output pixel is a copy of one input pixel (or a fill value), so an implementation must match
exactly.  Arrays are (..., C, H, W); nothing here imports a library under test.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# numpy's names for the padding modes, keyed by the operation's (torchvision's) names
PAD_MODES = {"constant": "constant", "edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


def hflip(image: np.ndarray) -> np.ndarray:
    return image[..., ::-1].copy()


def vflip(image: np.ndarray) -> np.ndarray:
    return image[..., ::-1, :].copy()


def rotate_quarter_turns(image: np.ndarray, turns: int) -> np.ndarray:
    """Counter-clockwise by 90 degrees per turn (the direction of a positive angle on screen)."""
    return np.rot90(image, turns, axes=(-2, -1)).copy()


def crop(image: np.ndarray, top: int, left: int, height: int, width: int, fill: float = 0.0) -> np.ndarray:
    """The height x width window whose top-left pixel is (top, left); pixels outside the image are `fill`."""
    out = np.full((*image.shape[:-2], height, width), fill, dtype=np.float64)
    rows, cols = image.shape[-2:]
    y0, y1 = max(top, 0), min(top + height, rows)
    x0, x1 = max(left, 0), min(left + width, cols)
    if y0 < y1 and x0 < x1:
        out[..., y0 - top : y1 - top, x0 - left : x1 - left] = image[..., y0:y1, x0:x1]
    return out


def center_offsets(size: int, crop_size: int) -> int:
    """Where a centred window starts: half the margin, rounded down (an odd margin leaves the extra
    pixel after the window).  A window larger than the image starts before it (negative), so there the
    extra fill pixel comes before the image: the same rule, the window's centre at or before the image's."""
    return (size - crop_size) // 2


def center_crop(image: np.ndarray, height: int, width: int) -> np.ndarray:
    rows, cols = image.shape[-2:]
    return crop(image, center_offsets(rows, height), center_offsets(cols, width), height, width)


def pad(image: np.ndarray, padding: Sequence[int], mode: str, fill: float = 0.0) -> np.ndarray:
    """padding = (left, top, right, bottom); modes: constant (fill), edge (repeat the border pixel),
    reflect (mirror without repeating it), symmetric (mirror repeating it)."""
    left, top, right, bottom = padding
    widths = [(0, 0)] * (image.ndim - 2) + [(top, bottom), (left, right)]
    if mode == "constant":
        return np.pad(image, widths, mode="constant", constant_values=fill)
    return np.pad(image, widths, mode=PAD_MODES[mode])  # type: ignore[call-overload]  # a str of numpy's modes


def crop_each(images: np.ndarray, corners: Sequence[tuple[int, int]], height: int, width: int) -> np.ndarray:
    """A (B, C, H, W) batch cropped image by image: corners[b] = (top, left) of image b's window, which
    lies inside the image (a random crop samples it there)."""
    return np.stack(
        [image[:, top : top + height, left : left + width] for image, (top, left) in zip(images, corners, strict=False)]
    )
