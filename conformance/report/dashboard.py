"""The dashboard's data: a matrix (family > op > variant by target), what is new, and the known issues as
findings, as one JSON-ready dict the page draws and the Markdown summary reads.

A cell holds a verdict and its counts per verdict, added up over its checks (the page shows the share that
passes, known issues apart); its checks and worst cases are the drill-down, which the page loads when a cell is
opened (`report/page_files.py`).  Known issues are findings listed once with their counts, not repeated in cells.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from conformance.report import check_columns
from conformance.spec.tolerances import is_uncalibrated
from conformance.store.summary_model import NEW_VERDICTS, Group, PreviousRun, Summary, rank


def _libraries(summary: Summary) -> dict[str, str]:
    """op -> its library (an op of no declared operation: "")."""
    return {
        impl["op"]: str(impl.get("library", ""))
        for described in summary.operations.values()
        for impl in described.get("implementations", [])
        if isinstance(impl, dict) and "op" in impl
    }


def _check_row(group: Group) -> dict[str, Any]:
    """A check of a cell: what the findings and "what is new" read of it, and its row of the drill-down's table
    (`cells`, one text per column of report.check_columns)."""
    return {
        "check": group.check,
        "verdict": group.verdict,
        "counts": dict(group.counts),
        "known_issues": list(group.known_issues),
        "cells": check_columns.check_cells(group),
    }


def matrix(summary: Summary, environments: list[dict[str, Any]]) -> dict[str, Any]:
    """Columns (machine, target) and rows (family, op, dtype, mode), each cell the worst verdict over its
    checks, its counts per verdict over them (how much of it passes), and the checks for the drill-down."""
    described = {
        (env.get("machine_label", ""), t["name"]): t.get("description", "")
        for env in environments
        for t in env.get("targets", [])
    }
    library = _libraries(summary)
    columns: dict[tuple[str, str], dict[str, Any]] = {}
    cells: dict[tuple[str, str, str, str], dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
    for group in summary.groups:
        column = (group.machine, group.target)
        columns.setdefault(column, {"machine": column[0], "target": column[1], "virtual": group.virtual, "device": ""})
        columns[column]["device"] = described.get(column, "")
        key = (group.family, group.op, group.dtype, group.mode)
        cell = cells[key].setdefault(column, {"verdict": "pass", "counts": Counter(), "checks": []})
        cell["checks"].append(_check_row(group))
        cell["counts"].update(group.counts)
        if rank(group.verdict) < rank(cell["verdict"]):
            cell["verdict"] = group.verdict
    order = sorted(columns, key=lambda c: (c[0], columns[c]["virtual"], c[1]))
    index = {column: i for i, column in enumerate(order)}
    rows: list[dict[str, Any]] = []
    for (family, op, dtype, mode), by_column in sorted(cells.items()):
        shown: dict[str, Any] = {}
        for column, cell in by_column.items():
            cell["counts"] = dict(sorted(cell["counts"].items()))
            cell["checks"].sort(key=lambda c: (rank(c["verdict"]), c["check"]))
            shown[str(index[column])] = cell
        rows.append(
            {
                "id": f"r{len(rows)}",
                "family": family,
                "op": op,
                "library": library.get(op, ""),
                "dtype": dtype,
                "mode": mode,
                "verdict": min((c["verdict"] for c in by_column.values()), key=rank),
                "cells": shown,
            }
        )
    return {"columns": [columns[c] | {"id": str(index[c])} for c in order], "rows": rows}


def findings(summary: Summary, loaded: dict[str, Any], model: dict[str, Any]) -> list[dict[str, Any]]:
    """One line per known issue that applied: its cases, items and cells (links), and whether it reproduced."""
    found: dict[str, dict[str, Any]] = {}
    for row in model["rows"]:
        for column, cell in row["cells"].items():
            for check in cell["checks"]:
                for issue in check["known_issues"]:
                    entry = found.setdefault(issue, {"id": issue, "cases": 0, "items": 0, "cells": []})
                    entry["items"] += 1
                    entry["cases"] += int(check["counts"].get("known_issue", 0))
                    place = f"{row['id']}.{column}"
                    if place not in entry["cells"]:
                        entry["cells"].append(place)
    unreproduced = set(summary.unreproduced_known_issues)
    for issue, entry in found.items():
        described = loaded.get(issue) or {}
        entry.update(
            reason=str(described.get("reason", "")),
            link=str(described.get("link", "")),
            strict=bool(described.get("strict", False)),
            reproduced=issue not in unreproduced and entry["cases"] > 0,
        )
        entry["cells"] = entry["cells"][:200]  # enough to jump to; the count says how many
    return sorted(found.values(), key=lambda e: (not e["reproduced"], -e["cases"], e["id"]))


def _where(row: dict[str, Any], column: dict[str, Any]) -> str:
    machine = f"{column['machine']} " if column["machine"] else ""
    return f"{row['op']} [{row['dtype']}, {row['mode']}] on {machine}{column['target']}"


def new_items(
    model: dict[str, Any], summary: Summary, previous: PreviousRun | None, slowdowns: list[str]
) -> list[dict[str, Any]]:
    """What the first screen leads with: unexpected failures, changes since the baseline, known issues that
    stopped or grew since the previous comparable run, and slower timings."""
    columns = {c["id"]: c for c in model["columns"]}
    new: list[dict[str, Any]] = []
    for row in model["rows"]:
        for column, cell in row["cells"].items():
            for check in cell["checks"]:
                place = f"{row['id']}.{column}"
                where = _where(row, columns[column])
                if check["verdict"] in NEW_VERDICTS:
                    text = f"{where}: {check['check']} {check['verdict'].replace('_', ' ')}"
                    new.append({"kind": "failure", "text": text, "cell": place})
                elif check["check"] == "baseline" and check["verdict"] == "warning":
                    text = f"{where}: output changed since the baseline"
                    new.append({"kind": "baseline", "text": text, "cell": place})
    if previous is not None:
        new.extend(_since(summary, previous))
    new.extend({"kind": "slower", "text": text, "cell": None} for text in slowdowns)
    return new


def _reproduced(summary: Summary) -> dict[str, int]:
    cases: dict[str, int] = defaultdict(int)
    for group in summary.groups:
        for issue in group.known_issues:
            cases[issue] += int(group.counts.get("known_issue", 0))
    return cases


def _since(summary: Summary, previous: PreviousRun) -> list[dict[str, Any]]:
    now, before = _reproduced(summary), _reproduced(previous.summary)
    name = previous.name
    changes = []
    for issue in sorted(set(now) | set(before)):
        a, b = before.get(issue, 0), now.get(issue, 0)
        if a and not b:
            changes.append(f"known issue {issue} stopped reproducing (in {a} cases in {name})")
        elif b and not a:
            changes.append(f"known issue {issue} reproduced, in {b} cases (none in {name})")
        elif a and b > 2 * a and b - a >= 10:
            changes.append(f"known issue {issue} grew: {a} -> {b} cases since {name}")
    return [{"kind": "known issue", "text": text, "cell": None} for text in changes]


def uncalibrated(summary: Summary) -> list[dict[str, Any]]:
    """The ops judged by a default tolerance (their spec gives no rule with a measured reason), with the dtypes."""
    found: dict[str, set[str]] = defaultdict(set)
    for group in summary.groups:
        if group.worst is not None and is_uncalibrated(group.worst.tolerance):
            found[group.op].add(group.dtype)
    return [{"op": op, "dtypes": sorted(dtypes)} for op, dtypes in sorted(found.items())]


def counted(count: int, word: str) -> str:
    """`count` and the word, plural where the count is not one (entry: entries)."""
    plural = word[:-1] + "ies" if word.endswith("y") else word + "s"
    return f"{count:,} {word if count == 1 else plural}"


def headline(summary: Summary, new: list[dict[str, Any]], issues: list[dict[str, Any]]) -> str:
    """The first screen's one line."""
    totals = summary.totals
    failures = sum(1 for n in new if n["kind"] == "failure")
    reproduced = sum(1 for i in issues if i["reproduced"])
    known = (
        f"{counted(totals.get('known_issue', 0), 'case')} in {counted(reproduced, 'known issue')}"
        if reproduced
        else "no known issue"
    )
    checked = counted(sum(totals.values()), "checked outcome")
    if not summary.complete:
        return f"Incomplete run: {counted(failures, 'new failure')} so far; {known}; {checked}"
    if failures:
        return f"{counted(failures, 'new failure')}; {known}; {checked}"
    others = len(new)
    extra = f"; {others} other changes below" if others else ""
    return f"No new failures: {known}; {checked}{extra}"


def page_data(
    summary: Summary, model: dict[str, Any], loaded: dict[str, Any], previous: PreviousRun | None, slowdowns: list[str]
) -> dict[str, Any]:
    """Everything the page draws (the worst cases are added by the caller, with their pictures)."""
    issues = findings(summary, loaded, model)
    new = new_items(model, summary, previous, slowdowns)
    failing = any(n["kind"] == "failure" for n in new)
    tone = "red" if failing else ("amber" if new or not summary.complete else "green")
    return {
        "headline": headline(summary, new, issues),
        "tone": tone,
        "new": new,
        "findings": issues,
        "uncalibrated": uncalibrated(summary),
        "matrix": model,
        "check_columns": check_columns.headings(),
        "compared_with": previous.name if previous else None,
    }
