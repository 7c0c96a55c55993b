"""References for swept classes that implement an operation the suite has a reference for.

A swept class is checked for placement, state and invariants only, unless its values can be held to the float64
reference of the operation it implements (conformance/references: the same functions the case modules' operations
use), with the arguments the sweep builds it with (sweep_tables.ARGUMENTS) and, for a random class, the
parameters drawn on the cpu and replayed (`sampled`).  Then its items include `reference`.  A random class whose
parameters cannot be replayed (torchvision's, drawn inside the call) has none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance.references import color, perspective, warp
from conformance.spec.recipes import Case
from conformance.spec.tolerances import Rule, Tolerance

IMAGENET = (np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225]))  # sweep_tables' Normalize arguments


@dataclass(frozen=True)
class SweptReference:
    """The reference of the operation a class implements, as the sweep calls it, and its tolerance."""

    operation: str  # the suite's operation whose reference this is (for messages and docs)
    reference: Callable[..., np.ndarray]  # (float64 input, case[, sampled]) -> ideal output
    tolerance: Tolerance

    @property
    def rule(self) -> Rule:
        return Rule(self.tolerance, check="reference")


def _host(value: Any) -> np.ndarray:
    return np.asarray(value.detach().cpu() if hasattr(value, "detach") else value, dtype=np.float64)


def _per_channel(values: np.ndarray) -> np.ndarray:
    return values.reshape(-1, 1, 1)


def _normalized(image: np.ndarray, case: Case, *sampled: Any) -> np.ndarray:
    mean, std = IMAGENET
    return (image - _per_channel(mean)) / _per_channel(std)


def _denormalized(image: np.ndarray, case: Case, *sampled: Any) -> np.ndarray:
    mean, std = IMAGENET
    return image * _per_channel(std) + _per_channel(mean)


def _rows(applied: np.ndarray, values: np.ndarray) -> dict[int, np.ndarray]:
    """Each applied sample's row of a sampled parameter: one row a sample (kornia 0.9), or one row an applied
    sample, in order (kornia before 0.8 draws rows for the applied samples only)."""
    rows = np.flatnonzero(applied)
    if len(values) == len(applied):
        return {int(i): values[i] for i in rows}
    return {int(i): values[k] for k, i in enumerate(rows)}


def _random_perspective(image: np.ndarray, case: Case, sampled: dict[str, Any]) -> np.ndarray:
    """Each applied sample warped bilinearly (zeros outside, align_corners=False: kornia's flags) by the homography
    taking its start points to its end points; a sample not applied (batch_prob False) is the input."""
    applied = _host(sampled["batch_prob"]) > 0.5
    starts, ends = _rows(applied, _host(sampled["start_points"])), _rows(applied, _host(sampled["end_points"]))
    out = image.copy()
    for i, start in starts.items():
        inverse = perspective.homography(ends[i].tolist(), start.tolist())  # kornia's points: pixel indices
        out[i] = warp.warp(image[i], inverse, "bilinear", 0.0)
    return out


def _random_elastic(image: np.ndarray, case: Case, sampled: dict[str, Any]) -> np.ndarray:
    """Each applied sample displaced by its noise (2, H, W), smoothed by kornia's default Gaussian (kernel 63, sigma
    32, zeros beyond the edges) and scaled by alpha 1, sampled bilinearly with zeros outside (align_corners=False):
    kornia's flags for RandomElasticTransform()."""
    applied = _host(sampled["batch_prob"]) > 0.5
    out = image.copy()
    for i, noise in _rows(applied, _host(sampled["noise"])).items():
        field = np.moveaxis(perspective.zero_padded_blur(noise, (63, 63), (32.0, 32.0)), 0, -1)
        out[i] = perspective.elastic(image[i], field, "bilinear", 0.0, False, "fill")
    return out


FLOAT32_ARITHMETIC = Tolerance(
    "sweep-float32-arithmetic",
    atol=1e-6,
    rtol=1e-6,
    reason="one or two float32 operations per element on [0, 1] images (1.2e-7 relative each); a wrong constant "
    "or channel order is off by far more",
)
TV_LUMA = Tolerance(
    "sweep-torchvision-luma",
    atol=1.2e-4,
    reason="torchvision weights red by 0.2989, BT.601 (the reference) by 0.299: 1e-4 of a [0, 1] red value, as the "
    "rgb_to_grayscale operation's tolerance says (cases/test_color.py; docs/findings.md); a wrong weight is off by "
    "far more",
)
EXACT = Tolerance("sweep-exact", reason="elements are moved, not computed: any difference is wrong")
WARP = Tolerance(
    "sweep-float32-warp",
    atol=2e-4,
    reason="a float32 homography and grid: sample positions off by ~1e-5 px on 64-pixel sides, and bilinear reads "
    "of noise change by up to 1 per pixel moved (measured over 20 cases each: 1.8e-5 perspective, 5.8e-6 "
    "elastic); a wrong coefficient or a shifted warp moves samples by tenths of a pixel: 0.1 and more",
)

REFERENCES: dict[str, SweptReference] = {
    "kornia.augmentation.RandomPerspective": SweptReference("perspective", _random_perspective, WARP),
    "kornia.augmentation.RandomElasticTransform": SweptReference("elastic2d", _random_elastic, WARP),
    "kornia.geometry.transform.Hflip": SweptReference("hflip", lambda x, case: x[..., ::-1], EXACT),
    "kornia.geometry.transform.Vflip": SweptReference("vflip", lambda x, case: x[..., ::-1, :], EXACT),
    "kornia.geometry.transform.Rot180": SweptReference("rot180", lambda x, case: x[..., ::-1, ::-1], EXACT),
    "kornia.color.RgbToBgr": SweptReference("rgb_to_bgr", lambda x, case: x[..., ::-1, :, :], EXACT),
    "kornia.color.BgrToRgb": SweptReference("bgr_to_rgb", lambda x, case: x[..., ::-1, :, :], EXACT),
    "kornia.enhance.Invert": SweptReference("invert", lambda x, case: 1.0 - x, FLOAT32_ARITHMETIC),
    "kornia.color.RgbToGrayscale": SweptReference("grayscale", lambda x, case: color.grayscale(x), FLOAT32_ARITHMETIC),
    "torchvision.transforms.v2.Grayscale": SweptReference("grayscale", lambda x, case: color.grayscale(x), TV_LUMA),
    "kornia.enhance.Normalize": SweptReference("normalize", _normalized, FLOAT32_ARITHMETIC),
    "kornia.augmentation.Normalize": SweptReference("normalize", _normalized, FLOAT32_ARITHMETIC),
    "torchvision.transforms.v2.Normalize": SweptReference("normalize", _normalized, FLOAT32_ARITHMETIC),
    "kornia.enhance.Denormalize": SweptReference("denormalize", _denormalized, FLOAT32_ARITHMETIC),
    "kornia.augmentation.Denormalize": SweptReference("denormalize", _denormalized, FLOAT32_ARITHMETIC),
}
