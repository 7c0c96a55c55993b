"""Resize: torchvision v2 `resize`, and v1 `resize` where its uint8 path differs.

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

from conformance import OpSpec, Recipe, Rule, Tolerance, image_recipes, sides
from conformance.recipes import Case
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


def resize_features(case: Case) -> dict[str, Any]:
    """Facts known issues scope to: the output size, whether the height changes, and nearest sampling
    on pixel edges."""
    height, width = case.recipe.height, case.recipe.width
    out_height, out_width = output_size(height, width, case.params)
    exact = case.params["interpolation"] == "nearest-exact"
    on_edges = any(_samples_on_pixel_edges(n, m, exact) for n, m in ((height, out_height), (width, out_width))
                   if n != m)
    return {"out_height": out_height, "out_width": out_width, "resizes_height": out_height != height,
            "samples_on_pixel_edges": on_edges}


def resize_timing(recipe: Recipe, mode: str) -> dict[str, Any]:
    """Halve each side: the downscale of a data-loading pipeline."""
    return {"size": [max(1, recipe.height // 2), max(1, recipe.width // 2)], "max_size": None, **_mode_params(mode)}


def resize_reference(image: np.ndarray, case: Case) -> np.ndarray:
    params = case.params
    height, width = image.shape[-2:]
    antialias = params["antialias"] and params["interpolation"] in ("bilinear", "bicubic")
    return resample.resize(image, output_size(height, width, params), params["interpolation"], antialias)


def _call(resize_fn):
    def call(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        return resize_fn(image, size=params["size"], interpolation=InterpolationMode(params["interpolation"]),
                         max_size=params["max_size"], antialias=params["antialias"])

    return call


UINT8_ROUNDING = Tolerance(
    "uint8-rounding", atol=1,
    reason="uint8 output may be one step from round(reference): float32 coordinates, and fixed-point "
           "weights on the native CPU path; measured max 1 (bilinear, v1 bicubic)")
EXACT = Tolerance("exact", reason="nearest modes only copy input pixels: any difference is a wrong index")
FLOAT32 = Tolerance("float32-coordinates", atol=1e-4, rtol=1e-5,
                    reason="interpolate computes source coordinates and weights in float32: error grows with "
                           "the pixel index (up to 300) times the local slope; measured max 4.9e-5 (bicubic)")
FLOAT64 = Tolerance("float64-accumulation", atol=1e-12, rtol=1e-12,
                    reason="float64 coordinates and sums; measured max 2.2e-14")
FLOAT16 = Tolerance("float16-output-rounding", atol=1e-3, rtol=1e-3,
                    reason="computed in float32, rounded to float16: half an ulp is 4.9e-4 at 1.0; measured max 5.1e-4")
BFLOAT16 = Tolerance("bfloat16-output-rounding", atol=8e-3, rtol=8e-3,
                     reason="computed in float32, rounded to bfloat16: half an ulp is 3.9e-3 at 1.0; measured max 3.9e-3")

TOLERANCES = [
    Rule(EXACT, mode="nearest*"),
    Rule(UINT8_ROUNDING, dtype="uint8"),
    Rule(FLOAT32, dtype="float32"),
    Rule(FLOAT64, dtype="float64"),
    Rule(FLOAT16, dtype="float16"),
    Rule(BFLOAT16, dtype="bfloat16"),
]

RESIZE = OpSpec(
    name="resize",
    description="torchvision.transforms.v2.functional.resize on image tensors",
    call=_call(F_v2.resize),
    reference=resize_reference,
    dtypes=("uint8", "float32", "float64", "float16", "bfloat16"),
    modes=MODES,
    params=resize_params,
    tolerances=TOLERANCES,
    features=resize_features,
    timing=resize_timing,
)

# v1 differs only for uint8 bilinear/bicubic: it always takes the float path
# (no native uint8 kernel), like v2 does on CUDA.  It accepts at most 4-D input.
RESIZE_V1 = OpSpec(
    name="resize_v1",
    description="torchvision.transforms.functional.resize (v1) on uint8 tensors",
    call=_call(F_v1.resize),
    reference=resize_reference,
    dtypes=("uint8",),
    modes=MODES[2:],
    params=resize_params,
    tolerances=TOLERANCES,
    recipes=partial(image_recipes, max_batch_dims=1),
    features=resize_features,
    timing=resize_timing,
)

test_resize = RESIZE.test()
test_resize_v1 = RESIZE_V1.test()
