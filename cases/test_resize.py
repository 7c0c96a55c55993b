"""Resize: torchvision v2 `resize`, v1 `resize` where its uint8 path differs, kornia, Pillow and OpenCV.

Reference: conformance.references.resample (float64, from the documented maths).
Every tolerance below was measured with benchmarks/calibrate.py; the
numbers and their reasons are in docs/tolerances.md.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import torch
import torchvision.transforms.functional as F_v1
import torchvision.transforms.v2.functional as F_v2
from hypothesis import strategies as st
from torchvision.transforms import InterpolationMode

from conformance import (
    KORNIA,
    OPENCV,
    PILLOW,
    TV1,
    TV2,
    Case,
    Gradient,
    Implementation,
    Operation,
    Recipe,
    Rule,
    Tolerance,
    batched,
    image_recipes,
    keywords,
    per_host_image,
    pillow_image_op,
    sides,
)
from conformance.references import resample

MODES = ("nearest", "nearest-exact", "bilinear", "bilinear-antialias", "bicubic", "bicubic-antialias")
MAX_OUTPUT_SIDE = 300


def _mode_params(mode: str) -> dict[str, Any]:
    interpolation, _, antialias = mode.partition("-")
    return {"interpolation": mode if mode == "nearest-exact" else interpolation, "antialias": antialias == "antialias"}


@st.composite
def resize_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """Output size as [h, w] (up or down, independently per axis) or as a short edge (+ max_size)."""
    params = _mode_params(mode)
    short, long = sorted((recipe.height, recipe.width))
    largest_short_edge = MAX_OUTPUT_SIDE * short // long
    if largest_short_edge >= 1 and draw(st.booleans(), label="short_edge"):
        size = draw(st.integers(1, largest_short_edge))
        # A max_size below long/short would shrink the short edge to 0 pixels.
        lowest_max_size = max(size + 1, -(-(size * long // short) // size))
        max_size = None
        if lowest_max_size <= MAX_OUTPUT_SIDE:
            max_size = draw(st.one_of(st.none(), st.integers(lowest_max_size, MAX_OUTPUT_SIDE)))
        return params | {"size": [size], "max_size": max_size}
    return params | {"size": [draw(sides(MAX_OUTPUT_SIDE)), draw(sides(MAX_OUTPUT_SIDE))], "max_size": None}


def output_size(height: int, width: int, params: dict[str, Any]) -> tuple[int, int]:
    size = params["size"]
    if len(size) == 1:
        return resample.short_edge_size(height, width, size[0], params["max_size"])
    return size[0], size[1]


def _samples_on_pixel_edges(n_in: int, n_out: int, exact: bool) -> bool:
    """Whether some output sample maps exactly onto an input pixel edge (src is an integer > 0)."""
    if exact:  # (dst + 0.5) * in / out is an integer
        return any((2 * dst + 1) * n_in % (2 * n_out) == 0 for dst in range(n_out))
    return any(dst * n_in % n_out == 0 for dst in range(1, n_out))


def _long_side_through_aspect_ratio(height: int, width: int, size: int) -> int:
    """A short-edge size's long side computed through the float aspect ratio w / h and truncated, as
    kornia documents `side="short"`: size / (w / h) can land just below an integer that
    size * long / short reaches exactly (1 / (1 / 186) = 185.99999999999997)."""
    aspect = width / height
    return int(size * aspect) if aspect >= 1 else int(size / aspect)


def resize_features(case: Case) -> dict[str, Any]:
    """Facts known issues scope to: the output size, whether the height changes, nearest sampling on
    pixel edges, and whether a short-edge size's long side differs through the float aspect ratio."""
    height, width = case.recipe.height, case.recipe.width
    out_height, out_width = output_size(height, width, case.params)
    exact = case.params["interpolation"] == "nearest-exact"
    on_edges = any(
        _samples_on_pixel_edges(n, m, exact) for n, m in ((height, out_height), (width, out_width)) if n != m
    )
    size = case.params["size"]
    through_aspect = (
        len(size) == 1
        and case.params["max_size"] is None
        and _long_side_through_aspect_ratio(height, width, size[0]) != max(out_height, out_width)
    )
    return {
        "out_height": out_height,
        "out_width": out_width,
        "resizes_height": out_height != height,
        "samples_on_pixel_edges": on_edges,
        "long_side_through_aspect_ratio_differs": through_aspect,
    }


def resize_timing(recipe: Recipe, mode: str) -> dict[str, Any]:
    """Halve each side: the downscale of a data-loading pipeline."""
    return {"size": [max(1, recipe.height // 2), max(1, recipe.width // 2)], "max_size": None, **_mode_params(mode)}


def resize_reference(image: np.ndarray, case: Case) -> np.ndarray:
    params = case.params
    height, width = image.shape[-2:]
    antialias = params["antialias"] and params["interpolation"] in ("bilinear", "bicubic")
    return resample.resize(image, output_size(height, width, params), params["interpolation"], antialias)


def _mode(params: dict[str, Any]) -> InterpolationMode:
    return InterpolationMode(params.get("interpolation", "bilinear"))


def _torchvision(resize_fn):
    """v2 and v1 take the operation's keywords as they are (interpolation as an InterpolationMode)."""

    def call(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        return resize_fn(
            image,
            size=params["size"],
            max_size=params["max_size"],
            **keywords(params, interpolation=("interpolation", InterpolationMode), antialias=None),
        )

    return call


def _output_size(
    image: torch.Tensor | np.ndarray, params: dict[str, Any], channels_last: bool = False
) -> tuple[int, int]:
    height, width = image.shape[-3:-1] if channels_last else image.shape[-2:]
    return output_size(height, width, params)


def _kornia(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """kornia has no max_size: those cases pass the size torchvision's documented rule gives (they then test
    the interpolation, not the size rule); a short-edge size is kornia's int `size` with side="short"."""
    import kornia

    size = params["size"][0] if len(params["size"]) == 1 and params["max_size"] is None else _output_size(image, params)
    return kornia.geometry.transform.resize(
        image, size, **keywords(params, interpolation=("interpolation", str), antialias=None)
    )


PILLOW_FILTERS = {"nearest-exact": "NEAREST", "bilinear-antialias": "BILINEAR", "bicubic-antialias": "BICUBIC"}
OPENCV_FLAGS = {
    "nearest": "INTER_NEAREST",
    "nearest-exact": "INTER_NEAREST_EXACT",
    "bilinear": "INTER_LINEAR",
    "bicubic": "INTER_CUBIC",
}


def _mode_of(params: dict[str, Any]) -> str:
    """The test mode a case's interpolation and antialias name (Pillow's filters always antialias)."""
    interpolation = params.get("interpolation", "bilinear")
    antialias = params.get("antialias", True) and interpolation in ("bilinear", "bicubic")
    return f"{interpolation}-antialias" if antialias else interpolation


def _pillow(picture: Any, params: dict[str, Any]) -> Any:
    """Pillow's NEAREST samples pixel centres (nearest-exact); its BILINEAR and BICUBIC filters widen with the
    downscale factor, which is torchvision's antialias (and bicubic's a = -0.5)."""
    from PIL import Image

    height, width = output_size(picture.height, picture.width, params)
    return picture.resize((width, height), getattr(Image.Resampling, PILLOW_FILTERS[_mode_of(params)]))


def _opencv(image: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    """OpenCV's INTER_NEAREST floors the source index (torchvision's nearest), INTER_NEAREST_EXACT samples
    pixel centres, INTER_LINEAR and INTER_CUBIC (a = -0.75) use half-pixel centres and never antialias."""
    import cv2

    height, width = _output_size(image, params, channels_last=True)
    return cv2.resize(image, (width, height), interpolation=getattr(cv2, OPENCV_FLAGS[_mode_of(params)]))


def optional_keywords(mode: str) -> tuple[str, ...]:
    """Leaving `antialias` out keeps an antialiased mode's meaning where the library's default is True, and
    leaving `interpolation` out keeps bilinear's; elsewhere leaving them out would change the mode."""
    return ("antialias",) if mode.endswith("-antialias") else ("interpolation",) if mode == "bilinear" else ()


UINT8_ROUNDING = Tolerance(
    "uint8-rounding",
    atol=1,
    reason="uint8 output may be one step from round(reference): float32 coordinates, and fixed-point "
    "weights on the native CPU path; measured max 1 (bilinear, v1 bicubic)",
)
EXACT = Tolerance("exact", reason="nearest modes only copy input pixels: any difference is a wrong index")
FLOAT32 = Tolerance(
    "float32-coordinates",
    atol=1e-4,
    rtol=1e-5,
    reason="interpolate computes source coordinates and weights in float32: error grows with "
    "the pixel index (up to 300) times the local slope; measured max 4.9e-5 (bicubic)",
)
FLOAT64 = Tolerance(
    "float64-accumulation", atol=1e-12, rtol=1e-12, reason="float64 coordinates and sums; measured max 2.2e-14"
)
FLOAT16 = Tolerance(
    "float16-output-rounding",
    atol=1e-3,
    rtol=1e-3,
    reason="computed in float32, rounded to float16: half an ulp is 4.9e-4 at 1.0; measured max 5.1e-4",
)
BFLOAT16 = Tolerance(
    "bfloat16-output-rounding",
    atol=8e-3,
    rtol=8e-3,
    reason="computed in float32, rounded to bfloat16: half an ulp is 3.9e-3 at 1.0; measured max 3.9e-3",
)

TOLERANCES = [
    Rule(EXACT, mode="nearest*"),
    Rule(UINT8_ROUNDING, dtype="uint8"),
    Rule(FLOAT32, dtype="float32"),
    Rule(FLOAT64, dtype="float64"),
    Rule(FLOAT16, dtype="float16"),
    Rule(BFLOAT16, dtype="bfloat16"),
]

HOST = "a host library: the image is copied to host memory and back"
HOST_SPEC = {"keeps_memory_format": False, "host_transfers": HOST, "timing": None}
# torchvision documents antialias=True (v2 from 0.17; v1's default changed from None to True in 0.17)
# and interpolation=BILINEAR; kornia documents interpolation="bilinear"; OpenCV documents INTER_LINEAR.
TORCHVISION_DEFAULTS = {"antialias": True, "interpolation": "bilinear"}

RESIZE_OPERATION = Operation(
    name="resize",
    description="resize to [h, w] or a short edge (+ max_size)",
    reference=resize_reference,
    params=resize_params,
    dtypes=("uint8", "float32", "float64", "float16", "bfloat16"),
    modes=MODES,
    tolerances=TOLERANCES,
    optional=optional_keywords,
    spec={"features": resize_features, "timing": resize_timing},
    gradient=Gradient(),  # linear in the image in every mode: its gradient is the transposed resampling weights
    implementations=[
        Implementation(
            library=TV2,
            name="resize",
            call=_torchvision(F_v2.resize),
            defaults=TORCHVISION_DEFAULTS,
            description="torchvision.transforms.v2.functional.resize on image tensors",
        ),
        # v1 differs only for uint8 bilinear/bicubic: it always takes the float path (no native uint8
        # kernel), like v2 does on CUDA.  It accepts at most 4-D input, so it draws cases of its own.
        Implementation(
            library=TV1,
            name="resize_v1",
            call=_torchvision(F_v1.resize),
            dtypes=("uint8",),
            modes=MODES[2:],
            defaults=TORCHVISION_DEFAULTS,
            recipes=partial(image_recipes, max_batch_dims=1),
            description="torchvision.transforms.functional.resize (v1) on uint8 tensors",
        ),
        Implementation(
            library=KORNIA,
            call=batched(_kornia),
            dtypes=("float32",),
            modes=("nearest", "bilinear", "bicubic"),
            defaults={"interpolation": "bilinear", "antialias": False},
            spec={"keeps_memory_format": False, "needs": ("kornia.geometry.transform.resize",)},
        ),
        Implementation(
            library=PILLOW,
            call=pillow_image_op(_pillow),
            dtypes=("uint8", "float32"),
            modes=tuple(PILLOW_FILTERS),
            host_only=HOST,
            spec=HOST_SPEC,
        ),
        Implementation(
            library=OPENCV,
            call=per_host_image(_opencv),
            dtypes=("uint8", "float32"),
            modes=tuple(OPENCV_FLAGS),
            defaults={"interpolation": "bilinear"},
            host_only=HOST,
            spec=HOST_SPEC | {"needs": ("cv2.resize",)},
        ),
    ],
)
RESIZE, RESIZE_V1, RESIZE_KORNIA, RESIZE_PILLOW, RESIZE_OPENCV = RESIZE_OPERATION.specs()
globals().update(RESIZE_OPERATION.tests())
