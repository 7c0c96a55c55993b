"""The cross-library page's two heatmaps: per operation and library, the largest difference from the
reference (coloured against its tolerance), and per operation and pair of libraries, the largest difference
between their outputs (coloured by its share of the value range).  One number a cell; the cell links to
the worst case's pictures."""

from __future__ import annotations

import math
from typing import Any

from conformance.spec.libraries import ORDER
from conformance.spec.recipes import peak


def _library_order(library: str) -> tuple[int, str]:
    return (ORDER.index(library) if library in ORDER else len(ORDER), library)


def tolerance_colour(value: float, atol: Any) -> str:
    """Green shades within the tolerance, orange to red beyond it (log of the ratio, up to 100x)."""
    try:
        ratio = value / float(atol) if atol else (0.0 if value == 0 else math.inf)
    except (TypeError, ValueError):
        ratio = math.inf
    if ratio <= 1:
        return f"hsl(120, 45%, {88 - 16 * ratio:.0f}%)"
    step = min(math.log10(ratio) / 2, 1.0)
    return f"hsl({40 - 40 * step:.0f}, 85%, {70 - 22 * step:.0f}%)"


def share_colour(value: float, dtype: str) -> str:
    """Light to dark by the difference's share of the range (255 levels, or 1.0), from 1e-6 to all of it."""
    share = value / peak(dtype)
    step = 0.0 if share <= 0 else min(max((math.log10(share) + 6) / 6, 0.0), 1.0)
    return f"hsl({55 - 55 * step:.0f}, 85%, {92 - 47 * step:.0f}%)"


def _cell(value: float, colour: str, entry: Any, title: str) -> dict[str, Any]:
    return {"value": f"{value:.3g}", "colour": colour, "entry": entry, "verdict": entry.verdict, "title": title}


def shown_entries(heat: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(machine, op, target) of every entry a heatmap cell names: only these get worst-case cards."""
    cells = [c for row in heat["rows"] for part in ("reference", "pairs") for c in row[part].values()]
    return {(c["entry"].machine, c["entry"].op, c["entry"].target) for c in cells}


def heatmaps(model: dict[str, Any]) -> dict[str, Any]:
    """{"libraries", "pairs", "rows"}: each row an operation with a cell per library and per pair (or None)."""
    libraries = sorted({c["library"] for c in model["columns"]}, key=_library_order)
    pairs: set[tuple[str, str]] = set()
    rows = []
    for row in model["rows"]:
        entries = [e for cell in row["cells"] for e in cell]
        reference: dict[str, dict[str, Any]] = {}
        between: dict[tuple[str, str], dict[str, Any]] = {}
        best: dict[Any, float] = {}
        for e in entries:
            ref = e.reference
            if ref is not None and ref["max_abs"] >= best.get(e.library, -1.0):
                best[e.library] = ref["max_abs"]
                title = (
                    f"{e.op} on {e.target} [{ref['dtype']}, {ref['mode']}]: {ref['max_abs']:.4g} against atol "
                    f"{ref['atol']}; {e.verdict.replace('_', ' ')}"
                    + (f"; known: {', '.join(sorted(e.known_issues))}" if e.known_issues else "")
                )
                reference[e.library] = _cell(ref["max_abs"], tolerance_colour(ref["max_abs"], ref["atol"]), e, title)
            for (other, other_target), pair in e.pairs.items():
                if pair.get("max_abs") is None or pair.get("library") in (None, e.library):
                    continue
                key = tuple(sorted((e.library, str(pair["library"])), key=_library_order))
                if pair["max_abs"] < best.get(key, -1.0):
                    continue
                best[key] = pair["max_abs"]
                pairs.add(key)
                title = (
                    f"{e.op} on {e.target} vs {other} on {other_target} [{pair.get('dtype')}, {pair.get('mode')}]: "
                    f"{pair['max_abs']:.4g}"
                )
                between[key] = _cell(pair["max_abs"], share_colour(pair["max_abs"], str(pair.get("dtype"))), e, title)
        rows.append({"operation": row["operation"], "reference": reference, "pairs": between})
    ordered = sorted(pairs, key=lambda p: (_library_order(p[0]), _library_order(p[1])))
    return {"libraries": libraries, "pairs": ordered, "rows": rows}
