"""Planckian jitter: kornia `RandomPlanckianJitter` (modes blackbody and CIED, p=1).

Its parameters (which row of the coefficient table each image gets) are drawn once
per case on the cpu and replayed on every target.  Reference: float64 numpy of the
documented transform: clamp to [0, 1], multiply red and blue by the drawn row's two
coefficients, keep green, clamp again.  The table itself is kornia's published data
(`get_planckian_coeffs`); the placement checks make sure it follows `.to()` (kornia#2791).
"""
from __future__ import annotations

from functools import lru_cache, partial
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from conformance import ModuleOp, OpSpec, Rule, Tolerance, image_recipes
from conformance.recipes import Case

MODES = ("blackbody", "CIED")


@lru_cache(maxsize=None)
def coefficients(mode: str) -> np.ndarray:
    """(rows, 2) table of red and blue multipliers, as published by kornia."""
    from kornia.augmentation._2d.intensity.planckian_jitter import get_planckian_coeffs

    return get_planckian_coeffs(mode).double().numpy()


def planckian_reference(image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor]) -> np.ndarray:
    rows = coefficients(case.params["mode"])[sampled["idx"].long().numpy()]
    gains = np.stack([rows[:, 0], np.ones(len(rows)), rows[:, 1]], axis=1)[:, :, None, None]
    return np.clip(np.clip(image, 0, 1) * gains, 0, 1)


def build(params: dict[str, Any]) -> torch.nn.Module:
    import kornia

    return kornia.augmentation.RandomPlanckianJitter(mode=params["mode"], p=1.0)


def sample(module: torch.nn.Module, image: torch.Tensor, params: dict[str, Any]) -> dict[str, torch.Tensor]:
    return module.forward_parameters(image.shape)


PLANCKIAN = OpSpec(
    name="planckian_jitter_kornia",
    description="kornia.augmentation.RandomPlanckianJitter(p=1) with replayed parameters",
    module=ModuleOp(build=build, sample=sample),
    reference=planckian_reference,
    dtypes=("float32", "float64"),
    modes=MODES,
    params=lambda recipe, mode: st.just({"mode": mode}),
    # kornia documents (B, 3, H, W); out-of-range content exercises the input clamp.
    recipes=partial(image_recipes, channels=(3,), min_batch_dims=1, max_batch_dims=1, max_side=64),
    tolerances=[
        Rule(Tolerance("float32-multiply", atol=1e-6, rtol=1e-6,
                       reason="the float32 table times a value in [0, 1], rounded once; measured max 3.0e-8"),
             dtype="float32"),
        Rule(Tolerance("float64-multiply", atol=1e-12, rtol=1e-12,
                       reason="float64 throughout (the table is widened from float32 in both); measured max 0"),
             dtype="float64"),
    ],
    keeps_memory_format=False,  # kornia stacks the channels into a new contiguous tensor
    needs=("kornia.augmentation.RandomPlanckianJitter",),
)

test_planckian_jitter_kornia = PLANCKIAN.test()
