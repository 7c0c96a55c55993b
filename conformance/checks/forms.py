"""The `module` and `history` checks: the op's two forms agree, and a module instance keeps no state between calls.

`module`: where an operation exists as a module class and as a function (the spec names its `counterpart`), the
other form, called with the same params on the same target, gives the same output (or raises the same class).  A
module that forwards a parameter wrongly to its function, or has a default of its own, fails.

`history`: pipelines build a module once and call it on every sample: images of other sizes, aspect ratios,
batch sizes and dtypes.  One instance of the module form is called on such earlier inputs and then on the case's
own; each call must give what a fresh instance gives on the same input (for a random module, with the same
replayed parameters), so a cached size, kernel or grid, or parameters drawn once, show.

Both forms and both instances run the same kernels on the same device: by default their outputs must be
identical; a spec's rule scoped to the check by name (`Rule(..., check="module")`) says otherwise, with why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import torch

from conformance.checks.context import CaseContext, InputImage
from conformance.checks.registry import Check, CheckOutcome, compare_check, register, valid_inputs
from conformance.devices.calls import run_op, sample_params
from conformance.devices.runs import OpRun
from conformance.devices.targets import Target
from conformance.devices.virtual.tensor import holds_values, host_tensor
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import INTEGER_PEAKS, Case, Recipe, to_float64
from conformance.spec.tolerances import Tolerance

IDENTICAL = Tolerance(
    "identical",
    reason="two forms of one operation, or two instances of one module, run the same kernels on the same device "
    "with the same parameters: nothing may differ",
)

# Cases of a variant whose history is checked on a target, per process: each costs seven calls of the op (three
# earlier inputs, each by a fresh and the reused instance, then the case), and a module that keeps state shows it
# on its first case (every planted one did); the sweep's specs check 10 cases an item for the same reason.
HISTORY_CASES = 10


class FirstCases:
    """A check that calls the op again per case checks only the first `limit` cases of each variant on a target,
    per process: what it looks for shows on the first cases that reach it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._taken: dict[tuple[str, str, str, str], int] = {}

    def take(self, ctx: CaseContext) -> bool:
        """Whether this case is one of its variant's first on this target (counting it)."""
        variant = (ctx.spec.name, ctx.case.recipe.dtype, ctx.mode, ctx.target.name)
        taken = self._taken.get(variant, 0)
        if taken >= self.limit:
            return False
        self._taken[variant] = taken + 1
        return True


_history_cases = FirstCases(HISTORY_CASES)

# the other dtype an earlier input takes, by the case's dtype (else the spec's first other dtype of the mode)
OTHER_DTYPE = {"float32": "float64", "float64": "float32", "uint8": "float32", "float16": "float32"}


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


def _counterpart_run(ctx: CaseContext) -> OpRun:
    """The other form on the case's own input on this target (shared by the two checks)."""
    if "counterpart_run" not in ctx.derived:
        other = ctx.spec.other_form()
        assert other is not None
        ctx.derived["counterpart_run"] = run_op(
            other, ctx.source.on(ctx.target), ctx.case, ctx.target, ctx.sampled, timeout_s=ctx.timeout_s
        )
    found: OpRun = ctx.derived["counterpart_run"]
    return found


def check_module(ctx: CaseContext) -> CheckOutcome | None:
    counterpart = ctx.spec.counterpart
    assert counterpart is not None
    other = _counterpart_run(ctx)
    if not usable(ctx.run) or not usable(other):
        return None
    mine, theirs = ("the module", "the function") if ctx.spec.module is not None else ("the function", "the module")
    found = differs(ctx, "module", ctx.run, other, f"{theirs} {counterpart.name}")
    if found is None:
        return CheckOutcome("module", True, against=counterpart.name)
    found.message = f"{mine} and {theirs} {counterpart.name}, same params: {found.message}"
    found.cause = f"forms {found.cause}"
    return found


def earlier_recipes(spec: OpSpec, recipe: Recipe, mode: str) -> list[tuple[str, Recipe]]:
    """Inputs a pipeline's module meets before this case: another aspect ratio, another size and batch size,
    another dtype of the spec's (same mode), each with other pixels."""
    h, w = recipe.height, recipe.width
    aspect = (w, h) if h != w else (h, w + max(1, w // 2))
    batch = (recipe.batch[0] + 1, *recipe.batch[1:]) if recipe.batch else ()
    found = [
        (
            f"{aspect[0]}x{aspect[1]}",
            dataclasses.replace(recipe, height=aspect[0], width=aspect[1], seed=recipe.seed + 1),
        ),
        (
            f"{h + 2}x{w + 1}" + (f", batch {batch[0]}" if batch else ""),
            dataclasses.replace(recipe, height=h + 2, width=w + 1, batch=batch, seed=recipe.seed + 2),
        ),
    ]
    dtypes = [d for d, m in spec.variant_pairs() if m == mode and d != recipe.dtype]
    if dtypes:
        dtype = OTHER_DTYPE.get(recipe.dtype) if OTHER_DTYPE.get(recipe.dtype) in dtypes else dtypes[0]
        content = "noise" if dtype in INTEGER_PEAKS and recipe.content == "out_of_range" else recipe.content
        assert dtype is not None
        found.append((dtype, dataclasses.replace(recipe, dtype=dtype, content=content, seed=recipe.seed + 3)))
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


def check_history(ctx: CaseContext) -> CheckOutcome | None:
    form = ctx.spec.module_form()
    assert form is not None
    fresh_last = ctx.run if ctx.spec.module is not None else _counterpart_run(ctx)
    if ctx.case.recipe.empty or not usable(fresh_last) or fresh_last.error is not None:
        return None  # no output of a fresh instance to hold the reused one to (the error item carries a raise)
    if not _history_cases.take(ctx):
        return None  # this variant's first cases were checked on this target
    reused = keeping(form, [], once=True)
    sequence: list[tuple[str, CheckOutcome | None]] = []
    for label, recipe in earlier_recipes(form, ctx.case.recipe, ctx.mode):
        image = InputImage.make(recipe)
        case = Case(ctx.case.op, recipe, ctx.case.params)
        try:
            sampled = sample_params(form, image.dense, case)
        except Exception:  # noqa: BLE001 - a sampler that refuses this input: nothing to replay on it, so skip it
            continue
        fresh = run_op(form, image.on(ctx.target), case, ctx.target, sampled, timeout_s=ctx.timeout_s)
        again = run_op(reused, image.on(ctx.target), case, ctx.target, sampled, timeout_s=ctx.timeout_s)
        if not (usable(fresh) and usable(again)):
            continue
        sequence.append((label, differs(ctx, "history", again, fresh, "a fresh instance")))
    last = run_op(reused, ctx.source.on(ctx.target), ctx.case, ctx.target, ctx.sampled, timeout_s=ctx.timeout_s)
    if not usable(last):
        return None
    sequence.append(("this case", differs(ctx, "history", last, fresh_last, "a fresh instance")))
    details = {"sequence": [{"input": label, "same": found is None} for label, found in sequence]}
    broken = [(label, found) for label, found in sequence if found is not None]
    if not broken:
        return CheckOutcome("history", True, details=details)
    label, first = broken[0]
    order = ", then ".join(label for label, _ in sequence)
    first.message = f"one instance called on {order}: on {label}, {first.message}"
    first.details, first.cause = details, f"state {first.cause}"
    return first


def _has_module_form(spec: OpSpec) -> bool:
    return spec.module is not None or (spec.counterpart is not None and spec.counterpart.module is not None)


def in_process_eager(spec: OpSpec, target: Target, mode: str) -> bool:
    """Eager calls on the target in this process (a compiled target compiles per op: its forms are eager's)."""
    return not target.compiled and valid_inputs(spec, target, mode)


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
register(
    Check(
        "history",
        68,
        "fresh instance",
        "one module instance called on inputs of other sizes, batch sizes and dtypes, then on the case: each call "
        "gives what a fresh instance gives",
        lambda spec, target, mode: _has_module_form(spec) and in_process_eager(spec, target, mode),
        check_history,
        judges_values=True,
        unmet=lambda spec: spec.counterpart.unmet() if spec.module is None and spec.counterpart is not None else None,
    )
)
