"""Planckian jitter: kornia `RandomPlanckianJitter` (modes blackbody and CIED, p=1).

Its parameters (which row of the illuminant table each image gets) are drawn once
per case on the cpu and replayed on every target; the module's own sampling runs on
every target too (the `sampling` check).  Reference: float64 numpy of the documented
transform with the authors' published table, transcribed in conformance.references.planckian
(never kornia's copy): clamp to [0, 1], multiply red and blue by the drawn row's R/G and
B/G, keep green, clamp again.  The placement checks make sure the table follows `.to()`
(kornia#2791); a parameter-free augmentation must also work when left on the cpu.
Its whole domain: every floating dtype it takes, and the invalid inputs just outside the documented one (an
image of 1 or 4 channels, an integer image; an unknown mode name, a row index one past the table, a probability
outside [0, 1]: constructor arguments, checked through a function that builds the module and calls it, since a
module that cannot be built has nothing to sample and replay).  An empty image is not invalid here: the jitter
is per pixel, and kornia returns an empty image for one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from conformance import (
    CONTENTS,
    Case,
    ExpectedError,
    Gradient,
    ModuleOp,
    OpSpec,
    Rule,
    Tolerance,
    image_recipes,
    kornia_parameters,
    versions,
)
from conformance.references import planckian
from conformance.spec.case_pieces import P_OUT_OF_RANGE, exception_class

MODES = ("blackbody", "CIED")
CHANNELS = {"channels-1": "1 channel (documented: three)", "channels-4": "4 channels (documented: three)"}
INTEGER_IMAGE = {"integer-input": "a uint8 image (it takes floating point images)"}
ARGUMENTS = {
    "unknown-mode": "a mode other than 'blackbody' or 'CIED'",
    "select-from-out-of-range": "a select_from row one past the table's end (or before its start)",
    "p-out-of-range": "a probability outside [0, 1] (-1/64 or 1 + 1/64)",
}


def planckian_reference(image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor]) -> np.ndarray:
    return planckian.planckian_jitter(image, case.params["mode"], sampled["idx"].long().numpy())


def row_bounds(params: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """The sampled row index lies in the table (rows - 1 at most)."""
    return {"idx": (0.0, float(len(planckian.TABLES[params["mode"]]) - 1))}


# kornia documents clamping input and output to [0, 1] from 0.9; before, values below 0 pass through (as in the
# authors' code), so out-of-range inputs are outside the documented meaning there and are not drawn.
CLAMPS = not versions.below("kornia", "0.9")
NARROWED = (
    ""
    if CLAMPS
    else (
        f"kornia {versions.version_of('kornia')} < 0.9 does not clamp inputs to [0, 1]: "
        f"out-of-range content is not drawn"
    )
)


def build(params: dict[str, Any]) -> torch.nn.Module:
    import kornia

    return kornia.augmentation.RandomPlanckianJitter(mode=params["mode"], p=1.0)


def recipes(dtype: str, mode: str) -> Any:
    """kornia documents (B, 3, H, W); out-of-range content exercises the input clamp.  The channel modes draw
    1 or 4 channels."""
    return image_recipes(
        dtype,
        channels=(int(mode[-1]) if mode in CHANNELS else 3,),
        min_batch_dims=1,
        max_batch_dims=1,
        max_side=64,
        contents=None if CLAMPS else [c for c in CONTENTS if c != "out_of_range"],
    )


# float32 and float64 in both modes; the half-precision dtypes (same arithmetic in each mode) in one mode each
VARIANTS = [
    *[(d, m) for d in ("float32", "float64") for m in MODES],
    ("float16", "blackbody"),
    ("bfloat16", "CIED"),
    *[("float32", m) for m in CHANNELS],
    ("uint8", "integer-input"),
]
PLANCKIAN = OpSpec(
    name="planckian_jitter_kornia",
    description="kornia.augmentation.RandomPlanckianJitter(p=1) with replayed parameters",
    module=ModuleOp(build=build, sample=kornia_parameters, bounds=row_bounds, unmoved="works"),
    reference=planckian_reference,
    dtypes=("float32", "float64", "float16", "bfloat16", "uint8"),
    modes=(*MODES, *CHANNELS, *INTEGER_IMAGE),
    variants=VARIANTS,
    params=lambda recipe, mode: st.just({"mode": mode if mode in MODES else "blackbody"}),
    mode_recipes=recipes,
    # "The input must have three channels" (a ShapeError); its dtype check takes the floating dtypes only
    error_modes={
        mode: ExpectedError(why, exception_class("kornia.core.exceptions.ShapeError", ValueError), match="expected 3")
        for mode, why in CHANNELS.items()
    }
    | {"integer-input": ExpectedError(INTEGER_IMAGE["integer-input"], TypeError, match="Expected input of")},
    narrowed=NARROWED,
    tolerances=[
        Rule(
            Tolerance(
                "float32-multiply",
                atol=1e-6,
                rtol=1e-6,
                reason="the float32 ratio times a value in [0, 1], rounded once; measured max 3.0e-8",
            ),
            dtype="float32",
        ),
        Rule(
            Tolerance(
                "float64-multiply",
                atol=1e-12,
                rtol=1e-12,
                reason="float64 multiply; the published 4-decimal table is float32 data, and both the op "
                "and the reference take R/G and B/G in float32; measured max 0",
            ),
            dtype="float64",
        ),
        Rule(
            Tolerance(
                "float16-multiply",
                atol=1e-3,
                reason="kornia casts the float32 ratio to float16 (2^-11 relative) and multiplies in float16 "
                "(2^-11 relative) a value it then clamps to [0, 1]: at most 2^-10 = 9.8e-4; measured max 6.2e-4 "
                "(300 cases, calibrate.py)",
            ),
            dtype="float16",
        ),
        Rule(
            Tolerance(
                "bfloat16-multiply",
                atol=8e-3,
                reason="the float16 bound with bfloat16's 8-bit significand: 2 x 2^-8 = 7.8e-3; measured max "
                "5.2e-3 (300 cases, calibrate.py)",
            ),
            dtype="bfloat16",
        ),
        Rule(Tolerance("error-modes", reason="error modes compare exception classes, not values")),
    ],
    keeps_memory_format=False,  # kornia stacks the channels into a new contiguous tensor
    needs=("kornia.augmentation.RandomPlanckianJitter",),
    gradient=Gradient(),  # a per-channel multiply and the clamp to [0, 1] (a kink the probe leaves out)
    timing=lambda recipe, mode: {"mode": mode} if mode in MODES else None,
)


# Constructor arguments just outside the documented ones: "mode: 'blackbody' or 'CIED'"; "select_from ... `blackbody`
# range [0-24], `CIED` range [0-22] ... one past the end raises at construction, and a negative one counts from the
# end"; p: a probability, which kornia does not check (a known issue).
UNKNOWN_MODES = ("cie_d", "CIE", "D65", "black-body", "planckian", "")


@st.composite
def arguments(draw: st.DrawFn, recipe: Any, mode: str) -> dict[str, Any]:
    table = draw(st.sampled_from(MODES), label="table")
    if mode == "unknown-mode":
        return {"mode": draw(st.sampled_from(UNKNOWN_MODES), label="mode"), "p": 1.0}
    if mode == "select-from-out-of-range":
        rows = len(planckian.TABLES[table])
        valid = draw(st.lists(st.integers(-rows, rows - 1), max_size=2), label="valid_rows")
        return {"mode": table, "select_from": [*valid, draw(st.sampled_from([rows, -rows - 1]), label="row")], "p": 1.0}
    return {"mode": table, "p": draw(P_OUT_OF_RANGE[mode], label="p")}


def built_and_called(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    import kornia

    keywords = {k: params[k] for k in ("mode", "select_from", "p") if k in params}
    return kornia.augmentation.RandomPlanckianJitter(**keywords)(image)


PLANCKIAN_ARGUMENTS = OpSpec(
    name="planckian_jitter_kornia_arguments",
    description="kornia.augmentation.RandomPlanckianJitter built with invalid arguments, then called",
    call=built_and_called,
    reference=None,
    dtypes=("float32",),
    modes=tuple(ARGUMENTS),
    params=arguments,
    recipes=lambda dtype: recipes(dtype, "blackbody"),
    error_modes={
        "unknown-mode": ExpectedError(ARGUMENTS["unknown-mode"], RuntimeError, match="Unexpected mode"),
        "select-from-out-of-range": ExpectedError(ARGUMENTS["select-from-out-of-range"], IndexError, match="out of"),
        "p-out-of-range": ExpectedError(ARGUMENTS["p-out-of-range"], Exception),  # not checked: a known issue
    },
    tolerances=[Rule(Tolerance("error-modes", reason="error modes compare exception classes, not values"))],
    keeps_memory_format=False,
    needs=("kornia.augmentation.RandomPlanckianJitter",),
)

test_planckian_jitter_kornia = PLANCKIAN.test()
test_planckian_jitter_kornia_arguments = PLANCKIAN_ARGUMENTS.test()
