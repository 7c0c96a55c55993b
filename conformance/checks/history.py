"""The `history` check: a module instance keeps no state between calls.

Pipelines build a module once and call it on every sample: images of other sizes, aspect ratios, batch sizes and
dtypes.  One instance of the module form is called on such earlier inputs and then on the case's own; each call must
give what a fresh instance gives on the same input (for a random module, with the same replayed parameters), so a
cached size, kernel or grid shows.  Replayed parameters hide state a random module keeps where it draws them (kornia
0.6.9's LongestMaxSize kept the output size its generator computed for the first input): so the reused instance
also draws its own parameters for each earlier input, and for the case's input it must draw what a fresh instance
draws, seeded alike, on the same target.  Both instances run the same kernels on the same device: by default their
outputs must be identical; a spec's rule scoped to the check (`Rule(..., check="history")`) says otherwise, with why.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch

from conformance.checks.context import CaseContext, InputImage
from conformance.checks.forms import counterpart_run, differs, first_cases, in_process_eager, keeping, usable
from conformance.checks.registry import Check, CheckOutcome, register
from conformance.checks.requests import Steps, call, own_draw, parameters
from conformance.devices.virtual.tensor import host_tensor
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import INTEGER_PEAKS, Case, Recipe
from conformance.spec.sampled import named_leaves

# Cases of a variant whose history is checked on a target, per process: each costs seven calls of the op (three
# earlier inputs, each by a fresh and the reused instance, then the case; a random module's own draws besides), and
# a module that keeps state shows it on its first case (every planted one did); the sweep's specs check 10 cases an
# item for the same reason.
HISTORY_CASES = 10


# the other dtype an earlier input takes, by the case's dtype (else the spec's first other dtype of the mode)
OTHER_DTYPE = {"float32": "float64", "float64": "float32", "uint8": "float32", "float16": "float32"}


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


def check_history(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    form = ctx.spec.module_form()
    assert form is not None
    fresh_last = ctx.run if ctx.spec.module is not None else (yield from counterpart_run(ctx))
    if ctx.case.recipe.empty or not usable(fresh_last) or fresh_last.error is not None:
        return None  # no output of a fresh instance to hold the reused one to (the error item carries a raise)
    if not (yield from first_cases(ctx, "history", HISTORY_CASES)):
        return None  # this variant's first cases were checked on this target
    reused = keeping(form, [], once=True)
    sequence: list[tuple[str, CheckOutcome | None]] = []
    for label, recipe in earlier_recipes(form, ctx.case.recipe, ctx.mode):
        image = InputImage.make(recipe)
        case = Case(ctx.case.op, recipe, ctx.case.params)
        try:
            sampled = yield from parameters(form, image.dense, case)
        except Exception:  # noqa: BLE001 - a sampler that refuses this input: nothing to replay on it, so skip it
            continue
        fresh = yield from call(form, image.on(ctx.target), case, ctx.target, sampled)
        if form.samples:  # the reused instance draws for this input itself, as its forward would
            yield from own_draw(reused, image.on(ctx.target), case, ctx.target)
        again = yield from call(reused, image.on(ctx.target), case, ctx.target, sampled)
        if not (usable(fresh) and usable(again)):
            continue
        sequence.append((label, differs(ctx, "history", again, fresh, "a fresh instance")))
    last = yield from call(reused, ctx.source.on(ctx.target), ctx.case, ctx.target, ctx.sampled)
    if not usable(last):
        return None
    sequence.append(("this case", differs(ctx, "history", last, fresh_last, "a fresh instance")))
    if form.samples:
        sequence.append(("its own draw for this case", (yield from _drawn_otherwise(ctx, form, reused))))
    details = {"sequence": [{"input": label, "same": found is None} for label, found in sequence]}
    broken = [(label, found) for label, found in sequence if found is not None]
    if not broken:
        return CheckOutcome("history", True, details=details)
    label, first = broken[0]
    order = ", then ".join(label for label, _ in sequence)
    first.message = f"one instance called on {order}: on {label}, {first.message}"
    first.details, first.cause = details, f"state {first.cause}"
    return first


def _drawn_otherwise(ctx: CaseContext, form: OpSpec, reused: OpSpec) -> Steps[CheckOutcome | None]:
    """Whether the reused instance draws other parameters for the case's input than a fresh one, seeded alike."""
    own = yield from own_draw(reused, ctx.source.on(ctx.target), ctx.case, ctx.target)
    fresh = yield from own_draw(form, ctx.source.on(ctx.target), ctx.case, ctx.target)
    if own.params is None or fresh.params is None:
        return None  # a sampler that refuses the input (the sampling check's finding)
    mine, theirs = named_leaves(own.params), named_leaves(fresh.params)
    for name in sorted(mine.keys() | theirs.keys()):
        a, b = mine.get(name), theirs.get(name)
        if not _same(a, b):
            said = f"it draws {name} = {_shown(a)} where a fresh instance draws {_shown(b)}"
            return CheckOutcome("history", False, said, cause="sampled")
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return type(a) is type(b) and bool(np.array_equal(a, b, equal_nan=True))
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        a, b = host_tensor(a), host_tensor(b)
        return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a, b))
    return type(a) is type(b) and not isinstance(a, torch.Tensor) and bool(a == b)


def _shown(value: Any) -> str:
    text = str(host_tensor(value).tolist()) if isinstance(value, torch.Tensor) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _has_module_form(spec: OpSpec) -> bool:
    return spec.module is not None or (spec.counterpart is not None and spec.counterpart.module is not None)


register(
    Check(
        "history",
        68,
        "fresh instance",
        "one module instance called on inputs of other sizes, batch sizes and dtypes, then on the case: each call "
        "gives what a fresh instance gives, and a random module draws for the case what a fresh instance draws",
        lambda spec, target, mode: _has_module_form(spec) and in_process_eager(spec, target, mode),
        check_history,
        judges_values=True,
        unmet=lambda spec: spec.counterpart.unmet() if spec.module is None and spec.counterpart is not None else None,
    )
)
