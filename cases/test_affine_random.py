"""kornia's random rotation and affine augmentations (`RandomRotation`, `RandomAffine`, p=1), nearest and
bilinear, with their parameters sampled once per case on the cpu and replayed on every target; and the matrix
helpers kornia's affine warps are built from (`get_rotation_matrix2d`, `get_shear_matrix2d`, `get_affine_matrix2d`).
(The helpers are here rather than in test_affine.py, which holds five libraries' warps at its size limit.)

Reference: conformance.references.warp per image, from the sampled values and kornia's documented
meaning: RandomRotation turns counter-clockwise by `degrees` about the image centre; RandomAffine
keeps the centre invariant and applies T C R S SHy SHx C^-1 with a clockwise `angle`, per-axis
`scale`, `translations` in pixels and shears in degrees (as `get_affine_matrix2d`).  The sampled
`center` is checked against its range, never used by the reference, which takes the image's own.
Both pad with zeros unless RandomAffine is given padding_mode="fill" and a fill_value (kornia >= 0.8.3).

The domain: float16, bfloat16, float32, float64 (kornia's augmentations take floating images only); 1-4 channels;
every batch layout.  Error modes, just outside the documented ranges: p outside [0, 1], reversed or negative
degrees, and for RandomAffine scale, shear and translate ranges out of bounds or reversed.  kornia accepts some of
them silently (p, a reversed scale range, scale (0, 0)): findings, as known issues.
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
    Case,
    ExpectedError,
    Implementation,
    ModuleOp,
    Operation,
    OpSpec,
    Recipe,
    Rule,
    Tolerance,
    image_recipes,
    kornia_parameters,
    versions,
)
from conformance.references import warp
from conformance.spec.case_pieces import WARP_MODES, matrix_helper_recipes, warp_variants

# RandomAffine's padding_mode="fill" and fill_value came with kornia#3391, first released in 0.8.3
FILL = versions.satisfies("kornia", ">=0.8.3")
FILL_NARROWED = (
    "" if FILL else f"kornia {versions.version_of('kornia')} < 0.8.3 has no RandomAffine fill_value: no fill"
)
RECIPES = partial(image_recipes, channels=(3, 1, 4, 2), max_side=48, min_batch_dims=1, max_batch_dims=1)


def _half(name: str, ulp: float) -> Tolerance:
    return Tolerance(
        f"{name}-output-rounding",
        atol=ulp + 3.1e-5,
        reason=f"two roundings to {name} of values below 2 (an ulp at [1, 2), {ulp:.3g}) plus float32 positions, as "
        "test_affine.py's rule; kornia's half-precision matrix is coarser: kornia-half-precision-matrix-random-*",
    )


TOLERANCES = [
    Rule(
        Tolerance("exact", reason="nearest copies one input pixel or zero: any difference is another pixel"),
        mode="nearest",
    ),
    Rule(
        Tolerance("float32-coordinates", atol=2e-5, reason="float32 sampling grid and weights (see test_affine.py)"),
        dtype="float32",
    ),
    Rule(
        Tolerance(
            "float64-coordinates", atol=1e-12, reason="float64 grid and weights (see test_affine.py); measured 4.1e-14"
        ),
        dtype="float64",
    ),
    Rule(_half("float16", 2**-10), dtype="float16"),
    Rule(_half("bfloat16", 2**-7), dtype="bfloat16"),
]
VALID = warp_variants(both_modes=("float32",))
INVALID_P = ExpectedError("p outside [0, 1] (documented: 'probability of applying the transformation')", ValueError)
ROTATION_ERRORS = {
    "p-out-of-range": INVALID_P,
    "degrees-invalid": ExpectedError("a reversed degrees range or a negative bound", ValueError, match="degrees"),
}
AFFINE_ERRORS = {
    **ROTATION_ERRORS,
    "scale-reversed": ExpectedError("a scale range (a, b) with a > b ('a <= scale <= b')", ValueError),
    "scale-not-positive": ExpectedError("a scale range with a bound <= 0", ValueError, match="scale"),
    "shear-invalid": ExpectedError("a reversed shear range or a negative bound", ValueError, match="shear"),
    "translate-out-of-range": ExpectedError("a translate fraction outside [0, 1]", ValueError, match="translate"),
}
SPEC = {"keeps_memory_format": False, "tolerances": TOLERANCES, "modes": WARP_MODES, "recipes": RECIPES}


class Deferred(torch.nn.Module):
    """An augmentation built inside the call, for error modes: kornia 0.9 validates its arguments at construction,
    older releases at the first call (samplers built lazily); either is the call's error here."""

    def __init__(self, make) -> None:
        super().__init__()
        self.make = make

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.make()(image)


def deferred_in_error_modes(make):
    def build(params: dict[str, Any]) -> torch.nn.Module:
        return Deferred(partial(make, params)) if params.get("invalid") else make(params)

    return build


def sample(module: torch.nn.Module, image: torch.Tensor, params: dict[str, Any]) -> Any:
    """kornia's own sampler, drawn once per case; nothing in an error mode (the call builds and draws)."""
    return None if isinstance(module, Deferred) else kornia_parameters(module, image, params)


def stored_fill(fill: float, dtype: str) -> float:
    """The fill as RandomAffine holds it: `torch.as_tensor(fill_value)` of a Python float is a tensor of torch's
    default dtype (float32), cast to the image's dtype in the warp; rounded to nearest even (bfloat16 keeps
    float32's upper 16 bits)."""
    held = float(np.float32(fill))
    if dtype == "float16":
        return float(np.float16(held))
    if dtype == "bfloat16":
        bits = int(np.float32(held).view(np.uint32))
        return float(np.uint32((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).view(np.float32))
    return held


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
    scale = case.params.get("scale") or (1.0,)
    return {
        "singleton_axis": min(case.recipe.height, case.recipe.width) == 1,
        "padding_fill": case.params.get("fill") is not None,
        "scale_zero": max(scale) == 0,
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


def _error_params(draw: st.DrawFn, mode: str) -> dict[str, Any]:
    """Values just outside the documented ranges (an error mode's one invalid argument; the rest valid)."""
    if mode == "p-out-of-range":
        return {"p": draw(st.one_of(steps(-1, -0.01, 0.01), steps(1.01, 2, 0.01)), label="p")}
    if mode == "degrees-invalid":
        high = draw(steps(-179, 180, 0.1))
        reversed_range = (high, draw(steps(-180, high - 0.1, 0.1)))
        return {"degrees": draw(st.one_of(st.just(reversed_range), steps(-180, -0.1, 0.1)), label="degrees")}
    if mode == "scale-reversed":
        low = draw(steps(0.5, 1.99, 0.01))
        return {"scale": (draw(steps(low + 0.01, 2, 0.01)), low)}
    if mode == "scale-not-positive":
        return {"scale": draw(st.one_of(st.just((0.0, 0.0)), st.tuples(steps(-1, -0.01, 0.01), steps(0.5, 2, 0.01))))}
    if mode == "shear-invalid":
        high = draw(steps(-39.9, 40, 0.1))
        bad = (high, draw(steps(-40, high - 0.1, 0.1)))
        return {"shear": draw(st.one_of(steps(-40, -0.1, 0.1), st.just((*bad, 0.0, 0.0)), st.just((0.0, 0.0, *bad))))}
    if mode == "translate-out-of-range":
        inside = draw(steps(0, 0.3, 0.01))
        bad = draw(st.one_of(steps(-1, -0.01, 0.01), steps(1.01, 2, 0.01)))
        return {"translate": draw(st.sampled_from([(bad, inside), (inside, bad)]))}
    return {}


# -- RandomRotation ---------------------------------------------------------------------------------
@st.composite
def rotation_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """degrees: one bound d for (-d, d), or a range (low, high)."""
    if draw(st.booleans(), label="symmetric"):
        degrees: Any = draw(steps(1, 180, 0.1), label="degrees")
    else:
        low = draw(steps(-180, 179, 0.1), label="low")
        degrees = (low, draw(steps(low + 1, 180, 0.1), label="high"))
    found = {"degrees": degrees, "resample": mode if mode in WARP_MODES else "bilinear", "p": 1.0}
    return found | ({"invalid": True, **_error_params(draw, mode)} if mode not in WARP_MODES else {})


def _rotation(params: dict[str, Any]) -> torch.nn.Module:
    import kornia

    return kornia.augmentation.RandomRotation(params["degrees"], resample=params["resample"], p=params["p"])


def rotation_inverses(sampled: dict[str, torch.Tensor], height: int, width: int) -> list[np.ndarray]:
    return [warp.rotation_inverse(angle, height, width) for angle in _values(sampled, "degrees")]


def rotation_reference(image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor]) -> np.ndarray:
    height, width = image.shape[-2:]
    return _per_image(image, rotation_inverses(sampled, height, width), case.params["resample"], 0.0)


RANDOM_ROTATION = OpSpec(
    name="random_rotation_kornia",
    description="kornia.augmentation.RandomRotation(p=1) with replayed parameters",
    module=ModuleOp(
        build=deferred_in_error_modes(_rotation),
        sample=sample,
        unmoved="works",
        bounds=lambda params: {"degrees": _range(params["degrees"])},
        features=sampled_features(rotation_inverses),
    ),
    reference=rotation_reference,
    params=rotation_params,
    features=features,
    needs=("kornia.augmentation.RandomRotation",),
    dtypes=("float32", "float64", "float16", "bfloat16"),
    variants=VALID + [("float32", mode) for mode in ROTATION_ERRORS],
    error_modes=ROTATION_ERRORS,
    **SPEC,
)


# -- RandomAffine -----------------------------------------------------------------------------------
@st.composite
def affine_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """Ranges as kornia documents them: translate fractions of the side, scale (a, b) or (a, b, c, d), shear one
    bound s (x in (-s, s)) or (a, b, c, d) for x and y (the (a, b) form's documentation contradicts itself, so it is
    not drawn); sometimes padding_mode="fill" with a fill_value (kornia >= 0.8.3)."""

    def span(low: float, high: float, step: float) -> tuple[float, float]:
        """At least one step wide: the sampled values are then arbitrary, never exactly 0.5 or 90, which would put
        nearest samples exactly on cell edges (ties, which features cannot see in sampled values)."""
        first = draw(steps(low, high - step, step))
        return first, draw(steps(first + step, high, step))

    scale = span(0.5, 2.0, 0.01) + (span(0.5, 2.0, 0.01) if draw(st.booleans(), label="scale_y") else ())
    shear = draw(st.sampled_from(("none", "one", "xy")), label="shear")
    fill = st.one_of(st.none(), st.decimals(0, 1, places=3).map(float)) if FILL else st.none()
    found = {
        "degrees": span(-180, 180, 0.1),
        "translate": (draw(steps(0, 0.3, 0.01)), draw(steps(0, 0.3, 0.01))),
        "scale": scale,
        "shear": {"none": None, "one": draw(steps(0, 40, 0.1)), "xy": span(-40, 40, 0.1) + span(-40, 40, 0.1)}[shear],
        "resample": mode if mode in WARP_MODES else "bilinear",
        "fill": draw(fill, label="fill"),
        "p": 1.0,
    }
    return found | ({"invalid": True, **_error_params(draw, mode)} if mode not in WARP_MODES else {})


def _affine(params: dict[str, Any]) -> torch.nn.Module:
    import kornia

    fill = {} if params["fill"] is None else {"padding_mode": "fill", "fill_value": params["fill"]}
    return kornia.augmentation.RandomAffine(
        params["degrees"],
        translate=params["translate"],
        scale=params["scale"],
        shear=params["shear"],
        resample=params["resample"],
        p=params["p"],
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
    fill = case.params["fill"]
    held = 0.0 if fill is None else stored_fill(fill, case.recipe.dtype)
    return _per_image(image, affine_inverses(sampled, height, width), case.params["resample"], held)


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
        build=deferred_in_error_modes(_affine),
        sample=sample,
        unmoved="works",
        bounds=affine_bounds,
        features=sampled_features(affine_inverses),
    ),
    reference=affine_reference,
    params=affine_params,
    features=features,
    needs=("kornia.augmentation.RandomAffine",),
    narrowed=FILL_NARROWED,
    dtypes=("float32", "float64", "float16", "bfloat16"),
    variants=VALID + [("float32", mode) for mode in AFFINE_ERRORS],
    error_modes=AFFINE_ERRORS,
    **SPEC,
)

test_random_rotation_kornia = RANDOM_ROTATION.test()
test_random_affine_kornia = RANDOM_AFFINE.test()


# -- kornia's matrix helpers ----------------------------------------------------------------------------
# The op's "image" is only where the helpers' arguments come from: every tensor is built on its device, in its dtype,
# one row per image of its batch (B).  A helper that makes a default of its own on the cpu (kornia <= 0.8.2's
# get_shear_matrix2d, fixed by kornia#3652 in 0.8.3) then mixes devices on an accelerator: the placement check.


def matrix_params(*keys: str):
    """Per image: a centre within 64 pixels of the origin, an angle in degrees, per-axis scales 0.5-2, translations
    within 64 pixels, shear angles in radians within 1.2 (69 degrees); `sx` and `sy` may be left out (OMIT)."""
    coordinate, scale = st.decimals(-64, 64, places=2).map(float), st.decimals("0.5", 2, places=2).map(float)
    shear = st.one_of(st.just(0.0), st.decimals("-1.2", "1.2", places=3).map(float))
    angle = st.one_of(st.sampled_from((0.0, 90.0, -90.0, 180.0, 45.0)), st.decimals(-360, 360, places=2).map(float))
    rows = {"center": st.tuples(coordinate, coordinate), "translations": st.tuples(coordinate, coordinate)}
    rows |= {"scale": st.tuples(scale, scale), "angle": angle, "sx": shear, "sy": shear}

    def params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
        batch = recipe.batch[0]
        return st.fixed_dictionaries({k: st.lists(rows[k], min_size=batch, max_size=batch) for k in keys})

    return params


def _c(cx: float, cy: float, sign: float = 1.0) -> np.ndarray:
    return np.array([[1.0, 0.0, sign * cx], [0.0, 1.0, sign * cy], [0.0, 0.0, 1.0]])


def _shear(center, sx: float, sy: float) -> np.ndarray:
    """C SHy SHx C^-1 (kornia's docstring: x_out = x - tan(sx) (y - cy), then y_out = y - tan(sy) (x_out - cx))."""
    shear_x = np.array([[1.0, -math.tan(sx), 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    shear_y = np.array([[1.0, 0.0, 0.0], [-math.tan(sy), 1.0, 0.0], [0.0, 0.0, 1.0]])
    return _c(*center) @ shear_y @ shear_x @ _c(*center, -1.0)


def _rotation_matrix(center, angle: float, scale) -> np.ndarray:
    """C R S C^-1 with R = [[cos, sin], [-sin, cos]]: counter-clockwise as displayed (kornia's alpha, beta matrix;
    per-axis scale applied before the rotation, as in warp's T C R S SHy SHx C^-1)."""
    cos, sin = warp.cos_sin(angle)
    linear = np.array([[cos, sin, 0.0], [-sin, cos, 0.0], [0.0, 0.0, 1.0]]) @ np.diag([scale[0], scale[1], 1.0])
    return _c(*center) @ linear @ _c(*center, -1.0)


def _matrices(function, *keys: str):
    def reference(image: np.ndarray, case: Case) -> np.ndarray:
        return np.stack([function(*row) for row in zip(*(case.params[k] for k in keys), strict=True)])

    return reference


def _affine_matrix(translation, center, scale, angle: float, sx: float, sy: float) -> np.ndarray:
    """T C R(-angle) S C^-1 C SHy SHx C^-1: the angle clockwise (documented), the shear about the centre first."""
    return _c(*translation) @ _rotation_matrix(center, -angle, scale) @ _shear(center, sx, sy)


def _on(image: torch.Tensor, rows: list[Any]) -> torch.Tensor:
    """Rows of numbers as a tensor on the image's device and dtype, filled there (no host copy per call)."""
    shape = np.shape(rows)
    flat = np.ravel(rows)
    return torch.stack([torch.full((), float(v), dtype=image.dtype, device=image.device) for v in flat]).reshape(shape)


def _kt(image: torch.Tensor, name: str, p: dict[str, Any], *positional: str) -> torch.Tensor:
    from kornia.geometry import transform as kt

    shears = {k: _on(image, p[k]) for k in ("sx", "sy") if k in p}
    return getattr(kt, name)(*(_on(image, p[k]) for k in positional), **shears)


MATRIX_TOLERANCES = [
    Rule(
        Tolerance(
            "float32-matrix",
            atol=5e-4,
            reason="float32 entries up to ~950 (centres and translations within 64, scales up to 2, tan 1.2 = 2.6): a "
            "few ulps of products and sums of 512-1024 (6.1e-5 each), plus the angle rounded to float32 (3.1e-5 "
            "degrees at 360) times radii up to ~180 (1e-4): 5e-4; measured 2.4e-4 (affine), 1.1e-4 (shear), 6.0e-5 "
            "(rotation) over 3,000 draws of 3 matrices",
        ),
        dtype="float32",
    ),
    Rule(
        Tolerance(
            "float64-matrix",
            atol=1e-11,
            reason="float64: a few ulps of entries up to ~950 (1.1e-13 each); measured 1.1e-13 over 2,000 draws",
        ),
        dtype="float64",
    ),
]


def _helper(name: str, function, keys: tuple[str, ...], positional: tuple[str, ...]) -> Operation:
    """Documented default of a left-out shear: none (the docstring's shear matrix with angle 0 is the identity)."""
    shears = tuple(k for k in ("sx", "sy") if k in keys)
    zeros = {k: (lambda p: [0.0] * len(p["center"])) for k in shears}
    return Operation(
        name=name,
        description=f"kornia.geometry.transform.get_{name}2d; the image gives only device, dtype and batch size",
        reference=_matrices(function, *keys),
        params=matrix_params(*keys),
        dtypes=("float32", "float64"),
        modes=("default",),
        optional=shears,
        tolerances=MATRIX_TOLERANCES,
        recipes=matrix_helper_recipes,
        spec={"keeps_memory_format": False, "needs": (f"kornia.geometry.transform.get_{name}2d",)},
        implementations=[
            Implementation(
                library=KORNIA, call=lambda image, p: _kt(image, f"get_{name}2d", p, *positional), defaults=zeros
            )
        ],
    )


ROTATION_MATRIX = _helper(
    "rotation_matrix",
    lambda *row: _rotation_matrix(*row)[:2],
    ("center", "angle", "scale"),
    ("center", "angle", "scale"),
)
SHEAR_MATRIX = _helper("shear_matrix", _shear, ("center", "sx", "sy"), ("center",))
AFFINE_MATRIX = _helper(
    "affine_matrix",
    _affine_matrix,
    ("translations", "center", "scale", "angle", "sx", "sy"),
    ("translations", "center", "scale", "angle"),
)
for _helper_ in (ROTATION_MATRIX, SHEAR_MATRIX, AFFINE_MATRIX):
    globals().update(_helper_.tests())
