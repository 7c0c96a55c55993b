"""The check registry: each check declared once, with everything the rest of the harness needs to know
about it: its name, its place in an item list, when it applies, what it compares against, whether it
looks only at what crosses a process boundary (then it also runs on `cpu:<level>` targets, whose op runs
in a worker process), whether it judges values (known issues about it need an envelope), whether it
reads the cross-library measurement, and the function from a `CaseContext` to a typed outcome.

Every applicable check becomes its own pytest item (`test_<op>[<target>-<dtype>-<mode>-<check>]`), so one
failing check never hides another and `-k placement` selects one.  Adding a check is one module with one
`register(Check(...))` call, imported in conformance/checks/__init__.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance.checks.context import CaseContext
from conformance.checks.requests import Request, Steps
from conformance.devices.targets import Target
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import peak
from conformance.spec.tolerances import Metrics, Tolerance, measure


@dataclass(frozen=True)
class Problem:
    """One problem of a failure that combines several causes: a known issue must name each cause to explain it."""

    cause: str
    text: str


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
    parts: tuple[Problem, ...] = ()  # its problems, where several causes combine: a known issue must cover each

    @property
    def measured(self) -> bool:
        """Whether the failure has a size (metrics, or PSNRs) that an envelope's bounds can hold; a raise, a changed
        shape or dtype has none."""
        return self.metrics is not None or bool(self.details and "psnr_vs_input" in self.details)

    def problems(self) -> tuple[Problem, ...]:
        """What a known issue must explain, each with its cause."""
        return self.parts or (Problem(self.cause, self.message),)


@dataclass(frozen=True)
class Check:
    name: str
    order: int  # its place among a target's items: the simplest checks first
    against: str
    summary: str
    applies: Callable[[OpSpec, Target, str], bool]
    # None: nothing to check in this case; steps: the requests it yields for runs of its own (checks.requests)
    run: Callable[[CaseContext], CheckOutcome | Steps[CheckOutcome | None] | None]
    gating: bool = True  # False: its failures are warnings (a lesser, separately named finding)
    option: str | None = None  # only in runs that turn this on (e.g. "baseline": run --baseline DIR)
    output_only: bool = False  # reads only the output or what was raised: runs on targets in another process too
    judges_values: bool = False  # compares values under a tolerance: a known issue about it needs an envelope
    reads_values: bool = False  # reads output values without judging them under a tolerance
    reads_peers: bool = False  # reads the cross-library measurement (`ctx.peers`), which the engine fills in first
    variant: Callable[[OpSpec, str, str], bool] | None = None  # (spec, dtype, mode): only these variants
    unmet: Callable[[OpSpec], str | None] | None = None  # why its items skip for an op (a name it needs is missing)
    nothing: str = ""  # why an item of it may have checked none of its cases, where the op raised in none
    relation: bool = False  # a relation every op keeps: items only in runs that ask for it (--relations)

    @property
    def needs_values(self) -> bool:
        """It reads the output's values: a target whose outputs hold none (a meta device) has no items of it."""
        return self.judges_values or self.reads_values


REGISTRY: dict[str, Check] = {}


def register(check: Check) -> Check:
    if "-" in check.name:
        raise ValueError(f"check name {check.name!r} must not contain '-' (it ends the test id)")
    if check.name in REGISTRY:
        raise ValueError(f"check {check.name!r} is registered twice")
    taken = {c.order: c.name for c in REGISTRY.values()}
    if check.order in taken:
        raise ValueError(f"check {check.name!r}: order {check.order} is {taken[check.order]!r}'s")
    REGISTRY[check.name] = check
    for name in sorted(REGISTRY, key=lambda n: REGISTRY[n].order):  # item order within a target
        REGISTRY[name] = REGISTRY.pop(name)
    return check


def applicable(
    spec: OpSpec, target: Target, mode: str, options: frozenset[str] = frozenset(), dtype: str | None = None
) -> list[Check]:
    """The checks that become items for this op, target, mode (and dtype, where given), in their order;
    `options`: what this run turned on (a check with an `option`, and a relation, is left out otherwise)."""
    return [
        check
        for check in REGISTRY.values()
        if (check.option is None or check.option in options)
        and (not check.relation or check.name in options)
        and target.can_run(in_process=not check.output_only, values=check.needs_values)
        and check.applies(spec, target, mode)
        and (dtype is None or check.variant is None or check.variant(spec, dtype, mode))
    ]


def relation_checks() -> tuple[str, ...]:
    """The relations every op keeps (--relations names them)."""
    return tuple(name for name, check in REGISTRY.items() if check.relation)


def value_checks() -> tuple[str, ...]:
    """The checks that judge values under a tolerance (known issues about them need an envelope)."""
    return tuple(name for name, check in REGISTRY.items() if check.judges_values)


@dataclass(frozen=True, eq=False)
class Verdict(Request):
    """Another check's outcome on a context (the engine computes it once, with any runs it asks for)."""

    ctx: CaseContext
    check: str


def verdict(ctx: CaseContext, check: str) -> Steps[CheckOutcome | None]:
    """The check's outcome for this case on this target (None: it does not apply to what happened)."""
    if check in ctx.outcomes:
        known: CheckOutcome | None = ctx.outcomes[check]
        return known
    found: CheckOutcome | None = yield Verdict(ctx, check)
    return found


def keep_outcome(ctx: CaseContext, check: str, found: CheckOutcome | None) -> CheckOutcome | None:
    """Kept on the context for the case's other items, with what it was compared against."""
    if found is not None:
        found.against = found.against or REGISTRY[check].against
    ctx.outcomes[check] = found
    return found


# -- conditions ----------------------------------------------------------------------------
def valid_inputs(spec: OpSpec, target: Target, mode: str) -> bool:
    return mode not in spec.error_modes


def on_accelerator(spec: OpSpec, target: Target, mode: str) -> bool:
    return target.moves_inputs and valid_inputs(spec, target, mode)


def compared_with_cpu(spec: OpSpec, target: Target, mode: str) -> bool:
    return target.compared_with_cpu and not spec.not_comparable and valid_inputs(spec, target, mode)


def always(spec: OpSpec, target: Target, mode: str) -> bool:
    return True


# -- shared by the value checks -------------------------------------------------------------
def data_range(dtype: str) -> float:
    return peak(dtype)


def compare_check(
    check: str, actual: np.ndarray, expected: np.ndarray, tolerance: Tolerance, dtype: str, against: str
) -> CheckOutcome:
    """`actual` against `expected` under `tolerance`, in float64."""
    if actual.shape != expected.shape:
        return CheckOutcome(
            check,
            False,
            f"shape {actual.shape} cannot be compared with {against} {expected.shape}",
            tolerance=tolerance,
            cause="shape",
            against=against,
        )
    metrics = measure(actual, expected, tolerance, data_range(dtype))
    violations = tolerance.violations(metrics)
    if not violations:
        return CheckOutcome(check, True, metrics=metrics, tolerance=tolerance, against=against)
    worst = ""
    if metrics.worst_index is not None:
        worst = (
            f"; worst at {list(metrics.worst_index)}: got {metrics.worst_actual:.6g}, "
            f"{against} {metrics.worst_expected:.6g}"
        )
    message = f"vs {against}: " + "; ".join(violations) + worst + f" [tolerance {tolerance.name!r}]"
    return CheckOutcome(check, False, message, metrics=metrics, tolerance=tolerance, cause="values", against=against)


def identical(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return a is not None and b is not None and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)


def failed(check: str, problems: list[tuple[str, str]], **fields: Any) -> CheckOutcome:
    """One outcome from (cause, text) problems; several causes make a combined cause."""
    if not problems:
        return CheckOutcome(check, True, **fields)
    causes = sorted({cause for cause, _ in problems})
    parts = tuple(Problem(cause, text) for cause, text in problems)
    return CheckOutcome(
        check,
        False,
        "; ".join(part.text for part in parts),
        cause="+".join(causes),
        parts=parts if len(causes) > 1 else (),
        **fields,
    )
