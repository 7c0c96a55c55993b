"""Pieces that several case modules share, written once: the warps' modes, the variants they draw and their rules,
what a host library's implementation says about itself, the rules of ops that only copy pixels, the gaussian blur's
accumulation tolerances, and optional libraries' exception classes.  Case modules cannot import each other (each is
collected on its own, and a user may copy one out), so what two families share lives here; a change here is a
change for every family that imports it."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from functools import lru_cache, partial
from types import MappingProxyType
from typing import Any

import numpy as np
from hypothesis import strategies as st

from conformance.spec.libraries import TORCHVISION_PIL
from conformance.spec.recipes import CONTENTS, Recipe, materialize, to_float64
from conformance.spec.strategies import image_recipes
from conformance.spec.tolerances import Rule, Tolerance

# --- warps (affine, perspective, elastic, kornia's random affine) ---
WARP_MODES = ("nearest", "bilinear")
HALF = ("float16", "bfloat16")


def warp_variants(both_modes: Sequence[str] = ("uint8", "uint16", "float32")) -> list[tuple[str, str]]:
    """(dtype, mode) of a warp: nearest copies pixels, so a dtype matters there only for integer rounding; the
    dtypes in `both_modes` draw both modes, float64 and the half types draw bilinear only."""
    return [(d, m) for d in both_modes for m in WARP_MODES] + [(d, "bilinear") for d in ("float64", *HALF)]


# nearest copies pixels: a warp's nearest modes are exact, and samples on cell edges are ties (known issues)
WARP_NEAREST_EXACT = Tolerance(
    "exact",
    reason="nearest copies one input pixel or the fill: any difference is another pixel. Samples on or near cell "
    "edges are known issues (ties), not a tolerance",
)

# OpenCV's warps (warpAffine, warpPerspective) interpolate 8-bit images with fixed-point weights
OPENCV_FIXED_WEIGHTS = [
    Rule(
        Tolerance(
            "opencv-fixed-point", atol=1, reason="OpenCV's 8-bit bilinear weights are 15-bit fixed point, rounded once"
        ),
        dtype="uint8",
        mode="bilinear",
    )
]


# the warps' cases: 1-4 channels, every batch layout, up to 48 pixels a side
WARP_RECIPES = partial(image_recipes, channels=(3, 1, 4, 2), max_side=48, max_batch_dims=1)
WARP_PIL_FILTERS = {"nearest": 0, "bilinear": 2}  # Pillow's Image.Resampling.NEAREST, BILINEAR


def matrix_helper_recipes(dtype: str) -> st.SearchStrategy[Recipe]:
    """A helper that builds a warp's matrix (kornia's get_*_matrix2d, get_perspective_transform): its "image" only
    says where the arguments live, one row per image of its batch."""
    return image_recipes(dtype, channels=(1,), max_side=2, min_batch_dims=1, max_batch_dims=1)


# --- what an implementation's OpSpec fields say of itself ---
NO_LAYOUT_PROMISE: Mapping[str, Any] = MappingProxyType({"keeps_memory_format": False})  # e.g. kornia: new tensors
# torchvision's functionals take PIL images too (v1's documented 'img (PIL Image or Tensor)', v2's dispatch)
TORCHVISION_PIL_SPEC: Mapping[str, Any] = MappingProxyType({"pil_input": TORCHVISION_PIL})

# --- host libraries (Pillow, OpenCV): they run on the cpu only ---
HOST_COPY = "a host library: the image is copied to host memory and back"
# the copy to host memory is its promise, a new contiguous array its output
HOST_SPEC: Mapping[str, Any] = MappingProxyType({**NO_LAYOUT_PROMISE, "host_transfers": HOST_COPY})

# --- cases ---
IN_RANGE_CONTENTS = tuple(c for c in CONTENTS if c != "out_of_range")  # contents within the dtype's value range
P_OUT_OF_RANGE = {"p-out-of-range": st.sampled_from((-1 / 64, 1 + 1 / 64))}  # a probability just outside [0, 1]


@lru_cache(maxsize=256)
def recipe_pixels(recipe: Recipe) -> np.ndarray:
    """A recipe's image as float64 values (what a reference computes on), kept for the recipe's other checks: not
    to be written into."""
    return to_float64(materialize(recipe))


# --- ops that copy pixels (flips, crops, pads, rotations by quarter turns) ---
# where the measured maximum comes from: docs/tolerances.md for the dtypes drawn before, a deep sweep for the others
_MEASURED = {"uint8": "docs/tolerances.md", "float32": "docs/tolerances.md"}
_MEASURED_LATER = "benchmarks/calibrate.py -n 300 per variant, cpu and vcuda:0"


def pixel_copy_rules(dtypes: Sequence[str]) -> list[Rule]:
    """An exact rule for each dtype: every output pixel is one input pixel or the fill, which the dtype holds."""
    return [
        Rule(
            Tolerance(
                "exact",
                reason=f"every output pixel is a copy of one {dtype} input pixel or the fill value, which {dtype} "
                f"holds: bound 0; measured max 0 outside the known issues ({_MEASURED.get(dtype, _MEASURED_LATER)})",
            ),
            dtype=dtype,
        )
        for dtype in dtypes
    ]


# --- the gaussian blur (torchvision's and OpenCV's functionals, kornia's gaussian_blur2d and its module) ---
BLUR_KERNELS = (1, 3, 5, 7, 9, 11)  # the odd kernel sizes drawn


def kernels_fitting(side: int) -> list[int]:
    """The kernel sizes whose half fits inside a side of this length."""
    return [k for k in BLUR_KERNELS if k // 2 < side]


BLUR_FLOAT32 = Tolerance(
    "float32-accumulation",
    atol=1e-5,
    rtol=1e-6,
    reason="float32 kernel (exp, normalisation) and up to 121 products summed in float32 on values up to 1.5: the "
    "summation bound is 120 x 6e-8 x 1.5 = 1.1e-5; measured max 7.5e-7 (torchvision), 8.3e-6 (OpenCV)",
)
BLUR_FLOAT64 = Tolerance(
    "float64-accumulation",
    atol=2e-14,
    reason="the float32 bound in float64: 120 x 1.1e-16 x 1.5 = 2e-14; measured max 1.55e-15 (v1; 300 cases)",
)


# --- optional libraries ---
def exception_class(dotted: str, fallback: type[BaseException]) -> type[BaseException]:
    """An exception class of an optional library, by its dotted name (`fallback` where that library or class is
    absent: its items skip on `needs`, so any class will do there)."""
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return fallback
