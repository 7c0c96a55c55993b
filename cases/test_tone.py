"""Tone curves: posterize, solarize, equalize and autocontrast through torchvision v2 and v1, kornia,
Pillow `ImageOps` and OpenCV, and kornia's random augmentations of the family with replayed parameters.

Reference: conformance.references.tone, Pillow's documented algorithms in numpy (never Pillow itself):
per channel, solarize inverts values at or above the threshold, equalize uses Pillow's lookup table
and leaves a channel whose step is 0 unchanged, autocontrast truncates and leaves a flat channel
unchanged.  Units are the image's: uint8 thresholds 0..255, float thresholds in [0, 1].  Float
posterize/equalize read 8-bit levels as kornia documents it.  A library following another convention
fails its reference check and is a known issue with its reason (known_issues.toml, docs/findings.md).
Images are in [0, 1] (these ops document no other range), 1 or 3 channels (torchvision's), at most one
batch dimension (v1 equalize's limit) and 48 pixels a side.
"""

from __future__ import annotations

from functools import lru_cache, partial
from typing import Any

import numpy as np
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
    materialize,
    per_host_image,
    pillow_image_op,
    to_float64,
)
from conformance.references import tone

DTYPES = ("uint8", "float32")
IN_RANGE = tuple(c for c in CONTENTS if c != "out_of_range")
HOST = "a host library: the image is copied to host memory and back"
HOST_SPEC = {"keeps_memory_format": False, "host_transfers": HOST}
KORNIA_SPEC = {"keeps_memory_format": False}  # kornia returns contiguous outputs

TOLERANCES = [
    Rule(Tolerance("exact", reason="integer lookup tables: each 8-bit output is determined"), dtype="uint8"),
    Rule(
        Tolerance(
            "float32-rounding",
            atol=1.2e-7,
            rtol=0,
            reason="one float32 rounding of a value in [0, 1] (1 - x, level / 255): within one ulp at 1.0 "
            "(1.2e-7); measured max 5.96e-8 over 2000 cases per variant",
        ),
        dtype="float32",
    ),
]
QUOTIENT = [
    Rule(
        Tolerance(
            "float32-quotient",
            atol=2.4e-7,
            rtol=0,
            reason="(x - min) / (max - min) in float32: a subtraction, a reciprocal or division and a product, "
            "each rounded "
            "(v1 multiplies by 1 / (max - min)): within two ulps at 1.0 (2.4e-7); measured max 1.37e-7 (v1), "
            "1.01e-7 (v2); OpenCV beyond it is known issue opencv-25244",
        ),
        dtype="float32",
    )
]
TRUNCATION = [
    Rule(
        Tolerance(
            "uint8-truncated-quotient",
            atol=1,
            reason="(v - lo) * 255 / (hi - lo) is computed in floating point and truncated; "
            "where the exact quotient is "
            "an integer the rounded one can land just below it, one level low (torchvision in float32, Pillow "
            "in float64); measured max 1 over 2000 cases",
        ),
        dtype="uint8",
    )
]


def tone_recipes(dtype: str, contents: tuple[str, ...] = IN_RANGE) -> st.SearchStrategy[Recipe]:
    return image_recipes(dtype, channels=(3, 1), max_side=48, max_batch_dims=1, contents=contents)


@lru_cache(maxsize=256)
def _pixels(recipe: Recipe) -> np.ndarray:
    return to_float64(materialize(recipe))


def tone_features(case: Case) -> dict[str, Any]:
    """Where libraries' conventions part: flat channels, channels spanning under 0.01 (flat ones included),
    channels equalize leaves unchanged ("all", "some", "none")."""
    image = np.clip(_pixels(case.recipe), 0, 1) if case.recipe.dtype != "uint8" else _pixels(case.recipe)
    return {
        "flat_channel": tone.flat_planes(image),
        "narrow_span": tone.smallest_span(image) < 0.01,
        "equalize_unchanged": tone.equalize_unchanged(image, case.recipe.dtype),
    }


def _kornia(function_name: str, call, **fields: Any) -> Implementation:
    return Implementation(
        library=KORNIA,
        call=batched(call),
        dtypes=("float32",),
        spec={**KORNIA_SPEC, "needs": (f"kornia.enhance.{function_name}",)},
        **fields,
    )


def _pillow(function, **fields: Any) -> Implementation:
    return Implementation(
        library=PILLOW, call=pillow_image_op(function), dtypes=("uint8",), host_only=HOST, spec=HOST_SPEC, **fields
    )


def _opencv(function, dtypes=("uint8",), **fields: Any) -> Implementation:
    return Implementation(
        library=OPENCV,
        call=per_host_image(function, channelwise=True),
        dtypes=dtypes,
        host_only=HOST,
        spec={**HOST_SPEC, "needs": (f"cv2.{function.__name__}",)},
        **fields,
    )


def _image_ops(name: str):
    from PIL import ImageOps

    return getattr(ImageOps, name)


def _enhance(name: str):
    import kornia

    return getattr(kornia.enhance, name)


def _operation(
    name: str, description: str, reference, params, implementations, tolerances=(), **fields: Any
) -> Operation:
    return Operation(
        name=name,
        description=description,
        reference=reference,
        params=params,
        dtypes=DTYPES,
        tolerances=[*tolerances, *TOLERANCES],
        recipes=tone_recipes,
        spec={"features": tone_features},
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


POSTERIZE = _operation(
    "posterize",
    "keep the top `bits` bits of each 8-bit value",
    lambda image, case: tone.posterize(image, case.params["bits"], case.recipe.dtype),
    bits,
    modes=("default", "zero-bits", "bits-out-of-range"),
    invalid={"bits-out-of-range": "bits outside 0..8"},
    implementations=[
        Implementation(
            library=TV2, call=lambda image, p: F_v2.posterize(image, p["bits"]), raises={"bits-out-of-range": TypeError}
        ),
        Implementation(
            library=TV1,
            call=lambda image, p: F_v1.posterize(image, p["bits"]),
            dtypes=("uint8",),
            raises={"bits-out-of-range": ValueError},
        ),
        _kornia(
            "posterize",
            lambda image, p: _enhance("posterize")(image, p["bits"]),
            raises={"bits-out-of-range": (ValueError, TypeError)},
        ),
        _pillow(
            lambda picture, p: _image_ops("posterize")(picture, p["bits"]),
            modes=("default", "bits-out-of-range"),
            raises={"bits-out-of-range": ValueError},
        ),
    ],
)


# -- solarize ----------------------------------------------------------------------------------------
@st.composite
def threshold(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """uint8: an integer level; float: k / 1024, exact in float32 (no rounding of the threshold to the
    image's dtype can move a comparison); 0 and the top inverts everything, extremes hit it exactly."""
    above = mode == "threshold-above-max"
    if recipe.dtype == "uint8":
        return {"threshold": draw(st.integers(256, 300) if above else st.integers(0, 255), label="threshold")}
    return {"threshold": draw(st.integers(1025, 1536) if above else st.integers(0, 1024), label="threshold") / 1024}


def _tv_solarize(solarize):
    return lambda image, p: solarize(image, float(p["threshold"]))


SOLARIZE = _operation(
    "solarize",
    "invert values at or above a threshold",
    lambda image, case: tone.solarize(image, case.params["threshold"], case.recipe.dtype),
    threshold,
    modes=("default", "threshold-above-max"),
    optional=("threshold",),
    invalid={"threshold-above-max": "a threshold above the dtype's largest value"},
    implementations=[
        Implementation(library=TV2, call=_tv_solarize(F_v2.solarize), raises={"threshold-above-max": TypeError}),
        Implementation(library=TV1, call=_tv_solarize(F_v1.solarize), raises={"threshold-above-max": TypeError}),
        _kornia(
            "solarize",
            lambda image, p: _enhance("solarize")(image, **keywords(p, threshold=("thresholds", float))),
            defaults={"threshold": 0.5},
        ),  # kornia.enhance.solarize(thresholds=0.5)
        _pillow(
            lambda picture, p: _image_ops("solarize")(picture, **keywords(p, threshold=None)),
            defaults={"threshold": 128},
        ),  # ImageOps.solarize(threshold=128)
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
    lambda image, case: tone.equalize(image, case.recipe.dtype),
    no_params,
    modes=("default",),
    implementations=[
        Implementation(library=TV2, call=lambda image, p: F_v2.equalize(image)),
        Implementation(library=TV1, call=lambda image, p: F_v1.equalize(image), dtypes=("uint8",)),
        _kornia("equalize", lambda image, p: _enhance("equalize")(image)),
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
    lambda image, case: tone.autocontrast(image, case.recipe.dtype),
    lambda recipe, mode: st.just({"cutoff": 0}),
    modes=("default",),
    optional=("cutoff",),
    tolerances=QUOTIENT,  # only Pillow has a cutoff (default 0)
    implementations=[
        Implementation(library=TV2, call=lambda image, p: F_v2.autocontrast(image), tolerances=TRUNCATION),
        Implementation(library=TV1, call=lambda image, p: F_v1.autocontrast(image), tolerances=TRUNCATION),
        _kornia("normalize_min_max", lambda image, p: _enhance("normalize_min_max")(image)),
        _pillow(
            lambda picture, p: _image_ops("autocontrast")(picture, **keywords(p, cutoff=None)),
            defaults={"cutoff": 0},
            tolerances=TRUNCATION,
        ),  # ImageOps.autocontrast(cutoff=0)
        _opencv(_normalize, dtypes=DTYPES),
    ],
)

for _operation_ in (POSTERIZE, SOLARIZE, EQUALIZE, AUTOCONTRAST):
    globals().update(_operation_.tests())


# -- kornia's random augmentations, parameters drawn once on the cpu and replayed ---------------------------
def _per_image(image: np.ndarray, values: torch.Tensor) -> list[tuple[np.ndarray, float]]:
    return list(zip(image, values.double().tolist(), strict=False))


@st.composite
def _range(draw: st.DrawFn, name: str, low: float, high: float, centre: float | None, places: int = 3) -> Any:
    """A scalar (a half-width around `centre`, or a lower bound when centre is None) or a (low, high) pair."""
    if draw(st.booleans(), label=f"{name}_as_pair"):
        return sorted(draw(st.decimals(low, high, places=places).map(float), label=f"{name}_{i}") for i in (0, 1))
    scalar = (low, high) if centre is None else (0, high - centre)
    return draw(st.decimals(*scalar, places=places).map(float), label=name)


def _bounds(value: Any, centre: float | None, top: float, widen: bool = True) -> tuple[float, float]:
    """The documented range; widened by one float32 step each way, as kornia samples in float32."""
    low, high = (
        value if isinstance(value, list) else (value, top) if centre is None else (centre - value, centre + value)
    )
    if not widen:
        return low, high
    return float(np.nextafter(np.float32(low), np.float32(-2))), float(np.nextafter(np.float32(high), np.float32(2)))


def _optional(draw: st.DrawFn, name: str, strategy: st.SearchStrategy[Any]) -> dict[str, Any]:
    """The keyword, or nothing (the documented default then applies)."""
    return {} if draw(st.booleans(), label=f"leave_out_{name}") else {name: draw(strategy)}


@st.composite
def posterize_ranges(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    return _optional(draw, "bits", _range("bits", 0.0, 8.0, None, places=1))


def _posterize_bounds(params: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Default bits=3: drawn from [3, 8], rounded to an integer (half to even)."""
    low, high = _bounds(params.get("bits", 3.0), None, 8.0, widen=False)
    return {"bits_factor": (float(np.floor(low)), float(np.ceil(high)))}


@st.composite
def solarize_ranges(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    return {
        **_optional(draw, "thresholds", _range("thresholds", 0.0, 1.0, 0.5)),
        **_optional(draw, "additions", _range("additions", -0.5, 0.5, 0.0)),
    }


def _solarize_bounds(params: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Defaults 0.1 and 0.1: thresholds from 0.5 -+ 0.1, additions from -+0.1."""
    return {
        "thresholds": _bounds(params.get("thresholds", 0.1), 0.5, 1.0),
        "additions": _bounds(params.get("additions", 0.1), 0.0, 0.5),
    }


def _posterize_reference(image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor]) -> np.ndarray:
    clamped = np.clip(image, 0, 1)  # documented: inputs clamped to [0, 1] first
    return np.stack(
        [tone.posterize(one, int(bits), case.recipe.dtype) for one, bits in _per_image(clamped, sampled["bits_factor"])]
    )


def _solarize_reference(image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor]) -> np.ndarray:
    """Clamp, add the drawn addition (in the image's dtype, as the op computes it), clamp, solarize at the
    drawn threshold (both drawn values are float32, compared exactly)."""
    out = []
    for one, threshold_, addition in zip(
        np.clip(image, 0, 1),
        sampled["thresholds"].double().tolist(),
        sampled["additions"].double().tolist(),
        strict=False,
    ):
        summed = (one.astype(np.float32) + np.float32(addition)).astype(np.float64)
        out.append(tone.solarize(np.clip(summed, 0, 1), threshold_, case.recipe.dtype))
    return np.stack(out)


def _random(name: str, cls: str, reference, params=no_params, bounds=None, contents=CONTENTS, build=None) -> OpSpec:
    def default_build(params: dict[str, Any]) -> torch.nn.Module:
        import kornia

        return getattr(kornia.augmentation, cls)(
            **{k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}, p=1.0
        )

    return OpSpec(
        name=name,
        description=f"kornia.augmentation.{cls}(p=1) with replayed parameters",
        module=ModuleOp(build=build or default_build, sample=kornia_parameters, bounds=bounds, unmoved="works"),
        reference=reference,
        dtypes=("float32",),
        modes=("default",),
        params=params,
        recipes=partial(
            image_recipes, channels=(3, 1), min_batch_dims=1, max_batch_dims=1, max_side=48, contents=contents
        ),
        tolerances=TOLERANCES,
        features=tone_features,
        needs=(f"kornia.augmentation.{cls}",),
        **KORNIA_SPEC,
    )


RANDOM_POSTERIZE = _random(
    "random_posterize_kornia", "RandomPosterize", _posterize_reference, posterize_ranges, _posterize_bounds
)
RANDOM_SOLARIZE = _random(
    "random_solarize_kornia", "RandomSolarize", _solarize_reference, solarize_ranges, _solarize_bounds
)
RANDOM_EQUALIZE = _random(
    "random_equalize_kornia",
    "RandomEqualize",
    lambda image, case, sampled: tone.equalize(np.clip(image, 0, 1), case.recipe.dtype),
)
# RandomAutoContrast documents no input clamp (a rescale by each channel's own range): in-range content only,
# where the Pillow meaning (flat channels unchanged) is defined.
RANDOM_AUTOCONTRAST = _random(
    "random_autocontrast_kornia",
    "RandomAutoContrast",
    lambda image, case, sampled: tone.autocontrast(image, case.recipe.dtype),
    contents=IN_RANGE,
)

for _spec in (RANDOM_POSTERIZE, RANDOM_SOLARIZE, RANDOM_EQUALIZE, RANDOM_AUTOCONTRAST):
    globals()[f"test_{_spec.name}"] = _spec.test()
