"""The terminal's view of a summary: what needs a look, and a one-screen matrix.

A clean ci run has hundreds of item variants, nearly all passing; listing each buried the few
that matter.  The table lists only variants that did not pass (failed, errored, known issues,
warnings and baseline changes, out of memory, interrupted); the matrix shows every op on every
target in one symbol.  The full table stays in summary.json and the HTML report (and
`python -m conformance summary RUN --all`).
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from conformance.store.aggregate import VERDICT_ORDER

SYMBOLS = {"fail": "F", "error": "E", "known_issue": "k", "warning": "w", "resource": "R", "interrupted": "I",
           "skipped": "s", "pass": "."}
QUIET = ("pass", "skipped")  # verdicts the table leaves to the matrix


def _fmt_number(value: Any) -> str:
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    return str(value)


def _target(row: dict[str, Any]) -> str:
    return row["target"] + (" (virtual)" if row["virtual"] else "")


def _worst_verdict(verdicts: list[str]) -> str:
    return min(verdicts, key=lambda v: VERDICT_ORDER.index(v) if v in VERDICT_ORDER else len(VERDICT_ORDER))


def _variant_rows(summary: dict[str, Any]) -> list[tuple[str, ...]]:
    """One row per test item variant (op, target, dtype, mode): the worst verdict over its checks."""
    items: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for row in summary["groups"]:
        items[(row["op"], _target(row), row["dtype"], row["mode"])].append(row)
    table = []
    for key, rows in items.items():
        verdict = _worst_verdict([r["verdict"] for r in rows] + ["pass"])
        examples = max(r["examples"] for r in rows)
        worst_row = next((r for r in rows if r["verdict"] == verdict and r["worst"]), None)
        worst_row = worst_row or next((r for r in rows if r["verdict"] == verdict), None)
        detail = worst_row["check"] if worst_row and verdict != "pass" else ""
        if worst_row is not None and worst_row["worst"]:
            w = worst_row["worst"]
            detail = f"{worst_row['check']}: {_fmt_number(w['max_abs'])} / {_fmt_number(w['atol'])}"
        known = sorted({k for r in rows for k in r["known_issues"]})
        if known:
            detail += f"  [{', '.join(known)}]"
        if any(r["check"] == "baseline" and r["verdict"] != "pass" for r in rows):
            detail += "  (changed since the baseline)"
        table.append((*key, str(examples), verdict.replace("_", " "), detail))
    table.sort(key=lambda row: (VERDICT_ORDER.index(row[5].replace(" ", "_")), row[:4]))
    return table


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


def format_matrix(summary: dict[str, Any]) -> list[str]:
    """Ops x targets, one symbol per cell (the worst verdict over dtypes, modes and checks), and a legend."""
    cells: dict[tuple[str, str], list[str]] = defaultdict(list)
    columns: dict[str, bool] = {}
    for row in summary["groups"]:
        column = (f"{row['machine']}/" if row.get("machine") else "") + row["target"]
        columns.setdefault(column, bool(row["virtual"]))
        cells[(row["op"], column)].append(row["verdict"])
    if not cells:
        return []
    ordered = sorted(columns, key=lambda c: (columns[c], c))
    header = ("op", *(c + ("*" if columns[c] else "") for c in ordered))
    ops = sorted({op for op, _ in cells})
    body = [(op, *(SYMBOLS.get(_worst_verdict(cells[(op, c)]), "?") if (op, c) in cells else " " for c in ordered))
            for op in ops]
    legend = "  ".join(f"{symbol} {verdict.replace('_', ' ')}" for verdict, symbol in SYMBOLS.items())
    return [*_aligned([header, *body]), f"legend: {legend}  (blank: not run; * virtual target)"]


def format_table(summary: dict[str, Any], *, full: bool = False) -> list[str]:
    """The variants that need a look (every variant with `full`), failures first, then the matrix."""
    header = ("op", "target", "dtype", "mode", "examples", "result", "worst check: max |diff| / atol")
    table = _variant_rows(summary)
    shown = table if full else [r for r in table if r[5].replace(" ", "_") not in QUIET]
    if not table:
        return ["no outcomes recorded"]
    lines = _aligned([header, *shown]) if shown else [
        f"all {len(table)} test item variants passed or were skipped (none failed, errored, hit a known issue, "
        f"warned, changed or was interrupted)"]
    if len(shown) < len(table) and shown:
        lines.append(f"({len(table) - len(shown)} more variants passed or were skipped: in the matrix below, "
                     f"summary.json and the HTML report)")
    return [*lines, "", *format_matrix(summary)]


def format_modules(summary: dict[str, Any]) -> list[str]:
    """What module ops did when left on the cpu with a device input (the `unmoved` check), per op and target."""
    seen: dict[tuple[str, str], Counter] = defaultdict(Counter)
    verdicts: dict[tuple[str, str], str] = {}
    for row in summary["groups"]:
        if row["check"] == "unmoved" and row.get("behaviours"):
            key = (row["op"], _target(row))
            seen[key].update(row["behaviours"])
            verdicts[key] = _worst_verdict([verdicts.get(key, "pass"), row["verdict"]])
    return [f"  {op} on {target}: " + "; ".join(f"{b} ({n} cases)" for b, n in sorted(counts.items()))
            + f" -> {verdicts[(op, target)].replace('_', ' ')}" for (op, target), counts in sorted(seen.items())]
