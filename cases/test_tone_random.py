"""Tone curves through kornia's random augmentations (RandomPosterize, RandomSolarize, RandomEqualize,
RandomAutoContrast), parameters drawn once on the cpu and replayed on every target; the functionals are
cases/test_tone.py (case modules are loaded by path, so the few shared helpers are repeated here).

Reference: conformance.references.tone with the sampled parameters, after the documented clamp of the input
into [0, 1] (RandomAutoContrast documents none).  Images are (B, C, H, W) with any channel count (kornia
documents "(*, C, H, W)"; 4 channels included), float32.  p is a probability: "p-out-of-range" draws p just
outside [0, 1], which kornia does not check (a finding, known issue kornia-random-p-out-of-range).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from conformance import (
    CONTENTS,
    Case,
    ExpectedError,
    ModuleOp,
    OpSpec,
    Recipe,
    Rule,
    Tolerance,
    image_recipes,
    kornia_parameters,
)
from conformance.references import tone
from conformance.spec.case_pieces import IN_RANGE_CONTENTS, recipe_pixels

P_OUT = "p-out-of-range"
TOLERANCES = [
    Rule(
        Tolerance(
            "float32-rounding",
            atol=1.2e-7,
            rtol=0,
            reason="one float32 rounding of a value in [0, 1] (1 - x, level / 255): within one ulp at 1.0 "
            "(1.2e-7); measured max 5.96e-8 over 2000 cases per variant",
        ),
        dtype="float32",
    )
]


def tone_features(case: Case) -> dict[str, Any]:
    """As cases/test_tone.py's: flat channels, channels spanning under 0.01, channels equalize leaves unchanged."""
    image = np.clip(recipe_pixels(case.recipe), 0, 1)
    return {
        "flat_channel": tone.flat_planes(image),
        "narrow_span": tone.smallest_span(image) < 0.01,
        "equalize_unchanged": tone.equalize_unchanged(image, case.recipe.dtype),
    }


def no_params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.just({})


def probability(params):
    """The op's parameters in "default"; in "p-out-of-range" only p, just below 0 or just above 1."""

    def drawn(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
        if mode == P_OUT:
            return st.sampled_from([-1 / 64, 1 + 1 / 64]).map(lambda p: {"p": p})
        return params(recipe, mode)

    return drawn


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


def _random(name: str, cls: str, reference, params=no_params, bounds=None, contents=CONTENTS) -> OpSpec:
    def build(params: dict[str, Any]) -> torch.nn.Module:
        """p=1 (every sample transformed); "p-out-of-range" passes its p instead."""
        import kornia

        found = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items() if k != "p"}
        return getattr(kornia.augmentation, cls)(**found, p=params.get("p", 1.0))

    return OpSpec(
        name=name,
        description=f"kornia.augmentation.{cls}(p=1) with replayed parameters",
        module=ModuleOp(build=build, sample=kornia_parameters, bounds=bounds, unmoved="works"),
        reference=reference,
        dtypes=("float32",),
        modes=("default", P_OUT),
        error_modes={
            # kornia's own out-of-range parameters raise ValueError at construction ("bits out of bounds")
            P_OUT: ExpectedError("p, a probability, outside [0, 1]", ValueError)
        },
        params=probability(params),
        recipes=partial(
            image_recipes, channels=(3, 1, 4), min_batch_dims=1, max_batch_dims=1, max_side=48, contents=contents
        ),
        tolerances=TOLERANCES,
        features=tone_features,
        needs=(f"kornia.augmentation.{cls}",),
        keeps_memory_format=False,  # kornia returns contiguous outputs
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
    contents=IN_RANGE_CONTENTS,
)

for _spec in (RANDOM_POSTERIZE, RANDOM_SOLARIZE, RANDOM_EQUALIZE, RANDOM_AUTOCONTRAST):
    globals()[f"test_{_spec.name}"] = _spec.test()
