"""Gaussian blur through every library that has it (torchvision v2 and v1, kornia, Pillow, OpenCV), and
kornia's `RandomGaussianBlur` with replayed parameters.

Reference: conformance.references.filters, the documented meaning in float64: a kernel of
`kernel_size` taps sampled from exp(-d^2 / 2 sigma^2) and normalised, per axis, applied separably,
borders reflected without repeating the edge pixel.  Parameters use torchvision's names and order:
kernel_size and sigma are (x, y) pairs or one number; kornia takes (y, x), so its call swaps them.

Documented defaults (`defaults=`, transcribed from each library's docs, never read from a signature):
torchvision and OpenCV derive a left-out sigma from the kernel size, 0.3 * ((k - 1) * 0.5 - 1) + 0.8
per axis (OpenCV is called with sigmaX = 0, its documented request for that rule); Pillow's radius
defaults to 2; kornia has no default (it is called with the drawn sigma).  Kernels stay shorter than
twice the image side: reflection needs a radius below the side (kornia documents it; torch's
reflection padding raises there), so larger kernels are outside the documented domain.

Divergences from the documented meaning are known issues in known_issues.toml with their envelopes
(docs/findings.md): Pillow approximates the Gaussian with extended box filters, has no kernel size
and repeats edge pixels; OpenCV's sigma = 0 takes a fixed table for kernels of 3 to 9 taps.
Tolerances and their measurements: docs/tolerances.md.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from functools import partial
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
    TV1,
    TV2,
    Case,
    Gradient,
    Implementation,
    ModuleOp,
    Operation,
    OpSpec,
    Recipe,
    Rule,
    Tolerance,
    batched,
    image_recipes,
    keywords,
    kornia_parameters,
    per_host_image,
    pillow_image_op,
    versions,
)
from conformance.references import filters

KERNELS = (1, 3, 5, 7, 9, 11)
SIGMA_STEPS = (10, 300)  # sigma in [0.10, 3.00] in steps of 0.01 (the grid the OpenCV bound was computed on)
HOST = "a host library: the image is copied to host memory and back"
PILLOW_RADIUS = 2.0  # ImageFilter.GaussianBlur(radius=2): "radius: standard deviation of the Gaussian kernel"


def documented_sigma(params: Mapping[str, Any]) -> list[float]:
    """sigma = 0.3 * ((kernel_size - 1) * 0.5 - 1) + 0.8 per axis (torchvision's gaussian_blur docs;
    OpenCV's getGaussianKernel docs for a non-positive sigma)."""
    return [0.3 * ((k - 1) * 0.5 - 1) + 0.8 for k in filters.pair(params["kernel_size"])]


def blur_recipes(dtype: str) -> st.SearchStrategy[Recipe]:
    """Up to 48 pixels a side, 1-4 channels (2 channels go one at a time through Pillow)."""
    return image_recipes(dtype, channels=(3, 1, 4, 2), max_side=48)


def _fitting(side: int) -> list[int]:
    return [k for k in KERNELS if k // 2 < side]


@st.composite
def blur_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """kernel_size: one odd size or (kx, ky), each radius shorter than its side; sigma: one value or
    (sigma_x, sigma_y).  "even-kernel": one axis one tap longer (even), which every library rejects."""
    xs, ys = _fitting(recipe.width), _fitting(recipe.height)
    if draw(st.booleans(), label="square"):
        kx = ky = draw(st.sampled_from([k for k in xs if k in ys]), label="kernel")
        kernel: int | list[int] = kx
    else:
        kx, ky = draw(st.sampled_from(xs), label="kernel_x"), draw(st.sampled_from(ys), label="kernel_y")
        kernel = [kx, ky]
    if mode == "even-kernel":
        axis = draw(st.integers(0, 1), label="even_axis")
        kernel = [kx + (axis == 0), ky + (axis == 1)]
    steps = st.integers(*SIGMA_STEPS).map(lambda n: n / 100)
    sigma = draw(st.one_of(steps, st.lists(steps, min_size=2, max_size=2)), label="sigma")
    return {"kernel_size": kernel, "sigma": sigma}


def blur_reference(image: np.ndarray, case: Case) -> np.ndarray:
    return filters.gaussian_blur(image, case.params["kernel_size"], case.params["sigma"])


def blur_features(defaults: Mapping[str, Any]) -> Callable[[Case], dict[str, Any]]:
    """Facts known issues scope to, with this library's sigma where the case leaves it out:
    small_kernel: an axis of 3 to 9 taps (OpenCV's table); kernel_holds_3_sigma: both kernels reach
    3 sigma (the truncated tail is under 0.3%), so a library without a kernel size differs less;
    even_kernel_on_1px_axis: an even size along a one-pixel side (OpenCV shortens it to 1 silently);
    batch_size: images in the batch (one image: torch's size-1 batch strides lose channels-last)."""

    def features(case: Case) -> dict[str, Any]:
        params = case.params
        left_out = "sigma" in params.get(OMIT, ())
        sigma = params["sigma"]
        if left_out and "sigma" in defaults:
            sigma = defaults["sigma"](params) if callable(defaults["sigma"]) else defaults["sigma"]
        (kx, ky), (sx, sy) = filters.pair(params["kernel_size"]), filters.pair(sigma)
        axes = ((kx, case.recipe.width), (ky, case.recipe.height))
        return {
            "kernel_x": int(kx),
            "kernel_y": int(ky),
            "sigma_left_out": left_out,
            "batch_size": int(np.prod(case.recipe.batch)),
            "small_kernel": any(3 <= k <= 9 for k in (kx, ky)),
            "kernel_holds_3_sigma": (kx - 1) / 2 >= 3 * sx and (ky - 1) / 2 >= 3 * sy,
            "even_kernel_on_1px_axis": any(k % 2 == 0 and side == 1 for k, side in axes),
        }

    return features


def _class(dotted: str, fallback: type[BaseException]) -> type[BaseException]:
    """An exception class of an optional library (its fallback where that library is absent)."""
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return fallback


# -- implementations --------------------------------------------------------------------------
def _torchvision(blur: Callable[..., torch.Tensor]) -> Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]:
    def call(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
        return blur(image, p["kernel_size"], **keywords(p, sigma=None))

    return call


def _at_most_4d(function: Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]):
    """v1 takes (C, H, W) or (B, C, H, W) ("at most one leading dimension"): more batch dims are folded."""

    def call(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
        if image.dim() <= 4:
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


UINT8 = Tolerance(
    "uint8-rounding",
    atol=1,
    reason="computed in float32 and rounded once: a value within float32 error of a half level may "
    "round the other way; measured max 1",
)
FLOAT32 = Tolerance(
    "float32-accumulation",
    atol=1e-5,
    rtol=1e-6,
    reason="float32 kernel (exp, normalisation) and up to 121 products summed in float32 on values "
    "up to 1.5: the summation bound is 120 x 6e-8 x 1.5 = 1.1e-5; measured max 7.5e-7 "
    "(torchvision), 8.3e-6 (OpenCV)",
)
KORNIA_UINT8 = Tolerance(
    "float32-of-uint8-levels",
    atol=2e-3,
    reason="kornia blurs integer images in float32 and returns float32 (documented): the same "
    "summation bound on levels up to 255 is 1.9e-3; measured max 7.0e-5",
)
OPENCV_8BIT = Tolerance(
    "opencv-8bit-kernels",
    atol=6,
    reason="OpenCV blurs 8-bit images with each 1-D kernel rounded to 8 fraction bits (error-"
    "diffused, summing to 1) and exact integer sums: the 2-D kernel is at most 0.0218 "
    "(total variation, sigma on the 0.01 grid, kernels up to 11) from the ideal, 5.55 "
    "levels, plus both roundings: 6; measured max 6",
)
TOLERANCES = [Rule(UINT8, dtype="uint8"), Rule(FLOAT32, dtype="float32")]
MODES = ("default", "even-kernel")
KORNIA_UINT8_PATH = not versions.below("kornia", "0.9")  # 0.9 documents float32 output for integer input

GAUSSIAN_BLUR = Operation(
    name="gaussian_blur",
    description="Gaussian blur with reflected borders",
    reference=blur_reference,
    params=blur_params,
    optional=("sigma",),
    dtypes=("uint8", "float32"),
    modes=MODES,
    tolerances=TOLERANCES,
    recipes=blur_recipes,
    invalid={"even-kernel": "an even kernel size (every library documents odd sizes)"},
    gradient=Gradient(dtypes=("float32",)),  # a convolution with reflected borders: linear in the image
    implementations=[
        Implementation(
            library=TV2,
            call=_torchvision(F_v2.gaussian_blur),
            defaults={"sigma": documented_sigma},
            raises={"even-kernel": ValueError},
            spec={"features": blur_features({"sigma": documented_sigma})},
        ),
        Implementation(
            library=TV1,
            call=_at_most_4d(_torchvision(F_v1.gaussian_blur)),
            defaults={"sigma": documented_sigma},
            raises={"even-kernel": ValueError},
            spec={
                "features": blur_features({"sigma": documented_sigma}),
                "needs": ("torchvision.transforms.functional.gaussian_blur",),
            },
        ),
        Implementation(
            library=KORNIA,
            call=_kornia(separable=True),
            dtypes=("uint8", "float32") if KORNIA_UINT8_PATH else ("float32",),
            raises={"even-kernel": _class("kornia.core.exceptions.BaseError", Exception)},
            tolerances=[Rule(KORNIA_UINT8, dtype="uint8")],
            spec={
                "features": blur_features({}),
                "keeps_memory_format": False,
                "output_dtype": lambda case: "float32",
                "needs": ("kornia.filters.gaussian_blur2d",),
            },
        ),
        Implementation(
            library=KORNIA,
            suffix="kornia_2d",
            call=_kornia(separable=False),
            dtypes=("float32",),
            description="kornia: gaussian_blur2d(separable=False), one 2-D convolution",
            raises={"even-kernel": _class("kornia.core.exceptions.BaseError", Exception)},
            spec={
                "features": blur_features({}),
                "keeps_memory_format": False,
                "needs": ("kornia.filters.gaussian_blur2d",),
            },
        ),
        Implementation(
            library=PILLOW,
            call=pillow_image_op(_pillow),
            dtypes=("uint8",),
            defaults={"sigma": PILLOW_RADIUS},
            host_only=HOST,
            spec={
                "features": blur_features({"sigma": PILLOW_RADIUS}),
                "keeps_memory_format": False,
                "host_transfers": HOST,
            },
        ),
        Implementation(
            library=OPENCV,
            call=per_host_image(_opencv),
            defaults={"sigma": documented_sigma},
            raises={"even-kernel": _class("cv2.error", Exception)},
            host_only=HOST,
            tolerances=[Rule(OPENCV_8BIT, check="reference", dtype="uint8")],
            spec={
                "features": blur_features({"sigma": documented_sigma}),
                "keeps_memory_format": False,
                "host_transfers": HOST,
                "needs": ("cv2.GaussianBlur",),
            },
        ),
    ],
)
globals().update(GAUSSIAN_BLUR.tests())


# -- kornia's RandomGaussianBlur: one sigma per image, drawn once on the cpu and replayed ------------
@st.composite
def random_blur_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """A (kx, ky) kernel fitting the image and the documented sampling range (low, high) of sigma."""
    kx, ky = draw(st.sampled_from(_fitting(recipe.width))), draw(st.sampled_from(_fitting(recipe.height)))
    low = draw(st.integers(*SIGMA_STEPS), label="sigma_low")
    high = draw(st.integers(low, SIGMA_STEPS[1]), label="sigma_high")
    return {"kernel_size": [kx, ky], "sigma_range": [low / 100, high / 100]}


def random_blur_reference(image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor]) -> np.ndarray:
    """Each image blurred with its own sampled sigma on both axes (as RandomGaussianBlur documents)."""
    sigmas = sampled["sigma"].double().numpy()
    return np.stack(
        [
            filters.gaussian_blur(one, case.params["kernel_size"], float(s))
            for one, s in zip(image, sigmas, strict=False)
        ]
    )


def sigma_bounds(params: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """The documented range, as float32 (kornia samples sigma in float32: a range of 0.1..0.1 gives 0.1f)."""
    low, high = (float(np.float32(v)) for v in params["sigma_range"])
    return {"sigma": (low, high)}


def _build_random(params: dict[str, Any]) -> torch.nn.Module:
    import kornia

    return kornia.augmentation.RandomGaussianBlur(
        kornia_kernel_size(params["kernel_size"]), tuple(params["sigma_range"]), p=1.0
    )


RANDOM_GAUSSIAN_BLUR = OpSpec(
    name="random_gaussian_blur_kornia",
    description="kornia.augmentation.RandomGaussianBlur(p=1) with replayed parameters",
    module=ModuleOp(build=_build_random, sample=kornia_parameters, bounds=sigma_bounds, unmoved="works"),
    reference=random_blur_reference,
    dtypes=("float32",),
    modes=("default",),
    params=random_blur_params,
    recipes=partial(image_recipes, channels=(3, 1, 4, 2), min_batch_dims=1, max_batch_dims=1, max_side=48),
    tolerances=[Rule(FLOAT32, dtype="float32")],
    features=lambda case: {"kernel_x": case.params["kernel_size"][0], "kernel_y": case.params["kernel_size"][1]},
    keeps_memory_format=False,
    needs=("kornia.augmentation.RandomGaussianBlur",),
    gradient=Gradient(dtypes=("float32",)),
)
test_random_gaussian_blur_kornia = RANDOM_GAUSSIAN_BLUR.test()
