"""Which runs the cross-library measurement needs (conformance.checks.peers measures them): the engine plans them
and provides them from its case cache, so the measurement only compares what it is handed.

Each pair is measured once, by the later implementation of the two, on the same target (a host library's output is
its cpu output); the run orders an operation's items so that the earlier outputs are still cached.  An
implementation drawing cases of its own (other shapes than the others document) makes the others run its cases:
that is done on the cpu only.  A pair whose calls mean different things, because a case left a keyword out and the
two libraries document different defaults for it, is not compared: that is recorded as the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.checks.context import CaseContext
from conformance.devices.targets import CPU, Target
from conformance.spec.implementations import OMIT
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import Case

_UNMET: dict[str, str | None] = {}


def _unmet(spec: OpSpec) -> str | None:
    if spec.name not in _UNMET:
        _UNMET[spec.name] = spec.unmet_requirement()
    return _UNMET[spec.name]


def _differing_defaults(mine: dict[str, Any], theirs: dict[str, Any]) -> str:
    keys = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
    return ", ".join(f"{k}: {mine.get(k)!r} vs {theirs.get(k)!r}" for k in keys)


@dataclass(frozen=True)
class PeerCall:
    """An earlier implementation's run that the measurement needs: the same case, under that op's name."""

    spec: OpSpec
    case: Case
    target: Target


def plan(ctx: CaseContext) -> tuple[dict[str, dict[str, Any]], dict[str, PeerCall]]:
    """Per earlier implementation of the operation, an entry (its library and target, or why it is not
    compared), and the runs the engine must provide for the others (`measure`)."""
    member = ctx.spec.member
    entries: dict[str, dict[str, Any]] = {}
    calls: dict[str, PeerCall] = {}
    if member is None or ctx.output64 is None:
        return entries, calls
    dtype, mode = ctx.case.recipe.dtype, ctx.mode
    omits = OMIT in ctx.case.params  # else every implementation is called with the same keywords
    mine = member.effective(ctx.case.params) if omits else None
    for peer in member.earlier():
        if (dtype, mode) not in peer.variant_pairs():
            continue
        assert peer.member is not None
        entry: dict[str, Any] = {"library": peer.member.library}
        entries[peer.name] = entry
        why = _unmet(peer)
        theirs = peer.member.effective(ctx.case.params) if omits else None
        target = ctx.target if ctx.target.has_items(peer) else CPU
        entry["target"] = target.name
        if why is not None:
            entry["skipped"] = why
        elif theirs != mine:
            entry["skipped"] = (
                f"different defaults for a keyword left out ({_differing_defaults(mine or {}, theirs or {})})"
            )
        elif not member.shares_cases and target != CPU:
            entry["skipped"] = (
                "draws cases of its own, which the other libraries do not run: compared with them on the cpu only"
            )
        elif lacking := target.lacks(peer.needs_real_device):
            entry["skipped"] = lacking
        else:
            calls[peer.name] = PeerCall(peer, ctx.case.relabelled(peer.name), target)
    return entries, calls
