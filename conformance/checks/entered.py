"""The op's call once more, with the library callable it enters recorded or its arguments replaced there: what the
relations that vary one argument (types, flags) share.  See conformance.devices.entry for the hook."""

from __future__ import annotations

from typing import Any

import torch

from conformance.checks.context import CaseContext, Derived
from conformance.checks.forms import usable, watched
from conformance.checks.requests import Steps, call
from conformance.devices.entry import Entry, recording, replacing
from conformance.devices.runs import OpRun
from conformance.devices.targets import Target
from conformance.spec.opspec import OpSpec, Sampled


def again(
    ctx: CaseContext, spec: OpSpec, sampled: Sampled | None, target: Target | None = None, image: Any = None
) -> Steps[OpRun]:
    """The case's call of `spec` on `target` (the context's by default), on the case's input or `image` (host)."""
    target = target or ctx.target
    tensor = ctx.source.on(target) if image is None else target.fresh_copy(image)
    return (yield from call(spec, tensor, ctx.case, target, sampled))


def _recorded(ctx: CaseContext, sampled: Sampled | None) -> Steps[tuple[Entry | None, OpRun]]:
    entries: list[Entry] = []
    run = yield from again(ctx, watched(ctx.spec, lambda: recording(entries)), sampled)
    return (entries[0] if entries and usable(run) else None), run


ENTERED = Derived("entered", lambda ctx: _recorded(ctx, ctx.sampled))
ENTERED_DRAWING = Derived("entered, drawing", lambda ctx: _recorded(ctx, None))  # a random module's own draw


def entered(ctx: CaseContext, sampled: Sampled | None) -> Steps[tuple[Entry | None, OpRun]]:
    """The first public library callable the case's call enters (None: it enters none) and the call's run: made once
    per case and target for the relations that ask (`sampled`: the case's replayed parameters, or None for a random
    module's own draw), kept on the context."""
    return (yield from ctx.derive(ENTERED if sampled is ctx.sampled else ENTERED_DRAWING))


def given(
    ctx: CaseContext,
    entry: Entry,
    values: dict[str, Any],
    sampled: Sampled | None,
    target: Target | None = None,
    image: torch.Tensor | None = None,
) -> Steps[OpRun | None]:
    """The call with the entered callable's arguments replaced by `values` (None: it was not entered again)."""
    were: list[bool] = []
    run = yield from again(ctx, watched(ctx.spec, lambda: replacing(entry, values, were)), sampled, target, image)
    return run if were and usable(run) else None
