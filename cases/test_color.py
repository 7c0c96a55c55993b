"""Colour adjustments: brightness, contrast, saturation, hue and RGB -> grayscale, each through every
library that documents the same meaning (torchvision v2 and v1, kornia, Pillow's ImageEnhance and
convert, OpenCV).

Reference: conformance.references.color (float64 blends with black, the mean luma or each pixel's
luma, ITU-R BT.601 weights, the hexcone HSV).  Libraries that give another meaning to the same name
are not implementations here (docs/findings.md, "Colour"): kornia's `adjust_brightness` adds and
`adjust_contrast` multiplies, its `adjust_saturation` scales HSV saturation; their blend-formula
twins (`adjust_brightness_accumulative`, `adjust_contrast_with_mean_subtraction`,
`adjust_saturation_with_gray_subtraction`) are.  Conventions that differ inside the same meaning
(uint8 truncation, torchvision's 0.2989 red weight, Pillow's rounded mean) are known issues with
their envelopes (cases/known_issues.toml), never a looser tolerance.

Factors are multiples of 1/64 (hue shifts of 1/256 turn): float32 holds them and their products
with 8-bit values exactly, so a uint8 difference is a library's rounding, never float noise.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import torch
import torchvision.transforms.functional as F_v1
import torchvision.transforms.v2.functional as F_v2
from hypothesis import strategies as st

from conformance import (
    CONTENTS,
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
    image_recipes,
    keywords,
    per_host_image,
    pillow_image_op,
)
from conformance.references import color

DTYPES = ("uint8", "float32")
HOST = "a host library: the image is copied to host memory and back"
HOST_SPEC = {"keeps_memory_format": False, "host_transfers": HOST}
KORNIA_SPEC = {"keeps_memory_format": False}  # kornia returns new contiguous tensors
IN_RANGE = tuple(c for c in CONTENTS if c != "out_of_range")


def color_recipes(dtype: str, channels: tuple[int, ...] = (3, 1)) -> st.SearchStrategy[Recipe]:
    """Up to 48 pixels a side.  Values in [0, 1] only: every library documents that range for float
    images (out-of-range content is drawn for kornia's augmentations, which document clamping it)."""
    return image_recipes(dtype, channels=channels, max_side=48, contents=IN_RANGE)


def peak(case: Case) -> float:
    return 255.0 if case.recipe.dtype == "uint8" else 1.0


def factor_params(name: str, steps: int = 64, low: int = 0, high: int = 128):
    """`name` = k / steps for k in [low, high] (0..2 by 1/64 by default)."""

    def params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
        return st.integers(low, high).map(lambda k: {name: k / steps})

    return params


def factor_features(name: str):
    """Whether the factor extrapolates (> 1: the clamp is reached) or is the identity."""

    def features(case: Case) -> dict[str, Any]:
        factor = case.params[name]
        return {"extrapolates": factor > 1, "identity": factor == 1}

    return features


def _kornia(function_name: str, convert=lambda value: value):
    def call(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        import kornia

        (factor,) = params.values()
        return getattr(kornia.enhance, function_name)(image, convert(factor))

    call.__qualname__ = f"kornia.enhance.{function_name}"
    return call


def _enhance(class_name: str):
    """Pillow's ImageEnhance.<class_name>(image).enhance(factor)."""

    def enhance(picture: Any, params: dict[str, Any]) -> Any:
        from PIL import ImageEnhance

        (factor,) = params.values()
        return getattr(ImageEnhance, class_name)(picture).enhance(factor)

    enhance.__qualname__ = f"ImageEnhance.{class_name}"
    return pillow_image_op(enhance)


def _pillow(name: str, call) -> Implementation:
    return Implementation(
        library=PILLOW,
        call=call,
        dtypes=("uint8",),
        host_only=HOST,
        description=f"Pillow {name} (8-bit modes L and RGB)",
        spec=HOST_SPEC,
    )


# float32: the blend in float32 (factor exact, weights rounded to float32): a few ulps of outputs <= 1.
FLOAT32_BLEND = Rule(
    Tolerance(
        "float32-blend",
        atol=2e-6,
        rtol=0,
        reason="a float32 multiply-add of values <= 1 with a factor float32 holds exactly and "
        "(contrast, saturation) luma weights rounded to float32: a few ulps at 1 "
        "(6e-8 each); docs/tolerances.md has the measured maximum",
    ),
    dtype="float32",
)
UINT8_EXACT = Rule(
    Tolerance(
        "uint8-exact",
        atol=0,
        reason="products of 8-bit values and factors k/64 are exact in float32, so a correctly "
        "rounded result is round(reference); truncation and other conventions are known "
        "issues, not tolerance",
    ),
    dtype="uint8",
)


# piecewise smooth: the clamp to [0, 1] is a kink the gradient probe finds and leaves out of the cotangent
SMOOTH_BUT_CLAMPED = Gradient()


def _adjustment(
    name: str,
    param: str,
    reference,
    implementations: list[Implementation],
    *,
    params=None,
    channels: tuple[int, ...] = (3, 1),
    tolerances=(FLOAT32_BLEND, UINT8_EXACT),
    blend: bool = True,
    gradient: Gradient | None = SMOOTH_BUT_CLAMPED,
) -> Operation:
    return Operation(
        name=name,
        description=f"{name} ({param})",
        params=params or factor_params(param),
        reference=lambda image, case: reference(image, case.params[param], peak(case)),
        dtypes=DTYPES,
        modes=("default",),
        tolerances=list(tolerances),
        recipes=partial(color_recipes, channels=channels),
        spec={"features": factor_features(param)} if blend else {},
        gradient=gradient,
        implementations=implementations,
    )


def _tv(function, param: str):
    return lambda image, p: function(image, p[param])


def _blends(param: str, v2, v1, kornia_name: str, kornia_other_meaning: str, enhance: str) -> list[Implementation]:
    """torchvision v2 and v1, kornia's blend-formula twin (its plainly named function has another meaning, given
    for the record) and Pillow's ImageEnhance class of one adjustment."""
    return [
        Implementation(library=TV2, call=_tv(v2, param)),
        Implementation(library=TV1, call=_tv(v1, param)),
        Implementation(
            library=KORNIA,
            call=_kornia(kornia_name),
            dtypes=("float32",),
            description=f"kornia.enhance.{kornia_name} ({kornia_other_meaning})",
            spec={**KORNIA_SPEC, "needs": (f"kornia.enhance.{kornia_name}",)},
        ),
        _pillow(f"ImageEnhance.{enhance}", _enhance(enhance)),
    ]


BRIGHTNESS = _adjustment(
    "adjust_brightness",
    "brightness_factor",
    color.brightness,
    [
        *_blends(
            "brightness_factor",
            F_v2.adjust_brightness,
            F_v1.adjust_brightness,
            "adjust_brightness_accumulative",
            "multiplies; adjust_brightness adds",
            "Brightness",
        ),
        # OpenCV documents convertScaleAbs as saturate_cast<uchar>(|src * alpha + beta|): for alpha >= 0 and
        # non-negative pixels, the image multiplied by alpha, rounded and saturated.
        Implementation(
            library=OPENCV,
            dtypes=("uint8",),
            host_only=HOST,
            call=per_host_image(lambda image, p: _cv2().convertScaleAbs(image, alpha=p["brightness_factor"])),
            description="cv2.convertScaleAbs(alpha=factor) (8-bit)",
            spec=HOST_SPEC,
        ),
    ],
)
# torchvision's luma weights are 0.2989, 0.587, 0.114 (they sum to 0.9999), the reference's BT.601 0.299: every
# gradient term that flows through the gray image or its mean is 1e-4 off (the forward's float32-blend tolerance
# allows the same); measured up to 4.0e-4 of the gradient's norm in 30 cases a variant.
LUMA_GRADIENT = Gradient(
    tolerances=[
        Rule(
            Tolerance(
                "gradient-luma-weights",
                atol=1e-3,
                reason="torchvision's luma weights 0.2989/0.587/0.114 "
                "against BT.601's 0.299: 1e-4 in each term through the gray image; measured 4.0e-4",
            ),
            check="gradient",
            dtype="float32",
        )
    ]
)
# Contrast blends with the mean of the gray image, so every element of its gradient holds one sum over the whole
# cotangent; where that sum cancels, float32 summation order moves it by far more than 1e-6 of itself (measured
# 2.6e-4 between an H200 and the cpu, 972 elements, 2026-11-26); a wrong term is of the order of the element.
MEAN_GRADIENT = Gradient(
    tolerances=[
        *LUMA_GRADIENT.tolerances,
        Rule(
            Tolerance(
                "gradient-device-mean",
                atol=1e-3,
                reason="the gradient of a mean is one sum of the cotangent: where it cancels, two devices' summation "
                "orders differ by up to N*eps*sum|c|/|sum c| of it; measured 2.6e-4 on an H200",
            ),
            check="gradient_device",
            dtype="float32",
        ),
    ]
)
CONTRAST = _adjustment(
    "adjust_contrast",
    "contrast_factor",
    color.contrast,
    _blends(
        "contrast_factor",
        F_v2.adjust_contrast,
        F_v1.adjust_contrast,
        "adjust_contrast_with_mean_subtraction",
        "blends with the mean; adjust_contrast multiplies the raw values",
        "Contrast",
    ),
    gradient=MEAN_GRADIENT,
)
SATURATION = _adjustment(
    "adjust_saturation",
    "saturation_factor",
    color.saturation,
    _blends(
        "saturation_factor",
        F_v2.adjust_saturation,
        F_v1.adjust_saturation,
        "adjust_saturation_with_gray_subtraction",
        "blends with the luma; adjust_saturation scales HSV saturation",
        "Color",
    ),
    gradient=LUMA_GRADIENT,
)

# Hue: torchvision takes turns in [-0.5, 0.5], kornia radians in [-pi, pi].  An HSV round trip in
# float32: hue and the sextant fractions carry a few ulps each.
FLOAT32_HSV = Rule(
    Tolerance(
        "float32-hsv",
        atol=1e-5,
        rtol=0,
        reason="RGB -> HSV -> RGB in float32: a division by max - min and the hexcone's "
        "products, a few ulps each on outputs <= 1; docs/tolerances.md has the measured "
        "maximum",
    ),
    dtype="float32",
)
HUE = _adjustment(
    "adjust_hue",
    "hue_factor",
    color.hue,
    [
        # the one hue gradient item: v2 cannot be differentiated at all (known issue), whatever the estimate
        Implementation(library=TV2, call=_tv(F_v2.adjust_hue, "hue_factor"), spec={"gradient": Gradient()}),
        Implementation(library=TV1, call=_tv(F_v1.adjust_hue, "hue_factor")),
        Implementation(
            library=KORNIA,
            call=_kornia("adjust_hue", lambda turns: turns * 2 * math.pi),
            dtypes=("float32",),
            description="kornia.enhance.adjust_hue(factor * 2 pi): radians",
            spec=KORNIA_SPEC,
        ),
    ],
    params=factor_params("hue_factor", steps=256, low=-128, high=128),
    channels=(3,),
    tolerances=(FLOAT32_HSV, UINT8_EXACT),
    blend=False,
    # No gradient items for v1 and kornia yet: the hexcone switches branch wherever two channels tie, which a
    # drawn ramp or an extremes image does at most pixels, and the probe does not yet find every such corner
    # (docs/findings.md, "Gradients").  v2's item only shows that its backward raises.
    gradient=None,
)


# -- RGB -> grayscale ------------------------------------------------------------------------------
def gray_params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.just({"num_output_channels": {"one": 1, "three": 3}[mode]})


def _tv_gray(function):
    return lambda image, p: function(image, **keywords(p, num_output_channels=None))


def _one_channel(function):
    """kornia, Pillow and OpenCV take no channel count: they document one output channel."""

    def call(image: Any, params: dict[str, Any]) -> Any:
        assert params.get("num_output_channels", 1) == 1
        return function(image, params)

    call.__qualname__ = getattr(function, "__qualname__", "one_channel")
    return call


def _cv2():
    import cv2

    return cv2


def _kornia_gray(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    import kornia

    return kornia.color.rgb_to_grayscale(image)


def gray_features(case: Case) -> dict[str, Any]:
    """Whether three channels come out (mode "three" with the keyword given; left out, the default is 1)."""
    params = case.params
    return {
        "three_channels_out": params["num_output_channels"] == 3 and "num_output_channels" not in params.get("omit", ())
    }


ONE = {"num_output_channels": 1}
GRAYSCALE = Operation(
    name="rgb_to_grayscale",
    description="RGB -> luma (ITU-R BT.601), 1 or 3 output channels",
    reference=lambda image, case: color.grayscale(image, case.params["num_output_channels"]),
    params=gray_params,
    optional=("num_output_channels",),
    dtypes=DTYPES,
    modes=("one", "three"),
    recipes=partial(color_recipes, channels=(3,)),
    spec={"features": gray_features},
    tolerances=[
        Rule(
            Tolerance(
                "float32-luma",
                atol=1e-6,
                rtol=0,
                reason="three float32 products and two sums of values <= 1, weights rounded to float32; "
                "docs/tolerances.md has the measured maximum",
            ),
            dtype="float32",
        ),
        UINT8_EXACT,
    ],
    implementations=[
        # torchvision documents the default: "num_output_channels (int): ... Default, 1" (v1 rgb_to_grayscale)
        Implementation(library=TV2, call=_tv_gray(F_v2.rgb_to_grayscale), defaults=ONE),
        Implementation(library=TV1, call=_tv_gray(F_v1.rgb_to_grayscale), defaults=ONE),
        Implementation(
            library=KORNIA,
            call=_one_channel(_kornia_gray),
            modes=("one",),
            defaults=ONE,
            description="kornia.color.rgb_to_grayscale: (*, 1, H, W), uint8 in fixed point",
            spec=KORNIA_SPEC,
        ),
        Implementation(
            library=PILLOW,
            modes=("one",),
            defaults=ONE,
            dtypes=("uint8",),
            host_only=HOST,
            call=_one_channel(pillow_image_op(lambda picture, p: picture.convert("L"))),
            description="Pillow Image.convert('L')",
            spec=HOST_SPEC,
        ),
        Implementation(
            library=OPENCV,
            modes=("one",),
            defaults=ONE,
            host_only=HOST,
            call=_one_channel(per_host_image(lambda image, p: _cv2().cvtColor(image, _cv2().COLOR_RGB2GRAY))),
            description="cv2.cvtColor(COLOR_RGB2GRAY)",
            spec=HOST_SPEC,
        ),
    ],
)

for _operation in (BRIGHTNESS, CONTRAST, SATURATION, HUE, GRAYSCALE):
    globals().update(_operation.tests())
