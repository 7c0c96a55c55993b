"""Pictures for failure details, drawn with Pillow: image panels, an amplified diff heatmap
(its colour scale is drawn by the page), crops around the worst pixel, and a histogram of differences."""

from __future__ import annotations

import base64
import io

import numpy as np
from PIL import Image, ImageDraw, ImageOps

PANEL_SIDE = 192  # small images are enlarged (nearest) to about this size
CROP_RADIUS = 8  # pixels around the worst one, for images larger than a panel
HEAT = {"black": "#000004", "mid": "#bc3754", "white": "#fcffa4"}  # an inferno-like ramp via ImageOps.colorize


def first_image(array: np.ndarray) -> np.ndarray:
    """The first C x H x W image of an (..., C, H, W) array (batch dims dropped)."""
    while array.ndim > 3:
        array = array[0]
    return array if array.ndim == 3 else array.reshape(1, *array.shape[-2:])


def to_picture(array: np.ndarray, peak: float) -> Image.Image:
    """C x H x W values in 0..peak -> an RGB (3-4 channels) or grayscale (1-2 channels) picture."""
    image = first_image(array)
    channels = image[:3] if image.shape[0] >= 3 else image[:1]
    pixels = np.clip(np.nan_to_num(channels / peak), 0, 1) * 255
    hwc = np.ascontiguousarray(np.rint(pixels).astype(np.uint8).transpose(1, 2, 0))
    return Image.fromarray(hwc[..., 0] if hwc.shape[2] == 1 else hwc)


def display_scale(picture: Image.Image, side: int = PANEL_SIDE) -> int:
    """How much the page enlarges a picture (pixelated, in CSS) so small images can be seen."""
    return max(1, side // max(picture.size))


def difference(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """|actual - expected| per pixel (max over channels) of the first image, in float64."""
    mine, theirs = first_image(actual).astype(np.float64), first_image(expected).astype(np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf: NaN; equal infinities are no difference
        diff = np.abs(mine - theirs)
    diff[np.isnan(diff) & (mine == theirs)] = 0.0
    return np.nan_to_num(diff, nan=np.inf).max(axis=0)


def heatmap(diff: np.ndarray, top: float) -> Image.Image:
    """Differences 0..top as a colour ramp (amplified: top is the largest difference, not the range)."""
    level = np.clip(diff / top, 0, 1) if top > 0 else np.zeros_like(diff)
    gray = Image.fromarray(np.rint(level * 255).astype(np.uint8))
    return ImageOps.colorize(gray, black=HEAT["black"], white=HEAT["white"], mid=HEAT["mid"])


def scale_label(top: float, unit: str) -> str:
    """The value the heatmap's brightest colour stands for (the page draws the ramp itself, in CSS)."""
    return f"{top:.3g} {unit}".strip()


def crop_around(picture: Image.Image, row: int, col: int, radius: int = CROP_RADIUS) -> Image.Image:
    box = (
        max(0, col - radius),
        max(0, row - radius),
        min(picture.width, col + radius + 1),
        min(picture.height, row + radius + 1),
    )
    return picture.crop(box)


def histogram(diff: np.ndarray, tolerance: float | None, width: int = 320, height: int = 140) -> Image.Image:
    """Per-pixel differences: bar heights on a log scale, the tolerance as a red line."""
    finite = diff[np.isfinite(diff)].ravel()
    top = float(finite.max()) if finite.size else 1.0
    top = max(top, tolerance or 0.0, 1e-12)
    counts, edges = np.histogram(finite, bins=40, range=(0.0, top))
    canvas = Image.new("RGB", (width, height + 18), "white")
    draw = ImageDraw.Draw(canvas)
    peak = np.log1p(counts.max()) if counts.size and counts.max() > 0 else 1.0
    bar = width / len(counts)
    for i, count in enumerate(counts):
        if count:
            tall = int(height * np.log1p(count) / peak)
            draw.rectangle((i * bar, height - tall, (i + 1) * bar - 1, height), fill="#4c72b0")
    if tolerance is not None:
        x = int(width * min(tolerance / top, 1.0))
        draw.line((x, 0, x, height), fill="#d62728", width=2)
    draw.text((0, height + 3), "0", fill="black")
    draw.text((width - 60, height + 3), f"{edges[-1]:.3g}", fill="black")
    return canvas


def embed(picture: Image.Image, side: int | None = PANEL_SIDE) -> dict[str, object]:
    """A PNG at its own resolution, as a data URI for the page itself (which enlarges it, so the page stays small;
    one file to share, no folder of small files); and the size to show it at."""
    if picture.width == 0 or picture.height == 0:  # an image with no pixels (an empty input's output): a gray dot
        picture = Image.new("L", (1, 1), 128)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG", compress_level=6)
    scale = display_scale(picture, side) if side else 1
    return {
        "src": "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii"),
        "width": picture.width * scale,
        "height": picture.height * scale,
    }
