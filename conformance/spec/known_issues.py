"""Known issues: divergences we know about, as data with an upstream link.

A known issue is reported, never silently skipped.  Entries are strict by
default: if an entry applies to a test item and none of the item's examples
reproduces it, the item fails and says to delete the entry.  A failing check
that matches an entry does not raise, so hypothesis spends no time shrinking it.
With `where`, strictness counts only the examples whose features match: the
entry must reproduce on at least one of them (none drawn: not exercised).

Every entry has an envelope: which cases (`where`, `match`), which causes (`causes`: a measured difference,
"values", or the cause of a failure that has no size: "raises", "shape", "dtype", ...), how far off (`max_abs`,
`max_mismatch_fraction`: bounds on the failing check's metrics, `max_abs` scaled by case features named in
`scale_by` where the divergence grows with them) and how often (`max_case_fraction`: of the item's cases in
scope).  A failure in scope but outside the envelope is not this known issue: it fails the gate, saying which
bound it broke, so a broad entry cannot hide a new regression in the same op.  An entry with numeric bounds covers
measured differences only unless it names other causes: a raise or a changed shape has no size, and a size bound
would hold for it vacuously.  An entry about a value check (reference, cross_device, fidelity) needs a numeric
bound; others need at least `match` or a bound.  The file format and its reader: conformance.spec.issue_files.

Strict, judged with the sample size: an entry that reproduced in none of the n cases in its scope of a
cell (op, target, dtype, mode: every check item of it) fails the cell's last item as fixed only when,
reproducing in `min_case_fraction` of its cases (default DEFAULT_MIN_CASE_FRACTION where no sweep has
measured it), it would have shown in n cases but for a chance below FIXED_ALPHA; otherwise too few cases
were in scope to tell, and the item only notes it (a short `--max-examples` run stays green).
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass, field
from typing import Any

from conformance.spec import versions as imported

BOUNDS = ("max_abs", "max_mismatch_fraction", "max_case_fraction", "max_psnr_gap", "min_psnr")
# The bounds on how far off a failure is (max_case_fraction is how often): an entry with one of them is about
# measured differences, and covers a failure without a measurement only where its `causes` name that cause.
SIZE_BOUNDS = ("max_abs", "max_mismatch_fraction", "max_psnr_gap", "min_psnr")
MEASURED = "values"  # the cause name, in `causes`, of any failure that carries a measured difference
# One-sided binomial test: a known issue reproducing more often than its envelope allows fails its item
# only when chance explains the excess with probability below this (no false alarms on a few cases).
CASE_FRACTION_ALPHA = 1e-3
# A strict entry that did not reproduce is called fixed only when it would have shown with at least this
# probability: (1 - least case fraction) ** cases in scope < FIXED_ALPHA.
FIXED_ALPHA = 1e-3
# The least share of its in-scope cases an entry is assumed to reproduce in, where no sweep measured it
# (min_case_fraction): 25 cases in scope without one are then needed to call it fixed.
DEFAULT_MIN_CASE_FRACTION = 0.25


class KnownIssuesError(ValueError):
    """A known-issues file that cannot be trusted; named with file and entry."""


@dataclass(frozen=True)
class Held:
    """A failure held to an entry's size bounds: the bounds it breaks (empty: within the envelope) and the largest
    ratio of a metric to its bound (1.0: at it; above: outside; None: no bound applies), what a calibration across
    seeds reads to tell a bound from a measured maximum."""

    broken: tuple[str, ...]
    used: float | None


@dataclass(frozen=True)
class KnownIssue:
    id: str
    op: tuple[str, ...]  # globs over op names (the file's `op`: one glob, or a list where a finding spans ops)
    link: str
    reason: str
    targets: tuple[str, ...] = ("*",)
    dtypes: tuple[str, ...] = ("*",)
    modes: tuple[str, ...] = ("*",)
    checks: tuple[str, ...] = ("*",)
    versions: tuple[tuple[str, str], ...] = ()
    where: tuple[tuple[str, tuple[object, ...]], ...] = ()
    match: str | None = None
    causes: tuple[str, ...] = ()  # MEASURED and globs over unmeasured causes; () = the default (`covered_causes`)
    scale_by: tuple[str, ...] = ()  # numeric case features whose product multiplies max_abs
    max_abs: float | None = None
    max_mismatch_fraction: float | None = None
    max_case_fraction: float | None = None
    max_psnr_gap: float | None = None
    min_psnr: float | None = None
    min_case_fraction: float | None = None
    strict: bool = True
    source: str = ""

    @property
    def least_case_fraction(self) -> float:
        """The share of its in-scope cases it reproduces in at least (measured, or the default)."""
        return self.min_case_fraction if self.min_case_fraction is not None else DEFAULT_MIN_CASE_FRACTION

    def unseen_chance(self, in_scope: int) -> float:
        """The chance that it reproduces in none of `in_scope` cases if it is still there."""
        return (1.0 - self.least_case_fraction) ** in_scope

    def cases_to_call_fixed(self) -> int:
        """How many cases in scope without a reproduction call it fixed."""
        rate = self.least_case_fraction
        return 1 if rate >= 1 else math.ceil(math.log(FIXED_ALPHA) / math.log1p(-rate))

    def versions_apply(self) -> bool:
        """Whether the imported libraries are in the entry's version ranges."""
        return all(imported.satisfies(package, spec) for package, spec in self.versions)

    def applies_to(self, op: str, target: str, dtype: str, mode: str, check: str = "*") -> bool:
        """Whether the entry is about this test item (one check of one op, target, dtype and mode)."""

        def hit(value: str, patterns: tuple[str, ...]) -> bool:
            return any(fnmatch.fnmatchcase(value, p) for p in patterns)

        return (
            hit(op, self.op)
            and hit(target, self.targets)
            and hit(dtype, self.dtypes)
            and hit(mode, self.modes)
            and (check == "*" or hit(check, self.checks))
            and self.versions_apply()
        )

    @property
    def covered_causes(self) -> tuple[str, ...]:
        """The causes it explains: those it names, else measured differences for an entry with a size bound (a
        raise has no size), else any cause its checks and `match` select."""
        if self.causes:
            return self.causes
        return (MEASURED,) if any(getattr(self, name) is not None for name in SIZE_BOUNDS) else ("*",)

    def names_cause(self, cause: str, measured: bool) -> bool:
        """Whether a failure of this cause (with or without a measured difference) is one it explains."""
        return any(
            (measured if pattern == MEASURED else not measured and fnmatch.fnmatchcase(cause, pattern))
            or pattern == "*"
            for pattern in self.covered_causes
        )

    def scale(self, features: dict[str, object]) -> float | str:
        """The product of its `scale_by` features for a case, or why there is none (a feature that is not a
        number)."""
        product = 1.0
        for name in self.scale_by:
            value = features.get(name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                return f"its scale feature {name!r} is {value!r} for this case, not a finite number"
            product *= float(value)
        return product

    def in_scope(self, features: dict[str, object]) -> bool:
        """Whether a case (by its features) is one this entry is about."""
        return all(features.get(name) in allowed for name, allowed in self.where)

    def covers(self, check: str, message: str, features: dict[str, object]) -> bool:
        """Whether a failing check of one case is in this entry's scope (check, features, message)."""
        return (
            any(fnmatch.fnmatchcase(check, p) for p in self.checks)
            and self.in_scope(features)
            and (self.match is None or re.search(self.match, message) is not None)
        )

    def held(
        self, metrics: Any, details: dict[str, Any] | None = None, features: dict[str, object] | None = None
    ) -> Held:
        """A failure's metrics (or, for fidelity, its PSNRs) held to each size bound of the envelope: which it breaks
        and how much of them it uses; `features`: the case's, by which `max_abs` scales."""
        scale = self.scale(features or {}) if self.scale_by else 1.0
        if isinstance(scale, str):
            return Held((scale,), None)  # no bound can be applied: nothing used
        broken: list[str] = []
        ratios: list[float] = []
        if self.max_psnr_gap is not None and details and "psnr_vs_input" in details:
            gap = float(details["reference_psnr_vs_input"] - details["psnr_vs_input"])
            ratios.append(_ratio(gap, self.max_psnr_gap))
            if gap > self.max_psnr_gap:
                broken.append(f"{gap:.2f} dB below the reference's PSNR > {self.max_psnr_gap:g} dB")
        if metrics is not None and self.max_abs is not None:
            value, bound = float(metrics.max_abs), self.max_abs * scale
            ratios.append(_ratio(value, bound))
            if value > bound:
                times = f" × {' × '.join(self.scale_by)} = {bound:g}" if self.scale_by else ""
                broken.append(f"max abs diff {value:g} > {self.max_abs:g}{times}")
        if metrics is not None and self.min_psnr is not None:
            psnr = float(metrics.psnr)
            ratios.append(_ratio(self.min_psnr, psnr))
            if psnr < self.min_psnr:
                broken.append(f"PSNR {psnr:.2f} dB < {self.min_psnr:g} dB")
        if metrics is not None and self.max_mismatch_fraction is not None:
            fraction = float(metrics.mismatch_fraction)
            ratios.append(_ratio(fraction, self.max_mismatch_fraction))
            if fraction > self.max_mismatch_fraction:
                broken.append(f"{fraction:.2%} of elements beyond the tolerance > {self.max_mismatch_fraction:.2%}")
        return Held(tuple(broken), max(ratios) if ratios else None)

    def too_often(self, reproduced: int, in_scope: int) -> str | None:
        """Why `reproduced` of `in_scope` cases is more than the envelope's case fraction allows, or None."""
        if self.max_case_fraction is None or in_scope == 0 or reproduced / in_scope <= self.max_case_fraction:
            return None
        chance = binomial_tail(reproduced, in_scope, self.max_case_fraction)
        if chance >= CASE_FRACTION_ALPHA:
            return None
        return (
            f"outside the envelope of known issue {self.id}: it reproduced in {reproduced} of {in_scope} cases in "
            f"its scope ({reproduced / in_scope:.0%}), where it allows {self.max_case_fraction:.0%} (chance of this "
            f"many: {chance:.1e}): a new regression inside its scope, or an entry to re-measure ({self.link})"
        )

    def envelope(self) -> dict[str, object]:
        found: dict[str, object] = {
            name: getattr(self, name) for name in (*BOUNDS, "min_case_fraction") if getattr(self, name) is not None
        }
        if self.where:
            found["where"] = {k: list(v) for k, v in self.where}
        if self.match:
            found["match"] = self.match
        if self.causes:
            found["causes"] = list(self.causes)
        if self.scale_by:
            found["scale_by"] = list(self.scale_by)
        return found

    def to_dict(self) -> dict[str, object]:
        return {
            "id": self.id,
            "link": self.link,
            "reason": self.reason,
            "strict": self.strict,
            "envelope": self.envelope(),
        }


def _ratio(value: float, bound: float) -> float:
    """value / bound, where a zero bound is used up by any positive value."""
    if bound > 0:
        return value / bound
    return 0.0 if value <= 0 else math.inf


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), in log space (n up to many thousands)."""
    if k <= 0:
        return 1.0
    if p <= 0:
        return 0.0
    if p >= 1:
        return 1.0

    def log_term(i: int) -> float:
        return (
            math.lgamma(n + 1)
            - math.lgamma(i + 1)
            - math.lgamma(n - i + 1)
            + i * math.log(p)
            + (n - i) * math.log1p(-p)
        )

    terms = [log_term(i) for i in range(k, n + 1)]
    top = max(terms)
    return min(1.0, math.exp(top) * sum(math.exp(t - top) for t in terms))


@dataclass
class Staleness:
    """What a cell's last item says of its strict entries that did not reproduce."""

    fixed: list[tuple[KnownIssue, int, float]] = field(default_factory=list)  # (entry, cases in scope, chance)
    too_few: list[tuple[KnownIssue, int]] = field(default_factory=list)  # (entry, cases in scope): a note only
