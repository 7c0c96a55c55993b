"""The worst case of each implementation's reference item, kept for the cross-library page.

A passing cell still has a worst case: the largest difference from the reference, and from each
other library.  The report shows it with pictures, so an item of an operation's implementation
keeps, while its cases stream past, the arrays of its worst case against the reference and against
each peer (a window around the worst pixel, at most WINDOW pixels a side), and writes them once
when the item ends: one artifact per comparison and item, whatever the number of cases.  Identical
outputs keep nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from conformance.checks.context import CaseContext
from conformance.checks.registry import CheckOutcome

WINDOW = 64


@dataclass
class Kept:
    value: float
    case_json: str
    arrays: dict[str, np.ndarray]
    extra: dict[str, Any]


def _window(arrays: dict[str, np.ndarray], worst: tuple[int, ...], shape: tuple[int, ...]) -> dict[str, np.ndarray]:
    """One image (the worst pixel's) of every array shaped like the output, cropped around that pixel;
    an input of another shape is kept whole if small, else subsampled to about WINDOW a side."""
    lead = tuple(worst[:-3]) if len(shape) > 3 else ()
    row, col = (worst[-2], worst[-1]) if len(worst) >= 2 else (0, 0)
    height, width = shape[-2], shape[-1]
    top = min(max(0, row - WINDOW // 2), max(0, height - WINDOW))
    left = min(max(0, col - WINDOW // 2), max(0, width - WINDOW))
    kept = {}
    for name, array in arrays.items():
        if array.shape == shape:
            image = array[lead] if lead else array
            kept[name] = image[..., top : top + WINDOW, left : left + WINDOW].astype(np.float32)
        elif array.ndim >= 3:
            image = array.reshape(-1, *array.shape[-3:])[0]
            step = max(1, math.ceil(max(image.shape[-2:]) / WINDOW))
            kept[name] = image[..., ::step, ::step].astype(np.float32)
    return kept


def _worst_index(actual: np.ndarray, expected: np.ndarray) -> tuple[int, ...]:
    with np.errstate(invalid="ignore"):  # inf - inf: NaN
        diff = np.abs(actual - expected)
    undefined = np.isnan(diff)
    diff[undefined] = np.inf
    diff[undefined & ((np.isnan(actual) & np.isnan(expected)) | (actual == expected))] = 0.0
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(diff)), diff.shape))


class WorstCases:
    """One item's worst case per comparison ("reference", or a peer op's name)."""

    def __init__(self) -> None:
        self.kept: dict[str, Kept] = {}

    def _better(self, against: str, value: Any) -> bool:
        try:
            number = float(value)
        except (TypeError, ValueError):
            return False
        if math.isnan(number) or number <= 0:
            return False
        previous = self.kept.get(against)
        return previous is None or number > previous.value

    def observe(self, ctx: CaseContext, outcome: CheckOutcome) -> None:
        if ctx.spec.member is None or outcome.check != "reference" or ctx.output64 is None:
            return
        output = ctx.output64
        metrics = outcome.metrics
        if metrics is not None and self._better("reference", metrics.max_abs):
            index = tuple(metrics.worst_index or _worst_index(output, ctx.expected))
            arrays = {"input": ctx.source.values, "reference": ctx.expected, "output": output}
            self.kept["reference"] = Kept(
                float(metrics.max_abs),
                ctx.case.json,
                _window(arrays, index, output.shape),
                {"metrics": metrics.to_dict()},
            )
        peers, outputs = ctx.peers
        for name, entry in peers.items():
            if name in outputs and self._better(name, entry.get("max_abs")):
                index = _worst_index(output, outputs[name])
                arrays = {
                    "input": ctx.source.values,
                    "reference": ctx.expected,
                    "output": output,
                    "peer": outputs[name],
                }
                self.kept[name] = Kept(
                    float(entry["max_abs"]),
                    ctx.case.json,
                    _window(arrays, index, output.shape),
                    {"peer_library": entry.get("library"), "peer_target": entry.get("target")},
                )

    def take(self) -> dict[str, Kept]:
        kept, self.kept = self.kept, {}
        return kept
