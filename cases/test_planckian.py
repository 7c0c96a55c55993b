"""Planckian jitter: kornia `RandomPlanckianJitter` (modes blackbody and CIED, p=1).

Its parameters (which row of the illuminant table each image gets) are drawn once
per case on the cpu and replayed on every target; the module's own sampling runs on
every target too (the `sampling` check).  Reference: float64 numpy of the documented
transform with the authors' published table, transcribed in conformance.references.planckian
(never kornia's copy): clamp to [0, 1], multiply red and blue by the drawn row's R/G and
B/G, keep green, clamp again.  The placement checks make sure the table follows `.to()`
(kornia#2791); a parameter-free augmentation must also work when left on the cpu.
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

MODES = ("blackbody", "CIED")


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


PLANCKIAN = OpSpec(
    name="planckian_jitter_kornia",
    description="kornia.augmentation.RandomPlanckianJitter(p=1) with replayed parameters",
    module=ModuleOp(build=build, sample=kornia_parameters, bounds=row_bounds, unmoved="works"),
    reference=planckian_reference,
    dtypes=("float32", "float64"),
    modes=MODES,
    params=lambda recipe, mode: st.just({"mode": mode}),
    # kornia documents (B, 3, H, W); out-of-range content exercises the input clamp.
    recipes=partial(
        image_recipes,
        channels=(3,),
        min_batch_dims=1,
        max_batch_dims=1,
        max_side=64,
        contents=None if CLAMPS else [c for c in CONTENTS if c != "out_of_range"],
    ),
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
    ],
    keeps_memory_format=False,  # kornia stacks the channels into a new contiguous tensor
    needs=("kornia.augmentation.RandomPlanckianJitter",),
    gradient=Gradient(),  # a per-channel multiply and the clamp to [0, 1] (a kink the probe leaves out)
    timing=lambda recipe, mode: {"mode": mode},
)

test_planckian_jitter_kornia = PLANCKIAN.test()
