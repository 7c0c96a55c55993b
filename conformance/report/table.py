"""The terminal's view of a summary: one screen at the end of a run, the full table on demand.

A clean ci run has thousands of items, nearly all passing or known; listing each buried the few
that matter.  The end of a run (`format_section`) says in one line whether anything new went wrong,
shows a matrix of case families x targets (one symbol per cell), the known issues and notes in a
line each, and warnings aggregated per op, target and cause (the largest first; all of them in the
report).  Variants that failed are listed first.  `python -m conformance summary RUN` prints every
variant (`format_table(full=True)`) and the ops x targets matrix.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from conformance.report.dashboard import counted, uncalibrated
from conformance.spec.tolerances import is_uncalibrated
from conformance.store.summary_model import NEW_VERDICTS, Group, Summary, rank
from conformance.store.tally import VERDICT_ORDER

SYMBOLS = {
    "fail": "F",
    "error": "E",
    "known_issue": "k",
    "warning": "w",
    "resource": "R",
    "interrupted": "I",
    "skipped": "s",
    "pass": ".",
}
QUIET = ("pass", "skipped")  # verdicts the table leaves to the matrix
WARNING_LINES = 8  # aggregated warnings shown at the end of a run; the rest are counted
LISTED_VARIANTS = 20  # failing variants shown at the end of a run; the rest are counted


def _fmt_number(value: Any) -> str:
    if isinstance(value, (int, float)):
        return f"{value:.4g}"
    return str(value)


def _worst_verdict(verdicts: list[str]) -> str:
    return min(verdicts, key=rank)


def _variant_rows(summary: Summary) -> list[tuple[str, ...]]:
    """One row per test item variant (op, target, dtype, mode): the worst verdict over its checks."""
    items: dict[tuple[str, ...], list[Group]] = defaultdict(list)
    for row in summary.groups:
        items[(row.op, row.labelled_target, row.dtype, row.mode)].append(row)
    table = []
    for key, rows in items.items():
        verdict = _worst_verdict([r.verdict for r in rows] + ["pass"])
        examples = max(r.examples for r in rows)
        worst_row = next((r for r in rows if r.verdict == verdict and r.worst), None)
        worst_row = worst_row or next((r for r in rows if r.verdict == verdict), None)
        detail = worst_row.check if worst_row and verdict != "pass" else ""
        if worst_row is not None and worst_row.worst:
            w = worst_row.worst
            detail = f"{worst_row.check}: {_fmt_number(w.max_abs)} / {_fmt_number(w.atol)}"
            detail += " (uncalibrated)" if is_uncalibrated(w.tolerance) else ""
        known = sorted({k for r in rows for k in r.known_issues})
        if known:
            detail += f"  [{', '.join(known)}]"
        if any(r.check == "baseline" and r.verdict != "pass" for r in rows):
            detail += "  (changed since the baseline)"
        table.append((*key, str(examples), verdict.replace("_", " "), detail))
    table.sort(key=lambda row: (VERDICT_ORDER.index(row[5].replace(" ", "_")), row[:4]))
    return table


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip() for row in rows
    ]


def _matrix(summary: Summary, by_family: bool) -> list[str]:
    """Rows (ops or families) x targets, one symbol per cell (the worst verdict), and a legend."""
    cells: dict[tuple[str, str], list[str]] = defaultdict(list)
    columns: dict[str, bool] = {}
    for row in summary.groups:
        columns.setdefault(row.column, row.virtual)
        cells[(row.family or row.op if by_family else row.op, row.column)].append(row.verdict)
    if not cells:
        return []
    known = [t.get("name") for t in summary.environment.get("targets", []) if isinstance(t, dict)]
    ordered = sorted(columns, key=lambda c: (columns[c], known.index(c) if c in known else len(known), c))
    header = ("family" if by_family else "op", *(c + ("*" if columns[c] else "") for c in ordered))
    names = sorted({name for name, _ in cells})
    body = [
        (name, *(SYMBOLS.get(_worst_verdict(cells[(name, c)]), "?") if (name, c) in cells else " " for c in ordered))
        for name in names
    ]
    legend = "  ".join(f"{symbol} {verdict.replace('_', ' ')}" for verdict, symbol in SYMBOLS.items())
    return [*_aligned([header, *body]), f"legend: {legend}  (blank: not run; * virtual target)"]


def format_matrix(summary: Summary) -> list[str]:
    """Ops x targets, one symbol per cell (the worst verdict over dtypes, modes and checks), and a legend."""
    return _matrix(summary, by_family=False)


def format_table(summary: Summary, *, full: bool = False) -> list[str]:
    """The variants that need a look (every variant with `full`), failures first, then the matrix."""
    header = ("op", "target", "dtype", "mode", "examples", "result", "worst check: max |diff| / atol")
    table = _variant_rows(summary)
    shown = table if full else [r for r in table if r[5].replace(" ", "_") not in QUIET]
    if not table:
        return ["no outcomes recorded"]
    lines = (
        _aligned([header, *shown])
        if shown
        else [
            f"all {len(table)} test item variants passed or were skipped (none failed, errored, hit a known issue, "
            f"warned, changed or was interrupted)"
        ]
    )
    if len(shown) < len(table) and shown:
        lines.append(
            f"({len(table) - len(shown)} more variants passed or were skipped: in the matrix below, "
            f"summary.json and the HTML report)"
        )
    return [*lines, "", *format_matrix(summary)]


def format_modules(summary: Summary, *, broken_only: bool = False) -> list[str]:
    """What module ops did when left on the cpu with a device input (the `unmoved` check), per op and target;
    with `broken_only`, only where that broke the module's promise."""
    seen: dict[tuple[str, str], Counter] = defaultdict(Counter)
    verdicts: dict[tuple[str, str], str] = {}
    for row in summary.groups:
        if row.check == "unmoved" and row.behaviours:
            key = (row.op, row.labelled_target)
            seen[key].update(row.behaviours)
            verdicts[key] = _worst_verdict([verdicts.get(key, "pass"), row.verdict])
    return [
        f"  {op} on {target}: "
        + "; ".join(f"{b} ({n} cases)" for b, n in sorted(counts.items()))
        + f" -> {verdicts[(op, target)].replace('_', ' ')}"
        for (op, target), counts in sorted(seen.items())
        if not broken_only or verdicts[(op, target)] not in QUIET
    ]


def _warning_lines(summary: Summary) -> list[str]:
    """Warnings aggregated per op, check and cause: one line each with the targets, the case count and the
    first message (its details cut at " at "); the most frequent first, WARNING_LINES of them."""
    found: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in summary.groups:
        if row.verdict != "warning":
            continue
        for cause in row.causes or {"": 0}:
            entry = found.setdefault((row.op, row.check, cause), {"targets": set(), "cases": 0, "message": ""})
            entry["targets"].add(row.target)
            entry["cases"] += int((row.causes or {}).get(cause) or row.counts.get("warning", 0))
            entry["message"] = entry["message"] or row.first_warning
    ordered = sorted(found.items(), key=lambda kv: (-kv[1]["cases"], kv[0]))
    lines = []
    for (op, check, cause), entry in ordered[:WARNING_LINES]:
        message = entry["message"].split(" at ")[0]
        message = message if len(message) <= 90 else message[:87] + "..."
        lines.append(
            f"  {op} on {', '.join(sorted(entry['targets']))}: {check} ({cause or 'warning'}) in "
            f"{entry['cases']:,} cases: {message}"
        )
    if len(ordered) > WARNING_LINES:
        lines.append(f"  ... and {len(ordered) - WARNING_LINES} more: the report's warnings table")
    return lines


def _ids(ids: list[str], shown: int = 4) -> str:
    return ", ".join(ids[:shown]) + (f", ... ({len(ids) - shown} more in summary.json)" if len(ids) > shown else "")


def format_section(summary: Summary, *, selected: bool = False) -> list[str]:
    """The end of a run in one screen: the verdict, failing variants, families x targets, known issues,
    notes and warnings.  `selected`: a -k/-m/node-id run (known issues it left out are not warned about)."""
    groups = summary.groups
    items = Counter(g.verdict for g in groups)
    bad = [g for g in groups if g.verdict in NEW_VERDICTS]
    totals = summary.totals
    counts = ", ".join(f"{n:,} {v.replace('_', ' ')}" for v, n in sorted(items.items(), key=lambda kv: rank(kv[0])))
    outcomes = sum(v for k, v in totals.items() if k != "interrupted")
    head = (
        f"{counted(len(bad), 'item')} failed, errored, ran out of memory or were interrupted"
        if bad
        else "no new failure"
    )
    if not summary.complete:  # stopped or crashed before its end: the verdict is about what ran
        head = f"incomplete run, {head}" + ("" if bad else " so far")
    lines = [f"{head}: {counted(len(groups), 'item')} ({counts}); {counted(outcomes, 'checked outcome')}"]
    if bad:
        rows = [r for r in _variant_rows(summary) if r[5].replace(" ", "_") in NEW_VERDICTS]
        shown = rows[:LISTED_VARIANTS]
        lines += _aligned(
            [("op", "target", "dtype", "mode", "examples", "result", "worst check: max |diff| / atol"), *shown]
        )
        if len(rows) > len(shown):
            lines.append(f"... and {len(rows) - len(shown)} more variants: python -m conformance summary RUN")
    lines += _matrix(summary, by_family=True)
    known = sorted({k for g in groups for k in g.known_issues})
    if known:
        hit = [g for g in groups if g.known_issues]
        lines.append(
            f"known issues: {counted(len(known), 'entry')} reproduced in {counted(len(hit), 'item')} "
            f"({totals.get('known_issue', 0):,} cases): the report's known-issue table"
        )
    unused = [] if selected else list(summary.unused_known_issues)
    if unused:
        lines.append(f"known issues applying to no item of this run ({len(unused)}): {_ids(unused)}")
    unreproduced = [] if selected else list(summary.unreproduced_known_issues)
    if unreproduced:
        lines.append(
            f"known issues matching no failure in this run's draws ({len(unreproduced)}): {_ids(unreproduced)}"
        )
    notes = summary.notes
    if notes:
        entries = sorted({n["issue"] for n in notes})
        lines.append(
            f"notes: {counted(len(entries), 'strict known issue')} did not reproduce in {len(notes)} cells, "
            f"with too few cases in scope to call them fixed ({', '.join(entries[:5])}"
            f"{', ...' if len(entries) > 5 else ''}): summary.json notes"
        )
    defaults = uncalibrated(summary)
    if defaults:
        named = "; ".join(f"{u['op']} ({', '.join(u['dtypes'])})" for u in defaults[:5])
        lines.append(
            f"uncalibrated tolerances, the dtype defaults (docs/adding-an-op.md): {named}"
            + (f"; ... ({len(defaults) - 5} more in summary.md)" if len(defaults) > 5 else "")
        )
    broken = format_modules(summary, broken_only=True)
    if broken:
        lines += ["modules left on the cpu that broke their promise (unmoved):", *broken]
    warned = [g for g in groups if g.verdict == "warning"]
    if warned:
        lines.append(
            f"warnings (a cost, not a wrong answer; never fail the gate): {counted(len(warned), 'item')}, "
            f"{totals.get('warning', 0):,} cases; per op, cause and targets:"
        )
        lines += _warning_lines(summary)
    return lines
