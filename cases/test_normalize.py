"""Normalize: torchvision v2 `normalize` and `Normalize`, v1 `normalize`, kornia `normalize`.

Reference: (x - mean) / std per channel in float64 with the drawn Python floats (a length-1 mean/std broadcasts).
Error modes, held on every library: a zero std; a std that is 0 once rounded to the image's dtype (1e-8 in float16);
a mean/std whose length is not the channel count; a length-1 mean/std for 2-4 channels (torchvision asks for one
per channel); an integer image.  Each library raises the class it declares (on every target the class the cpu
raises), documents accepting the input (kornia: integer images and a length-1 mean/std), or is a known issue.
Tolerances were measured with benchmarks/calibrate.py (docs/tolerances.md).

PIL input: all four raise TypeError (or AttributeError) for a PIL image ("This transform does not support PIL
Image", v1 functional.py, v2 _misc.py), so the `pil` item (TORCHVISION_PIL) does not apply.
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
    Accepted,
    Case,
    Counterpart,
    ExpectedError,
    Gradient,
    Implementation,
    ModuleOp,
    Operation,
    Recipe,
    Returns,
    Rule,
    Tolerance,
    image_recipes,
    module_class,
    peak,
    versions,
)

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTEGERS = ("uint8", "uint16")
INVALID = {
    "std-zero": "a std of 0 for some channel",
    "std-underflow": "a std that rounds to 0 in the image's dtype (below 2^-25 for float16)",
    "wrong-channels": "mean and std longer or shorter than the channel count",
    "one-value": "a mean and std of length 1 for an image of 2 to 4 channels",
    "integer-input": "a uint8 image (mean and std on its 0-255 scale)",
}
# What each library raises for each invalid input (torchvision 0.29, kornia 0.9; older releases: docs/compatibility.md).
# Left out: torchvision's v2 std-underflow (it checks the Python list for zeros, before the cast) and every
# torchvision's one-value (it broadcasts): known issues.
TORCHVISION_RAISES = {"std-zero": ValueError, "wrong-channels": RuntimeError, "integer-input": TypeError}
V1_RAISES = TORCHVISION_RAISES | {"std-underflow": ExpectedError("std 0 after the cast", ValueError, match="zero")}
KORNIA_RAISES = {"wrong-channels": ValueError}
# kornia's normalize.py (0.9), its docstring: a length-1 mean/std for a 4-channel image, and integer promotion
KORNIA_ONE_VALUE = Accepted(
    documentation="kornia/enhance/normalize.py:160-161 and 200 (0.9.0), normalize's docstring example: "
    "`x = torch.rand(1, 4, 3, 3); out = normalize(x, torch.tensor([0.0]), torch.tensor([255.]))`, and its code: "
    "'# Allow broadcast on channel dimension'",
    meaning=lambda params: params,  # the reference broadcasts a length-1 mean/std over the channels
)
KORNIA_INTEGERS = Accepted(
    documentation="kornia/enhance/normalize.py:154-157 (0.9.0): 'An integer or bool ``data`` is converted to "
    "torch's default floating dtype (float32 unless changed) before ``mean`` and ``std`` are applied ... Pixel "
    "values are not rescaled: give ``mean`` and ``std`` in the 0-255 scale for a uint8 image.'",
    meaning=lambda params: params,  # (x - mean) / std on the integer values, in float32 (the output dtype)
)
KORNIA_ACCEPTS = {"one-value": KORNIA_ONE_VALUE} | (
    {"integer-input": KORNIA_INTEGERS} if versions.satisfies("kornia", ">=0.9") else {}
)


@st.composite
def normalize_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """Per-channel mean in [0, 1] and std in [0.05, 2], as Python floats (3 decimals: readable repros), times white
    for an integer image (kornia: "give mean and std in the 0-255 scale for a uint8 image")."""
    channels = recipe.channels
    if mode == "wrong-channels":
        channels = draw(st.sampled_from([n for n in range(2, 6) if n != recipe.channels]), label="wrong_length")
    elif mode == "one-value":
        channels = 1
    value = partial(st.decimals, places=3, allow_nan=False, allow_infinity=False)
    white = peak(recipe.dtype)
    mean = [float(draw(value(0, 1))) * white for _ in range(channels)]
    std = [float(draw(value("0.05", 2))) * white for _ in range(channels)]
    if mode == "std-zero":
        std[draw(st.integers(0, channels - 1), label="zero_channel")] = 0.0
    elif mode == "std-underflow":  # float16 rounds below 2^-25 (half its smallest subnormal) to 0
        tiny = draw(st.floats(1e-12, 2.9e-8), label="tiny_std")
        std[draw(st.integers(0, channels - 1), label="tiny_channel")] = tiny
    return {"mean": mean, "std": std}


def normalize_timing(recipe: Recipe, mode: str) -> dict[str, Any]:
    """ImageNet's mean and std, as torchvision's reference scripts use them."""
    return {"mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]}


def normalize_reference(image: np.ndarray, case: Case) -> np.ndarray:
    shape = (-1, 1, 1)
    mean = np.asarray(case.params["mean"], dtype=np.float64).reshape(shape)
    std = np.asarray(case.params["std"], dtype=np.float64).reshape(shape)
    return (image - mean) / std


def normalize_recipes(
    dtype: str, batch_dims: tuple[int, int] = (0, 2), channels: tuple[int, ...] = (3, 1, 4, 2)
) -> Any:
    return image_recipes(
        dtype, channels=channels, max_side=64, min_batch_dims=batch_dims[0], max_batch_dims=batch_dims[1]
    )


def normalize_mode_recipes(dtype: str, mode: str) -> Any:
    """A length-1 mean/std is invalid only for 2 channels or more."""
    return normalize_recipes(dtype, channels=(3, 4, 2) if mode == "one-value" else (3, 1, 4, 2))


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
    ("float16", "std-underflow"),
    ("float32", "wrong-channels"),
    ("float32", "one-value"),
    ("uint8", "integer-input"),
]
KORNIA_TOLERANCES = [
    Rule(
        Tolerance(
            "float32-ops-promoted",
            atol=1e-5,
            rtol=1e-5,
            reason="a uint8 image promoted to float32 (exact), then float32-ops: mean/std rounded to float32, one "
            "subtract and one divide in float32, outputs up to 20 in magnitude; measured max |d| 1.37e-6 over 300 "
            "cases",
        ),
        dtype="uint8",
        mode="integer-input",
    )
]


def _kornia_normalize(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """kornia takes mean/std tensors, which a user builds once; filled on the device here, so the adapter
    itself copies nothing from the host on each call (that would be reported as a constant upload).  In the
    image's dtype, as kornia casts them, except for an integer image: kornia promotes it to float32 first, and
    a uint8 mean of 0.5 would be 0."""
    dtype = image.dtype if image.is_floating_point() else torch.get_default_dtype()

    def on_device(values: list[float]) -> torch.Tensor:
        return torch.stack([torch.full((), v, dtype=dtype, device=image.device) for v in values])

    return kornia.enhance.normalize(image, on_device(params["mean"]), on_device(params["std"]))


def _module(name: str) -> Counterpart:
    """A library's Normalize class, built with the mean and std lists its function gets."""
    return module_class(name, lambda params: {"mean": params["mean"], "std": params["std"]})


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
    spec={"timing": normalize_timing, "mode_recipes": normalize_mode_recipes},
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
            counterpart=Counterpart(
                name="torchvision.transforms.v2.functional.normalize",
                call=lambda image, params: F_v2.normalize(image, params["mean"], params["std"]),
            ),
            description="torchvision.transforms.v2.Normalize",
            spec={"needs": ("torchvision.transforms.v2.Normalize",)},
        ),
        Implementation(
            library=TV1,
            name="normalize_v1",
            raises=V1_RAISES,
            call=lambda image, params: F_v1.normalize(image, params["mean"], params["std"]),
            counterpart=_module("torchvision.transforms.Normalize"),
            description="torchvision.transforms.functional.normalize (v1)",
        ),
        # kornia documents (B, C, *) input and a channel-count check only; a zero std divides (a known issue),
        # integers promote to float32 (0.9; before, they are cast with the stats: a known issue).
        Implementation(
            library=KORNIA,
            name="normalize_kornia",
            raises=KORNIA_RAISES,
            accepts=KORNIA_ACCEPTS,
            call=_kornia_normalize,
            counterpart=_module("kornia.enhance.Normalize"),
            recipes=partial(normalize_recipes, batch_dims=(1, 1)),
            tolerances=KORNIA_TOLERANCES,
            description="kornia.enhance.normalize",
            spec={
                "needs": ("kornia.enhance.normalize",),
                "returns": Returns(
                    dtype=lambda case: "float32" if case.recipe.dtype in INTEGERS else case.recipe.dtype
                ),
            },
        ),
    ],
)
NORMALIZE, NORMALIZE_MODULE, NORMALIZE_V1, NORMALIZE_KORNIA = NORMALIZE_OPERATION.specs()
globals().update(NORMALIZE_OPERATION.tests())
