"""Small inline SVG bar charts of time per call: one chart per op, a bar per (target, dtype, mode)
and input shape, on a log scale so a 16x16 image and a 1080p frame fit on one axis."""

from __future__ import annotations

import math
from collections import defaultdict

from markupsafe import Markup, escape

from conformance.store.timings import Timing

BAR, GAP, LABEL_W, BAR_W = 12, 3, 250, 260
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2")


def _microseconds(seconds: float) -> str:
    us = seconds * 1e6
    return f"{us:.3g} us" if us < 1000 else f"{us / 1000:.3g} ms"


def timing_charts(timings: list[Timing]) -> list[dict[str, object]]:
    by_op: dict[str, list[Timing]] = defaultdict(list)
    for timing in timings:
        by_op[timing.op].append(timing)
    low = math.log10(min(t.seconds for t in timings)) - 0.2 if timings else 0.0
    high = math.log10(max(t.seconds for t in timings)) + 0.1 if timings else 1.0
    charts: list[dict[str, object]] = []
    for op, rows in sorted(by_op.items()):
        shapes = sorted({t.shape for t in rows}, key=lambda s: [int(n) for n in s.split("x")])
        rows.sort(key=lambda t: (t.target, t.dtype, t.mode, shapes.index(t.shape)))
        height = len(rows) * (BAR + GAP) + 28
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{LABEL_W + BAR_W + 80}" height="{height}" '
            f'role="img" aria-label="time per call of {escape(op)}">'
        ]
        for n, t in enumerate(rows):
            y = n * (BAR + GAP)
            width = max(1.0, BAR_W * (math.log10(t.seconds) - low) / (high - low))
            colour = PALETTE[shapes.index(t.shape) % len(PALETTE)]
            label = f"{t.target} {t.dtype} {t.mode} {t.shape}"
            parts.append(
                f'<text x="{LABEL_W - 4}" y="{y + BAR - 2}" font-size="10" text-anchor="end">'
                f"{escape(label)}</text>"
                f'<rect x="{LABEL_W}" y="{y}" width="{width:.1f}" height="{BAR}" fill="{colour}">'
                f"<title>{escape(label)}: {_microseconds(t.seconds)}, {t.ratio:.3g}x calibration</title></rect>"
                f'<text x="{LABEL_W + width + 3:.1f}" y="{y + BAR - 2}" font-size="10">'
                f"{_microseconds(t.seconds)}</text>"
            )
        legend_y = len(rows) * (BAR + GAP) + 16
        for i, shape in enumerate(shapes):
            parts.append(
                f'<rect x="{LABEL_W + i * 90}" y="{legend_y - 9}" width="10" height="10" '
                f'fill="{PALETTE[i % len(PALETTE)]}"/><text x="{LABEL_W + i * 90 + 13}" y="{legend_y}" '
                f'font-size="10">{escape(shape)}</text>'
            )
        parts.append("</svg>")
        charts.append({"op": op, "svg": Markup("".join(parts))})  # the SVG is built from escaped values
    return charts
