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
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from conformance import (
    CONTENTS,
    KORNIA,
    OPENCV,
    PILLOW,
    Case,
    Implementation,
    ModuleOp,
    Operation,
    OpSpec,
    Recipe,
    Rule,
    Tolerance,
    image_recipes,
    kornia_parameters,
    per_host_image,
)
from conformance.references import color
from conformance.spec.recipes import synthesize_unit

HOST = "a host library: the image is copied to host memory and back"
HOST_SPEC = {"keeps_memory_format": False, "host_transfers": HOST}
IN_RANGE = tuple(c for c in CONTENTS if c != "out_of_range")
TURN = 2 * math.pi


def hsv_recipes(dtype: str) -> st.SearchStrategy[Recipe]:
    """Three channels (RGB or HSV), up to 48 pixels a side, values in the documented [0, 1]."""
    return image_recipes(dtype, channels=(3,), max_side=48, contents=IN_RANGE)


def no_params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.just({})


def _cv2():
    import cv2

    return cv2


def _kornia_rgb_to_hsv(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    import kornia

    hsv = kornia.color.rgb_to_hsv(image)
    return torch.cat([hsv[..., :1, :, :] / TURN, hsv[..., 1:, :, :]], dim=-3)  # radians -> turns


def _opencv_rgb_to_hsv(image: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    hsv = _cv2().cvtColor(image, _cv2().COLOR_RGB2HSV)  # float: H in degrees [0, 360), S and V in [0, 1]
    hsv[..., 0] /= 360.0
    return hsv


def _pillow_rgb_to_hsv(image: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.fromarray(image).convert("HSV"), dtype=np.float32) / 255.0  # 0..255 each


def hsv_features(case: Case) -> dict[str, Any]:
    """`dim`: some pixel has a value (max) or a spread (max - min) in (0, 1/64): there a divisor guard such
    as OpenCV's (max + FLT_EPSILON, spread + FLT_EPSILON) moves S and H by more than 64 x 1.2e-7."""
    rgb = synthesize_unit(case.recipe)
    rgb = np.rint(rgb * 255) / 255 if case.recipe.dtype == "uint8" else rgb.astype(np.float32).astype(np.float64)
    high, spread = rgb.max(axis=-3), np.ptp(rgb, axis=-3)
    return {"dim": bool(((high > 0) & (high < 1 / 64)).any() or ((spread > 0) & (spread < 1 / 64)).any())}


UNIT_OUTPUT = {"output_dtype": lambda case: "float32", "features": hsv_features}  # canonical units: float
RGB_TO_HSV = Operation(
    name="rgb_to_hsv",
    description="RGB -> HSV (hexcone), hue in turns [0, 1)",
    reference=lambda image, case: color.rgb_to_hsv(image / (255.0 if case.recipe.dtype == "uint8" else 1.0)),
    params=no_params,
    dtypes=("uint8", "float32"),
    modes=("default",),
    recipes=hsv_recipes,
    spec=UNIT_OUTPUT,
    tolerances=[
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
            dtypes=("float32",),
            description="kornia.color.rgb_to_hsv, hue / 2 pi",
            spec={"keeps_memory_format": False},
        ),
        Implementation(
            library=OPENCV,
            call=per_host_image(_opencv_rgb_to_hsv),
            dtypes=("float32",),
            host_only=HOST,
            description="cv2.cvtColor(COLOR_RGB2HSV) (float), hue / 360",
            spec=HOST_SPEC,
        ),
        Implementation(
            library=PILLOW,
            call=per_host_image(_pillow_rgb_to_hsv),
            dtypes=("uint8",),
            host_only=HOST,
            description="Pillow Image.convert('HSV'), 0..255 / 255",
            spec=HOST_SPEC,
        ),
    ],
)


def _kornia_hsv_to_rgb(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    import kornia

    return kornia.color.hsv_to_rgb(torch.cat([image[..., :1, :, :] * TURN, image[..., 1:, :, :]], dim=-3))


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
    dtypes=("uint8", "float32"),
    modes=("default",),
    recipes=hsv_recipes,
    tolerances=[
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
            dtypes=("float32",),
            description="kornia.color.hsv_to_rgb, hue x 2 pi",
            spec={"keeps_memory_format": False},
        ),
        Implementation(
            library=OPENCV,
            call=per_host_image(_opencv_hsv_to_rgb),
            dtypes=("float32",),
            host_only=HOST,
            description="cv2.cvtColor(COLOR_HSV2RGB) (float), hue x 360",
            spec=HOST_SPEC,
        ),
        # OpenCV's 8-bit hue unit (1/180 or, _FULL, 1/256 turn) cannot hold the 8-bit input's 1/255 steps.
        Implementation(
            library=PILLOW,
            call=per_host_image(_pillow_hsv_to_rgb),
            dtypes=("uint8",),
            host_only=HOST,
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


@st.composite
def jitter_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """Magnitudes (2 decimals) around the identity; any of them may be left out (kornia's default 0 then
    leaves that step out).  ColorJiggle bounds brightness to [0, 2], so its magnitude is at most 1."""
    found = {}
    for key in JITTER_KEYS:
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

        return getattr(kornia.augmentation, name)(**{k: params[k] for k in JITTER_KEYS if k in params}, p=1.0)

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
    )
]


def _jitter_spec(name: str, steps) -> OpSpec:
    return OpSpec(
        name=f"{name.lower()}_kornia",
        description=f"kornia.augmentation.{name}(p=1) with replayed parameters",
        module=ModuleOp(build=_module(name), sample=kornia_parameters, bounds=jitter_bounds, unmoved="works"),
        reference=partial(jitter_reference, steps),
        dtypes=("float32",),
        modes=("default",),
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
        build=lambda params: _kornia_augmentation("RandomGrayscale")(p=1.0),
        sample=kornia_parameters,
        bounds=lambda params: {"batch_prob": (1.0, 1.0)},
        unmoved="works",
    ),
    reference=grayscale_reference,
    dtypes=("float32",),
    modes=("default",),
    params=no_params,
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
        )
    ],
    needs=("kornia.augmentation.RandomGrayscale",),
)
test_random_grayscale_kornia = RANDOM_GRAYSCALE.test()


def _kornia_augmentation(name: str):
    import kornia

    return getattr(kornia.augmentation, name)
