"""The `types` relation: the same value given as another type the library's signature accepts gives the same output.

kornia annotates `factor: Union[float, Tensor]`, `sigma: Union[Tuple[float, float], Tensor]`, `resample: Union[str,
int, Resample]`; torchvision `interpolation: Union[str, InterpolationMode, int]`.  Each accepted type is a code path
of its own (a tensor factor is broadcast per sample, moved to the image's device, promoted), and the suite's cases
pass one of them.  The check runs the case's call once more, sees the first public library callable it enters and
its arguments there (conformance.devices.entry), reads what each argument accepts from that callable's signature
(conformance.spec.signatures), and calls the op again with each argument in each other accepted encoding: a float as
a 0-d tensor on the target (and on the cpu, where a Python number would mix with device tensors), a tuple of numbers
as a 1-D tensor, a string as the enum member of that name and back.  Nothing is listed per op.

Each call must give what the plain call gives, or raise the same class: values under the spec's rule scoped to
`types`, else its `cross_device` tolerance (the same meaning computed along another path, as another device computes
it).  A random module is built with each encoding and draws its own parameters with the case's seed, so the
sampler's path is what is compared.
"""

from __future__ import annotations

from typing import Any

import torch

from conformance.checks.context import CaseContext
from conformance.checks.entered import entered, given
from conformance.checks.forms import differs, eager_tensor_call, first_cases, usable
from conformance.checks.registry import Check, CheckOutcome, register
from conformance.checks.requests import Steps
from conformance.devices.entry import Entry
from conformance.devices.targets import Target
from conformance.spec.signatures import Encoding, accepted, encodings

# Cases of a variant checked on a target, per process: each costs a call per encoding of every argument, and a
# path that differs for a type differs on the first case that reaches it (as the history check's HISTORY_CASES).
TYPES_CASES = 10


def trials(entry: Entry, dtype: str, target: Target, image_shape: tuple[int, ...]) -> list[tuple[str, Encoding]]:
    """Each argument of the entered callable in each other encoding its signature accepts.  A parameter tensor is
    float64 for a float64 image and float32 (torch's default) otherwise, so it holds the Python number's value as
    closely as the image's precision asks (a half-precision one would round it)."""
    declared = accepted(entry.callable)
    float_dtype = torch.float64 if dtype == "float64" else torch.float32
    found = []
    for name, value in entry.arguments.items():
        if name in declared:
            made = encodings(value, declared[name], float_dtype, target.moves_inputs, image_shape)
            found += [(name, encoding) for encoding in made]
    return found


def _made(ctx: CaseContext, encoding: Encoding) -> Any:
    return ctx.target.put(encoding.value) if encoding.on_target else encoding.value


def check_types(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    if ctx.case.recipe.empty or not usable(ctx.run):
        return None
    if not (yield from first_cases(ctx, "types", TYPES_CASES)):
        return None  # this variant's first cases were checked on this target
    random = ctx.spec.samples
    sampled = None if random else ctx.sampled  # a random module draws with each encoding (seeded alike)
    entry, plain = yield from entered(ctx, sampled)
    if entry is None:
        return None  # the call enters no public callable of a library whose signature is read
    tried = trials(entry, ctx.case.recipe.dtype, ctx.target, tuple(ctx.source.dense.shape))
    default = ctx.tolerance("cross_device")
    details: dict[str, Any] = {"callable": entry.name, "tried": []}
    failures: list[tuple[str, Encoding, CheckOutcome]] = []
    for name, encoding in tried:
        again = yield from given(ctx, entry, {name: _made(ctx, encoding)}, sampled)
        if again is None:
            continue  # the call took another path this time: nothing was given in this encoding
        details["tried"].append(f"{name}: {encoding.label}")
        found = differs(ctx, "types", again, plain, f"{name}={entry.arguments[name]!r}", default)
        if found is not None:
            failures.append((name, encoding, found))
    # arguments a library takes only together as tensors (kornia's InRange: "both tuples or both tensors")
    together = {name: encoding for name, encoding in tried if encoding.on_target}
    refused = {name for name, _, found in failures if found.cause == "raises"}
    if refused and len(together) > 1 and refused <= set(together):
        made = {name: _made(ctx, encoding) for name, encoding in together.items()}
        again = yield from given(ctx, entry, made, sampled)
        if again is not None and differs(ctx, "types", again, plain, "the plain call", default) is None:
            details["together"] = sorted(together)
            failures = [failure for failure in failures if failure[0] not in refused]
    if failures:
        name, encoding, found = failures[0]
        found.message = f"{entry.name}: {name} as {encoding.label}: {found.message}"
        found.cause, found.details = f"types {found.cause}", {**details, "argument": name, "as": encoding.label}
        return found
    return CheckOutcome("types", True, details=details) if details["tried"] else None


register(
    Check(
        "types",
        69,
        "plain call",
        "each argument of the library callable the op enters, given as another type its signature accepts (a float "
        "as a tensor, a string as an enum, ...), gives the same output",
        eager_tensor_call,
        check_types,
        judges_values=True,
        relation=True,
        nothing="the op raised in each, or the library callable it enters declares no other type for any argument "
        f"it was given, or {TYPES_CASES} cases of the variant were checked on this target already",
    )
)
