"""The `ranges` relation: the output's values stay in the ranges the library's docstring gives them.

kornia's conversions say where their output lies ("The H channel values are in the range [0, 2pi). S and V are in
the range 0..1."; "in [0, 1] when ``clip`` is True"), and code downstream relies on it: an `acos` of a saturation,
a hue used as an index, a cast to uint8.  A value a rounding past the edge passes a check against a reference under
a tolerance, and fails this one.  The check reads the Returns section of the first public library callable the call
enters (else, for a class, of the function it wraps) with conformance.spec.documented, and holds every case whose
input is in [0, 1] (the range the docs speak of) to each range stated under the arguments the callable was given.
A closed end allows four roundings of the output's dtype; an open end (`2pi)`) none.  Nothing is listed per op.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from conformance.checks.context import CaseContext
from conformance.checks.entered import entered
from conformance.checks.forms import eager_tensor_call
from conformance.checks.registry import Check, CheckOutcome, register
from conformance.checks.requests import Steps
from conformance.devices.targets import Target
from conformance.spec.documented import OutputRange, output_ranges
from conformance.spec.opspec import OpSpec
from conformance.spec.signatures import function_twin
from conformance.spec.versions import resolved

_documents: dict[str, bool] = {}  # op -> whether the callable it enters documents a range (read on its first case)


def ranges_of(fn: Any) -> tuple[OutputRange, ...]:
    """The ranges a library callable's docstring gives its output (a class: else those of the function it wraps)."""
    found = output_ranges(fn)
    twin = function_twin(fn) if not found and isinstance(fn, type) else None
    return output_ranges(twin) if twin is not None else found


def _may_document(spec: OpSpec, target: Target, mode: str) -> bool:
    """Items only where a range may be documented: a spec that names its library callables in `needs` gets them
    only where one of those (a class: the function it wraps) documents a range; one that names none, everywhere."""
    named = [found for dotted in spec.needs if callable(found := resolved(dotted))]
    documents = not named or any(ranges_of(fn) for fn in named)
    return documents and eager_tensor_call(spec, target, mode)


def _outside(values: np.ndarray, stated: OutputRange, dtype: torch.dtype) -> np.ndarray:
    slack = 4 * torch.finfo(dtype).eps * max(abs(stated.low), abs(stated.high), 1.0)
    above = values >= stated.high if stated.high_open else values > stated.high + slack
    return above | (values < stated.low - slack) | np.isnan(values)


def check_ranges(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    output = ctx.run.output
    if ctx.output64 is None or not isinstance(output, torch.Tensor) or not output.is_floating_point():
        return None
    values = ctx.source.values
    if ctx.case.recipe.empty or _documents.get(ctx.spec.name) is False or values.min() < 0 or values.max() > 1:
        return None  # no range documented, or an input outside the [0, 1] the docs speak of
    entry, _ = yield from entered(ctx, ctx.sampled)
    stated = ranges_of(entry.callable) if entry is not None else ()
    _documents[ctx.spec.name] = bool(stated)
    held = [s for s in stated if s.holds_for(entry.arguments)] if entry is not None else []
    if not held:
        return None
    assert entry is not None
    for one in held:
        part = ctx.output64 if one.channels is None else ctx.output64[..., list(one.channels), :, :]
        outside = _outside(part, one, output.dtype)
        if outside.any():
            index = tuple(int(i) for i in np.argwhere(outside)[0])
            said = (
                f"{entry.name} documents {one.text!r}: {int(outside.sum())} of {outside.size} values outside, "
                f"the first {part[index]:.9g} at {list(index)}"
            )
            return CheckOutcome("ranges", False, said, cause="range", details={"callable": entry.name})
    return CheckOutcome("ranges", True, details={"callable": entry.name, "ranges": [s.text for s in held]})


register(
    Check(
        "ranges",
        74,
        "documented range",
        "the output's values stay in the ranges the Returns section of the library callable's docstring gives "
        "(inputs in [0, 1])",
        _may_document,
        check_ranges,
        reads_values=True,
        relation=True,
        variant=lambda spec, dtype, mode: dtype in ("float16", "bfloat16", "float32", "float64"),
        nothing="the library callable the op enters documents no range of its output (under the arguments it was "
        "given), or no case's input was in [0, 1], or the op raised",
    )
)
