"""Metrics and tolerance policies.

All differences are taken in float64 on the host: subtracting uint8 tensors
wraps (0 - 1 == 255), which has hidden real divergences before (vision#8399).
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Metrics:
    """How far an output is from what it is compared with."""

    max_abs: float
    mae: float
    mismatch_fraction: float
    mismatches: int
    elements: int
    worst_index: tuple[int, ...] | None
    worst_actual: float | None
    worst_expected: float | None
    psnr: float

    @classmethod
    def identical(cls, elements: int) -> Metrics:
        """Two arrays equal element for element (NaN where both are NaN)."""
        return cls(0.0, 0.0, 0.0, 0, elements, None, None, None, math.inf)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "max_abs": self.max_abs,
            "mae": self.mae,
            "mismatch_fraction": self.mismatch_fraction,
            "mismatches": self.mismatches,
            "elements": self.elements,
            "worst_index": list(self.worst_index) if self.worst_index is not None else None,
            "worst_actual": self.worst_actual,
            "worst_expected": self.worst_expected,
            "psnr": self.psnr,
        }
        # NaN is "no value"; infinities are spelled as strings, as the store writes them anyway
        return {
            k: (None if v != v else ("inf" if v > 0 else "-inf") if math.isinf(v) else v) if isinstance(v, float) else v
            for k, v in data.items()
        }


@dataclass(frozen=True)
class Tolerance:
    """A named acceptance policy; every number carries its reason.

    An element mismatches when |actual - expected| > atol + rtol * |expected|
    (NaN against NaN at the same place is a match).  The output passes when
    the mismatching fraction is at most `max_mismatch_fraction` and, where
    set, the MAE is at most `max_mae` and the PSNR is at least `min_psnr`.
    """

    name: str
    reason: str
    atol: float = 0.0
    rtol: float = 0.0
    max_mismatch_fraction: float = 0.0
    max_mae: float | None = None
    min_psnr: float | None = None

    def __post_init__(self) -> None:
        if not self.reason.strip():
            raise ValueError(f"tolerance {self.name!r} needs a written reason")
        if self.atol < 0 or self.rtol < 0 or not 0 <= self.max_mismatch_fraction <= 1:
            raise ValueError(f"tolerance {self.name!r} has a negative or out-of-range bound")

    def to_dict(self) -> dict[str, Any]:
        data = {
            "name": self.name,
            "reason": self.reason,
            "atol": self.atol,
            "rtol": self.rtol,
            "max_mismatch_fraction": self.max_mismatch_fraction,
            "max_mae": self.max_mae,
            "min_psnr": self.min_psnr,
        }
        return {k: v for k, v in data.items() if v is not None}

    def violations(self, metrics: Metrics) -> list[str]:
        """Human-readable reasons the metrics break this policy (empty: pass)."""
        found = []
        if metrics.mismatch_fraction > self.max_mismatch_fraction:
            found.append(
                f"{metrics.mismatches} of {metrics.elements} elements "
                f"({metrics.mismatch_fraction:.2%}) differ by more than atol={self.atol:g} + "
                f"rtol={self.rtol:g}*|expected| (allowed {self.max_mismatch_fraction:.2%}); "
                f"max abs diff {metrics.max_abs:.6g}"
            )
        if self.max_mae is not None and metrics.mae > self.max_mae:
            found.append(f"MAE {metrics.mae:.6g} > {self.max_mae:g}")
        if self.min_psnr is not None and metrics.psnr < self.min_psnr:
            found.append(f"PSNR {metrics.psnr:.2f} dB < {self.min_psnr:g} dB")
        return found


def measure(actual: np.ndarray, expected: np.ndarray, tolerance: Tolerance, data_range: float) -> Metrics:
    """Compare two same-shaped arrays in float64 under `tolerance`."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if actual.shape != expected.shape:
        raise ValueError(f"shape {actual.shape} vs {expected.shape}")
    elements = int(actual.size)
    if elements == 0:
        return Metrics(0.0, 0.0, 0.0, 0, 0, None, None, None, math.inf)
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, settled below
        diff = np.abs(actual - expected)
    undefined = np.isnan(diff)
    if undefined.any():  # NaN on one side only counts as infinitely far; NaN on both, or equal infinities, match
        diff[undefined] = np.inf
        diff[(np.isnan(actual) & np.isnan(expected)) | (actual == expected)] = 0.0
    bound = tolerance.atol + tolerance.rtol * np.abs(np.nan_to_num(expected)) if tolerance.rtol else tolerance.atol
    mismatches = int(np.count_nonzero(diff > bound))
    worst_flat = int(np.argmax(diff))
    worst = tuple(int(i) for i in np.unravel_index(worst_flat, diff.shape))
    max_abs = float(diff.flat[worst_flat])
    flat = diff.ravel()
    mse = float(np.dot(flat, flat)) / elements if math.isfinite(max_abs) else math.inf
    psnr = math.inf if mse == 0 else (10 * math.log10(data_range**2 / mse) if math.isfinite(mse) else -math.inf)
    return Metrics(
        max_abs=max_abs,
        mae=float(flat.sum()) / elements,
        mismatch_fraction=mismatches / elements,
        mismatches=mismatches,
        elements=elements,
        worst_index=worst,
        worst_actual=float(actual.flat[worst_flat]),
        worst_expected=float(expected.flat[worst_flat]),
        psnr=psnr,
    )


@dataclass(frozen=True)
class Rule:
    """Which tolerance applies where: glob patterns over check, dtype, mode, target."""

    tolerance: Tolerance
    check: str = "*"
    dtype: str = "*"
    mode: str = "*"
    target: str = "*"

    def matches(self, check: str, dtype: str, mode: str, target: str) -> bool:
        pairs = ((self.check, check), (self.dtype, dtype), (self.mode, mode), (self.target, target))
        return all(fnmatch.fnmatchcase(value, pattern) for pattern, value in pairs)

    def covers(self, check: str, dtype: str, mode: str) -> bool:
        """Whether it applies to the check, dtype and mode on every target (what a spec is checked for when it is
        declared: the targets of a run are not known then)."""
        return self.target == "*" and self.matches(check, dtype, mode, "*")


def pick_tolerance(rules: Sequence[Rule], *, check: str, dtype: str, mode: str, target: str) -> Tolerance:
    """The first rule that matches; an op without a matching rule is a spec error."""
    for rule in rules:
        if rule.matches(check, dtype, mode, target):
            return rule.tolerance
    raise LookupError(f"no tolerance rule for check={check} dtype={dtype} mode={mode} target={target}")


UNCALIBRATED_PREFIX = "uncalibrated-"


def _default(dtype: str, atol: float, rtol: float, why: str) -> Rule:
    reason = f"the default for {dtype}, not measured for this op (uncalibrated): {why}"
    return Rule(Tolerance(UNCALIBRATED_PREFIX + dtype, atol=atol, rtol=rtol, reason=reason), dtype=dtype)


# The rules of a spec that gives none (or ends its own with them): a few roundings in the item's dtype.  The
# report marks every outcome judged by one "uncalibrated" until a rule with a measured reason replaces it.
UNCALIBRATED: tuple[Rule, ...] = (
    _default("uint8", 1, 0, "computed in float and rounded once, a value near a half level may round the other way"),
    _default("uint16", 1, 0, "computed in float and rounded once: one level, as for uint8"),
    _default("float32", 1e-5, 1e-5, "about a hundred float32 roundings (6e-8 each) on values near 1"),
    _default("float64", 1e-12, 1e-12, "far above float64 rounding (1.1e-16), below one float32 step (6e-8)"),
    _default("float16", 2e-3, 2e-3, "about four float16 roundings (half an ulp is 4.9e-4 at 1)"),
    _default("bfloat16", 1.6e-2, 1.6e-2, "about four bfloat16 roundings (half an ulp is 3.9e-3 at 1)"),
)


def is_uncalibrated(name: object) -> bool:
    """Whether a recorded tolerance name is a default's (the report marks those)."""
    return isinstance(name, str) and name.startswith(UNCALIBRATED_PREFIX)
