"""The `flags` relation: every state of each flag and enum-valued argument keeps the op's promises, not the one the
case passed.

Cases build a module or call a function with one setting of `align_corners`, `antialias`, `same_on_batch`,
`keepdim`, an interpolation or padding mode; each other state is a code path of its own (a branch that makes a
tensor without `device=`, a kernel that exists on the cpu only).  The check runs the case's call once more, sees the
first public library callable it enters (as the types relation does) and reads from that callable's signature which
arguments are flags (bool) or enum-valued (an enum the annotation names, given as its member or its string):

- on an accelerator, each other state runs there and on the cpu, with the same replayed parameters, and the two must
  give the same dtype and shape, raise the same class, and hold values within a quarter of the value range (the
  spec's tolerances are measured for the states its cases pass: another state is held to what a broken path shows);
- a random module with `same_on_batch` off is built with it on and given a batch of one image repeated: its outputs
  must be the same image (within `cross_device`), since one set of parameters was drawn for the batch.

A spec's rule scoped to `flags` replaces the default.  Nothing is listed per op.
"""

from __future__ import annotations

import numpy as np

from conformance.checks.context import CaseContext
from conformance.checks.entered import entered, given
from conformance.checks.forms import declared, differs, eager_tensor_call, first_cases
from conformance.checks.registry import Check, CheckOutcome, compare_check, register
from conformance.checks.requests import Steps
from conformance.devices.entry import Entry
from conformance.devices.targets import CPU
from conformance.devices.virtual.tensor import holds_values, host_tensor
from conformance.spec.recipes import peak, to_float64
from conformance.spec.signatures import Encoding, accepted, other_states
from conformance.spec.tolerances import Tolerance

# Cases of a variant checked on a target, per process: each costs two calls per state of every flag and enum
FLAG_CASES = 5


def another_state(dtype: str) -> Tolerance:
    """How far a device may be from the cpu in a state the case did not pass: a quarter of the value range.  The
    spec's tolerances are measured for the states its cases pass (uint8 bicubic is 30 levels apart where bilinear is
    one, vision#8399); another state is held to what a broken path shows (wrong positions at an edge, a channel lost,
    garbage), not to its kernel's rounding."""
    return Tolerance(
        f"another-state-{dtype}",
        atol=0.25 * peak(dtype),
        reason="a state the case did not pass, on a device against the cpu: a quarter of the value range, what a "
        "broken path shows and no kernel's rounding does",
    )


def states(entry: Entry) -> list[tuple[str, Encoding]]:
    """Each other state of each flag and enum-valued argument the entered callable was given."""
    documented = accepted(entry.callable)
    return [
        (name, state)
        for name, value in entry.arguments.items()
        if name in documented
        for state in other_states(value, documented[name])
    ]


def _same_on_batch(ctx: CaseContext, entry: Entry) -> Steps[CheckOutcome | None]:
    """A random module built with `same_on_batch=True`, given one image repeated: one image back, repeated.  Only
    where the callable entered is the op's module itself: a container's first member is entered first, and its flag
    alone says nothing of the others'."""
    dense = ctx.source.dense
    if entry.arguments.get("same_on_batch") is not False or ctx.case.recipe.batch[:1] in ((), (1,)) or dense.ndim != 4:
        return None
    assert ctx.spec.module is not None
    if type(ctx.spec.module.build(dict(ctx.case.params))) is not entry.callable:
        return None
    repeated = dense[:1].expand_as(dense).clone()
    run = yield from given(ctx, entry, {"same_on_batch": True}, None, image=repeated)  # the module draws for the batch
    if run is None or run.error is not None or not holds_values(run.output):
        return None
    output: np.ndarray = to_float64(host_tensor(run.output))
    tolerance = declared(ctx, "flags") or ctx.tolerance("cross_device")
    for index in range(1, output.shape[0]):
        found = compare_check("flags", output[index], output[0], tolerance, ctx.output_dtype, "the first sample's")
        if not found.passed:
            found.message = f"same_on_batch=True on one image repeated: sample {index} {found.message}"
            found.cause = "flags same_on_batch"
            return found
    return CheckOutcome("flags", True)


def check_flags(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    if ctx.case.recipe.empty or ctx.output64 is None or not (yield from first_cases(ctx, "flags", FLAG_CASES)):
        return None
    entry, _ = yield from entered(ctx, ctx.sampled)
    if entry is None:
        return None
    tried: list[str] = []
    random = ctx.spec.samples
    if random and (found := (yield from _same_on_batch(ctx, entry))) is not None:
        if not found.passed:
            return found
        tried.append("same_on_batch=True on one image repeated")
    if ctx.target.compared_with_cpu:
        default = declared(ctx, "flags") or another_state(ctx.output_dtype)
        for name, state in states(entry):
            mine = yield from given(ctx, entry, {name: state.value}, ctx.sampled)
            theirs = yield from given(ctx, entry, {name: state.value}, ctx.sampled, target=CPU)
            if mine is None or theirs is None:
                continue
            tried.append(f"{name}={state.label}")
            found = differs(ctx, "flags", mine, theirs, "the cpu with the same state", default)
            if found is not None:
                found.message = f"{entry.name}: {name}={state.label}: {found.message}"
                found.cause, found.details = f"flags {found.cause}", {"callable": entry.name, "tried": tried}
                return found
    return CheckOutcome("flags", True, details={"callable": entry.name, "tried": tried}) if tried else None


register(
    Check(
        "flags",
        72,
        "cpu, same state",
        "each other state of every flag and enum-valued argument of the library callable the op enters: on an "
        "accelerator as on the cpu; same_on_batch=True on one image repeated gives it back repeated",
        lambda spec, target, mode: (target.compared_with_cpu or spec.samples) and eager_tensor_call(spec, target, mode),
        check_flags,
        judges_values=True,
        relation=True,
        nothing="the library callable the op enters takes no flag or enum it was given (and no same_on_batch with a "
        f"batch), or the op raised, or {FLAG_CASES} cases of the variant were checked on this target already",
    )
)
