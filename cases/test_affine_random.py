"""kornia's random rotation and affine augmentations (`RandomRotation`, `RandomAffine`, p=1), nearest and
bilinear, with their parameters sampled once per case on the cpu and replayed on every target.

Reference: conformance.references.warp per image, from the sampled values and kornia's documented
meaning: RandomRotation turns counter-clockwise by `degrees` about the image centre; RandomAffine
keeps the centre invariant and applies T C R S SHy SHx C^-1 with a clockwise `angle`, per-axis
`scale`, `translations` in pixels and shears in degrees (as `get_affine_matrix2d`).  The sampled
`center` is checked against its range, never used by the reference, which takes the image's own.
Both pad with zeros unless RandomAffine is given padding_mode="fill" and a fill_value.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from conformance import Case, ModuleOp, OpSpec, Recipe, Rule, Tolerance, image_recipes, kornia_parameters
from conformance.references import warp

MODES = ("nearest", "bilinear")
RECIPES = partial(image_recipes, channels=(3, 1, 4, 2), max_side=48, min_batch_dims=1, max_batch_dims=1)
TOLERANCES = [
    Rule(
        Tolerance("exact", reason="nearest copies one input pixel or zero: any difference is another pixel"),
        mode="nearest",
    ),
    Rule(
        Tolerance("float32-coordinates", atol=2e-5, reason="float32 sampling grid and weights (see test_affine.py)"),
        dtype="float32",
    ),
]
SPEC = {
    "keeps_memory_format": False,
    "tolerances": TOLERANCES,
    "dtypes": ("float32",),
    "modes": MODES,
    "recipes": RECIPES,
}


def _values(sampled: dict[str, torch.Tensor], key: str) -> np.ndarray:
    return sampled[key].detach().cpu().double().numpy()


def _per_image(image: np.ndarray, inverses: list[np.ndarray], mode: str, fill: float) -> np.ndarray:
    return np.stack([warp.warp(one, inverse, mode, fill) for one, inverse in zip(image, inverses, strict=False)])


def _range(value: float | tuple[float, ...]) -> tuple[float, float]:
    """A documented range, widened by float32 rounding: the sampler draws float32 values, and float32(0.85)
    is 0.85000002."""
    low, high = (-value, value) if isinstance(value, (int, float)) else (min(value), max(value))
    return low - 1e-6 * max(1.0, abs(low)), high + 1e-6 * max(1.0, abs(high))


def steps(low: float, high: float, step: float) -> st.SearchStrategy[float]:
    """Values from low to high on a grid of `step` (ranges print short, and shrink to round numbers)."""
    first, last = round(low / step), round(high / step)
    return st.integers(first, last).map(lambda n: round(n * step, 6))


def features(case: Case) -> dict[str, Any]:
    return {
        "singleton_axis": min(case.recipe.height, case.recipe.width) == 1,
        "padding_fill": case.params.get("fill") is not None,
    }


def sampled_features(inverses_of):
    def tie_gap(case: Case, sampled: dict[str, torch.Tensor]) -> dict[str, Any]:
        """For nearest, how close the sampled warp puts a sample to a cell edge: a drawn range may hold a quarter
        turn, and the sampled angle can come within float32 coordinate error of it."""
        if case.params["resample"] != "nearest":
            return {"tie_gap": "n/a"}
        height, width = case.recipe.height, case.recipe.width
        gaps = [warp.tie_distance(inverse, height, width) for inverse in inverses_of(sampled, height, width)]
        return {"tie_gap": warp.tie_gap(min(gaps, default=float("inf")))}

    return tie_gap


# -- RandomRotation ---------------------------------------------------------------------------------
@st.composite
def rotation_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """degrees: one bound d for (-d, d), or a range (low, high)."""
    if draw(st.booleans(), label="symmetric"):
        degrees: Any = draw(steps(1, 180, 0.1), label="degrees")
    else:
        low = draw(steps(-180, 179, 0.1), label="low")
        degrees = (low, draw(steps(low + 1, 180, 0.1), label="high"))
    return {"degrees": degrees, "resample": mode}


def build_rotation(params: dict[str, Any]) -> torch.nn.Module:
    import kornia

    return kornia.augmentation.RandomRotation(params["degrees"], resample=params["resample"], p=1.0)


def rotation_inverses(sampled: dict[str, torch.Tensor], height: int, width: int) -> list[np.ndarray]:
    return [warp.rotation_inverse(angle, height, width) for angle in _values(sampled, "degrees")]


def rotation_reference(image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor]) -> np.ndarray:
    height, width = image.shape[-2:]
    return _per_image(image, rotation_inverses(sampled, height, width), case.params["resample"], 0.0)


RANDOM_ROTATION = OpSpec(
    name="random_rotation_kornia",
    description="kornia.augmentation.RandomRotation(p=1) with replayed parameters",
    module=ModuleOp(
        build=build_rotation,
        sample=kornia_parameters,
        unmoved="works",
        bounds=lambda params: {"degrees": _range(params["degrees"])},
        features=sampled_features(rotation_inverses),
    ),
    reference=rotation_reference,
    params=rotation_params,
    features=features,
    needs=("kornia.augmentation.RandomRotation",),
    **SPEC,
)


# -- RandomAffine -----------------------------------------------------------------------------------
@st.composite
def affine_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """Ranges as kornia documents them: translate fractions of the side, scale (a, b) or (a, b, c, d), shear one
    bound s (x in (-s, s)) or (a, b, c, d) for x and y (the (a, b) form's documentation contradicts itself, so it is
    not drawn); sometimes padding_mode="fill" with a fill_value."""

    def span(low: float, high: float, step: float) -> tuple[float, float]:
        """At least one step wide: the sampled values are then arbitrary, never exactly 0.5 or 90, which would put
        nearest samples exactly on cell edges (ties, which features cannot see in sampled values)."""
        first = draw(steps(low, high - step, step))
        return first, draw(steps(first + step, high, step))

    scale = span(0.5, 2.0, 0.01) + (span(0.5, 2.0, 0.01) if draw(st.booleans(), label="scale_y") else ())
    shear = draw(st.sampled_from(("none", "one", "xy")), label="shear")
    return {
        "degrees": span(-180, 180, 0.1),
        "translate": (draw(steps(0, 0.3, 0.01)), draw(steps(0, 0.3, 0.01))),
        "scale": scale,
        "shear": {"none": None, "one": draw(steps(0, 40, 0.1)), "xy": span(-40, 40, 0.1) + span(-40, 40, 0.1)}[shear],
        "resample": mode,
        "fill": draw(st.one_of(st.none(), st.decimals(0, 1, places=3).map(float)), label="fill"),
    }


def build_affine(params: dict[str, Any]) -> torch.nn.Module:
    import kornia

    fill = {} if params["fill"] is None else {"padding_mode": "fill", "fill_value": params["fill"]}
    return kornia.augmentation.RandomAffine(
        params["degrees"],
        translate=params["translate"],
        scale=params["scale"],
        shear=params["shear"],
        resample=params["resample"],
        p=1.0,
        **fill,
    )


def affine_inverses(sampled: dict[str, torch.Tensor], height: int, width: int) -> list[np.ndarray]:
    angle, translations, scale = (_values(sampled, k) for k in ("angle", "translations", "scale"))
    shear = np.stack([_values(sampled, "shear_x"), _values(sampled, "shear_y")], axis=1)
    return [
        warp.affine_inverse(angle[b], translations[b], tuple(scale[b]), shear[b], height, width)
        for b in range(len(angle))
    ]


def affine_reference(image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor]) -> np.ndarray:
    height, width = image.shape[-2:]
    fill = case.params["fill"]  # a float32 image holds it rounded to float32
    return _per_image(
        image,
        affine_inverses(sampled, height, width),
        case.params["resample"],
        0.0 if fill is None else float(np.float32(fill)),
    )


def affine_bounds(params: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Documented ranges of the sampled values.  The translations (fractions of the image side, in pixels) and the
    centre depend on the input's size, which bounds cannot see: not checked."""
    scale, shear = params["scale"], params["shear"]
    found = {"angle": _range(params["degrees"]), "scale": _range(scale)}
    if shear is None:
        return found | {"shear_x": (0.0, 0.0), "shear_y": (0.0, 0.0)}
    if isinstance(shear, float):
        return found | {"shear_x": _range(shear), "shear_y": (0.0, 0.0)}
    return found | {"shear_x": _range(shear[:2]), "shear_y": _range(shear[2:])}


RANDOM_AFFINE = OpSpec(
    name="random_affine_kornia",
    description="kornia.augmentation.RandomAffine(p=1) with replayed parameters",
    module=ModuleOp(
        build=build_affine,
        sample=kornia_parameters,
        unmoved="works",
        bounds=affine_bounds,
        features=sampled_features(affine_inverses),
    ),
    reference=affine_reference,
    params=affine_params,
    features=features,
    needs=("kornia.augmentation.RandomAffine",),
    **SPEC,
)

test_random_rotation_kornia = RANDOM_ROTATION.test()
test_random_affine_kornia = RANDOM_AFFINE.test()
