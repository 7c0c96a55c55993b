"""Normalize: torchvision v2 `normalize` and `Normalize`, v1 `normalize`, kornia `normalize`.

Reference: (x - mean) / std per channel in float64 with the drawn Python floats.
Error modes: a zero std, a mean/std whose length is not the channel count, an
integer image; each op is held only to the rejections it makes, with the exception
class it raises (a hang or any other class fails), and every target must raise the
class the cpu raises.
Tolerances were measured with benchmarks/calibrate.py (docs/tolerances.md).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import kornia
import numpy as np
import torch
import torchvision.transforms.functional as F_v1
import torchvision.transforms.v2 as T_v2
import torchvision.transforms.v2.functional as F_v2
from hypothesis import strategies as st

from conformance import (
    KORNIA,
    TV1,
    TV2,
    Case,
    Gradient,
    Implementation,
    ModuleOp,
    Operation,
    Recipe,
    Rule,
    Tolerance,
    image_recipes,
)

FLOATS = ("float32", "float64", "float16", "bfloat16")
INVALID = {
    "std-zero": "a std of 0 for some channel",
    "wrong-channels": "mean and std longer or shorter than the channel count",
    "integer-input": "a uint8 image",
}
# What each library raises for each invalid input (torchvision 0.29, kornia 0.9; older releases: docs/compatibility.md)
TORCHVISION_RAISES = {"std-zero": ValueError, "wrong-channels": RuntimeError, "integer-input": TypeError}
KORNIA_RAISES = {"wrong-channels": ValueError}


@st.composite
def normalize_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """Per-channel mean in [0, 1] and std in [0.05, 2], as Python floats (3 decimals: readable repros)."""
    channels = recipe.channels
    if mode == "wrong-channels":
        channels = draw(st.sampled_from([n for n in range(2, 6) if n != recipe.channels]), label="wrong_length")
    value = partial(st.decimals, places=3, allow_nan=False, allow_infinity=False)
    mean = [float(draw(value(0, 1))) for _ in range(channels)]
    std = [float(draw(value("0.05", 2))) for _ in range(channels)]
    if mode == "std-zero":
        std[draw(st.integers(0, channels - 1), label="zero_channel")] = 0.0
    return {"mean": mean, "std": std}


def normalize_timing(recipe: Recipe, mode: str) -> dict[str, Any]:
    """ImageNet's mean and std, as torchvision's reference scripts use them."""
    return {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}


def normalize_reference(image: np.ndarray, case: Case) -> np.ndarray:
    shape = (-1, 1, 1)
    mean = np.asarray(case.params["mean"], dtype=np.float64).reshape(shape)
    std = np.asarray(case.params["std"], dtype=np.float64).reshape(shape)
    return (image - mean) / std


def normalize_recipes(dtype: str, batch_dims: tuple[int, int] = (0, 2)) -> Any:
    return image_recipes(
        dtype, channels=(3, 1, 4, 2), max_side=64, min_batch_dims=batch_dims[0], max_batch_dims=batch_dims[1]
    )


TOLERANCES = [
    Rule(
        Tolerance(
            "float32-ops",
            atol=1e-5,
            rtol=1e-5,
            reason="mean/std rounded to float32, one subtract and one divide in float32; outputs reach 20 "
            "in magnitude; measured max |d| 2.0e-6 over 1,200 cases",
        ),
        dtype="float32",
    ),
    Rule(
        Tolerance(
            "float64-ops", atol=1e-12, rtol=1e-12, reason="float64 throughout; measured max |d| 0 over 1,200 cases"
        ),
        dtype="float64",
    ),
    Rule(
        Tolerance(
            "float16-ops",
            atol=1e-2,
            rtol=2e-3,
            reason="bound: mean rounded to float16 (half an ulp, 2^-12 at 1) and x - mean rounded "
            "(2^-12 at most), each divided by std >= 0.05: 2 x 4.9e-3; the quotient rounded: "
            "2^-11 relative; measured max |d| 0.018 with |ref| up to 20, none beyond",
        ),
        dtype="float16",
    ),
    Rule(
        Tolerance(
            "bfloat16-ops",
            atol=8e-2,
            rtol=1e-2,
            reason="the float16 bound with 3 fewer mantissa bits: 2 x 2^-9 / 0.05 = 0.078, then 2^-8 "
            "relative; measured max |d| 0.16 with |ref| up to 20, none beyond",
        ),
        dtype="bfloat16",
    ),
    Rule(Tolerance("error-modes", reason="error modes compare exception classes, not values")),
]
VARIANTS = [(dtype, "valid") for dtype in FLOATS] + [
    ("float32", "std-zero"),
    ("float32", "wrong-channels"),
    ("uint8", "integer-input"),
]


def _kornia_normalize(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """kornia takes mean/std tensors, which a user builds once; filled on the device here, so the adapter
    itself copies nothing from the host on each call (that would be reported as a constant upload)."""

    def on_device(values: list[float]) -> torch.Tensor:
        return torch.stack([torch.full((), v, dtype=image.dtype, device=image.device) for v in values])

    return kornia.enhance.normalize(image, on_device(params["mean"]), on_device(params["std"]))


NORMALIZE_OPERATION = Operation(
    name="normalize",
    description="(x - mean) / std per channel",
    reference=normalize_reference,
    params=normalize_params,
    dtypes=FLOATS,
    modes=("valid",),
    invalid=INVALID,
    variants=VARIANTS,
    tolerances=TOLERANCES,
    recipes=normalize_recipes,
    spec={"timing": normalize_timing},
    gradient=Gradient(),  # affine per channel: the gradient is the cotangent divided by std
    implementations=[
        Implementation(
            library=TV2,
            name="normalize_v2",
            raises=TORCHVISION_RAISES,
            call=lambda image, params: F_v2.normalize(image, params["mean"], params["std"]),
            description="torchvision.transforms.v2.functional.normalize",
            spec={"needs": ("torchvision.transforms.v2.functional.normalize",)},
        ),
        Implementation(
            library=TV2,
            name="normalize_v2_module",
            raises=TORCHVISION_RAISES,
            module=ModuleOp(
                build=lambda params: T_v2.Normalize(params["mean"], params["std"]), unmoved="works"
            ),  # it holds no tensors
            description="torchvision.transforms.v2.Normalize",
            spec={"needs": ("torchvision.transforms.v2.Normalize",)},
        ),
        Implementation(
            library=TV1,
            name="normalize_v1",
            raises=TORCHVISION_RAISES,
            call=lambda image, params: F_v1.normalize(image, params["mean"], params["std"]),
            description="torchvision.transforms.functional.normalize (v1)",
        ),
        # kornia documents (B, C, *) input and a channel-count check only; a zero std divides,
        # and integers promote to float.
        Implementation(
            library=KORNIA,
            name="normalize_kornia",
            raises=KORNIA_RAISES,
            call=_kornia_normalize,
            recipes=partial(normalize_recipes, batch_dims=(1, 1)),
            description="kornia.enhance.normalize",
            spec={"needs": ("kornia.enhance.normalize",)},
        ),
    ],
)
NORMALIZE, NORMALIZE_MODULE, NORMALIZE_V1, NORMALIZE_KORNIA = NORMALIZE_OPERATION.specs()
globals().update(NORMALIZE_OPERATION.tests())
