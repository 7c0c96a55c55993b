"""Gaussian blur through every library that has it (torchvision v2 and v1, kornia, Pillow, OpenCV); kornia's
RandomGaussianBlur and kernel builders are in cases/test_blur_kornia.py.

Reference: conformance.references.filters, the documented meaning in float64: `kernel_size` taps sampled from
exp(-d^2 / 2 sigma^2), normalised, per axis, applied separably, borders reflected without repeating the edge pixel.
kernel_size and sigma are torchvision's (x, y) pairs or one number; kornia takes (y, x), so its call swaps them.
Documented defaults (transcribed from the docs, never read from a signature): torchvision and OpenCV derive a left-out
sigma as 0.3 * ((k - 1) * 0.5 - 1) + 0.8 per axis (OpenCV is called with sigmaX = 0, its documented request for it);
Pillow's radius defaults to 2; kornia has none.  Kernels stay shorter than twice the image side (reflection needs a
shorter radius); a longer one is the error mode "kernel-too-large".

Domain: uint8, uint16 (v2, OpenCV), float16 and bfloat16 (torch libraries), float32, float64; 1-4 channels; every
batch layout; PIL images for torchvision's functionals (`pil` items).  The error modes (ERROR_MODES, just outside the
documented ranges) are held on every library: it raises its class, documents accepting the input (OpenCV's sigma <= 0
and ksize 0, Pillow's radius 0), has no such input (Pillow has no kernel size), or returns a result undeclared: a
finding, with a known issue.  Known divergences (known_issues.toml, docs/findings.md): Pillow's box approximation
without a kernel size, OpenCV's fixed table for sigma <= 0 at 3 to 9 taps.  Tolerances: docs/tolerances.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
import torchvision.transforms.functional as F_v1
import torchvision.transforms.v2.functional as F_v2
from hypothesis import strategies as st

from conformance import (
    KORNIA,
    OMIT,
    OPENCV,
    PILLOW,
    TORCHVISION_PIL,
    TV1,
    TV2,
    Accepted,
    Case,
    Counterpart,
    ExpectedError,
    Gradient,
    Implementation,
    ModuleOp,
    Operation,
    Recipe,
    Returns,
    Rule,
    Tolerance,
    batched,
    image_recipes,
    keywords,
    per_host_image,
    pillow_image_op,
    versions,
)
from conformance.references import filters
from conformance.spec.case_pieces import (
    BLUR_FLOAT32,
    BLUR_FLOAT64,
    HOST_COPY,
    HOST_SPEC,
    exception_class,
    kernels_fitting,
)

SIGMA_STEPS = (10, 300)  # sigma in [0.10, 3.00] in steps of 0.01 (the grid the OpenCV bound was computed on)
PILLOW_RADIUS = 2.0  # ImageFilter.GaussianBlur(radius=2): "radius: standard deviation of the Gaussian kernel"
# Pillow 13 refuses a NaN radius; 12.3 (the lent GPU machine's) segfaults on one, so there it is not drawn
PILLOW_NAN_CRASHES = versions.below("Pillow", "13")
ERROR_MODES = {  # drawn with uint8 images (every library takes them; Pillow only them)
    "even-kernel": "an even kernel size (every library documents odd sizes)",
    "kernel-zero": "a kernel size of 0 on an axis (torchvision and kornia document odd positive sizes)",
    "kernel-negative": "a negative kernel size on an axis (-1 or -3)",
    "kernel-too-large": "a kernel whose radius reaches an image side (reflection needs a shorter radius)",
    "sigma-zero": "a sigma of 0 on an axis (torchvision and kornia document positive values)",
    "sigma-negative": "a negative sigma on an axis",
    "sigma-nan": "a NaN sigma",
}
NO_KERNEL_SIZE = "Pillow takes a radius (the standard deviation) and no kernel size: its call passes sigma only"


def documented_sigma(params: Mapping[str, Any]) -> list[float]:
    """sigma = 0.3 * ((kernel_size - 1) * 0.5 - 1) + 0.8 per axis (torchvision's gaussian_blur docs;
    OpenCV's getGaussianKernel docs for a non-positive sigma)."""
    return [0.3 * ((k - 1) * 0.5 - 1) + 0.8 for k in filters.pair(params["kernel_size"])]


def blur_recipes(dtype: str) -> st.SearchStrategy[Recipe]:
    """Up to 48 pixels a side, 1-4 channels (2 channels go one at a time through Pillow)."""
    return image_recipes(dtype, channels=(3, 1, 4, 2), max_side=48)


def blur_mode_recipes(dtype: str, mode: str) -> st.SearchStrategy[Recipe]:
    """An error mode's images: up to 16 pixels a side (the invalid parameter is what is checked, not the pixels)."""
    return blur_recipes(dtype) if mode == "default" else image_recipes(dtype, channels=(3, 1, 4, 2), max_side=16)


def _replace(draw: st.DrawFn, pair: list[Any], value: Any) -> list[Any]:
    """One axis of an (x, y) pair, or both, set to an invalid value."""
    axes = draw(st.sampled_from(((0,), (1,), (0, 1))), label="invalid_axes")
    return [value if axis in axes else v for axis, v in enumerate(pair)]


@st.composite
def blur_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """kernel_size: one odd size or (kx, ky), each radius shorter than its side; sigma: one value or
    (sigma_x, sigma_y).  An error mode (ERROR_MODES) then makes one axis or both invalid, just outside the range."""
    xs, ys = kernels_fitting(recipe.width), kernels_fitting(recipe.height)
    if draw(st.booleans(), label="square"):
        kx = ky = draw(st.sampled_from([k for k in xs if k in ys]), label="kernel")
        kernel: int | list[int] = kx
    else:
        kx, ky = draw(st.sampled_from(xs), label="kernel_x"), draw(st.sampled_from(ys), label="kernel_y")
        kernel = [kx, ky]
    if mode == "even-kernel":
        axis = draw(st.integers(0, 1), label="even_axis")
        kernel = [kx + (axis == 0), ky + (axis == 1)]
    elif mode in ("kernel-zero", "kernel-negative"):
        kernel = _replace(draw, [kx, ky], 0 if mode == "kernel-zero" else draw(st.sampled_from((-1, -3))))
    elif mode == "kernel-too-large":  # the smallest odd size whose radius k // 2 reaches the side, or a bit more
        longer = [2 * side + 1 + 2 * draw(st.integers(0, 2)) for side in (recipe.width, recipe.height)]
        axes = draw(st.sampled_from(((0,), (1,), (0, 1))), label="invalid_axes")
        kernel = [longer[a] if a in axes else k for a, k in enumerate((kx, ky))]
    steps = st.integers(*SIGMA_STEPS).map(lambda n: n / 100)
    sigma = draw(st.one_of(steps, st.lists(steps, min_size=2, max_size=2)), label="sigma")
    if mode in ("sigma-zero", "sigma-negative"):
        bad = 0.0 if mode == "sigma-zero" else -draw(st.integers(1, SIGMA_STEPS[1])) / 100
        pair = _replace(draw, list(filters.pair(sigma)), bad)
        sigma = bad if pair == [bad, bad] and draw(st.booleans(), label="one_number") else pair
    elif mode == "sigma-nan":
        sigma = math.nan
    return {"kernel_size": kernel, "sigma": sigma}


def blur_reference(image: np.ndarray, case: Case) -> np.ndarray:
    return filters.gaussian_blur(image, case.params["kernel_size"], case.params["sigma"])


def opencv_sigmas(params: Mapping[str, Any]) -> tuple[float, float]:
    """(sigma_x, sigma_y) as OpenCV's docs read them: "if sigmaY is zero, it is set to be equal to sigmaX"; then a
    non-positive sigma "is computed from ksize as sigma = 0.3*((ksize-1)*0.5 - 1) + 0.8" (getGaussianKernel)."""
    sx, sy = filters.pair(params["sigma"])
    sy = sy if sy > 0 else sx
    derived = documented_sigma(params)
    return (sx if sx > 0 else derived[0], sy if sy > 0 else derived[1])


def blur_features(defaults: Mapping[str, Any]) -> Callable[[Case], dict[str, Any]]:
    """Facts known issues scope to, with this library's sigma where the case leaves it out:
    small_kernel: an axis of 3 to 9 taps; table_kernel: an axis of 3 to 9 taps whose sigma OpenCV derives from the
    size (left out or non-positive: its fixed table); kernel_holds_3_sigma: both kernels reach 3 sigma (the truncated
    tail is under 0.3%), so a library without a kernel size differs less; even_kernel_on_1px_axis: an even size along
    a one-pixel side (OpenCV shortens it to 1 silently); batch_size: images in the batch (one image: torch's size-1
    batch strides lose channels-last)."""

    def features(case: Case) -> dict[str, Any]:
        params = case.params
        left_out = "sigma" in params.get(OMIT, ())
        sigma = params["sigma"]
        if left_out and "sigma" in defaults:
            sigma = defaults["sigma"](params) if callable(defaults["sigma"]) else defaults["sigma"]
        (kx, ky), (sx, sy) = filters.pair(params["kernel_size"]), filters.pair(sigma)
        axes = ((kx, case.recipe.width), (ky, case.recipe.height))
        raw = (0.0, 0.0) if left_out else filters.pair(params["sigma"])
        derived = (raw[0] <= 0, raw[1] <= 0 and raw[0] <= 0)  # OpenCV: sigmaY <= 0 takes sigmaX first
        return {
            "kernel_x": int(kx),
            "kernel_y": int(ky),
            "sigma_left_out": left_out,
            "batch_size": int(np.prod(case.recipe.batch)),
            "small_kernel": any(3 <= k <= 9 for k in (kx, ky)),  # the OpenCV table entries' former scope
            "table_kernel": any(d and 3 <= k <= 9 for d, k in zip(derived, (kx, ky), strict=True)),
            "kernel_holds_3_sigma": (kx - 1) / 2 >= 3 * sx and (ky - 1) / 2 >= 3 * sy,
            "even_kernel_on_1px_axis": any(k % 2 == 0 and side == 1 for k, side in axes),
        }

    return features


KORNIA_ERROR = exception_class("kornia.core.exceptions.BaseError", Exception)
CV2_ERROR = exception_class("cv2.error", Exception)
TORCH_PAD = ExpectedError(ERROR_MODES["kernel-too-large"], RuntimeError, match="[Pp]adding size should be less")


# -- implementations --------------------------------------------------------------------------
def _torchvision(blur: Callable[..., torch.Tensor]) -> Callable[[Any, dict[str, Any]], Any]:
    def call(image: Any, p: dict[str, Any]) -> Any:
        return blur(image, p["kernel_size"], **keywords(p, sigma=None))

    return call


def _at_most_4d(function: Callable[[Any, dict[str, Any]], Any]):
    """v1 takes (C, H, W) or (B, C, H, W) ("at most one leading dimension"): more batch dims are folded; a PIL
    image (the `pil` check) goes through as it is."""

    def call(image: Any, p: dict[str, Any]) -> Any:
        if not isinstance(image, torch.Tensor) or image.dim() <= 4:
            return function(image, p)
        return function(image.reshape(-1, *image.shape[-3:]), p).reshape(image.shape)

    return call


def kornia_kernel_size(kernel_size: int | list[int]) -> int | tuple[int, int]:
    """kornia documents (kH, kW): the operation's (kx, ky) reversed; one size stays one size."""
    return kernel_size if isinstance(kernel_size, int) else (int(kernel_size[1]), int(kernel_size[0]))


def _kornia(separable: bool) -> Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]:
    def call(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
        import kornia

        sx, sy = filters.pair(p["sigma"])
        return kornia.filters.gaussian_blur2d(
            image, kornia_kernel_size(p["kernel_size"]), (sy, sx), separable=separable
        )

    return batched(call)


def _kornia_module(separable: bool) -> Counterpart:
    """kornia.filters.GaussianBlur2d built with the kernel size and sigma its function gets, batched the same way."""

    def build(p: dict[str, Any]) -> torch.nn.Module:
        import kornia

        sx, sy = filters.pair(p["sigma"])
        return kornia.filters.GaussianBlur2d(kornia_kernel_size(p["kernel_size"]), (sy, sx), separable=separable)

    def forward(module: torch.nn.Module, image: torch.Tensor, p: dict[str, Any], sampled: Any) -> torch.Tensor:
        return batched(lambda images, q: module(images))(image, p)

    return Counterpart(name="kornia.filters.GaussianBlur2d", module=ModuleOp(build=build, forward=forward))


def _pillow(picture: Any, p: dict[str, Any]) -> Any:
    """Pillow has no kernel size: its radius is the standard deviation, (x, y) or one number."""
    from PIL import ImageFilter

    radius = keywords(p, sigma=("radius", lambda s: s if isinstance(s, (int, float)) else tuple(s)))
    return picture.filter(ImageFilter.GaussianBlur(**radius))


def _opencv(image: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    """ksize is (width, height); sigmaX = 0 (with sigmaY = 0) asks for the documented sigma from ksize."""
    import cv2

    ksize = tuple(int(k) for k in filters.pair(p["kernel_size"]))
    if "sigma" not in p:
        return cv2.GaussianBlur(image, ksize, 0)
    sx, sy = filters.pair(p["sigma"])
    return cv2.GaussianBlur(image, ksize, sx, sigmaY=sy)


def _no_blur_where_zero(params: dict[str, Any]) -> dict[str, Any]:
    """Pillow's radius 0 along an axis: a standard deviation of 0, no blur there (a one-tap kernel)."""
    pairs = zip(filters.pair(params["kernel_size"]), filters.pair(params["sigma"]), strict=True)
    kernel, sigma = zip(*[(1, 1.0) if s == 0 else (int(k), s) for k, s in pairs], strict=True)
    return params | {"kernel_size": list(kernel), "sigma": list(sigma)}


OPENCV_SIGMA = Accepted(
    "cv2.GaussianBlur docs: 'sigmaY ... if sigmaY is zero, it is set to be equal to sigmaX, if both sigmas are "
    "zeros, they are computed from ksize.width and ksize.height, respectively (see #getGaussianKernel)'; "
    "getGaussianKernel: 'If it is non-positive, it is computed from ksize as sigma = 0.3*((ksize-1)*0.5 - 1) + 0.8'",
    meaning=lambda params: params | {"sigma": list(opencv_sigmas(params))},
)
OPENCV_KSIZE_ZERO = Accepted(
    "cv2.GaussianBlur docs: 'ksize.width and ksize.height can differ but they both must be positive and odd. Or, "
    "they can be zero's and then they are computed from sigma' (no formula given: reference-free checks only)"
)
PILLOW_RADIUS_ZERO = Accepted(
    "PIL.ImageFilter.GaussianBlur: ':param radius: Standard deviation of the Gaussian kernel' (a deviation of 0 is "
    "no blur); its filter() returns image.copy() for a radius of 0 (PIL/ImageFilter.py:198-199)",
    meaning=_no_blur_where_zero,
)

UINT8 = Tolerance(
    "uint8-rounding",
    atol=1,
    reason="computed in float32 and rounded once: a value within float32 error of a half level may round the other "
    "way; measured max 1",
)
UINT16 = Tolerance(
    "uint16-rounding",
    atol=1,
    reason="torchvision blurs integer images in float32 and rounds once: 120 x 6e-8 x 65535 = 0.47 levels of float32 "
    "error, so within 1 of the rounded reference; measured max 1 (300 cases, cpu and vcuda:0)",
)
FLOAT16 = Tolerance(
    "float16-blur",
    atol=3e-3,
    reason="float16 kernels (exp, sum, division, the 2-D product) and output: 8 roundings of 2^-11 on values up to "
    "1.5 bound it at 5.9e-3; measured max 1.01e-3 (v1), 8.6e-4 (v2), 4.9e-4 (kornia: float32 kernel) in 300 cases",
)
BFLOAT16 = Tolerance(
    "bfloat16-blur",
    atol=2.5e-2,
    reason="as float16's with bfloat16's 2^-8: 8 roundings on values up to 1.5 bound it at 4.7e-2; measured max "
    "1.14e-2 (v1), 7.8e-3 (v2), 3.9e-3 (kornia) in 300 cases",
)
KORNIA_UINT8 = Tolerance(
    "float32-of-uint8-levels",
    atol=2e-3,
    reason="kornia blurs integer images in float32 and returns float32 (documented): the same summation bound on "
    "levels up to 255 is 1.9e-3; measured max 7.0e-5",
)
OPENCV_8BIT = Tolerance(
    "opencv-8bit-kernels",
    atol=6,
    reason="OpenCV blurs 8-bit images with each 1-D kernel rounded to 8 fraction bits (error-diffused, summing to 1) "
    "and exact integer sums: the 2-D kernel is at most 0.0218 (total variation, sigma on the 0.01 grid, kernels up "
    "to 11) from the ideal, 5.55 levels, plus both roundings: 6; measured max 6",
)
OPENCV_16BIT = Tolerance(
    "opencv-16bit-kernels",
    atol=8,
    reason="OpenCV's 16-bit blur is off the float64 one by up to 3 levels where its float32 one is off by 0.007: "
    "fixed-point kernels, as its 8-bit path, with 16 fraction bits (ufixedpoint32) instead of 8: 0.0218 / 2^8 of "
    "65535 is 5.6 levels, plus both roundings: 8; measured max 3 (9 of 300 cases beyond 1)",
)
TOLERANCES = [
    Rule(UINT8, dtype="uint8"),
    Rule(UINT16, dtype="uint16"),
    Rule(FLOAT16, dtype="float16"),
    Rule(BFLOAT16, dtype="bfloat16"),
    Rule(BLUR_FLOAT32, dtype="float32"),
    Rule(BLUR_FLOAT64, dtype="float64"),
]
HALF_AND_DOUBLE = ("float16", "bfloat16", "float32", "float64")
KORNIA_UINT8_PATH = not versions.below("kornia", "0.9")  # 0.9 documents float32 output for integer input
KORNIA_DTYPES = (("uint8",) if KORNIA_UINT8_PATH else ()) + HALF_AND_DOUBLE  # kornia's error modes: with uint8
KORNIA_RAISES = {mode: KORNIA_ERROR for mode in ERROR_MODES if mode != "kernel-too-large"} | {
    "kernel-too-large": TORCH_PAD
}
PILLOW_NAN = (
    {
        "not_applicable": {
            "sigma-nan": "segfaults the process before Pillow 13: docs/findings.md#pillow-12-segfaults-on-a-nan-radius"
        }
    }
    if PILLOW_NAN_CRASHES
    else {"raises": {"sigma-nan": ExpectedError(ERROR_MODES["sigma-nan"], ValueError, match="radius must be >= 0")}}
)
TORCHVISION_RAISES = {mode: ValueError for mode in ERROR_MODES if mode not in ("kernel-too-large", "sigma-nan")} | {
    "kernel-too-large": TORCH_PAD  # sigma-nan: undeclared (it returns NaN: a known issue)
}


KORNIA_SPEC = {
    "features": blur_features({}),
    "keeps_memory_format": False,
    # kornia 0.9: "integer or bool input is blurred in float32 and the output is float32"; floats keep theirs
    "returns": Returns(dtype=lambda case: "float32" if case.recipe.dtype == "uint8" else case.recipe.dtype),
    "needs": ("kornia.filters.gaussian_blur2d",),
}


GAUSSIAN_BLUR = Operation(
    name="gaussian_blur",
    description="Gaussian blur with reflected borders",
    reference=blur_reference,
    params=blur_params,
    optional=lambda mode: ("sigma",) if mode in ("default", "even-kernel") else (),  # else the mode's sigma
    dtypes=("uint8", "uint16", "float16", "bfloat16", "float32", "float64"),
    modes=("default",),
    tolerances=TOLERANCES,
    spec={"mode_recipes": blur_mode_recipes},
    invalid=ERROR_MODES,  # drawn with the first dtype, uint8
    gradient=Gradient(dtypes=("float32",)),  # a convolution with reflected borders: linear in the image
    implementations=[
        Implementation(
            library=TV2,
            call=_torchvision(F_v2.gaussian_blur),
            defaults={"sigma": documented_sigma},
            raises=TORCHVISION_RAISES,
            spec={"features": blur_features({"sigma": documented_sigma}), "pil_input": TORCHVISION_PIL},
        ),
        Implementation(
            library=TV1,
            call=_at_most_4d(_torchvision(F_v1.gaussian_blur)),
            # no uint16: v1's _cast_squeeze_out does not list it and truncates instead of rounding (not in v1's docs)
            dtypes=("uint8", *HALF_AND_DOUBLE),
            defaults={"sigma": documented_sigma},
            raises=TORCHVISION_RAISES,
            spec={
                "features": blur_features({"sigma": documented_sigma}),
                "needs": ("torchvision.transforms.functional.gaussian_blur",),
                "pil_input": TORCHVISION_PIL,
            },
        ),
        Implementation(
            library=KORNIA,
            call=_kornia(separable=True),
            counterpart=_kornia_module(separable=True),
            dtypes=KORNIA_DTYPES,
            raises=KORNIA_RAISES,
            tolerances=[Rule(KORNIA_UINT8, dtype="uint8")],
            spec=KORNIA_SPEC,
        ),
        Implementation(
            library=KORNIA,
            suffix="kornia_2d",
            call=_kornia(separable=False),
            counterpart=_kornia_module(separable=False),
            dtypes=tuple(d for d in KORNIA_DTYPES if d not in ("bfloat16", "float64")),  # the rest: separable items
            description="kornia: gaussian_blur2d(separable=False), one 2-D convolution",
            raises=KORNIA_RAISES,
            tolerances=[Rule(KORNIA_UINT8, dtype="uint8")],
            spec=KORNIA_SPEC,
        ),
        Implementation(
            library=PILLOW,
            call=pillow_image_op(_pillow),
            dtypes=("uint8",),  # "image has wrong mode" for every mode but the 8-bit ones
            defaults={"sigma": PILLOW_RADIUS},
            host_only=HOST_COPY,
            not_applicable=dict.fromkeys(
                ("even-kernel", "kernel-zero", "kernel-negative", "kernel-too-large"), NO_KERNEL_SIZE
            )
            | PILLOW_NAN.get("not_applicable", {}),
            accepts={"sigma-zero": PILLOW_RADIUS_ZERO},
            raises=PILLOW_NAN.get("raises", {}),
            # sigma-negative: undeclared (a negative radius blurs as its absolute value: a known issue)
            spec={"features": blur_features({"sigma": PILLOW_RADIUS}), **HOST_SPEC},
        ),
        Implementation(
            library=OPENCV,
            call=per_host_image(_opencv),
            dtypes=("uint8", "uint16", "float32", "float64"),  # CV_8U, CV_16U, CV_32F, CV_64F (float16: cv2.error)
            defaults={"sigma": documented_sigma},
            raises={"even-kernel": CV2_ERROR},
            # kernel-negative, kernel-too-large, sigma-nan: undeclared (results: known issues)
            accepts={"kernel-zero": OPENCV_KSIZE_ZERO, "sigma-zero": OPENCV_SIGMA, "sigma-negative": OPENCV_SIGMA},
            host_only=HOST_COPY,
            tolerances=[
                Rule(OPENCV_8BIT, check="reference", dtype="uint8"),
                Rule(OPENCV_16BIT, check="reference", dtype="uint16"),
            ],
            spec={"features": blur_features({"sigma": documented_sigma}), **HOST_SPEC, "needs": ("cv2.GaussianBlur",)},
        ),
    ],
)
globals().update(GAUSSIAN_BLUR.tests())
