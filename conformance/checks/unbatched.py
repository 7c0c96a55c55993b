"""The `unbatched` relation: an unbatched `(C, H, W)` image and the same image as a batch of one agree.

Libraries take `(*, C, H, W)` and reach an unbatched image through a path of its own (an unsqueeze and a squeeze, a
`keepdim`, a branch on `ndim`); a statistic over the wrong dimension or a parameter broadcast along the wrong one
shows there only.  Each unbatched case is run once more as a batch of one, and each batch of one once more
unbatched, on the same target with the same (replayed or seeded) parameters, and the two outputs must hold the same
values: the batch's one sample against the unbatched output, or against its one sample where the library gives a
batch of one back for an unbatched image (kornia's augmentations without `keepdim`).  Where the library callable
the op enters documents the image with a leading batch dimension (`(B, C, *)`, read from its docstring as the types
relation reads it), an unbatched image is not in its domain and nothing is compared.  Values under the spec's rule
scoped to `unbatched`, else its `cross_device` tolerance (another batch size may sum in another order).  Where the
batch of one is refused while the unbatched image is taken, there is nothing to compare: the op documents one of
the two shapes.
"""

from __future__ import annotations

import torch

from conformance.checks.context import CaseContext
from conformance.checks.forms import declared, first_cases, in_process_eager, usable, watched
from conformance.checks.registry import Check, CheckOutcome, compare_check, register
from conformance.checks.requests import Steps, call
from conformance.devices.entry import Entry, recording
from conformance.devices.virtual.tensor import holds_values, host_tensor
from conformance.spec.recipes import to_float64
from conformance.spec.signatures import accepted

# Cases of a variant checked on a target, per process (as the types and history checks)
UNBATCHED_CASES = 10


def check_unbatched(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    batch = ctx.case.recipe.batch
    if batch not in ((), (1,)) or ctx.case.recipe.empty or ctx.output64 is None:
        return None  # a batch of several, or the op raised (the error check's) or returned no values
    if not (yield from first_cases(ctx, "unbatched", UNBATCHED_CASES)):
        return None
    image = ctx.source.on(ctx.target)
    given = image[0] if batch else image.unsqueeze(0)
    entries: list[Entry] = []
    spec = watched(ctx.spec, lambda: recording(entries))
    other = yield from call(spec, given, ctx.case, ctx.target, ctx.sampled)
    if entries and batch_required(entries[0], given):
        return None  # the library documents a batch dimension (kornia's normalize: (B, C, *)): no unbatched image
    if not usable(other) or other.error is not None or not holds_values(other.output):
        return None  # the other shape is refused where this one is taken: the op documents one of them
    plain_dtype = ctx.run.output.dtype
    if other.output.dtype != plain_dtype:
        shape = "an unbatched image" if batch else "a batch of one"
        said = f"as {shape} it returns {other.output.dtype}, not {plain_dtype}"
        return CheckOutcome("unbatched", False, said, cause="dtype")
    other64 = to_float64(host_tensor(other.output))
    batched, unbatched = (ctx.output64, other64) if batch else (other64, ctx.output64)
    if batched.shape[:1] != (1,):
        return CheckOutcome("unbatched", False, f"a batch of one gave {batched.shape[0]} outputs", cause="batch size")
    unbatched = unbatched[0] if unbatched.shape == batched.shape else unbatched  # a batch of one back (kornia)
    tolerance = declared(ctx, "unbatched") or ctx.tolerance("cross_device")
    found = compare_check("unbatched", batched[0], unbatched, tolerance, ctx.output_dtype, "the unbatched image's")
    if not found.passed:
        found.message = "the image as a batch of one, against it unbatched: " + found.message
    return found


def batch_required(entry: Entry, image: torch.Tensor) -> bool:
    """Whether the library callable the op entered documents the image it was given with a leading batch dimension
    (`(B, C, *)`): an unbatched image is then another shape's meaning (a batch of C), not the same image."""
    documented = accepted(entry.callable)
    return any(
        value is image and name in documented and (documented[name].shape or ("",))[0] == "B"
        for name, value in entry.arguments.items()
    )


register(
    Check(
        "unbatched",
        64,
        "unbatched image",
        "an unbatched (C, H, W) image and the same image as a batch of one give the same output",
        lambda spec, target, mode: (
            in_process_eager(spec, target, mode) and not spec.host_only and spec.returns.read is None
        ),
        check_unbatched,
        judges_values=True,
        relation=True,
        nothing="no case drew an unbatched image or a batch of one, or the op raised in each or refused the other "
        f"shape, or {UNBATCHED_CASES} cases of the variant were checked on this target already",
    )
)
