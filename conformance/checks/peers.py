"""The cross-library measurement: one implementation's output against the other libraries'
implementations of the same operation, for the same case.

It is a measurement, not a verdict: each library is held to the operation's documented meaning
by its own `reference` check, which is the gate (a library that follows another convention fails
there, or is a known issue with its envelope).  The numbers ride on the reference outcome
(`details["peers"]`) and fill the report's cross-library page.

Which earlier implementations run, where, and which are not compared (and why) is the engine's plan
(conformance.engine.peer_runs); this module measures what it is handed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from conformance.checks.context import CaseContext
from conformance.spec.recipes import peak


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
