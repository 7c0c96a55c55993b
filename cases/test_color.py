"""Colour adjustments: brightness, contrast, saturation, hue and RGB -> grayscale, each through every
library that documents the same meaning (torchvision v2 and v1, kornia, Pillow's ImageEnhance and
convert, OpenCV).

Reference: conformance.references.color (float64 blends with black, the mean luma or each pixel's
luma, ITU-R BT.601 weights, the hexcone HSV).  Libraries that give another meaning to the same name
are not implementations here (docs/findings.md, "Colour"): kornia's `adjust_brightness` adds and
`adjust_contrast` multiplies, its `adjust_saturation` scales HSV saturation; their blend-formula
twins (`adjust_brightness_accumulative`, `adjust_contrast_with_mean_subtraction`,
`adjust_saturation_with_gray_subtraction`) are.  Conventions that differ inside the same meaning
(integer truncation, torchvision's 0.2989 red weight, Pillow's rounded mean) are known issues with
their envelopes (cases/known_issues.toml), never a looser tolerance.

Domain: every dtype each library takes (torchvision: uint8, uint16 (v2), float16, bfloat16, float32,
float64; kornia: its float dtypes, as its blend twins check; Pillow: 8-bit modes; OpenCV: what its docs
list), 1 and 3 channels where documented (a gray image's saturation and hue are the image itself; kornia's
hue and gray and OpenCV's gray take RGB only), and torchvision's functionals given PIL images (`pil`
items).  Error modes, just outside each documented range: a negative factor, a hue shift beyond half a
turn, 4 channels where 1 or 3 are documented, num_output_channels other than 1 or 3.  Each library raises
there, documents accepting it (`accepts`, in its words), or returns a result: a finding (known issue).

Factors are multiples of 1/64 (hue shifts of 1/256 turn): float32 holds them and their products
with 8- and 16-bit values exactly, so an integer difference is a library's rounding, never float noise.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
import torch
import torchvision.transforms as T_v1
import torchvision.transforms.functional as F_v1
import torchvision.transforms.v2 as T_v2
import torchvision.transforms.v2.functional as F_v2
from hypothesis import strategies as st

from conformance import (
    KORNIA,
    OPENCV,
    PILLOW,
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
    Rule,
    Tolerance,
    image_recipes,
    keywords,
    materialize,
    module_class,
    peak,
    per_host_image,
    pillow_image_op,
    to_float64,
)
from conformance.references import color
from conformance.spec.case_pieces import (
    HOST_COPY,
    HOST_SPEC,
    IN_RANGE_CONTENTS,
    NO_LAYOUT_PROMISE,
    TORCHVISION_PIL_SPEC,
)

DTYPES = ("uint8", "uint16", "float16", "bfloat16", "float32", "float64")
KORNIA_DTYPES = ("float16", "bfloat16", "float32", "float64")  # its blend twins refuse integer images
TV1_DTYPES = ("uint8", "float16", "bfloat16", "float32", "float64")  # uint16 through v2 (v1 shares its arithmetic)
NEGATIVE, FOUR, GRAY, HUE_OUT = "negative-factor", "four-channels", "gray-input", "hue-out-of-range"
SAME = lambda params: params  # noqa: E731 - an Accepted meaning: the documented formula with the params drawn


def variants(modes: tuple[str, ...]) -> list[tuple[str, str]]:
    """The first mode in every dtype; the others (gray input, error modes: a path, not arithmetic) in uint8 and
    float32, which between them reach every library (Pillow and OpenCV 8-bit, kornia float)."""
    return [(d, modes[0]) for d in DTYPES] + [(d, m) for m in modes[1:] for d in ("uint8", "float32")]


def color_recipes(dtype: str, mode: str, channels=(3, 1), per_mode: dict | None = None) -> st.SearchStrategy[Recipe]:
    """Up to 48 pixels a side, values in [0, peak] (every library documents that range for float images).
    The four-channels error mode draws 4 channels, gray-input one."""
    channels = {FOUR: (4,), GRAY: (1,), **(per_mode or {})}.get(mode, channels)
    return image_recipes(dtype, channels=channels, max_side=48, contents=IN_RANGE_CONTENTS)


def white(case: Case) -> float:
    return peak(case.recipe.dtype)


def factor_params(name: str, steps: int = 64, low: int = 0, high: int = 128):
    """`name` = k / steps for k in [low, high] (0..2 by 1/64 by default); negative-factor: -1/64..-1/4;
    hue-out-of-range: 1/256..1/8 turn beyond half a turn, either way."""

    def params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
        if mode == NEGATIVE:
            return st.integers(1, 16).map(lambda k: {name: -k / 64})
        if mode == HUE_OUT:
            return st.tuples(st.sampled_from((1, -1)), st.integers(129, 160)).map(lambda s: {name: s[0] * s[1] / 256})
        return st.integers(low, high).map(lambda k: {name: k / steps})

    return params


def factor_features(name: str):
    """Whether the factor extrapolates (> 1: the clamp is reached) or is the identity."""
    return lambda case: {"extrapolates": case.params[name] > 1, "identity": case.params[name] == 1}


def hue_features(case: Case) -> dict[str, Any]:
    """Whether some value is white (the dtype's peak): torchvision's uint16 hue turns it into 0 (a known issue)."""
    return {"has_peak": bool((to_float64(materialize(case.recipe)) == white(case)).any())}


def _kornia(function_name: str, convert=lambda value: value):
    def call(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        import kornia

        (factor,) = params.values()
        return getattr(kornia.enhance, function_name)(image, convert(factor))

    call.__qualname__ = f"kornia.enhance.{function_name}"
    return call


def _kornia_module(class_name: str, convert=lambda value: value) -> Counterpart:
    """kornia.enhance's module class of the same adjustment, built with the factor its function is called with."""

    def build(params: dict[str, Any]) -> torch.nn.Module:
        import kornia

        (factor,) = params.values()
        return getattr(kornia.enhance, class_name)(convert(factor))

    return Counterpart(name=f"kornia.enhance.{class_name}", module=ModuleOp(build=build))


def _class_name(function_name: str) -> str:
    """kornia's class of a function: adjust_brightness_accumulative -> AdjustBrightnessAccumulative."""
    return "".join(word.capitalize() for word in function_name.split("_"))


def _enhance(class_name: str):
    """Pillow's ImageEnhance.<class_name>(image).enhance(factor)."""

    def enhance(picture: Any, params: dict[str, Any]) -> Any:
        from PIL import ImageEnhance

        (factor,) = params.values()
        return getattr(ImageEnhance, class_name)(picture).enhance(factor)

    enhance.__qualname__ = f"ImageEnhance.{class_name}"
    return pillow_image_op(enhance)


def _rules(kind: str, bounds: dict[str, tuple[float, str]]) -> list[Rule]:
    """One tolerance per dtype: (atol, reason with the bound and the measured maximum)."""
    return [Rule(Tolerance(f"{d}-{kind}", atol=a, rtol=0, reason=why), dtype=d) for d, (a, why) in bounds.items()]


INTEGER_EXACT = _rules(
    "exact",
    dict.fromkeys(
        ("uint8", "uint16"),
        (0, "products of integer values and factors k/64 are exact in float32, so a correctly rounded result is "
         "round(reference); truncation and other conventions are known issues, not tolerance"),
    ),
)  # fmt: skip
# Half precision: each operation rounds to the dtype (half an ulp below 1: 2.4e-4 float16, 2.0e-3 bfloat16).
# Calibrated with benchmarks/calibrate.py, 300 cases a variant, cpu and vcuda:0 (2026-11-26).
BLEND = [
    *_rules(
        "blend",
        {
            "float32": (2e-6, "a float32 multiply-add of values <= 1 with a factor float32 holds exactly and "
                        "(contrast, saturation) luma weights rounded to float32: a few ulps at 1 (6e-8 each); "
                        "docs/tolerances.md has the measured maximum"),
            "float64": (1e-12, "the same blend in float64: a few ulps of 1 (1.1e-16 each); measured max 4.4e-16"),
            "float16": (2e-3, "x * f, the gray or mean times 1 - f and their sum rounded to float16, the gray or mean "
                        "itself a few roundings more: 4 ulps below 1; measured max 1.1e-3 (saturation)"),
            "bfloat16": (1.6e-2, "as float16 with 8-bit mantissas: 4 ulps below 1; measured max 8.4e-3"),
        },
    ),
    *INTEGER_EXACT,
]  # fmt: skip
# piecewise smooth: the clamp to [0, 1] is a kink the gradient probe finds and leaves out of the cotangent.
# Gradients stay float32 only, as before (item count).
SMOOTH_BUT_CLAMPED = Gradient(dtypes=("float32",))


def _adjustment(name: str, param: str, reference, implementations, *, modes, channels=(3, 1), **fields) -> Operation:
    """One adjustment; params, tolerances, features and gradient in `fields` where they are not the blends'."""
    invalid = {
        NEGATIVE: f"a negative {param} (documented: non-negative)",
        FOUR: "a 4-channel image (torchvision documents [..., 1 or 3, H, W])",
        HUE_OUT: "a hue shift outside [-0.5, 0.5] turn ([-pi, pi] radians)",
    }
    features = fields.get("features", factor_features(param))
    return Operation(
        name=name,
        description=f"{name} ({param})",
        params=fields.get("params", factor_params(param)),
        reference=lambda image, case: reference(image, case.params[param], white(case)),
        dtypes=DTYPES,
        modes=modes,
        variants=variants(modes),
        invalid={mode: why for mode, why in invalid.items() if mode in modes},
        tolerances=list(fields.get("tolerances", BLEND)),
        spec={"mode_recipes": partial(color_recipes, channels=channels), "features": features},
        gradient=fields.get("gradient", SMOOTH_BUT_CLAMPED),
        implementations=implementations,
    )


def _tv(function, param: str):
    return lambda image, p: function(image, p[param])


TV_BLEND_RAISES = {
    NEGATIVE: ExpectedError("a negative factor", ValueError, match="is not non-negative"),
    FOUR: ExpectedError("4 channels", TypeError, match="permitted channel values"),
}
DOCS = {
    "tv-pil-channels": "torchvision/transforms/functional.py:871-873: 'img (PIL Image or Tensor) ... If img is torch "
    "Tensor, it is expected to be in [..., 1 or 3, H, W] format' (the channel rule is for tensors)",
    "pillow-modes": "PIL ImageEnhance takes an image of any mode; RGBA is a standard mode "
    "(https://pillow.readthedocs.io/en/stable/handbook/concepts.html#modes)",
    "pillow-negative": "PIL/ImageEnhance.py _Enhance.enhance: 'There are no restrictions on this value.'; Image.blend "
    "(PIL/Image.py:3761-3766): 'If necessary, the result is clipped to fit into the allowed output range.'",
    "kornia-any-channels": "kornia/enhance/adjust.py: 'image: Image to be adjusted in the shape of (*, H, W)', "
    "example torch.ones(2, 5, 3, 3)",
    "cv2-abs": "cv2.convertScaleAbs: 'dst(I) = saturate_cast<uchar>(|src(I)*alpha + beta|)'",
    "cv2-elements": "cv2.convertScaleAbs: 'On each element of the input array, the function convertScaleAbs "
    "performs three operations sequentially: scaling, taking an absolute value, conversion to an unsigned 8-bit type'",
    "cv2-rgba-gray": "OpenCV imgproc color conversions: 'RGB[A] to Gray: Y <- 0.299 R + 0.587 G + 0.114 B'",
    "pillow-gray": "PIL Image.convert: 'When translating a color image to greyscale (mode \"L\"), the library uses the "
    "ITU-R 601-2 luma transform'",
}  # fmt: skip
# kornia's brightness and contrast twins take any channel count (contrast subtracts "the mean over channels" when
# there are not 3), as the reference does for C != 3
KORNIA_ANY_CHANNELS = {"accepts": {FOUR: Accepted(DOCS["kornia-any-channels"], meaning=SAME)}}


def _blends(param: str, v2, v1, kornia_name: str, kornia_other: str, enhance: str, kornia_four) -> list:
    """torchvision v2 and v1 (tensors; PIL images in the `pil` items), v2 handed a PIL image in the error modes
    (its PIL path checks nothing of its own: a finding), kornia's blend-formula twin (its plainly named function
    has another meaning, given for the record) and Pillow's ImageEnhance class of one adjustment."""
    return [
        Implementation(library=TV2, call=_tv(v2, param), raises=TV_BLEND_RAISES, spec=TORCHVISION_PIL_SPEC),
        Implementation(
            library=TV1, call=_tv(v1, param), dtypes=TV1_DTYPES, raises=TV_BLEND_RAISES, spec=TORCHVISION_PIL_SPEC
        ),
        Implementation(
            library=TV2,
            suffix="tv2_pil",
            call=pillow_image_op(lambda picture, p: v2(picture, p[param])),
            dtypes=("uint8",),
            modes=(),  # error modes only: the valid modes' PIL images are the `pil` items
            accepts={FOUR: Accepted(DOCS["tv-pil-channels"])},  # RGBA: Pillow's blend, alpha kept
            host_only=HOST_COPY,
            description=f"torchvision v2 {v2.__name__} given a PIL image (its PIL path)",
            spec=HOST_SPEC,
        ),
        Implementation(
            library=KORNIA,
            call=_kornia(kornia_name),
            counterpart=_kornia_module(_class_name(kornia_name)),
            dtypes=KORNIA_DTYPES,
            description=f"kornia.enhance.{kornia_name} ({kornia_other})",
            **kornia_four,
            spec={**NO_LAYOUT_PROMISE, "needs": (f"kornia.enhance.{kornia_name}",)},
        ),
        Implementation(
            library=PILLOW,
            call=_enhance(enhance),
            dtypes=("uint8",),
            # RGBA: the alpha is kept (not the reference's blend of it): only the reference-free checks
            accepts={NEGATIVE: Accepted(DOCS["pillow-negative"], meaning=SAME), FOUR: Accepted(DOCS["pillow-modes"])},
            host_only=HOST_COPY,
            description=f"Pillow ImageEnhance.{enhance} (8-bit modes L, RGB and RGBA)",
            spec=HOST_SPEC,
        ),
    ]


BLEND_MODES = ("default", NEGATIVE, FOUR)
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
            KORNIA_ANY_CHANNELS,
        ),
        # OpenCV documents convertScaleAbs as saturate_cast<uchar>(|src * alpha + beta|): for alpha >= 0 and
        # non-negative pixels, the image multiplied by alpha, rounded and saturated; |alpha| for a negative one.
        Implementation(
            library=OPENCV,
            dtypes=("uint8",),
            host_only=HOST_COPY,
            call=per_host_image(lambda image, p: _cv2().convertScaleAbs(image, alpha=p["brightness_factor"])),
            accepts={
                NEGATIVE: Accepted(
                    DOCS["cv2-abs"], meaning=lambda p: {"brightness_factor": abs(p["brightness_factor"])}
                ),
                FOUR: Accepted(DOCS["cv2-elements"], meaning=SAME),
            },
            description="cv2.convertScaleAbs(alpha=factor) (8-bit)",
            spec=HOST_SPEC,
        ),
    ],
    modes=BLEND_MODES,
)
# torchvision's luma weights are 0.2989, 0.587, 0.114 (they sum to 0.9999), the reference's BT.601 0.299: every
# gradient term that flows through the gray image or its mean is 1e-4 off (the forward's float32-blend tolerance
# allows the same); measured up to 4.0e-4 of the gradient's norm in 30 cases a variant.
LUMA_WEIGHTS = Tolerance(
    "gradient-luma-weights",
    atol=1e-3,
    reason="torchvision's luma weights 0.2989/0.587/0.114 against BT.601's 0.299: 1e-4 in each term through the gray "
    "image; measured 4.0e-4",
)
LUMA_GRADIENT = Gradient(dtypes=("float32",), tolerances=[Rule(LUMA_WEIGHTS, check="gradient", dtype="float32")])
# Contrast blends with the mean of the gray image, so every element of its gradient holds one sum over the whole
# cotangent; where that sum cancels, float32 summation order moves it by far more than 1e-6 of itself (measured
# 2.6e-4 between an H200 and the cpu, 972 elements, 2026-11-26); a wrong term is of the order of the element.
DEVICE_MEAN = Tolerance(
    "gradient-device-mean",
    atol=1e-3,
    reason="the gradient of a mean is one sum of the cotangent: where it cancels, two devices' summation orders differ "
    "by up to N*eps*sum|c|/|sum c| of it; measured 2.6e-4 on an H200",
)
MEAN_GRADIENT = Gradient(
    dtypes=("float32",),
    tolerances=[*LUMA_GRADIENT.tolerances, Rule(DEVICE_MEAN, check="gradient_device", dtype="float32")],
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
        KORNIA_ANY_CHANNELS,
    ),
    modes=BLEND_MODES,
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
        # "The image is expected to be an RGB image or a gray image" (ImageError, a ValueError, otherwise)
        {"raises": {FOUR: ExpectedError("4 channels", ValueError, match="Not a color or gray tensor")}},
    ),
    modes=BLEND_MODES,
    gradient=LUMA_GRADIENT,
)

# Hue: torchvision takes turns in [-0.5, 0.5], kornia radians in [-pi, pi].  torchvision computes the HSV round
# trip in float32 whatever the dtype and rounds once (float64: a known issue); kornia in the image's dtype (its
# half-precision hue in radians is a known issue).
HSV = [
    *_rules(
        "hsv",
        {
            "float32": (1e-5, "RGB -> HSV -> RGB in float32: a division by max - min and the hexcone's products, a "
                        "few ulps each on outputs <= 1; docs/tolerances.md has the measured maximum"),
            "float64": (1e-12, "the round trip in float64: a few ulps of 1; torchvision's float32 and kornia's eps "
                        "are known issues (every drawn case is one of theirs)"),
            "float16": (5e-4, "torchvision's float32 round trip rounded once: half an ulp below 1 plus float32's "
                        "1e-5; measured max 2.4e-4"),
            "bfloat16": (4e-3, "torchvision's float32 round trip rounded once: half an ulp below 1 plus float32's "
                         "1e-5; measured max 2.0e-3"),
        },
    ),
    *INTEGER_EXACT,
]  # fmt: skip
TV_HUE_RAISES = {
    HUE_OUT: ExpectedError("a shift beyond half a turn", ValueError, match=r"is not in \[-0.5, 0.5\]"),
    FOUR: ExpectedError("4 channels", TypeError, match="permitted channel values"),
}
THREE_ONLY = ExpectedError("4 channels", ValueError, match=r"shape of \(\*, 3, H, W\)")
HUE = _adjustment(
    "adjust_hue",
    "hue_factor",
    color.hue,
    [
        # the one hue gradient item (RGB): v2 cannot be differentiated at all (known issue), whatever the estimate
        Implementation(
            library=TV2,
            call=_tv(F_v2.adjust_hue, "hue_factor"),
            raises=TV_HUE_RAISES,
            spec={"gradient": Gradient(dtypes=("float32",), modes=("default",)), **TORCHVISION_PIL_SPEC},
        ),
        Implementation(
            library=TV1,
            call=_tv(F_v1.adjust_hue, "hue_factor"),
            dtypes=TV1_DTYPES,
            raises=TV_HUE_RAISES,
            spec=TORCHVISION_PIL_SPEC,
        ),
        # kornia documents (*, 3, H, W) only (no gray input) and "factor: ... Should be in [-PI, PI]": it wraps a
        # larger shift, a finding
        Implementation(
            library=KORNIA,
            call=_kornia("adjust_hue", lambda turns: turns * 2 * math.pi),
            counterpart=_kornia_module("AdjustHue", lambda turns: turns * 2 * math.pi),
            dtypes=KORNIA_DTYPES,
            modes=("default",),
            raises={FOUR: THREE_ONLY},
            description="kornia.enhance.adjust_hue(factor * 2 pi): radians",
            spec=NO_LAYOUT_PROMISE,
        ),
    ],
    modes=("default", GRAY, HUE_OUT, FOUR),
    params=factor_params("hue_factor", steps=256, low=-128, high=128),
    channels=(3,),
    tolerances=HSV,
    features=hue_features,
    # No gradient items for v1 and kornia yet: the hexcone switches branch wherever two channels tie, which a
    # drawn ramp or an extremes image does at most pixels, and the probe does not yet find every such corner
    # (docs/findings.md, "Gradients").  v2's item only shows that its backward raises.
    gradient=None,
)


# -- RGB -> grayscale ------------------------------------------------------------------------------
# "one": RGB in, every library; "three": RGB or gray in, three channels out (torchvision); "gray-input": a gray
# image in, one out (torchvision: "Grayscale ... [..., 3 or 1, H, W]"; kornia and OpenCV document RGB only).
GRAY_CHANNELS = {"one": (1,), "three": (3,), GRAY: (1,), "num-output-channels": (0, 2, 4), FOUR: (1,)}


def gray_params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.sampled_from(GRAY_CHANNELS[mode]).map(lambda n: {"num_output_channels": n})


def gray_reference(image: np.ndarray, case: Case) -> np.ndarray:
    """BT.601 luma, `num_output_channels` times.  conformance.references.color.grayscale reads RGB (the first three
    channels, as OpenCV's and Pillow's RGBA -> gray do): a one-channel image is already gray, its luma the image
    itself, so it is repeated as it is."""
    channels = case.params["num_output_channels"]
    return np.repeat(image, channels, axis=-3) if image.shape[-3] == 1 else color.grayscale(image, channels)


def _tv_gray(function):
    return lambda image, p: function(image, **keywords(p, num_output_channels=None))


def _tv_gray_module(transforms) -> Counterpart:
    """torchvision's Grayscale class (v2 or v1), built with the channel count the function gets (or none)."""
    return module_class(f"{transforms.__name__}.Grayscale", lambda p: keywords(p, num_output_channels=None))


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


def _kornia_gray_module(params: dict[str, Any]) -> torch.nn.Module:
    import kornia

    return kornia.color.RgbToGrayscale()


def gray_features(case: Case) -> dict[str, Any]:
    """Whether three channels come out (num_output_channels 3 given; left out, the default is 1)."""
    params = case.params
    return {
        "three_channels_out": params["num_output_channels"] == 3 and "num_output_channels" not in params.get("omit", ())
    }


ONE = {"num_output_channels": 1}
NO_CHANNEL_COUNT = {"num-output-channels": "it takes no num_output_channels (one channel out)"}
LUMA = _rules(
    "luma",
    {
        "float32": (1e-6, "three float32 products and two sums of values <= 1, weights rounded to float32; "
                    "docs/tolerances.md has the measured maximum"),
        "float64": (1e-12, "the same in float64 (torchvision's 0.2989 weight is a known issue); measured max 2.2e-16"),
        "float16": (1.5e-3, "three products and two sums rounded to float16: 5 half-ulps below 1 (1.2e-3); "
                    "torchvision's 0.2989 red weight (1e-4 low) is under this resolution; measured max 9.8e-4"),
        "bfloat16": (1.2e-2, "three products and two sums rounded to bfloat16: 5 half-ulps below 1 (9.8e-3); "
                     "measured max 7.0e-3"),
    },
)  # fmt: skip
GRAY_MODES = ("one", "three", GRAY, "num-output-channels", FOUR)
GRAYSCALE = Operation(
    name="rgb_to_grayscale",
    description="RGB -> luma (ITU-R BT.601), 1 or 3 output channels",
    reference=gray_reference,
    params=gray_params,
    # an invalid channel count is always passed (left out, the default 1 would make the call valid)
    optional=lambda mode: () if mode == "num-output-channels" else ("num_output_channels",),
    dtypes=DTYPES,
    modes=GRAY_MODES,
    variants=variants(GRAY_MODES),
    invalid={"num-output-channels": "num_output_channels other than 1 or 3", FOUR: "a 4-channel (RGBA) image"},
    spec={"features": gray_features, "mode_recipes": partial(color_recipes, channels=(3,), per_mode={"three": (3, 1)})},
    tolerances=[*LUMA, *INTEGER_EXACT],
    implementations=[
        # torchvision documents the default: "num_output_channels (int): ... Default, 1" (v1 rgb_to_grayscale).
        # v2 has no channel check ("TODO: Maybe move the validation ..."): 4 channels fail unpacking r, g, b
        Implementation(
            library=TV2,
            call=_tv_gray(F_v2.rgb_to_grayscale),
            counterpart=_tv_gray_module(T_v2),
            defaults=ONE,
            raises={
                "num-output-channels": ExpectedError("n", ValueError, match="must be 1 or 3"),
                FOUR: ExpectedError("4 channels", ValueError, match="too many values to unpack"),
            },
            spec=TORCHVISION_PIL_SPEC,
        ),
        Implementation(
            library=TV1,
            call=_tv_gray(F_v1.rgb_to_grayscale),
            counterpart=_tv_gray_module(T_v1),
            dtypes=TV1_DTYPES,
            defaults=ONE,
            raises={
                "num-output-channels": ExpectedError("n", ValueError, match="should be either 1 or 3"),
                FOUR: ExpectedError("4 channels", TypeError, match="permitted channel values"),
            },
            spec=TORCHVISION_PIL_SPEC,
        ),
        Implementation(
            library=KORNIA,
            call=_one_channel(_kornia_gray),
            counterpart=Counterpart(name="kornia.color.RgbToGrayscale", module=ModuleOp(build=_kornia_gray_module)),
            dtypes=("uint8", *KORNIA_DTYPES),
            modes=("one",),
            defaults=ONE,
            raises={FOUR: THREE_ONLY},
            not_applicable=NO_CHANNEL_COUNT,
            description="kornia.color.rgb_to_grayscale: (*, 1, H, W), uint8 in fixed point",
            spec=NO_LAYOUT_PROMISE,
        ),
        # Pillow and OpenCV document RGBA -> gray ignoring alpha, as the reference reads the first three channels
        Implementation(
            library=PILLOW,
            modes=("one",),
            defaults=ONE,
            dtypes=("uint8",),
            host_only=HOST_COPY,
            accepts={FOUR: Accepted(DOCS["pillow-gray"], meaning=SAME)},
            not_applicable=NO_CHANNEL_COUNT,
            call=_one_channel(pillow_image_op(lambda picture, p: picture.convert("L"))),
            description="Pillow Image.convert('L')",
            spec=HOST_SPEC,
        ),
        # "src: input image: 8-bit unsigned, 16-bit unsigned ( CV_16UC... ), or single-precision floating-point"
        Implementation(
            library=OPENCV,
            modes=("one",),
            dtypes=("uint8", "uint16", "float32"),
            defaults=ONE,
            host_only=HOST_COPY,
            accepts={FOUR: Accepted(DOCS["cv2-rgba-gray"], meaning=SAME)},
            not_applicable=NO_CHANNEL_COUNT,
            call=_one_channel(per_host_image(lambda image, p: _cv2().cvtColor(image, _cv2().COLOR_RGB2GRAY))),
            description="cv2.cvtColor(COLOR_RGB2GRAY)",
            spec=HOST_SPEC,
        ),
    ],
)

for _operation in (BRIGHTNESS, CONTRAST, SATURATION, HUE, GRAYSCALE):
    globals().update(_operation.tests())
