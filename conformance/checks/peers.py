"""The cross-library measurement: one implementation's output against the other libraries'
implementations of the same operation, for the same case.

It is a measurement, not a verdict: each library is held to the operation's documented meaning
by its own `reference` check, which is the gate (a library that follows another convention fails
there, or is a known issue with its envelope).  The numbers ride on the reference outcome
(`details["peers"]`) and fill the report's cross-library page.

Each pair is measured once, by the later implementation of the two, on the same target (a host
library's output is its cpu output); the run orders an operation's items so that the earlier
outputs are still cached.  An implementation drawing cases of its own (other shapes than the
others document) makes the others run its cases: that is done on the cpu only.  A pair whose calls
mean different things, because a case left a keyword out and the two libraries document different
defaults for it, is not compared: that is recorded as the reason.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance.checks.context import CaseContext
from conformance.devices.targets import CPU, Target
from conformance.spec.implementations import OMIT
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import Case, peak

_UNMET: dict[str, str | None] = {}


def _unmet(spec: OpSpec) -> str | None:
    if spec.name not in _UNMET:
        _UNMET[spec.name] = spec.unmet_requirement()
    return _UNMET[spec.name]


def difference(mine: np.ndarray, theirs: np.ndarray) -> tuple[float, float]:
    """(max |mine - theirs|, mean squared difference) in float64, with one temporary: the measurement
    runs once per peer on every case.  NaN on one side only is infinitely far; NaN on both, or equal
    infinities, are equal."""
    if mine.size == 0:
        return 0.0, 0.0
    with np.errstate(invalid="ignore"):  # inf - inf: NaN, settled below
        diff = np.subtract(mine, theirs)
    np.abs(diff, out=diff)
    largest = float(diff.max())
    if largest != largest:
        diff[np.isnan(diff)] = math.inf
        diff[(np.isnan(mine) & np.isnan(theirs)) | (mine == theirs)] = 0.0
        largest = float(diff.max())
    if not math.isfinite(largest):
        return largest, math.inf
    flat = diff.reshape(-1)
    return largest, float(np.dot(flat, flat)) / flat.size


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


def measure(
    ctx: CaseContext, entries: dict[str, dict[str, Any]], others: dict[str, CaseContext]
) -> tuple[dict[str, dict[str, Any]], dict[str, np.ndarray]]:
    """How far this output is from each earlier implementation's (`others`: their contexts for the `plan`'s
    calls), or why not compared; and the outputs compared with (for the report's pictures of the worst case)."""
    found = {name: dict(entry) for name, entry in entries.items()}
    outputs: dict[str, np.ndarray] = {}
    mine = ctx.output64
    if mine is None:
        return found, outputs
    for name, other in others.items():
        run = other.run
        problem = run.not_run or run.resource or (f"raised {run.raised}" if run.error is not None else None)
        if problem is None and other.output64 is None:
            problem = "returned no tensor"
        if problem is None and other.output64 is not None and other.output64.shape != mine.shape:
            problem = f"shape {other.output64.shape} vs {mine.shape}"
        if problem is not None or other.output64 is None:
            found[name]["skipped"] = problem
            continue
        max_abs, mse = difference(mine, other.output64)
        white = peak(ctx.output_dtype)
        found[name].update(
            max_abs=max_abs,
            psnr=math.inf if mse == 0 else 10 * math.log10(white**2 / mse) if mse < math.inf else -math.inf,
        )
        outputs[name] = other.output64
    return found, outputs
