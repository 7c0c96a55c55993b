"""Resize: torchvision v2 `resize`, v1 `resize` where its uint8 path differs, kornia, Pillow and OpenCV.

Reference: conformance.references.resample (float64, from the documented maths).
Every tolerance below was measured with benchmarks/calibrate.py; the
numbers and their reasons are in docs/tolerances.md.

The domain drawn: every dtype each library takes (v2: uint8, uint16 and the four float dtypes; kornia: the float
dtypes; OpenCV: uint8, uint16, float16, float32, float64; Pillow: 8-bit and "F" images), 1 to 5 channels (resize
treats channels alike), every batch layout, PIL images for torchvision's functionals (the `pil` check), and the
error modes every library gets: an output side of 0 or below, a size of 3 elements, a max_size not above the
short edge, an image with no pixels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import torch
import torchvision.transforms.functional as F_v1
import torchvision.transforms.v2 as T_v2
import torchvision.transforms.v2.functional as F_v2
from hypothesis import strategies as st
from torchvision.transforms import InterpolationMode

from conformance import (
    KORNIA,
    OPENCV,
    PILLOW,
    TORCHVISION_PIL,
    TV1,
    TV2,
    Case,
    Counterpart,
    Gradient,
    Implementation,
    ModuleOp,
    Operation,
    Recipe,
    Rule,
    Tolerance,
    empty_recipes,
    image_recipes,
    keywords,
    per_host_image,
    pillow_image_op,
    sides,
)
from conformance.references import resample
from conformance.spec.case_pieces import HOST_COPY, HOST_SPEC

MODES = ("nearest", "nearest-exact", "bilinear", "bilinear-antialias", "bicubic", "bicubic-antialias")
MAX_OUTPUT_SIDE = 300
CHANNELS = (3, 1, 4, 2, 5)  # resize treats channels alike: every count up to 5 (3 first: hypothesis shrinks to it)
# Inputs just outside the documented domain; every library gets them (error modes).
INVALID = {
    "size-zero": "an output side of 0 ([0, w], [h, 0] or a short edge of 0)",
    "size-negative": "a negative output side",
    "size-three": "a size of 3 elements (documented: (h, w) or an int; Pillow's and OpenCV's (width, height))",
    "max-size-not-greater": "max_size at most the short edge (torchvision: 'must be strictly greater')",
    "empty-image": "an image with no pixels (a side of 0)",
}


def _mode_params(mode: str) -> dict[str, Any]:
    interpolation, _, antialias = mode.partition("-")
    return {"interpolation": mode if mode == "nearest-exact" else interpolation, "antialias": antialias == "antialias"}


def resize_recipes(dtype: str, mode: str) -> st.SearchStrategy[Recipe]:
    """1 to 5 channels; the empty-image mode's images have a side of 0."""
    if mode == "empty-image":
        return empty_recipes(dtype, channels=(3, 1))
    return image_recipes(dtype, channels=CHANNELS)


@st.composite
def invalid_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """An interpolation every library has (Pillow's filters always antialias, OpenCV's never) and a size just
    outside the documented range: a side of 0 or -1/-2 (of [h, w] or the short edge), a third element, a
    max_size equal to the short edge or one below it."""
    params = _mode_params(draw(st.sampled_from(MODES), label="interpolation"))
    side = draw(sides(MAX_OUTPUT_SIDE), label="side")
    if mode in ("size-zero", "size-negative"):
        bad = 0 if mode == "size-zero" else draw(st.integers(-2, -1), label="negative")
        form = draw(st.sampled_from(([bad, side], [side, bad], [bad])), label="form")
        return params | {"size": form, "max_size": None}
    if mode == "size-three":
        return params | {"size": [draw(sides(MAX_OUTPUT_SIDE)), side, draw(sides(MAX_OUTPUT_SIDE))], "max_size": None}
    if mode == "max-size-not-greater":
        return params | {"size": [side], "max_size": side - draw(st.integers(0, min(1, side - 1)), label="below")}
    return params | draw(output_sizes(recipe))  # empty-image: a valid size (an [h, w] pair: no short edge)


def resize_params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
    if mode in INVALID:
        return invalid_params(recipe, mode)
    return output_sizes(recipe).map(lambda size: _mode_params(mode) | size)


@st.composite
def output_sizes(draw: st.DrawFn, recipe: Recipe) -> dict[str, Any]:
    """Output size as [h, w] (up or down, independently per axis), as a short edge (+ max_size), or as None with a
    max_size for the long edge (v2: "If size is None, the output shape is determined by the max_size parameter")."""
    short, long = sorted((recipe.height, recipe.width))
    largest_short_edge = MAX_OUTPUT_SIDE * short // long
    if largest_short_edge >= 1 and draw(st.booleans(), label="short_edge"):
        if draw(st.integers(0, 3), label="size_none") == 0:  # a quarter of the short-edge draws
            # the short edge max_size * short / long: at least 1 pixel from max_size >= long / short
            return {"size": None, "max_size": draw(st.integers(-(-long // short), MAX_OUTPUT_SIDE), label="max_size")}
        size = draw(st.integers(1, largest_short_edge))
        # A max_size below long/short would shrink the short edge to 0 pixels.
        lowest_max_size = max(size + 1, -(-(size * long // short) // size))
        max_size = None
        if lowest_max_size <= MAX_OUTPUT_SIDE:
            max_size = draw(st.one_of(st.none(), st.integers(lowest_max_size, MAX_OUTPUT_SIDE)))
        return {"size": [size], "max_size": max_size}
    return {"size": [draw(sides(MAX_OUTPUT_SIDE)), draw(sides(MAX_OUTPUT_SIDE))], "max_size": None}


def output_size(height: int, width: int, params: dict[str, Any]) -> tuple[int, int]:
    size = params["size"]
    if size is None:  # the long edge becomes max_size, the short edge max_size * short / long (v2's docs), floored
        short, long = sorted((height, width))
        new_short, new_long = params["max_size"] * short // long, params["max_size"]
        return (new_short, new_long) if height <= width else (new_long, new_short)
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
        size is not None
        and len(size) == 1
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


def _torchvision(resize_fn, takes_size_none: bool = True):
    """v2 and v1 take the operation's keywords as they are (interpolation as an InterpolationMode), and a PIL image
    as they take a tensor.  v1 documents size as "sequence or int" (no None): a case with size None passes it the
    size v2's documented rule gives, as the other libraries get."""

    def call(image: Any, params: dict[str, Any]) -> Any:
        size, max_size = params["size"], params["max_size"]
        if size is None and not takes_size_none:
            dims = (image.height, image.width) if hasattr(image, "height") else tuple(image.shape[-2:])
            size, max_size = list(output_size(*dims, params)), None
        return resize_fn(
            image,
            size=size,
            max_size=max_size,
            **keywords(params, interpolation=("interpolation", InterpolationMode), antialias=None),
        )

    return call


def _tv2_module(params: dict[str, Any]) -> torch.nn.Module:
    """v2's Resize class, built with the keywords its function gets (interpolation and antialias where given)."""
    return T_v2.Resize(
        size=params["size"],
        max_size=params["max_size"],
        **keywords(params, interpolation=("interpolation", InterpolationMode), antialias=None),
    )


def _library_size(height: int, width: int, params: dict[str, Any], swap: bool = False) -> tuple[int, ...]:
    """The (h, w) a library without a short-edge rule is given (Pillow's and OpenCV's (w, h) with `swap`); a size of
    two or more elements passes as it is (so a third element reaches the library)."""
    size = params["size"]
    size = output_size(height, width, params) if size is None or len(size) == 1 else tuple(size)
    return (size[1], size[0], *size[2:]) if swap else size


def _kornia(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """kornia has no max_size: those cases (and size None) pass the size torchvision's documented rule gives (they
    then test the interpolation, not the size rule); a short-edge size is kornia's int `size` with side="short".
    kornia documents input (*, H, W): the batch is handed over as it is."""
    import kornia

    size = params["size"]
    short_edge = size is not None and len(size) == 1 and params["max_size"] is None
    size = size[0] if short_edge else _library_size(*image.shape[-2:], params)
    return kornia.geometry.transform.resize(
        image, size, **keywords(params, interpolation=("interpolation", str), antialias=None)
    )


# Pillow's NEAREST samples pixel centres (nearest-exact; torchvision maps both nearest modes to it for PIL images);
# Pillow has no antialias switch: its modes are the antialiased ones, and an error mode's non-antialiased
# interpolation takes the same filter.  OpenCV has no antialias: an error mode's antialias is left out.
PILLOW_FILTERS = {"nearest": "NEAREST", "nearest-exact": "NEAREST", "bilinear": "BILINEAR", "bicubic": "BICUBIC"}
PILLOW_MODES = ("nearest-exact", "bilinear-antialias", "bicubic-antialias")
OPENCV_FLAGS = {
    "nearest": "INTER_NEAREST",
    "nearest-exact": "INTER_NEAREST_EXACT",
    "bilinear": "INTER_LINEAR",
    "bicubic": "INTER_CUBIC",
}


def _pillow(picture: Any, params: dict[str, Any]) -> Any:
    """Pillow's NEAREST samples pixel centres (nearest-exact); its BILINEAR and BICUBIC filters widen with the
    downscale factor, which is torchvision's antialias (and bicubic's a = -0.5)."""
    from PIL import Image

    size = _library_size(picture.height, picture.width, params, swap=True)
    return picture.resize(size, getattr(Image.Resampling, PILLOW_FILTERS[params.get("interpolation", "bilinear")]))


def _opencv(image: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    """OpenCV's INTER_NEAREST floors the source index (torchvision's nearest), INTER_NEAREST_EXACT samples
    pixel centres, INTER_LINEAR and INTER_CUBIC (a = -0.75) use half-pixel centres and never antialias."""
    import cv2

    size = _library_size(*image.shape[:2], params, swap=True)
    return cv2.resize(image, size, interpolation=getattr(cv2, OPENCV_FLAGS[params.get("interpolation", "bilinear")]))


def _host(adapted: Callable[..., torch.Tensor], one: Callable[[np.ndarray, dict[str, Any]], Any]):
    """The adapters reshape with -1, which a tensor with no elements cannot resolve: an empty image goes to the library
    directly, as one H x W x C host array, so what raises is the library, never the adapter."""

    def call(image: torch.Tensor, params: dict[str, Any]) -> Any:
        if image.numel():
            return adapted(image, params)
        channels, height, width = image.shape[-3:]
        return torch.as_tensor(np.array(one(np.zeros((height, width, channels), _NUMPY[image.dtype]), params)))

    return call


_NUMPY = {getattr(torch, name): np.dtype(name) for name in ("uint8", "uint16", "float16", "float32", "float64")}


def _pillow_array(array: np.ndarray, params: dict[str, Any]) -> Any:
    """One empty host array (1 or 3 channels) as a Pillow image (RGB; else L or F of the first channel), resized."""
    from PIL import Image

    return _pillow(Image.fromarray(array if array.dtype == np.uint8 and array.shape[2] == 3 else array[..., 0]), params)


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

UINT16 = Tolerance(
    "uint16-float32-path",
    atol=4,
    reason="uint16 is resized in float32 (torchvision casts it, OpenCV computes 16-bit images in float): "
    "float32-coordinates' measured 4.9e-5 of white is 3.2 levels at 65535, plus the final rounding's half level: 4; "
    "measured max 2 (OpenCV bicubic, 22 x 286 -> 1 x 18, 0/65535 content)",
)
# kornia hands half-precision images to interpolate as they are (v2 casts them to float32): the v2 bounds, other reasons
KORNIA_HALF = [
    Rule(
        replace(
            FLOAT16,
            name="float16-interpolate",
            reason="interpolate computes float16 in float16 on the cpu: up to about 1.5 ulps (9.8e-4 in [1, 2)); "
            "measured max 1.25e-3 (sweep, 300 cases x 3 targets), 1.5e-3 at 1.79 where the bound is 2.8e-3",
        ),
        dtype="float16",
    ),
    Rule(
        replace(
            BFLOAT16,
            name="bfloat16-interpolate",
            reason="interpolate computes bfloat16 in bfloat16 on the cpu: up to about 1.5 ulps (7.8e-3 in [1, 2)); "
            "measured max 1.15e-2 at about 1.6, where the bound is 2.1e-2",
        ),
        dtype="bfloat16",
    ),
]
OPENCV_FLOAT64 = Tolerance(
    "opencv-float64-in-float32",
    atol=1e-4,
    rtol=1e-5,
    reason="OpenCV resizes 64-bit float images with float32 coefficients (errors of float32's size, as for its "
    "float32 images, not float64's 1e-14), so the float32 bound applies (see float32-coordinates); measured max "
    "2.65e-5 (bicubic), 1.18e-5 (bilinear)",
)

TOLERANCES = [
    Rule(EXACT, mode="nearest*"),
    Rule(UINT8_ROUNDING, dtype="uint8"),
    Rule(UINT16, dtype="uint16"),
    Rule(FLOAT32, dtype="float32"),
    Rule(FLOAT64, dtype="float64"),
    Rule(FLOAT16, dtype="float16"),
    Rule(BFLOAT16, dtype="bfloat16"),
]

UNTIMED_HOST_SPEC = {**HOST_SPEC, "timing": None}
# torchvision documents antialias=True (v2 from 0.17; v1's default changed from None to True in 0.17)
# and interpolation=BILINEAR; kornia documents interpolation="bilinear"; OpenCV documents INTER_LINEAR.
TORCHVISION_DEFAULTS = {"antialias": True, "interpolation": "bilinear"}

DTYPES = ("uint8", "uint16", "float32", "float64", "float16", "bfloat16")
FLOATS = ("float32", "float64", "float16", "bfloat16")
# An error item is one per target: uint8 reaches v1 (uint8 only), float32 kornia (floats only).
VARIANTS = [(d, m) for d in DTYPES for m in MODES] + [(d, m) for m in INVALID for d in ("uint8", "float32")]
try:
    from cv2 import error as CV2_ERROR
except ImportError:  # no OpenCV: its items skip (needs)
    CV2_ERROR = Exception

RESIZE_OPERATION = Operation(
    name="resize",
    description="resize to [h, w] or a short edge (+ max_size)",
    reference=resize_reference,
    params=resize_params,
    dtypes=DTYPES,
    modes=(*MODES, *INVALID),
    variants=VARIANTS,
    invalid=INVALID,
    tolerances=TOLERANCES,
    optional=optional_keywords,
    spec={"features": resize_features, "timing": resize_timing, "mode_recipes": resize_recipes},
    gradient=Gradient(),  # linear in the image in every mode: its gradient is the transposed resampling weights
    implementations=[
        # v2 documents "a sequence like (h, w)" reads size[0:2] of a longer one: size-three undeclared (known issue).
        Implementation(
            library=TV2,
            name="resize",
            call=_torchvision(F_v2.resize),
            counterpart=Counterpart(name="torchvision.transforms.v2.Resize", module=ModuleOp(build=_tv2_module)),
            defaults=TORCHVISION_DEFAULTS,
            raises={
                "size-zero": RuntimeError,  # interpolate: "Input and output sizes should be greater than 0"
                "size-negative": RuntimeError,
                "max-size-not-greater": ValueError,  # "max_size = 4 must be strictly greater than ..."
                "empty-image": RuntimeError,  # interpolate is skipped for no elements; the reshape after it fails
            },
            description="torchvision.transforms.v2.functional.resize on image tensors",
            spec={"pil_input": TORCHVISION_PIL},
        ),
        # v1 differs only for uint8 bilinear/bicubic: it always takes the float path (no native uint8
        # kernel), like v2 does on CUDA.  It documents "[..., H, W] shape, where ... means an arbitrary number of
        # leading dimensions" and gets the operation's cases; a 5-D image raises (a known issue).
        Implementation(
            library=TV1,
            name="resize_v1",
            call=_torchvision(F_v1.resize, takes_size_none=False),
            dtypes=("uint8",),
            modes=MODES[2:],
            defaults=TORCHVISION_DEFAULTS,
            raises={
                "size-zero": RuntimeError,
                "size-negative": RuntimeError,
                "size-three": ValueError,  # "Size must be an int or a 1 or 2 element tuple/list"
                "max-size-not-greater": ValueError,
                "empty-image": RuntimeError,  # interpolate: "Input and output sizes should be greater than 0"
            },
            description="torchvision.transforms.functional.resize (v1) on uint8 tensors",
            spec={"pil_input": TORCHVISION_PIL},
        ),
        # kornia returns an empty image for an output side of 0 (undocumented): size-zero undeclared, a known issue.
        Implementation(
            library=KORNIA,
            call=_kornia,
            dtypes=FLOATS,
            modes=("nearest", "nearest-exact", "bilinear", "bicubic"),
            defaults={"interpolation": "bilinear", "antialias": False},
            tolerances=[Rule(EXACT, mode="nearest*"), *KORNIA_HALF],
            raises={
                "size-negative": RuntimeError,
                "size-three": ValueError,  # interpolate: "the same number of spatial dimensions"
                "empty-image": ValueError,  # "Input image size must be positive"
            },
            not_applicable={"max-size-not-greater": "kornia's resize takes no max_size"},
            spec={"keeps_memory_format": False, "needs": ("kornia.geometry.transform.resize",)},
        ),
        # Pillow resizes an image with no pixels to a black one: empty-image is left undeclared, a known issue.
        Implementation(
            library=PILLOW,
            call=_host(pillow_image_op(_pillow), _pillow_array),
            dtypes=("uint8", "float32"),
            modes=PILLOW_MODES,
            raises={"size-zero": ValueError, "size-negative": ValueError, "size-three": TypeError},
            not_applicable={"max-size-not-greater": "Image.resize takes no max_size"},
            host_only=HOST_COPY,
            spec=UNTIMED_HOST_SPEC,
        ),
        Implementation(
            library=OPENCV,
            call=_host(per_host_image(_opencv), _opencv),
            dtypes=("uint8", "uint16", "float32", "float64", "float16"),
            modes=tuple(OPENCV_FLAGS),
            defaults={"interpolation": "bilinear"},
            tolerances=[Rule(OPENCV_FLOAT64, dtype="float64", mode="bi*")],
            raises=dict.fromkeys(("size-zero", "size-negative", "size-three", "empty-image"), CV2_ERROR),
            not_applicable={"max-size-not-greater": "cv2.resize takes no max_size"},
            host_only=HOST_COPY,
            spec=UNTIMED_HOST_SPEC | {"needs": ("cv2.resize",)},
        ),
    ],
)
RESIZE, RESIZE_V1, RESIZE_KORNIA, RESIZE_PILLOW, RESIZE_OPENCV = RESIZE_OPERATION.specs()
globals().update(RESIZE_OPERATION.tests())
