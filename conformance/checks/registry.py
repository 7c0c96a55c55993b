"""The check registry: each check a name, when it applies, what it compares against, and a
function from one shared per-case context to a typed outcome.

Every applicable check becomes its own pytest item (`test_<op>[<target>-<dtype>-<mode>-<check>]`),
so one failing check never hides another and `-k placement` selects one.  Adding a check is one
`register(Check(...))` call; the plugin, the store, the summary and the report read the rest
(`against`, `gating`) from here and from the records.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from conformance.spec.tolerances import Metrics, Tolerance, measure
from conformance.spec.opspec import OpSpec
from conformance.devices.targets import Target

if TYPE_CHECKING:
    from conformance.checks.context import CaseContext


@dataclass
class CheckOutcome:
    """The verdict of one check on one case and target."""

    check: str
    passed: bool
    message: str = ""
    metrics: Metrics | None = None
    tolerance: Tolerance | None = None
    traceback: str | None = None
    details: dict[str, Any] | None = None  # e.g. the placement log
    cause: str = ""  # the kind of failure: failures of different causes are found and shrunk separately
    against: str = ""  # what the output was compared with: "reference", "cpu", "input", "promise", ...
    diverges: str | None = None  # cross_device: the side that diverges from the reference
    behaviour: str | None = None  # unmoved: what a module left on the cpu did with a device input
    warning: bool = False  # a lesser finding: reported (verdict "warning"), never fails the gate


@dataclass(frozen=True)
class Check:
    name: str
    against: str
    summary: str
    applies: Callable[[OpSpec, Target, str], bool]
    run: Callable[["CaseContext"], CheckOutcome | None]  # None: nothing to check in this case
    gating: bool = True  # False: its failures are warnings (a lesser, separately named finding)
    option: str | None = None  # only in runs that turn this on (e.g. "baseline": run --baseline DIR)


REGISTRY: dict[str, Check] = {}


def register(check: Check) -> Check:
    if "-" in check.name:
        raise ValueError(f"check name {check.name!r} must not contain '-' (it ends the test id)")
    REGISTRY[check.name] = check
    return check


def applicable(spec: OpSpec, target: Target, mode: str, options: frozenset[str] = frozenset()) -> list[Check]:
    """The checks that become items for this op, target and mode, in registry order; `options`:
    what this run turned on (a check with an `option` is left out otherwise)."""
    return [check for check in REGISTRY.values()
            if (check.option is None or check.option in options) and target.runs_check(check.name)
            and check.applies(spec, target, mode)]


# -- conditions ----------------------------------------------------------------------------
def valid_inputs(spec: OpSpec, target: Target, mode: str) -> bool:
    return mode not in spec.error_modes


def on_accelerator(spec: OpSpec, target: Target, mode: str) -> bool:
    return target.is_accelerator and valid_inputs(spec, target, mode)


def compared_with_cpu(spec: OpSpec, target: Target, mode: str) -> bool:
    return target.compared_with_cpu and valid_inputs(spec, target, mode)


def always(spec: OpSpec, target: Target, mode: str) -> bool:
    return True


# -- shared by the value checks -------------------------------------------------------------
def data_range(dtype: str) -> float:
    return 255.0 if dtype == "uint8" else 1.0


def compare_check(check: str, actual: np.ndarray, expected: np.ndarray, tolerance: Tolerance,
                  dtype: str, against: str) -> CheckOutcome:
    """`actual` against `expected` under `tolerance`, in float64."""
    if actual.shape != expected.shape:
        return CheckOutcome(check, False, f"shape {actual.shape} cannot be compared with {against} {expected.shape}",
                            tolerance=tolerance, cause="shape", against=against)
    metrics = measure(actual, expected, tolerance, data_range(dtype))
    violations = tolerance.violations(metrics)
    if not violations:
        return CheckOutcome(check, True, metrics=metrics, tolerance=tolerance, against=against)
    worst = ""
    if metrics.worst_index is not None:
        worst = (f"; worst at {list(metrics.worst_index)}: got {metrics.worst_actual:.6g}, "
                 f"{against} {metrics.worst_expected:.6g}")
    message = f"vs {against}: " + "; ".join(violations) + worst + f" [tolerance {tolerance.name!r}]"
    return CheckOutcome(check, False, message, metrics=metrics, tolerance=tolerance, cause="values", against=against)


def identical(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return a is not None and b is not None and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def failed(check: str, problems: list[tuple[str, str]], **fields: Any) -> CheckOutcome:
    """One outcome from (cause, text) problems; several causes make a combined cause."""
    if not problems:
        return CheckOutcome(check, True, **fields)
    causes = sorted({cause for cause, _ in problems})
    return CheckOutcome(check, False, "; ".join(text for _, text in problems), cause="+".join(causes), **fields)
