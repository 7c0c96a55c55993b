"""Build `reports/<run>/index.html` from a run's result store (also after a crash or kill).

The page is one file: index.html with its pictures embedded (PNG data URIs), no network needed to view it.
Only failing and known-issue examples that kept arrays get pictures, so the report's
size follows the failures, not the passing examples.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from conformance.report import crosslib
from conformance.report.charts import timing_charts
from conformance.report.figures import detail_figures
from conformance.store import examples
from conformance.store.aggregate import Summarizer
from conformance.store.reader import RunRecords, was_complete
from conformance.store.tally import VERDICT_ORDER
from conformance.store.timings import TimingsError, read
from conformance.store.writer import write_atomically

MAX_DETAILS = 200  # failure details with pictures; more are listed without them
MAX_LISTED = 2000  # failure details kept at all; more are counted (memory stays bounded)
DETAIL_VERDICTS = ("fail", "error", "known_issue")
NOTED_CHECKS = ("unmoved",)  # their behaviour is listed in a section of its own
OLD_PICTURE_FOLDER = "report"  # where pictures were written before they were embedded in the pages


def _column(record: dict[str, Any]) -> tuple[str, str]:
    return record.get("machine", ""), record["target"]


def _rank(verdict: str) -> int:
    return VERDICT_ORDER.index(verdict) if verdict in VERDICT_ORDER else len(VERDICT_ORDER)


def matrix(summary: dict[str, Any], environments: list[dict[str, Any]]) -> dict[str, Any]:
    """Rows (op, dtype, mode) x columns (machine, target): the worst verdict over the checks."""
    columns: dict[tuple[str, str], dict[str, Any]] = {}
    cells: dict[tuple[str, str, str], dict[tuple[str, str], dict[str, Any]]] = defaultdict(dict)
    device_names = {
        (env.get("machine_label", ""), t["name"]): t.get("description", "")
        for env in environments
        for t in env.get("targets", [])
    }
    for group in summary["groups"]:
        column = _column(group)
        columns.setdefault(
            column,
            {
                "machine": column[0],
                "target": column[1],
                "virtual": group["virtual"],
                "device": device_names.get(column, ""),
            },
        )
        cell = cells[(group["op"], group["dtype"], group["mode"])].setdefault(
            column,
            {"verdict": "pass", "examples": 0, "worst": None, "known_issues": set(), "anchor": None, "notes": []},
        )
        if group.get("diverges", {}).get("cpu"):
            cell["notes"].append(
                f"{group['check']}: differs from the cpu in {group['diverges']['cpu']} case(s), "
                f"where the cpu is the side off the reference"
            )
        if _rank(group["verdict"]) < _rank(cell["verdict"]):
            cell["verdict"] = group["verdict"]
        cell["examples"] = max(cell["examples"], group["examples"])
        cell["known_issues"].update(group["known_issues"])
        worst = group.get("worst")
        if worst and (cell["worst"] is None or _size(worst) > _size(cell["worst"])):
            cell["worst"] = worst | {"check": group["check"]}
    ordered_columns = sorted(columns, key=lambda c: (c[0], columns[c]["virtual"], c[1]))
    rows = []
    for (op, dtype, mode), by_column in cells.items():
        verdicts = [c["verdict"] for c in by_column.values()]
        rows.append(
            {
                "op": op,
                "dtype": dtype,
                "mode": mode,
                "worst_verdict": min(verdicts, key=_rank),
                "cells": [by_column.get(column) for column in ordered_columns],
            }
        )
    rows.sort(key=lambda r: (_rank(r["worst_verdict"]), r["op"], r["dtype"], r["mode"]))
    return {"columns": [columns[c] for c in ordered_columns], "rows": rows}


def _size(worst: dict[str, Any]) -> float:
    try:
        return float(worst["max_abs"])
    except (KeyError, TypeError, ValueError):
        return 0.0


class Findings:
    """What the report shows beyond the summary, collected as records stream past: one detail per
    (machine, item, check, verdict), the final or replayed example, else the first kept one (at most
    MAX_LISTED; the rest are counted)."""

    def __init__(self, limit: int = MAX_LISTED) -> None:
        self.chosen: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self.unlisted: set[tuple[str, str, str, str]] = set()
        self.limit = limit

    def add(self, record: dict[str, Any]) -> None:
        if record.get("kind") != "outcome" or record.get("verdict") not in DETAIL_VERDICTS:
            return
        if record.get("phase") == "shrink":
            return
        key = (record.get("machine", ""), record["nodeid"], record["check"], record["verdict"])
        previous = self.chosen.get(key)
        if previous is None and len(self.chosen) >= self.limit:
            if len(self.unlisted) < 100 * self.limit:  # counted, not kept
                self.unlisted.add(key)
            return
        better = previous is None or (record.get("phase") in ("final", "replay") and previous.get("phase") == "explore")
        if better or (previous is not None and not previous.get("artifact") and record.get("artifact")):
            self.chosen[key] = record

    def add_rows(self, run_dir: Path, known_issues: dict[str, Any]) -> None:
        """The examples table's rows that did not pass: the one per item, check and verdict that `add` would
        keep is picked from a few columns, and only those rows become records (a run's known issues are tens
        of thousands of rows)."""
        import pyarrow.compute as pc

        where = pc.field("verdict").isin(list(DETAIL_VERDICTS)) & (pc.field("phase") != "shrink")
        table, _ = examples.read_table(run_dir, where=where)
        columns = table.select(["machine", "nodeid", "check", "verdict", "phase", "detail"]).to_pydict()
        best: dict[tuple[str, str, str, str], tuple[tuple[int, int], int]] = {}
        for index, (machine, nodeid, check, verdict, phase, detail) in enumerate(zip(*columns.values(), strict=False)):
            key = (machine or "", nodeid, check, verdict)
            rank = (phase in ("final", "replay"), bool(detail) and '"artifact": "' in detail)
            if key not in best or rank > best[key][0]:
                best[key] = (rank, index)
        import pyarrow as pa

        chosen = table.take(pa.array(sorted(index for _, index in best.values()), pa.int64()))
        for batch in chosen.to_batches():
            for values in batch.to_pylist():
                self.add(examples.record(values, known_issues))

    def records(self) -> list[dict[str, Any]]:
        return sorted(
            self.chosen.values(), key=lambda r: (_rank(r["verdict"]), r["op"], r["target"], r["nodeid"], r["check"])
        )


def details(chosen: list[dict[str, Any]], run_dir: Path) -> list[dict[str, Any]]:
    found = []
    for index, record in enumerate(chosen):
        detail = {
            "anchor": f"detail-{index}",
            "record": record,
            "case_json": json.dumps(record.get("case"), indent=1, sort_keys=True) if record.get("case") else "",
            "metrics": {k: v for k, v in (record.get("metrics") or {}).items() if v is not None},
        }
        if index < MAX_DETAILS:
            detail |= detail_figures(record, run_dir)
        found.append(detail)
    return found


def _link_cells(model: dict[str, Any], found: list[dict[str, Any]]) -> None:
    first: dict[tuple, str] = {}
    for detail in found:
        r = detail["record"]
        first.setdefault((r["op"], r["dtype"], r["mode"], r.get("machine", ""), r["target"]), detail["anchor"])
    for row in model["rows"]:
        for column, cell in zip(model["columns"], row["cells"], strict=False):
            if cell is not None:
                cell["anchor"] = first.get((row["op"], row["dtype"], row["mode"], column["machine"], column["target"]))
                cell["known_issues"] = sorted(cell["known_issues"])


def module_behaviours(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """What each module op did when left on the cpu with a device input, per target (the `unmoved` check)."""
    rows = [g for g in summary["groups"] if g["check"] in NOTED_CHECKS and g.get("behaviours")]
    return sorted(rows, key=lambda g: (_rank(g["verdict"]), g["op"], g["target"], g["dtype"], g["mode"]))


def warnings(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Lesser findings (verdict "warning"), one per group, with the first message seen."""
    return [
        group | {"message": next(iter(group.get("warnings") or {}), "")}
        for group in summary["groups"]
        if group["verdict"] == "warning"
    ]


def baseline_changes(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Groups of the `baseline` check (run --baseline) that changed: failures first, then bit-level changes."""
    rows = [g for g in summary["groups"] if g["check"] == "baseline" and g["verdict"] != "pass"]
    return sorted(rows, key=lambda g: (_rank(g["verdict"]), g["op"], g["target"], g["dtype"], g["mode"]))


def _number(value: Any) -> Any:
    return f"{value:.4g}" if isinstance(value, float) else value


def _template_environment() -> Environment:
    env = Environment(
        loader=PackageLoader("conformance.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["number"] = _number
    return env


def build_report(run_dir: Path, *, title: str | None = None) -> Path:
    """Write run_dir/index.html (pictures embedded) from the run's store: the journal streamed
    (one record per item), and of the examples table only the rows that did not pass."""
    complete = was_complete(run_dir)
    environments = _environments(run_dir)
    summarizer, findings, worst = Summarizer(), Findings(), crosslib.WorstRecords()
    records = RunRecords(run_dir)
    loaded: dict[str, Any] = {}
    for record in records:
        summarizer.add(record)
        findings.add(record)
        worst.add(record)
        if record.get("kind") == "item":
            loaded.update(record.get("known_issues_loaded") or {})
    findings.add_rows(run_dir, loaded)
    summary = summarizer.summary(environments[0] if environments else None, torn=records.torn, complete=complete)
    stale = run_dir / OLD_PICTURE_FOLDER  # pictures are in the pages now; an older report's folder goes
    if stale.is_symlink() or stale.is_file():  # (a link is removed, never followed)
        stale.unlink()
    shutil.rmtree(stale, ignore_errors=True)
    model = matrix(summary, environments)
    found = details(findings.records(), run_dir)
    _link_cells(model, found)
    crosslib_page = _crosslib_page(run_dir, summary, worst, title or run_dir.name)
    html = (
        _template_environment()
        .get_template("index.html.j2")
        .render(
            crosslib_page=crosslib_page,
            title=title or run_dir.name,
            summary=summary,
            matrix=model,
            details=found,
            environments=environments,
            max_details=MAX_DETAILS,
            unlisted=len(findings.unlisted),
            modules=module_behaviours(summary),
            warnings=warnings(summary),
            changed=baseline_changes(summary),
            compared_with_baseline=any(g["check"] == "baseline" for g in summary["groups"]),
            timing_charts=_timing_charts(run_dir),
        )
    )
    index = run_dir / "index.html"
    write_atomically(index, html)
    return index


def _crosslib_page(run_dir: Path, summary: dict[str, Any], worst: crosslib.WorstRecords, title: str) -> str | None:
    """crosslib.html when the run checked operations with several implementations (its name, else None)."""
    page = run_dir / "crosslib.html"
    if page.is_symlink() or page.is_dir():
        return None
    model = crosslib.model(summary, worst)
    if model is None:
        if page.is_file():
            page.unlink()
        return None
    cards = crosslib.cards(model, worst, run_dir)
    html = _template_environment().get_template("crosslib.html.j2").render(title=title, model=model, cards=cards)
    write_atomically(page, html)
    return page.name


def _timing_charts(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "timings.json"
    if not path.is_file() or path.is_symlink():
        return []
    try:
        return timing_charts(read(path))
    except TimingsError:
        return []


def _environments(run_dir: Path) -> list[dict[str, Any]]:
    """One environment per machine (a merged run has several)."""
    seen: dict[str, dict[str, Any]] = {}
    for path in sorted((run_dir / "environment").glob("*.json")):
        try:
            env = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        seen.setdefault(env.get("machine_label") or env.get("machine", path.stem), env)
    return list(seen.values())
