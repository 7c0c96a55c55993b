"""Tone curves: posterize, solarize, equalize and autocontrast through torchvision v2 and v1, kornia,
Pillow `ImageOps` and OpenCV (kornia's random augmentations of the family: cases/test_tone_random.py).

Reference: conformance.references.tone, Pillow's documented algorithms in numpy (never Pillow itself):
per channel, solarize inverts values at or above the threshold, equalize uses Pillow's lookup table
and leaves a channel whose step is 0 unchanged, autocontrast truncates and leaves a flat channel
unchanged.  Units are the image's (uint8 thresholds 0..255, float ones in [0, 1]); float posterize and
equalize read 8-bit levels as kornia documents it; uint16 levels are the top byte, written back as
level * 257 (scikit-image's _scale: white stays 65535), and uint16 posterize keeps the top `bits` of 16.
Images are in [0, 1], 1 or 3 channels (torchvision's [..., 1 or 3, H, W], Pillow's L and RGB; 4 channels
are an error mode), at most one batch dimension (v1 equalize's limit), 48 pixels a side.  v2 takes every
dtype; kornia float32 and float64 ("a float32 or float64 image gives PIL.ImageOps.equalize of those
levels", kornia/enhance/adjust.py:1240; half precision left out: the reference reads float32 levels only).
"""

from __future__ import annotations

import math
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
    Implementation,
    Operation,
    Recipe,
    Rule,
    Tolerance,
    empty_recipes,
    image_recipes,
    keywords,
    module_class,
    peak,
    per_host_image,
    pillow_image_op,
    versions,
)
from conformance.references import tone
from conformance.spec.case_pieces import (
    HOST_COPY,
    HOST_SPEC,
    IN_RANGE_CONTENTS,
    NO_LAYOUT_PROMISE,
    TORCHVISION_PIL_SPEC,
    recipe_pixels,
)

DTYPES = ("uint8", "float32")
WIDE = ("uint16", "float16", "bfloat16", "float64")  # torchvision v2 takes them (its kernels branch on the dtype)
# v2 solarize selects with torch.where, whose cpu kernel has no uint16 before torch 2.15 (NotImplementedError on 2.11)
WHERE_UINT16 = versions.satisfies("torch", ">=2.15")
SOLARIZE_V2 = (
    {}
    if WHERE_UINT16
    else {
        "dtypes": tuple(d for d in (*DTYPES, *WIDE) if d != "uint16"),
        "spec": {"narrowed": "torch < 2.15: no uint16 (v2 solarize's torch.where has no uint16 cpu kernel)"},
    }
)
FOUR = "four-channels"
EMPTY = "empty-image"
INVALID_CHANNELS = {FOUR: "4 channels: torchvision documents [..., 1 or 3, H, W], Pillow the modes L and RGB"}
INVALID_EMPTY = {EMPTY: "an image with no pixels: kornia documents that spatial dimensions must be non-empty"}


def _ulps(name: str, dtype: str, atol: float, what: str, measured: str) -> Rule:
    return Rule(Tolerance(name, atol=atol, rtol=0, reason=f"{what}; {measured}"), dtype=dtype)


TOLERANCES = [
    Rule(Tolerance("exact", reason="integer lookup tables: each 8-bit output is determined"), dtype="uint8"),
    Rule(Tolerance("exact-16", reason="integer masks and inversions: each 16-bit value is determined"), dtype="uint16"),
    _ulps(
        "float32-rounding",
        "float32",
        1.2e-7,
        "one float32 rounding of a value in [0, 1] (1 - x, level / 255): within one ulp at 1.0 (1.2e-7)",
        "measured max 5.96e-8 over 2000 cases per variant",
    ),
    _ulps("float64-rounding", "float64", 2.3e-16, "the same in float64: one ulp at 1.0", "measured 1.11e-16 / 300"),
    _ulps("float16-rounding", "float16", 9.8e-4, "the same in float16: one ulp at 1.0", "measured 2.44e-4 / 300"),
    _ulps("bfloat16-rounding", "bfloat16", 7.9e-3, "the same in bfloat16: one ulp at 1.0", "measured 1.95e-3 / 300"),
]
QUOTIENT = [
    _ulps(
        "float32-quotient",
        "float32",
        2.4e-7,
        "(x - min) / (max - min) in float32: a subtraction, a reciprocal or division and a product, each rounded "
        "(v1 multiplies by 1 / (max - min)): within two ulps at 1.0 (2.4e-7)",
        "measured max 1.37e-7 (v1), 1.01e-7 (v2); OpenCV beyond it is known issue opencv-25244",
    ),
    _ulps("float64-quotient", "float64", 4.5e-16, "the same in float64: two ulps at 1.0", "measured 0 / 300 (v2)"),
    _ulps("float16-quotient", "float16", 2e-3, "the same in float16: two ulps at 1.0", "measured 7.9e-4 / 300"),
    _ulps("bfloat16-quotient", "bfloat16", 1.6e-2, "the same in bfloat16: two ulps at 1.0", "measured 6.18e-3 / 300"),
]
TRUNCATION = [
    Rule(
        Tolerance(
            f"{dtype}-truncated-quotient",
            atol=1,
            reason="(v - lo) * peak / (hi - lo) is computed in floating point and truncated; where the exact "
            "quotient is an integer the rounded one can land just below it, one level low (torchvision in "
            f"float32, Pillow in float64); measured max 1 over {cases} cases",
        ),
        dtype=dtype,
    )
    for dtype, cases in (("uint8", 2000), ("uint16", 300))
]


def tone_recipes(dtype: str, mode: str = "default") -> st.SearchStrategy[Recipe]:
    """1 or 3 channels; "empty-image": a side of 0; "four-channels": RGBA-like images."""
    if mode == EMPTY:
        return empty_recipes(dtype)
    channels = (4,) if mode == FOUR else (3, 1)
    return image_recipes(dtype, channels=channels, max_side=48, max_batch_dims=1, contents=IN_RANGE_CONTENTS)


def tone_features(case: Case) -> dict[str, Any]:
    """Where libraries' conventions part: flat channels, channels spanning under 0.01 (flat ones included),
    channels equalize leaves unchanged ("all", "some", "none"; uint16 read as its top byte)."""
    recipe = case.recipe
    if recipe.empty:
        return {}
    image = recipe_pixels(recipe) if recipe.dtype in ("uint8", "uint16") else np.clip(recipe_pixels(recipe), 0, 1)
    levels, dtype = (image // 256, "uint8") if recipe.dtype == "uint16" else (image, recipe.dtype)
    return {
        "flat_channel": tone.flat_planes(image),
        "narrow_span": tone.smallest_span(image) < 0.01,
        "equalize_unchanged": tone.equalize_unchanged(levels, dtype),
    }


# -- references for the dtypes conformance.references.tone does not name (uint16) ---------------------
def _planes(image: np.ndarray) -> np.ndarray:
    return image.reshape(-1, image.shape[-2] * image.shape[-1])


def posterize_reference(image: np.ndarray, case: Case) -> np.ndarray:
    bits, dtype = case.params["bits"], case.recipe.dtype
    if dtype == "uint16":  # the top `bits` of 16 (the top bits of its top byte)
        return ((image.astype(np.int64) >> (16 - bits)) << (16 - bits)).astype(np.float64)
    return tone.posterize(image, bits, dtype)


def solarize_reference(image: np.ndarray, case: Case) -> np.ndarray:
    """Values at or above the threshold are inverted about the dtype's white."""
    return np.where(image >= case.params["threshold"], peak(case.recipe.dtype) - image, image)


def equalize_reference(image: np.ndarray, case: Case) -> np.ndarray:
    dtype = case.recipe.dtype
    if dtype != "uint16":
        return tone.equalize(image, dtype)
    planes, out = _planes(image), _planes(image).copy()
    for index, levels in enumerate(planes.astype(np.int64) >> 8):
        lut = tone.equalize_lut(levels)
        if lut is not None:
            out[index] = lut[levels] * 257.0
    return out.reshape(image.shape)


def autocontrast_reference(image: np.ndarray, case: Case) -> np.ndarray:
    dtype = case.recipe.dtype
    if dtype != "uint16":
        return tone.autocontrast(image, dtype)
    planes = _planes(image).astype(np.int64)  # tone's integer truncation with white 65535
    low, high = planes.min(axis=1, keepdims=True), planes.max(axis=1, keepdims=True)
    stretched = (planes - low) * 65535 // np.maximum(high - low, 1)
    return np.where(high == low, planes, stretched).astype(np.float64).reshape(image.shape)


# -- implementations ------------------------------------------------------------------------------------
def _kornia(function_name: str, call, **fields: Any) -> Implementation:
    """Called on the case's (*, C, H, W) tensor as it is (no `batched`: kornia documents any leading dims, and an
    empty image must reach it); any C: four channels are in kornia's documented domain."""
    accepts = {
        FOUR: Accepted(
            documentation=f"kornia.enhance.{function_name}: 'input: image torch.Tensor with shape (*, C, H, W)' "
            "(kornia/enhance/adjust.py:889, :983, :1232; normalize.py:404 'taken over H and W separately for every "
            "leading index and channel'): any channel count, each channel alone",
            meaning=dict,
        )
    }
    return Implementation(
        library=KORNIA,
        call=call,
        dtypes=("float32", "float64"),
        spec={**NO_LAYOUT_PROMISE, "needs": (f"kornia.enhance.{function_name}",)},
        accepts={**accepts, **fields.pop("accepts", {})},
        **fields,
    )


def _host_empty(call, function):
    """The host adapters fold the batch with reshape(-1, ...), which an image with no pixels cannot take: such
    an image goes to the library once, as one empty H x W x C array, and what it returns is the result."""

    def host(image: torch.Tensor, p: dict[str, Any]) -> Any:
        if image.numel() != 0:
            return call(image, p)
        one = image.detach().cpu().movedim(-3, -1)
        while one.ndim > 3:
            one = one[0]
        found = function(np.ascontiguousarray(one.numpy()), p)
        return None if found is None else torch.from_numpy(np.array(found)).reshape(image.shape)

    return host


def _pillow(function, **fields: Any) -> Implementation:
    from PIL import Image

    return Implementation(
        library=PILLOW,
        call=_host_empty(
            pillow_image_op(function),
            lambda hwc, p: function(Image.fromarray(hwc.squeeze(-1) if hwc.shape[-1] == 1 else hwc), p),
        ),
        dtypes=("uint8",),
        host_only=HOST_COPY,
        spec=HOST_SPEC,
        raises={FOUR: OSError, **fields.pop("raises", {})},  # ImageOps: "not supported for mode RGBA" (ImageOps.py:88)
        **fields,
    )


def _opencv(function, dtypes=("uint8",), **fields: Any) -> Implementation:
    return Implementation(
        library=OPENCV,
        call=_host_empty(per_host_image(function, channelwise=True), lambda hwc, p: function(hwc[..., :1], p)),
        dtypes=dtypes,
        host_only=HOST_COPY,
        spec={**HOST_SPEC, "needs": (f"cv2.{function.__name__}",)},
        not_applicable={
            FOUR: "the harness hands OpenCV one channel at a time (equalizeHist takes 8-bit "
            "single-channel images): it sees no channel count"
        },
        **fields,
    )


def _tv(library, call, **fields: Any) -> Implementation:
    return Implementation(library=library, call=call, spec={**TORCHVISION_PIL_SPEC, **fields.pop("spec", {})}, **fields)


def _tv_class(transforms, name: str, arguments=lambda p: {}) -> Counterpart:
    """torchvision's class of the same op (v2 or v1): its Random<op> applied with probability 1, which is
    deterministic, built with the arguments the function gets."""
    return module_class(f"{transforms.__name__}.{name}", lambda p: {**arguments(p), "p": 1.0})


def _image_ops(name: str):
    return getattr(__import__("PIL.ImageOps").ImageOps, name)


def _enhance(name: str):
    return getattr(__import__("kornia").enhance, name)


def _operation(name, description, reference, params, implementations, modes, tolerances=(), **fields) -> Operation:
    """Every dtype in "default" (each implementation takes its own); the other modes with uint8 and float32."""
    invalid = fields.pop("invalid", {})
    return Operation(
        name=name,
        description=description,
        reference=reference,
        params=params,
        dtypes=(*DTYPES, *WIDE),
        modes=("default", *modes, *invalid),
        variants=[(d, "default") for d in (*DTYPES, *WIDE)] + [(d, m) for m in (*modes, *invalid) for d in DTYPES],
        invalid=invalid,
        tolerances=[*tolerances, *TOLERANCES],
        spec={"features": tone_features, "mode_recipes": tone_recipes},
        implementations=implementations,
        **fields,
    )


# -- posterize ---------------------------------------------------------------------------------------
@st.composite
def bits(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """1-8 bits (Pillow takes no 0); "zero-bits": 0 (a black image); "bits-out-of-range": -1 or 9."""
    if mode == "zero-bits":
        return {"bits": 0}
    if mode == "bits-out-of-range":
        return {"bits": draw(st.sampled_from([9, -1]), label="bits")}
    return {"bits": draw(st.integers(1, 8), label="bits")}


BITS = lambda p: {"bits": p["bits"]}  # noqa: E731 - RandomPosterize(bits)
POSTERIZE = _operation(
    "posterize",
    "keep the top `bits` bits of each 8-bit value",
    posterize_reference,
    bits,
    modes=("zero-bits",),
    invalid={"bits-out-of-range": "bits outside 0..8", **INVALID_CHANNELS},
    implementations=[
        _tv(
            TV2,
            lambda image, p: F_v2.posterize(image, p["bits"]),
            counterpart=_tv_class(T_v2, "RandomPosterize", BITS),
            raises={"bits-out-of-range": TypeError},
        ),
        _tv(
            TV1,
            lambda image, p: F_v1.posterize(image, p["bits"]),
            counterpart=_tv_class(T_v1, "RandomPosterize", BITS),
            dtypes=("uint8",),
            raises={"bits-out-of-range": ValueError, FOUR: TypeError},
        ),
        _kornia(
            "posterize",
            lambda image, p: _enhance("posterize")(image, p["bits"]),
            raises={"bits-out-of-range": (ValueError, TypeError)},
        ),
        _pillow(
            lambda picture, p: _image_ops("posterize")(picture, p["bits"]),
            modes=("default",),  # ":param bits: The number of bits to keep for each channel (1-8)."
            raises={"bits-out-of-range": ValueError},
        ),
    ],
)


# -- solarize ----------------------------------------------------------------------------------------
@st.composite
def threshold(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """Integer images: an integer level (0 inverts everything, white only white); float images: k / 1024 (k / 256
    for bfloat16), exact in the image's dtype, so no rounding of the threshold to it can move a comparison."""
    above = mode == "threshold-above-max"
    top = int(peak(recipe.dtype))
    if top > 1:
        return {"threshold": draw(st.integers(top + 1, top + 45) if above else st.integers(0, top), label="threshold")}
    steps = 256 if recipe.dtype == "bfloat16" else 1024
    return {"threshold": draw(st.integers(steps + 1, steps * 3 // 2) if above else st.integers(0, steps)) / steps}


def _tv_solarize(solarize):
    return lambda image, p: solarize(image, float(p["threshold"]))


THRESHOLD = lambda p: {"threshold": float(p["threshold"])}  # noqa: E731 - RandomSolarize(threshold)


def _inverts_nothing(params: dict[str, Any]) -> dict[str, Any]:
    """A threshold above every value: no value is at or above it."""
    return {**params, "threshold": math.inf}


SOLARIZE = _operation(
    "solarize",
    "invert values at or above a threshold",
    solarize_reference,
    threshold,
    modes=(),
    optional=("threshold",),
    invalid={"threshold-above-max": "a threshold above the dtype's largest value", **INVALID_CHANNELS},
    implementations=[
        _tv(
            TV2,
            _tv_solarize(F_v2.solarize),
            counterpart=_tv_class(T_v2, "RandomSolarize", THRESHOLD),
            raises={"threshold-above-max": TypeError},
            **SOLARIZE_V2,
        ),
        _tv(
            TV1,
            _tv_solarize(F_v1.solarize),
            counterpart=_tv_class(T_v1, "RandomSolarize", THRESHOLD),
            dtypes=DTYPES,
            raises=dict.fromkeys(("threshold-above-max", FOUR), TypeError),
        ),
        _kornia(
            "solarize",
            lambda image, p: _enhance("solarize")(image, **keywords(p, threshold=("thresholds", float))),
            defaults={"threshold": 0.5},  # kornia.enhance.solarize(thresholds=0.5)
            accepts={
                "threshold-above-max": Accepted(
                    documentation="kornia.enhance.solarize: 'Add an amount to every pixel, clamp, then invert the "
                    "pixels at or above a threshold.' (kornia/enhance/adjust.py:874); thresholds has no documented "
                    "range (:890-892): above 1 no pixel is at or above it",
                    meaning=_inverts_nothing,
                )
            },
        ),
        _pillow(
            lambda picture, p: _image_ops("solarize")(picture, **keywords(p, threshold=None)),
            defaults={"threshold": 128},  # ImageOps.solarize(threshold=128)
            accepts={
                "threshold-above-max": Accepted(
                    documentation="PIL.ImageOps.solarize: ':param threshold: All pixels above this grayscale level "
                    "are inverted.' (PIL/ImageOps.py:723), no range given: above 255 no pixel is above it",
                    meaning=_inverts_nothing,
                )
            },
        ),
    ],
)


# -- equalize ----------------------------------------------------------------------------------------
def no_params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.just({})


def _equalize_hist(plane: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    import cv2

    return cv2.equalizeHist(plane[..., 0])


_equalize_hist.__name__ = "equalizeHist"

EQUALIZE = _operation(
    "equalize",
    "histogram equalization per channel (Pillow's lookup table)",
    equalize_reference,
    no_params,
    modes=(),
    invalid={**INVALID_CHANNELS, **INVALID_EMPTY},
    implementations=[
        _tv(TV2, lambda image, p: F_v2.equalize(image), counterpart=_tv_class(T_v2, "RandomEqualize")),
        _tv(
            TV1,
            lambda image, p: F_v1.equalize(image),
            counterpart=_tv_class(T_v1, "RandomEqualize"),
            dtypes=("uint8",),
            raises={FOUR: TypeError},
        ),
        _kornia("equalize", lambda image, p: _enhance("equalize")(image), raises={EMPTY: ValueError}),
        _pillow(lambda picture, p: _image_ops("equalize")(picture)),
        _opencv(_equalize_hist),
    ],
)


# -- autocontrast --------------------------------------------------------------------------------------
def _normalize(plane: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    import cv2

    return cv2.normalize(plane, None, 0, 255 if plane.dtype == np.uint8 else 1, cv2.NORM_MINMAX)


_normalize.__name__ = "normalize"

AUTOCONTRAST = _operation(
    "autocontrast",
    "stretch each channel so its darkest value is 0 and its lightest the top",
    autocontrast_reference,
    lambda recipe, mode: st.just({"cutoff": 0}),
    modes=(),
    optional=("cutoff",),
    invalid={**INVALID_CHANNELS, **INVALID_EMPTY},
    tolerances=QUOTIENT,  # only Pillow has a cutoff (default 0)
    implementations=[
        _tv(
            TV2,
            lambda image, p: F_v2.autocontrast(image),
            counterpart=_tv_class(T_v2, "RandomAutocontrast"),
            tolerances=TRUNCATION,
            raises={FOUR: TypeError},
        ),
        _tv(
            TV1,
            lambda image, p: F_v1.autocontrast(image),
            counterpart=_tv_class(T_v1, "RandomAutocontrast"),
            dtypes=DTYPES,
            tolerances=TRUNCATION,
            raises={FOUR: TypeError, EMPTY: IndexError},  # amin() of an empty plane
        ),
        _kornia("normalize_min_max", lambda image, p: _enhance("normalize_min_max")(image), raises={EMPTY: ValueError}),
        _pillow(
            lambda picture, p: _image_ops("autocontrast")(picture, **keywords(p, cutoff=None)),
            defaults={"cutoff": 0},  # ImageOps.autocontrast(cutoff=0)
            tolerances=TRUNCATION,
        ),
        _opencv(_normalize, dtypes=DTYPES),
    ],
)

for _operation_ in (POSTERIZE, SOLARIZE, EQUALIZE, AUTOCONTRAST):
    globals().update(_operation_.tests())
