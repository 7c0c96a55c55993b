"""Deliberately broken resize implementations, and a spec builder, for the harness's own tests.

Each planted bug has one check that must catch it; `good_resize` must pass every check.
"""

from __future__ import annotations

from typing import Any

import torch
import torchvision.transforms.v2.functional as F
from hypothesis import strategies as st

from conformance import OpSpec, Recipe, Rule, Tolerance, image_recipes
from conformance.references import resample
from conformance.spec.recipes import Case


def good_resize(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    return F.resize(image, params["size"], interpolation=F.InterpolationMode.BILINEAR, antialias=False)


def shifted_resize(image, params):
    """Off by one pixel: the output is shifted one column to the right (layout kept)."""
    out = good_resize(image, params)
    shifted = out.clone()
    shifted[..., 1:] = out[..., :-1]
    shifted[..., 0] = out[..., -1]
    return shifted


def sprinkled_resize(image, params):
    """+2 on every 100th element (1% of pixels), saturating; the output keeps its layout."""
    out = good_resize(image, params)
    delta = torch.zeros(out.numel(), dtype=torch.int32)
    delta[::100] = 2
    return torch.empty_like(out).copy_((out.to(torch.int32) + delta.reshape(out.shape)).clamp(0, 255))


def float_resize(image, params):
    """Returns float32 when given uint8 (values still right)."""
    return good_resize(image.to(torch.float32), params)


def mutating_resize(image, params):
    """Right output, but zeroes the input's first pixel in place."""
    out = good_resize(image, params)
    image[..., 0, 0] = 0 if image[..., 0, 0].ne(0).any() else 1
    return out


def crashing_resize(image, params):
    raise RuntimeError("planted crash")


@st.composite
def size_params(draw, recipe: Recipe, mode: str) -> dict[str, Any]:
    # At least 2x2: torch's uint8 kernel asserts on 3-channel 1x1 outputs (see cases/known_issues.toml).
    return {"size": [draw(st.integers(2, 40)), draw(st.integers(2, 40))]}


def bilinear_reference(image, case: Case):
    return resample.resize(image, tuple(case.params["size"]), "bilinear", antialias=False)


def make_spec(name: str, call, dtypes=("uint8", "float32")) -> OpSpec:
    return OpSpec(
        name=name,
        call=call,
        reference=bilinear_reference,
        dtypes=dtypes,
        modes=("bilinear",),
        params=size_params,
        recipes=lambda dtype: image_recipes(dtype, max_side=40, contents=["noise"]),
        tolerances=[
            Rule(Tolerance("uint8", atol=1, reason="rounding"), dtype="uint8"),
            Rule(Tolerance("float", atol=1e-4, rtol=1e-5, reason="float32 coordinates"), dtype="float*"),
        ],
    )
