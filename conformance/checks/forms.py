"""The `module` check, and what the checks that ask for more runs of the op share (conformance.checks.history, the
relations).

`module`: where an operation exists as a module class and as a function (the spec names its `counterpart`), the
other form, called with the same params on the same target, gives the same output (or raises the same class).  A
module that forwards a parameter wrongly to its function, or has a default of its own, fails.  Both forms run the
same kernels on the same device: by default their outputs must be identical; a spec's rule scoped to the check by
name (`Rule(..., check="module")`) says otherwise, with why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import torch

from conformance.checks.context import CaseContext, Derived
from conformance.checks.registry import Check, CheckOutcome, compare_check, register, valid_inputs
from conformance.checks.requests import Steps, call, first_case
from conformance.devices.runs import OpRun
from conformance.devices.targets import Target
from conformance.devices.virtual.tensor import holds_values, host_tensor
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import to_float64
from conformance.spec.tolerances import Tolerance

IDENTICAL = Tolerance(
    "identical",
    reason="two forms of one operation, or two instances of one module, run the same kernels on the same device "
    "with the same parameters: nothing may differ",
)


def first_cases(ctx: CaseContext, check: str, limit: int) -> Steps[bool]:
    """Whether this case is one of the first `limit` of its variant on this target that `check` looks at (counting it;
    the engine keeps the counts): a check that calls the op again per case looks only at those, where what it looks
    for shows."""
    variant = (ctx.spec.name, ctx.case.recipe.dtype, ctx.mode, ctx.target.name)
    return (yield from first_case(check, variant, limit))


def declared(ctx: CaseContext, check: str) -> Tolerance | None:
    """A rule the spec scopes to this check by name (never a catch-all rule: the default is identical outputs)."""
    recipe = ctx.case.recipe
    for rule in ctx.spec.tolerances:
        if rule.check == check and rule.matches(check, recipe.dtype, ctx.mode, ctx.target.name):
            return rule.tolerance
    counterpart = ctx.spec.counterpart
    return counterpart.tolerance if check == "module" and counterpart is not None else None


def _values(run: OpRun) -> np.ndarray | None:
    return to_float64(host_tensor(run.output)) if run.error is None and holds_values(run.output) else None


def differs(
    ctx: CaseContext, check: str, mine: OpRun, theirs: OpRun, against: str, default: Tolerance = IDENTICAL
) -> CheckOutcome | None:
    """How two runs of one input disagree (their errors' classes, their dtypes or their values), or None; values
    under the spec's rule for the check, else `default`."""
    if (mine.error is None) != (theirs.error is None):
        raising, other = (mine, "this one") if mine.error is not None else (theirs, against)
        return CheckOutcome(check, False, f"{other} raises {raising.error} where the other returns", cause="raises")
    if mine.error is not None:
        if mine.error_type is theirs.error_type:
            return None
        return CheckOutcome(check, False, f"raises {mine.raised}, {against} raises {theirs.raised}", cause="raises")
    mine_out, their_out = mine.output, theirs.output
    if isinstance(mine_out, torch.Tensor) and isinstance(their_out, torch.Tensor) and mine_out.dtype != their_out.dtype:
        return CheckOutcome(check, False, f"returns {mine_out.dtype}, {against} {their_out.dtype}", cause="dtype")
    a, b = _values(mine), _values(theirs)
    if a is None or b is None:
        return None if (a is None) == (b is None) else CheckOutcome(check, False, f"{against} returns no tensor")
    found = compare_check(check, a, b, declared(ctx, check) or default, ctx.output_dtype, against)
    return None if found.passed else found


def usable(run: OpRun) -> bool:
    return run.not_run is None and run.resource is None


def watched(spec: OpSpec, watch: Callable[[], AbstractContextManager[Any]]) -> OpSpec:
    """The spec with its call (a module op: its construction) run inside `watch()`."""
    if spec.module is not None:
        build = spec.module.build

        def watched_build(params: dict[str, Any]) -> torch.nn.Module:
            with watch():
                return build(params)

        return dataclasses.replace(spec, module=dataclasses.replace(spec.module, build=watched_build))
    call = spec.call
    assert call is not None

    def watched_call(image: torch.Tensor, params: dict[str, Any]) -> Any:
        with watch():
            return call(image, params)

    return dataclasses.replace(spec, call=watched_call)


def _counterpart_run(ctx: CaseContext) -> Steps[OpRun]:
    other = ctx.spec.other_form()
    assert other is not None
    return (yield from call(other, ctx.source.on(ctx.target), ctx.case, ctx.target, ctx.sampled))


COUNTERPART_RUN = Derived("counterpart_run", _counterpart_run)


def counterpart_run(ctx: CaseContext) -> Steps[OpRun]:
    """The other form on the case's own input on this target (shared by the two checks)."""
    return (yield from ctx.derive(COUNTERPART_RUN))


def check_module(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    counterpart = ctx.spec.counterpart
    assert counterpart is not None
    other = yield from counterpart_run(ctx)
    if not usable(ctx.run) or not usable(other):
        return None
    mine, theirs = ("the module", "the function") if ctx.spec.module is not None else ("the function", "the module")
    found = differs(ctx, "module", ctx.run, other, f"{theirs} {counterpart.name}")
    if found is None:
        return CheckOutcome("module", True, against=counterpart.name)
    found.message = f"{mine} and {theirs} {counterpart.name}, same params: {found.message}"
    found.cause = f"forms {found.cause}"
    return found


def keeping(spec: OpSpec, built: list[torch.nn.Module], *, once: bool = False) -> OpSpec:
    """The spec with a build that appends each module it makes to `built` (the caller reads the instance the call
    used); `once`: it makes one and returns that same instance on every later call."""
    assert spec.module is not None
    build = spec.module.build

    def kept(params: dict[str, Any]) -> torch.nn.Module:
        if not (once and built):
            built.append(build(params))
        return built[-1]

    return dataclasses.replace(spec, module=dataclasses.replace(spec.module, build=kept))


def in_process_eager(spec: OpSpec, target: Target, mode: str) -> bool:
    """Eager calls on the target in this process (a compiled target compiles per op: its forms are eager's)."""
    return target.eager_op and valid_inputs(spec, target, mode)


def eager_tensor_call(spec: OpSpec, target: Target, mode: str) -> bool:
    """Eager calls of a tensor op on the target in this process: where a relation calls the op again (an op on
    host objects, PIL's, enters no library callable on a device)."""
    return in_process_eager(spec, target, mode) and not spec.host_only


register(
    Check(
        "module",
        67,
        "form",
        "the op's other form in its library (module class or function) with the same params gives the same output",
        lambda spec, target, mode: spec.counterpart is not None and in_process_eager(spec, target, mode),
        check_module,
        judges_values=True,
        unmet=lambda spec: spec.counterpart.unmet() if spec.counterpart is not None else None,
    )
)
