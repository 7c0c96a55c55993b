"""Colour conversions and kornia's colour augmentations.

- rgb_to_hsv and hsv_to_rgb in canonical units (hue in turns [0, 1), S and V in [0, 1]), mapped from
  each library's own: kornia's radians, OpenCV's degrees (float images), Pillow's 0..255 for all three
  channels of its 8-bit "HSV" mode.  Reference: the hexcone model (conformance.references.color).
  OpenCV's 8-bit hue (2-degree steps, 0..179) is left out: it rounds 359.5 degrees and up to 0, and a
  hue compared as a number, not an angle, reads that as a whole turn (a circular comparison is a
  framework change); its float path is checked.
- kornia ColorJitter (torchvision's blend formulas, a random order and per-image factors), ColorJiggle
  (kornia's own: additive brightness, multiplicative contrast, HSV saturation) and RandomGrayscale
  (p=1): parameters sampled once per case on the cpu (`forward_parameters`) and replayed on every
  target; the reference applies the sampled factors image by image in the sampled order.

Domain: kornia's float dtypes (float16, bfloat16, float32, float64: its augmentations reject integer images),
OpenCV's float32 and Pillow's 8-bit HSV.  Error modes of the augmentations: p outside [0, 1] (kornia does not
check it: a finding) and negative jitter magnitudes (refused when the module is built).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from conformance import (
    KORNIA,
    OPENCV,
    PILLOW,
    Case,
    Counterpart,
    ExpectedError,
    Implementation,
    ModuleOp,
    Operation,
    OpSpec,
    Recipe,
    Returns,
    Rule,
    Tolerance,
    image_recipes,
    kornia_parameters,
    materialize,
    peak,
    per_host_image,
    to_float64,
)
from conformance.references import color
from conformance.spec.case_pieces import HOST_COPY, HOST_SPEC, IN_RANGE_CONTENTS

KORNIA_DTYPES = ("float16", "bfloat16", "float32", "float64")  # "Expected input of [torch.bfloat16, ...]"
TURN = 2 * math.pi


def hsv_recipes(dtype: str) -> st.SearchStrategy[Recipe]:
    """Three channels (RGB or HSV), up to 48 pixels a side, values in the documented [0, 1]."""
    return image_recipes(dtype, channels=(3,), max_side=48, contents=IN_RANGE_CONTENTS)


def no_params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.just({})


def _cv2():
    import cv2

    return cv2


def _hue_in_turns(hsv: torch.Tensor) -> torch.Tensor:
    return torch.cat([hsv[..., :1, :, :] / TURN, hsv[..., 1:, :, :]], dim=-3)


def _hue_in_radians(hsv: torch.Tensor) -> torch.Tensor:
    return torch.cat([hsv[..., :1, :, :] * TURN, hsv[..., 1:, :, :]], dim=-3)


def _kornia_rgb_to_hsv(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    import kornia

    return _hue_in_turns(kornia.color.rgb_to_hsv(image))  # radians -> turns


def _kornia_class(class_name: str, before, after) -> Counterpart:
    """kornia.color's module class of the same conversion, called between the same unit mappings as its function."""

    def build(params: dict[str, Any]) -> torch.nn.Module:
        import kornia

        return getattr(kornia.color, class_name)()

    def forward(module: torch.nn.Module, image: torch.Tensor, params: dict[str, Any], sampled: Any) -> torch.Tensor:
        return after(module(before(image)))

    return Counterpart(name=f"kornia.color.{class_name}", module=ModuleOp(build=build, forward=forward))


def _opencv_rgb_to_hsv(image: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    hsv = _cv2().cvtColor(image, _cv2().COLOR_RGB2HSV)  # float: H in degrees [0, 360), S and V in [0, 1]
    hsv[..., 0] /= 360.0
    return hsv


def _pillow_rgb_to_hsv(image: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.fromarray(image).convert("HSV"), dtype=np.float32) / 255.0  # 0..255 each


def hsv_features(case: Case) -> dict[str, Any]:
    """`dim`: some pixel has a value (max) or a spread (max - min) in (0, 1/64): there a divisor guard such
    as OpenCV's (max + FLT_EPSILON, spread + FLT_EPSILON) moves S and H by more than 64 x 1.2e-7.
    `hue_near_turn`: some pixel's hue is within 1/128 turn below a whole turn, where a half-precision hue may
    round up to it and be folded to 0: the same angle, a whole turn apart as a number."""
    rgb = to_float64(materialize(case.recipe)) / peak(case.recipe.dtype)  # the input's values, in its dtype
    high, spread = rgb.max(axis=-3), np.ptp(rgb, axis=-3)
    return {
        "dim": bool(((high > 0) & (high < 1 / 64)).any() or ((spread > 0) & (spread < 1 / 64)).any()),
        "hue_near_turn": bool((color.rgb_to_hsv(rgb)[..., 0, :, :] > 1 - 2**-7).any()),
    }


# canonical units: float (uint8 -> float32; kornia keeps its float dtype)
UNIT_OUTPUT = {
    "returns": Returns(dtype=lambda case: "float32" if case.recipe.dtype == "uint8" else case.recipe.dtype),
    "features": hsv_features,
}


def _hsv_rules(kind: str, bounds: dict[str, tuple[float, str]]) -> list[Rule]:
    """kornia's other float dtypes: one tolerance each (atol, reason with the bound and the measured maximum)."""
    return [Rule(Tolerance(f"{d}-{kind}", atol=a, rtol=0, reason=why), dtype=d) for d, (a, why) in bounds.items()]


HALF = "every operation rounded to the image's dtype: "
RGB_TO_HSV = Operation(
    name="rgb_to_hsv",
    description="RGB -> HSV (hexcone), hue in turns [0, 1)",
    reference=lambda image, case: color.rgb_to_hsv(image / (255.0 if case.recipe.dtype == "uint8" else 1.0)),
    params=no_params,
    dtypes=("uint8", *KORNIA_DTYPES),
    modes=("default",),
    recipes=hsv_recipes,
    spec=UNIT_OUTPUT,
    tolerances=[
        *_hsv_rules(
            "hsv",
            {
                "float64": (
                    1e-12,
                    "max, min, a subtraction and a division in float64, then radians / 2 pi: a few "
                    "ulps; kornia's eps in the divisor is a known issue (every case but a gray one is in it)",
                ),
                "float16": (
                    2e-3,
                    HALF + "a subtraction, a division, the sextant offset, x pi / 3 and / 2 pi: 4 ulps "
                    "below 1 (a hue near a whole turn folded to 0 is a known issue); measured max 1.25e-3",
                ),
                "bfloat16": (1.6e-2, HALF + "as float16 with 8-bit mantissas: 4 ulps below 1; measured max 9.9e-3"),
            },
        ),
        Rule(
            Tolerance(
                "float32-hsv",
                atol=1e-6,
                rtol=0,
                reason="max, min, one subtraction and one division in float32, then the unit mapping "
                "(kornia: radians / 2 pi, OpenCV: degrees / 360): a few ulps of values < 1; "
                "docs/tolerances.md has the measured maximum",
            ),
            dtype="float32",
        ),
        Rule(
            Tolerance(
                "8-bit-steps",
                atol=0.5 / 255 + 1e-6,
                rtol=0,
                reason="an 8-bit output holds steps of 1/255: a correctly rounded one is within half a "
                "step (Pillow's truncation is a known issue)",
            ),
            dtype="uint8",
        ),
    ],
    implementations=[
        Implementation(
            library=KORNIA,
            call=_kornia_rgb_to_hsv,
            counterpart=_kornia_class("RgbToHsv", lambda image: image, _hue_in_turns),
            dtypes=KORNIA_DTYPES,
            description="kornia.color.rgb_to_hsv, hue / 2 pi",
            spec={"keeps_memory_format": False, "needs": ("kornia.color.rgb_to_hsv",)},
        ),
        Implementation(
            library=OPENCV,
            call=per_host_image(_opencv_rgb_to_hsv),
            dtypes=("float32",),
            host_only=HOST_COPY,
            description="cv2.cvtColor(COLOR_RGB2HSV) (float), hue / 360",
            spec=HOST_SPEC,
        ),
        Implementation(
            library=PILLOW,
            call=per_host_image(_pillow_rgb_to_hsv),
            dtypes=("uint8",),
            host_only=HOST_COPY,
            description="Pillow Image.convert('HSV'), 0..255 / 255",
            spec=HOST_SPEC,
        ),
    ],
)


def _kornia_hsv_to_rgb(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    import kornia

    return kornia.color.hsv_to_rgb(_hue_in_radians(image))


def _opencv_hsv_to_rgb(image: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    degrees = image.copy()
    degrees[..., 0] *= 360.0
    return _cv2().cvtColor(degrees, _cv2().COLOR_HSV2RGB)


def _pillow_hsv_to_rgb(image: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    """The 8-bit input is Pillow's HSV as it is: hue H / 255 turns, S / 255, V / 255."""
    from PIL import Image

    height, width = image.shape[:2]
    return np.asarray(Image.frombytes("HSV", (width, height), image.tobytes()).convert("RGB"))


HSV_TO_RGB = Operation(
    name="hsv_to_rgb",
    description="HSV (hue in turns) -> RGB (hexcone)",
    reference=lambda image, case: (
        255.0 * color.hsv_to_rgb(image / 255.0) if case.recipe.dtype == "uint8" else color.hsv_to_rgb(image)
    ),
    params=no_params,
    dtypes=("uint8", *KORNIA_DTYPES),
    modes=("default",),
    recipes=hsv_recipes,
    tolerances=[
        *_hsv_rules(
            "hexcone",
            {
                "float64": (
                    1e-12,
                    "hue x 6, floor and up to two products in float64: a few ulps; measured max 8.9e-16",
                ),
                "float16": (
                    2e-3,
                    HALF + "the sextant fraction and up to two products: 4 ulps below 1; the hue in "
                    "radians (x 2 pi in the dtype) is a known issue beyond it; measured max 2.0e-3",
                ),
                "bfloat16": (
                    1.6e-2,
                    HALF
                    + "as float16 with 8-bit mantissas: 4 ulps below 1; measured max 1.56e-2 (beyond: the radians)",
                ),
            },
        ),
        Rule(
            Tolerance(
                "float32-hexcone",
                atol=2e-6,
                rtol=0,
                reason="hue to sextant and fraction (hue x 6, floor) and up to two products in float32, "
                "after the unit mapping (x 2 pi, x 360); docs/tolerances.md has the measured maximum",
            ),
            dtype="float32",
        ),
        Rule(
            Tolerance(
                "uint8-exact",
                atol=0,
                reason="V is copied and p, q, t rounded; their exact values are never halfway "
                "(odd multiples of 1/2 cannot be v (255 - s) / 255 or its like)",
            ),
            dtype="uint8",
        ),
    ],
    implementations=[
        Implementation(
            library=KORNIA,
            call=_kornia_hsv_to_rgb,
            counterpart=_kornia_class("HsvToRgb", _hue_in_radians, lambda image: image),
            dtypes=KORNIA_DTYPES,
            description="kornia.color.hsv_to_rgb, hue x 2 pi",
            spec={"keeps_memory_format": False, "needs": ("kornia.color.hsv_to_rgb",)},
        ),
        Implementation(
            library=OPENCV,
            call=per_host_image(_opencv_hsv_to_rgb),
            dtypes=("float32",),
            host_only=HOST_COPY,
            description="cv2.cvtColor(COLOR_HSV2RGB) (float), hue x 360",
            spec=HOST_SPEC,
        ),
        # OpenCV's 8-bit hue unit (1/180 or, _FULL, 1/256 turn) cannot hold the 8-bit input's 1/255 steps.
        Implementation(
            library=PILLOW,
            call=per_host_image(_pillow_hsv_to_rgb),
            dtypes=("uint8",),
            host_only=HOST_COPY,
            description="Pillow 'HSV' image .convert('RGB')",
            spec=HOST_SPEC,
        ),
    ],
)

globals().update(RGB_TO_HSV.tests())
globals().update(HSV_TO_RGB.tests())


# -- kornia's random colour augmentations, with replayed parameters --------------------------------
JITTER_KEYS = ("brightness", "contrast", "saturation", "hue")
JITTER_DEFAULTS = {"brightness": 0.0, "contrast": 0.0, "saturation": 0.0, "hue": 0.0}  # kornia's docs: 0. each


P_OUT, NEGATIVE = "p-out-of-range", "negative-magnitude"


def p_params(mode: str) -> st.SearchStrategy[dict[str, Any]]:
    """p-out-of-range: p just outside [0, 1] (-1/64..-1/4 or 1 + 1/64..1 + 1/4); else no keyword (p=1)."""
    if mode != P_OUT:
        return st.just({})
    return st.tuples(st.sampled_from((-1, 1)), st.integers(1, 16)).map(
        lambda sk: {"p": (sk[0] > 0) + sk[0] * sk[1] / 64}
    )


@st.composite
def jitter_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """Magnitudes (2 decimals) around the identity; any of them may be left out (kornia's default 0 then
    leaves that step out).  ColorJiggle bounds brightness to [0, 2], so its magnitude is at most 1.
    negative-magnitude: one of them -0.01..-0.5 ("it must be non negative")."""
    found = draw(p_params(mode))
    negative = draw(st.sampled_from(JITTER_KEYS), label="negative") if mode == NEGATIVE else None
    for key in JITTER_KEYS:
        if key == negative:
            found[key] = -draw(st.integers(1, 50), label=key) / 100
            continue
        if draw(st.booleans(), label=f"leave_out_{key}"):
            continue
        high = 50 if key == "hue" else 99
        found[key] = draw(st.integers(0, high), label=key) / 100
    return found


def _jitter_settings(params: dict[str, Any]) -> dict[str, float]:
    return {key: params.get(key, JITTER_DEFAULTS[key]) for key in JITTER_KEYS}


def jitter_bounds(params: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """A magnitude m draws from [max(0, 1 - m), 1 + m] (hue: [-m, m]); bounds rounded to float32 as sampled."""
    s = _jitter_settings(params)
    f32 = lambda value: float(np.float32(value))  # noqa: E731
    found = {f"{key}_factor": (f32(max(0.0, 1 - s[key])), f32(1 + s[key])) for key in JITTER_KEYS[:3]}
    return found | {"hue_factor": (f32(-s["hue"]), f32(s["hue"])), "order": (0.0, 3.0)}


def _factors(sampled: dict[str, torch.Tensor], key: str) -> np.ndarray:
    return sampled[f"{key}_factor"].double().numpy()


def jitter_reference(steps, image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor]) -> np.ndarray:
    """Clamp to [0, 1], then each step in the sampled order with each image's factor, then clamp."""
    out = np.clip(image, 0.0, 1.0)
    for index in sampled["order"].tolist():
        out = steps[index](out, _factors(sampled, JITTER_KEYS[index]))
    return np.clip(out, 0.0, 1.0)


JITTER_STEPS = (  # torchvision's formulas
    lambda x, f: color.brightness(x, color.per_image(f)),
    lambda x, f: color.contrast(x, color.per_image(f)),
    lambda x, f: color.saturation(x, color.per_image(f)),
    lambda x, f: color.hue(x, f),
)
JIGGLE_STEPS = (  # kornia's own
    lambda x, f: color.brightness_additive(x, color.per_image(f)),
    lambda x, f: color.contrast_multiplicative(x, color.per_image(f)),
    lambda x, f: color.saturation_hsv(x, f),
    lambda x, f: color.hue(x, f),
)


def _module(name: str):
    def build(params: dict[str, Any]) -> torch.nn.Module:
        import kornia

        magnitudes = {k: params[k] for k in JITTER_KEYS if k in params}
        return getattr(kornia.augmentation, name)(**magnitudes, p=params.get("p", 1.0))

    return build


def augmentation_recipes(dtype: str, channels: tuple[int, ...] = (3,)) -> st.SearchStrategy[Recipe]:
    """kornia takes (B, C, H, W); out-of-range content exercises the documented input clamp."""
    return image_recipes(dtype, channels=channels, min_batch_dims=1, max_batch_dims=1, max_side=48)


JITTER_TOLERANCE = [
    Rule(
        Tolerance(
            "float32-steps",
            atol=2e-5,
            rtol=0,
            reason="up to four float32 steps (a blend, a mean, an HSV round trip), each "
            "factor up to 1.99 amplifying the earlier steps' rounding; "
            "docs/tolerances.md has the measured maximum",
        ),
        dtype="float32",
    ),
    *_hsv_rules(
        "steps",
        {
            "float64": (
                1e-12,
                "the four steps in float64: a few ulps amplified by factors below 2 (the float32 hue "
                "shift and kornia's eps are a known issue)",
            ),
            "float16": (
                1.6e-2,
                HALF + "up to four steps, each a few ulps (the hue step's radians up to 16: "
                "kornia-hsv-half-precision-radians) amplified by the later factors (< 2 each): 32 ulps below "
                "1; measured max 7.6e-3",
            ),
            "bfloat16": (1.3e-1, HALF + "as float16 with 8-bit mantissas: 32 ulps below 1; measured max 6.8e-2"),
        },
    ),
]
# p outside [0, 1]: kornia stores p and compares torch.rand(B) < p, never checking it (a finding: known issue);
# a negative magnitude is refused when the module is built ("If brightness is a single number, it must be non
# negative"), by the random generator's __post_init__
MODULE_ERRORS = {
    P_OUT: ExpectedError("p outside [0, 1] (a probability)", Exception),
    NEGATIVE: ExpectedError("a negative jitter magnitude", ValueError, match="must be non negative"),
}
MODULE_VARIANTS = [(d, "default") for d in KORNIA_DTYPES] + [("float32", P_OUT), ("float32", NEGATIVE)]


def _jitter_spec(name: str, steps) -> OpSpec:
    return OpSpec(
        name=f"{name.lower()}_kornia",
        description=f"kornia.augmentation.{name}(p=1) with replayed parameters",
        module=ModuleOp(build=_module(name), sample=kornia_parameters, bounds=jitter_bounds, unmoved="works"),
        reference=partial(jitter_reference, steps),
        dtypes=KORNIA_DTYPES,
        modes=("default", P_OUT, NEGATIVE),
        variants=MODULE_VARIANTS,
        error_modes=MODULE_ERRORS,
        params=jitter_params,
        recipes=augmentation_recipes,
        tolerances=JITTER_TOLERANCE,
        keeps_memory_format=False,
        needs=(f"kornia.augmentation.{name}",),
    )


COLOR_JITTER = _jitter_spec("ColorJitter", JITTER_STEPS)
COLOR_JIGGLE = _jitter_spec("ColorJiggle", JIGGLE_STEPS)
test_colorjitter_kornia = COLOR_JITTER.test()
test_colorjiggle_kornia = COLOR_JIGGLE.test()


def grayscale_reference(image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor]) -> np.ndarray:
    """Images whose sampled batch_prob is set become their luma (BT.601 for 3 channels, the plain
    channel mean otherwise, as kornia documents for multispectral input) on every channel; no clamp."""
    channels = image.shape[-3]
    gray = color.luma(image) if channels == 3 else image.mean(axis=-3, keepdims=True)
    chosen = sampled["batch_prob"].double().numpy().reshape(-1, 1, 1, 1) > 0.5
    return np.where(chosen, np.repeat(gray, channels, axis=-3), image)


RANDOM_GRAYSCALE = OpSpec(
    name="random_grayscale_kornia",
    description="kornia.augmentation.RandomGrayscale(p=1) with replayed parameters",
    module=ModuleOp(
        build=lambda params: _kornia_augmentation("RandomGrayscale")(p=params.get("p", 1.0)),
        sample=kornia_parameters,
        bounds=lambda params: {"batch_prob": (1.0, 1.0)},
        unmoved="works",
    ),
    reference=grayscale_reference,
    dtypes=KORNIA_DTYPES,
    modes=("default", P_OUT),
    variants=MODULE_VARIANTS[:-1],
    error_modes={P_OUT: MODULE_ERRORS[P_OUT]},
    params=lambda recipe, mode: p_params(mode),
    recipes=partial(augmentation_recipes, channels=(3, 1, 4)),
    keeps_memory_format=False,
    tolerances=[
        Rule(
            Tolerance(
                "float32-luma",
                atol=1e-6,
                rtol=1e-6,
                reason="three float32 products and two sums (values up to 1.5 for out-of-range "
                "content); docs/tolerances.md has the measured maximum",
            ),
            dtype="float32",
        ),
        *_hsv_rules(
            "luma",
            {
                "float64": (1e-12, "three products and two sums in float64; measured max 4.4e-16"),
                "float16": (
                    3e-3,
                    HALF + "three products and two sums: 5 half-ulps up to 1.5 (out-of-range content), "
                    "2.4e-3; measured max 8.9e-4",
                ),
                "bfloat16": (
                    2.4e-2,
                    HALF + "as float16 with 8-bit mantissas: 5 half-ulps up to 1.5, 2e-2; measured max 9.8e-3",
                ),
            },
        ),
    ],
    needs=("kornia.augmentation.RandomGrayscale",),
)
test_random_grayscale_kornia = RANDOM_GRAYSCALE.test()


def _kornia_augmentation(name: str):
    import kornia

    return getattr(kornia.augmentation, name)
