"""Elastic warps of a given displacement field: torchvision v2 `elastic` and v1 `elastic_transform` (the field added
to the identity grid), and kornia's `elastic_transform2d` (its noise smoothed by a Gaussian and scaled by alpha).

Reference: conformance.references.perspective's elastic sampling (float64 positions, nearest and bilinear through
conformance.references.warp, the image extended by the fill).  torchvision documents the field as "[1, H, W, 2]"
added to the identity grid and sampled by grid_sample(align_corners=False) (v2 _geometry.py elastic_image,
_create_identity_grid), so a displacement d in normalised units moves the sample by d W / 2 pixels; kornia documents
noise (B, 2, H, W), x first, smoothed by a (kernel_size, sigma) Gaussian with zeros beyond the edges
(filter2d_separable(border_type="constant")) and scaled by alpha, added to the identity grid of its align_corners.

The field is drawn as a few numbers (JSON-able, `wave`): for x and y a shift and the amplitude of one sine wave, in
pixels, expanded deterministically into the (H, W, 2) field, by the reference in float64 numpy and by the call on
the target's device in float64 torch (a field made on the host and uploaded would be a placement failure of the
harness, not of the library).  Identity (all zero), whole-pixel shifts and sub-pixel waves are drawn.

The domain: torchvision: uint8, uint16, float16, bfloat16, float32, float64 (nearest for integers and float32);
1-4 channels (v1 documents 1 or 3; the others work), every batch layout, PIL images (the `pil` check).  kornia:
float32 and float64 (its noise and sigma take the image's dtype), nearest and bilinear, align_corners both ways,
padding "zeros" (the reference's fill 0) and "border".  Error mode: a field of the wrong shape (torchvision raises
ValueError "Argument displacement shape should be ..."; kornia's shapes do not broadcast).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import torch
import torchvision.transforms.functional as F_v1
import torchvision.transforms.v2.functional as F_v2
from hypothesis import strategies as st
from torchvision.transforms import InterpolationMode

from conformance import (
    KORNIA,
    OMIT,
    TORCHVISION_PIL,
    TV1,
    TV2,
    Case,
    ExpectedError,
    Gradient,
    Implementation,
    Operation,
    Recipe,
    Rule,
    Tolerance,
    batched,
    fills,
    keywords,
    stored_fill,
)
from conformance.references import perspective, warp
from conformance.spec.case_pieces import WARP_MODES, WARP_RECIPES, warp_variants
from conformance.spec.libraries import SUFFIXES

VALID = warp_variants()
INVALID = {"displacement-shape": "a displacement field one row taller than the image"}
pixels = st.one_of(st.just(0.0), st.integers(-3, 3).map(float), st.decimals(-3, 3, places=2).map(float))


@st.composite
def waves(draw: st.DrawFn) -> dict[str, Any]:
    """Shifts and amplitudes up to 3 pixels (0, whole or two decimals), frequencies up to 2 half-turns a side."""
    frequency = st.decimals(0, 2, places=1).map(float)
    return {
        "shift": [draw(pixels), draw(pixels)],
        "amplitude": [draw(pixels), draw(pixels)],
        "frequency": [draw(frequency), draw(frequency)],
        "phase": draw(st.decimals(0, "6.28", places=2).map(float)),
    }


def wave_on(image: torch.Tensor, wave: dict[str, Any], height: int, width: int) -> torch.Tensor:
    """perspective.wave_field on the image's device, in float64 torch, the same operations in the same order."""
    device, f64 = image.device, torch.float64
    xs = ((2.0 * torch.arange(width, device=device, dtype=f64) + 1.0) / width - 1.0)[None, :]
    ys = ((2.0 * torch.arange(height, device=device, dtype=f64) + 1.0) / height - 1.0)[:, None]
    fx, fy = wave["frequency"]
    angle = math.pi * (fx * xs + fy * ys) + wave["phase"]
    components = []
    for k, length in ((0, width), (1, height)):
        values = wave["shift"][k] + wave["amplitude"][k] * torch.sin(angle + k * math.pi / 2)
        components.append((values * (2.0 / length)).expand(height, width))
    return torch.stack(components, dim=-1)


def _positions_features(u: np.ndarray, v: np.ndarray, case: Case, nearest: bool) -> dict[str, Any]:
    height, width = case.recipe.height, case.recipe.width
    return {
        "tie_gap": warp.tie_gap(warp.position_tie_distance(u, v, height, width)) if nearest else "n/a",
        "border_samples": warp.position_border_samples(u, v, height, width),
        "fill_passed": "fill" not in case.params.get(OMIT, ()),
        "singleton_axis": min(height, width) == 1,
        "batched": math.prod(case.recipe.batch) > 1,
    }


# -- torchvision --------------------------------------------------------------------------------------
@st.composite
def elastic_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    return {
        "wave": draw(waves(), label="wave"),
        "interpolation": mode if mode in WARP_MODES else "bilinear",
        "fill": draw(fills(recipe.dtype), label="fill"),
        **({"taller": 1} if mode == "displacement-shape" else {}),
    }


def field_of(case: Case) -> np.ndarray:
    return perspective.wave_field(case.params["wave"], case.recipe.height, case.recipe.width)


def elastic_reference(image: np.ndarray, case: Case) -> np.ndarray:
    p = case.params
    return perspective.elastic(image, field_of(case), p["interpolation"], stored_fill(p["fill"], case.recipe.dtype))


def elastic_features(case: Case) -> dict[str, Any]:
    if "taller" in case.params:
        return {}
    height, width = case.recipe.height, case.recipe.width
    u, v = perspective.elastic_positions(field_of(case), height, width)
    return _positions_features(u, v, case, case.params["interpolation"] == "nearest")


def _tv(function):
    def call(image: Any, p: dict[str, Any]) -> Any:
        """The field on the image's device (a PIL image: the cpu), (1, H, W, 2); one row taller in the error mode."""
        tensor = isinstance(image, torch.Tensor)
        height, width = image.shape[-2:] if tensor else (image.height, image.width)
        field = wave_on(image if tensor else torch.empty(0), p["wave"], height + p.get("taller", 0), width)[None]
        return function(image, field, **keywords(p, interpolation=("interpolation", InterpolationMode), fill=None))

    return call


EXACT = Tolerance("exact", reason="nearest copies one input pixel or the fill; ties are known issues")


def _half(name: str, ulp: float) -> Tolerance:
    return Tolerance(
        f"{name}-output-rounding",
        atol=ulp + 3.1e-5,
        reason=f"two roundings to {name} of values below 2 (an ulp at [1, 2), {ulp:.3g}) plus float32 positions; "
        "torchvision's half-precision grid is a known issue (vision-half-precision-grid-elastic-*)",
    )


TOLERANCES = [
    Rule(EXACT, mode="nearest"),
    Rule(EXACT, mode="displacement-shape"),
    Rule(
        Tolerance("pillow-truncates", atol=1, reason="torchvision's PIL path: the tensor path, rounded (measured 1)"),
        check="pil",
    ),
    Rule(Tolerance("uint8-rounding", atol=1, reason="float32 sampling, rounded: one level; measured 1"), dtype="uint8"),
    Rule(
        Tolerance("uint16-rounding", atol=1, reason="float32 interpolation of values up to 65535, rounded: one level"),
        dtype="uint16",
    ),
    Rule(
        Tolerance(
            "float32-coordinates",
            atol=3.1e-5,
            reason="float32 grid: the identity grid plus the field (coordinates up to 2, 1.2e-7 each) unnormalised "
            "by W / 2 (up to 24): a few ulps of positions up to 64 (3.8e-6 each), times a slope up to 2 "
            "(test_affine.py's 3.1e-5); measured 8.1e-6 (v2), 2.7e-6 (v1), 7.1e-6 (kornia) over 150 cases",
        ),
        dtype="float32",
    ),
    Rule(
        Tolerance(
            "float64-coordinates",
            atol=1e-11,
            reason="float64 grid: a few ulps of positions up to 64; measured 2.3e-14 (v2), 1.4e-14 (kornia)",
        ),
        dtype="float64",
    ),
    Rule(_half("float16", 2**-10), dtype="float16"),
    Rule(_half("bfloat16", 2**-7), dtype="bfloat16"),
]


# A sample almost a pixel into the fill gives the image a tiny weight (1 - frac): float32 positions, off by ~1e-7
# pixel, move that weight by ~1e-7 absolute, which is 1e-3 of a gradient whose norm is ~1e-4 (a one-pixel image
# displaced by about a pixel).  A dropped or misrouted term is 0.1 and more.
GRADIENT = Gradient(
    modes=("bilinear",),
    tolerances=[
        Rule(
            Tolerance(
                "gradient-float32-small-weights",
                atol=5e-3,
                reason="float32 positions (~1e-7 pixel) against a gradient as small as the weight of a sample almost "
                "a pixel outside the image (~1e-4): measured 1.2e-3 of the norm (kornia, a 1x1 image displaced by "
                "1.99 pixels); elsewhere under 5e-6",
            ),
            check="gradient",
            dtype="float32",
        )
    ],
)


def _split(library: str, call: Any, **fields: Any) -> list[Implementation]:
    """Default interpolation BILINEAR (documented by v2 and v1; a case may leave it out) and NEAREST, always passed;
    fill documented as 0 (v1) / None, zeros (v2)."""
    defaults = {"fill": 0}
    return [
        Implementation(
            library=library,
            call=call,
            modes=("bilinear",),
            defaults={"interpolation": "bilinear", **defaults},
            **fields,
        ),
        Implementation(
            library=library,
            call=call,
            modes=("nearest",),
            suffix=f"{SUFFIXES[library]}_nearest",
            defaults=defaults,
            **fields,
        ),
    ]


TV_RAISES = {"displacement-shape": ExpectedError("torchvision checks the shape", ValueError, match="displacement")}
TV_FIELDS = {"raises": TV_RAISES, "spec": {"pil_input": TORCHVISION_PIL}}

ELASTIC = Operation(
    name="elastic",
    description="elastic warp by a given displacement field (normalised units, added to the identity grid)",
    reference=elastic_reference,
    params=elastic_params,
    dtypes=("uint8", "uint16", "float16", "bfloat16", "float32", "float64"),
    modes=WARP_MODES,
    invalid=INVALID,
    variants=[*VALID, ("float32", "displacement-shape")],
    tolerances=TOLERANCES,
    recipes=WARP_RECIPES,
    optional=lambda mode: ("interpolation", "fill") if mode in WARP_MODES else (),
    spec={"features": elastic_features},
    gradient=GRADIENT,
    implementations=[
        *_split(TV2, _tv(F_v2.elastic), **TV_FIELDS),
        *_split(TV1, _tv(F_v1.elastic_transform), **TV_FIELDS),
    ],
)
globals().update(ELASTIC.tests())


# -- kornia ----------------------------------------------------------------------------------------------
@st.composite
def kornia_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """The noise: a wave (as torchvision's field, normalised units); kernel sizes odd 1-15 (y, x), sigma 0.5-8
    (y, x), alpha 0.5-2 (x, y), both align_corners, padding "zeros" or "border"."""
    odd = st.integers(0, 7).map(lambda n: 2 * n + 1)
    sigma = st.decimals("0.5", 8, places=1).map(float)
    alpha = st.decimals("0.5", 2, places=2).map(float)
    return {
        "wave": draw(waves(), label="wave"),
        "kernel_size": [draw(odd), draw(odd)],
        "sigma": [draw(sigma), draw(sigma)],
        "alpha": [draw(alpha), draw(alpha)],
        "align_corners": draw(st.booleans(), label="align_corners"),
        "interpolation": mode if mode in WARP_MODES else "bilinear",
        "padding_mode": draw(st.sampled_from(("zeros", "border")), label="padding_mode"),
        **({"taller": 1} if mode == "displacement-shape" else {}),
    }


def kornia_field(case: Case) -> np.ndarray:
    """The noise smoothed (kernel (x, y) = kernel_size reversed, zeros beyond the edges) and scaled by alpha."""
    p, height, width = case.params, case.recipe.height, case.recipe.width
    noise = np.moveaxis(perspective.wave_field(p["wave"], height, width), -1, 0)  # (2, H, W), x first
    smooth = perspective.zero_padded_blur(noise, p["kernel_size"][::-1], p["sigma"][::-1])
    return np.moveaxis(smooth * np.asarray(p["alpha"], dtype=np.float64)[:, None, None], 0, -1)


def kornia_reference(image: np.ndarray, case: Case) -> np.ndarray:
    p = case.params
    padding = "border" if p["padding_mode"] == "border" else "fill"
    return perspective.elastic(image, kornia_field(case), p["interpolation"], 0.0, p["align_corners"], padding)


def kornia_features(case: Case) -> dict[str, Any]:
    """In the error mode, whether the image is one row tall (a taller noise then broadcasts against its grid)."""
    if "taller" in case.params:
        return {"one_row": case.recipe.height == 1}
    p, height, width = case.params, case.recipe.height, case.recipe.width
    u, v = perspective.elastic_positions(kornia_field(case), height, width, p["align_corners"])
    found = _positions_features(u, v, case, p["interpolation"] == "nearest")
    return found | {"align_corners": p["align_corners"], "padding_mode": p["padding_mode"]}


def _kornia(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """elastic_transform2d with the noise (B, 2, H, W) in the image's dtype on its device; kernel_size and sigma
    (y, x), alpha (x, y), as kornia documents them."""
    batch, height, width = image.shape[0], *image.shape[-2:]
    noise = wave_on(image, p["wave"], height + p.get("taller", 0), width).permute(2, 0, 1)[None]
    with warnings.catch_warnings():
        # kornia builds the identity grid with affine_grid, which warns for a one-pixel side with align_corners=True
        # ("affine_grid behavior has changed for unit-size grids"): kornia's own call, not a result (the reference
        # checks the output of those cases like any other)
        warnings.filterwarnings("ignore", message="Since version 1.3.0, affine_grid behavior", category=UserWarning)
        return _elastic_transform2d(image, noise, batch, p)


def _elastic_transform2d(image: torch.Tensor, noise: torch.Tensor, batch: int, p: dict[str, Any]) -> torch.Tensor:
    from kornia.geometry.transform import elastic_transform2d

    return elastic_transform2d(
        image,
        noise.to(image.dtype).expand(batch, -1, -1, -1),
        kernel_size=tuple(p["kernel_size"]),
        sigma=tuple(p["sigma"]),
        alpha=tuple(p["alpha"]),
        align_corners=p["align_corners"],
        mode=p["interpolation"],
        padding_mode=p["padding_mode"],
    )


ELASTIC_KORNIA = Operation(
    name="elastic2d",
    description="kornia's elastic_transform2d: noise smoothed by a Gaussian, scaled by alpha, added to the grid",
    reference=kornia_reference,
    params=kornia_params,
    dtypes=("float32", "float64"),
    modes=WARP_MODES,
    invalid=INVALID,
    variants=[
        ("float32", "nearest"),
        ("float32", "bilinear"),
        ("float64", "bilinear"),
        ("float32", "displacement-shape"),
    ],
    tolerances=TOLERANCES,
    recipes=WARP_RECIPES,
    spec={"features": kornia_features},
    gradient=GRADIENT,
    implementations=[
        Implementation(
            library=KORNIA,
            call=batched(_kornia),
            spec={"keeps_memory_format": False, "needs": ("kornia.geometry.transform.elastic_transform2d",)},
        )
    ],
)
globals().update(ELASTIC_KORNIA.tests())
