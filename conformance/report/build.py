"""Build `reports/<run>/index.html` from a run's result store (also after a crash or kill).

Its counts and verdicts are the run's summary.json as written (`report_summary`): one summary, one idea of
whether the run was complete.  The store is read here only for what a summary does not hold: the worst cases
a cell opens to, with their arrays, and the known-issue entries that describe them.

The page needs no network: index.html holds the first screen (its script and styles inline), and what each
family's cells open to, with the pictures as PNG data URIs, is a script file beside it in index_files/, loaded
when a cell is opened (`page_files`).  Only failing and known-issue examples that kept arrays get pictures, so
the report's size follows the failures, not the passing examples.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from conformance.devices.facts import FactsBook
from conformance.report import crosslib, dashboard, markdown, page_files
from conformance.report.charts import timing_charts
from conformance.report.figures import detail_figures
from conformance.report.heatmaps import heatmaps, shown_entries
from conformance.report.history import previous_run, slowdowns
from conformance.store import examples
from conformance.store.aggregate import report_summary
from conformance.store.reader import LoadedIssues, RunRecords
from conformance.store.repro_command import repro_line, rerun_id
from conformance.store.summary_model import Group, Summary, rank
from conformance.store.tally import SHOWN_PHASES, Phase
from conformance.store.timings import TimingsError, read
from conformance.store.writer import write_atomically

MAX_DETAILS = 200  # failure details with pictures; more are listed without them
MAX_LISTED = 2000  # failure details kept at all; more are counted (memory stays bounded)
DETAIL_VERDICTS = ("fail", "error", "known_issue")
NOTED_CHECKS = ("unmoved",)  # their behaviour is listed in a section of its own
OLD_PICTURE_FOLDER = "report"  # where pictures were written before they were embedded in the pages


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
        if record.get("phase") == Phase.SHRINK.value:
            return
        key = (record.get("machine", ""), record["nodeid"], record["check"], record["verdict"])
        previous = self.chosen.get(key)
        if previous is None and len(self.chosen) >= self.limit:
            if len(self.unlisted) < 100 * self.limit:  # counted, not kept
                self.unlisted.add(key)
            return
        better = previous is None or (
            record.get("phase") in SHOWN_PHASES and previous.get("phase") == Phase.EXPLORE.value
        )
        if better or (previous is not None and not previous.get("artifact") and record.get("artifact")):
            self.chosen[key] = record

    def add_rows(self, run_dir: Path, known_issues: dict[str, Any]) -> None:
        """The examples table's rows that did not pass: the one per item, check and verdict that `add` would
        keep is picked from a few columns, and only those rows become records (a run's known issues are tens
        of thousands of rows)."""
        import pyarrow.compute as pc

        where = pc.field("verdict").isin(list(DETAIL_VERDICTS)) & (pc.field("phase") != Phase.SHRINK.value)
        table, _ = examples.read_table(run_dir, where=where)
        columns = table.select(["machine", "nodeid", "check", "verdict", "phase", "detail"]).to_pydict()
        best: dict[tuple[str, str, str, str], tuple[tuple[int, int], int]] = {}
        for index, (machine, nodeid, check, verdict, phase, detail) in enumerate(zip(*columns.values(), strict=False)):
            key = (machine or "", nodeid, check, verdict)
            rank = (phase in SHOWN_PHASES, bool(detail) and '"artifact": "' in detail)
            if key not in best or rank > best[key][0]:
                best[key] = (rank, index)
        import pyarrow as pa

        chosen = table.take(pa.array(sorted(index for _, index in best.values()), pa.int64()))
        for batch in chosen.to_batches():
            for values in batch.to_pylist():
                self.add(examples.record(values, known_issues))

    def records(self) -> list[dict[str, Any]]:
        return sorted(
            self.chosen.values(), key=lambda r: (rank(r["verdict"]), r["op"], r["target"], r["nodeid"], r["check"])
        )


def case_details(chosen: list[dict[str, Any]], cell_of: dict[tuple, str], run_dir: Path) -> list[dict[str, Any]]:
    """The worst cases a cell opens to, as data for the page.  Pictures are made for failures (up to
    MAX_DETAILS) and for the first case of each known issue: the rest are listed with their numbers."""
    found: list[dict[str, Any]] = []
    pictured, issues_shown = 0, set()
    for record in chosen:
        place = (record["op"], record["dtype"], record["mode"], record.get("machine", ""), record["target"])
        issue = (record.get("known_issue") or {}).get("id")
        tolerance = record.get("tolerance") or {}
        bounds = f"atol {tolerance.get('atol')}, rtol {tolerance.get('rtol')}): {tolerance.get('reason', '')}"
        detail: dict[str, Any] = {
            "cell": cell_of.get(place),
            "check": record["check"],
            "verdict": record["verdict"],
            "message": record.get("message", ""),
            "known_issue": issue,
            "tolerance": f"tolerance {tolerance.get('name')} ({bounds}" if tolerance else "",
            "case": record.get("case"),  # the page prints it
            "repro": record.get("repro") or "",
            "script": repro_line(rerun_id(record.get("repro") or "") or record["nodeid"], record["check"], run_dir)
            if record.get("artifact")
            else "",
            "traceback": (record.get("traceback") or "")[-4000:],
        }
        wanted = record["verdict"] != "known_issue" or issue not in issues_shown
        if wanted and pictured < MAX_DETAILS:
            figures = detail_figures(record, run_dir)
            if figures.get("panels"):
                pictured += 1
                issues_shown.add(issue)
            detail |= figures
        elif record.get("artifact"):
            detail["pictures_left_out"] = True
        found.append(detail)
    return found


def _worst_first(group: Group) -> tuple[int, str, str, str, str]:
    return rank(group.verdict), group.op, group.target, group.dtype, group.mode


def module_behaviours(summary: Summary) -> list[Group]:
    """What each module op did when left on the cpu with a device input, per target (the `unmoved` check)."""
    return sorted((g for g in summary.groups if g.check in NOTED_CHECKS and g.behaviours), key=_worst_first)


def warnings(summary: Summary) -> list[Group]:
    """Lesser findings (verdict "warning"), one per group (the page shows each one's first message)."""
    return [group for group in summary.groups if group.verdict == "warning"]


def baseline_changes(summary: Summary) -> list[Group]:
    """Groups of the `baseline` check (run --baseline) that changed: failures first, then bit-level changes."""
    return sorted((g for g in summary.groups if g.check == "baseline" and g.verdict != "pass"), key=_worst_first)


def _number(value: Any) -> Any:
    return f"{value:.4g}" if isinstance(value, float) else value


def _template_environment() -> Environment:
    env = Environment(
        loader=PackageLoader("conformance.report", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["number"] = _number
    return env


def build_report(run_dir: Path, *, title: str | None = None, summary: Summary | None = None) -> Path:
    """Write run_dir/index.html and index_files/ (what its cells open to): the summary.json the run wrote (written
    first where the run has none, see `report_summary`), and the worst cases from the store: the journal streamed
    (one record per item), and of the examples table only the rows that did not pass.  A summary.json that cannot
    be shown raises SummaryError (a StoreError) before anything is written."""
    summary = summary if summary is not None else report_summary(run_dir)  # a caller that read it already
    environments = _environments(run_dir)
    findings, worst = Findings(), crosslib.WorstRecords()
    issues = LoadedIssues()
    for record in RunRecords(run_dir):
        findings.add(record)
        worst.add(record)
        issues.add(record)
    loaded = issues.entries
    findings.add_rows(run_dir, loaded)
    stale = run_dir / OLD_PICTURE_FOLDER  # pictures are in the pages now; an older report's folder goes
    if stale.is_symlink() or stale.is_file():  # (a link is removed, never followed)
        stale.unlink()
    shutil.rmtree(stale, ignore_errors=True)
    model = dashboard.matrix(summary, environments)
    cell_of = {
        (row["op"], row["dtype"], row["mode"], column["machine"], column["target"]): f"{row['id']}.{column['id']}"
        for row in model["rows"]
        for column in model["columns"]
        if column["id"] in row["cells"]
    }
    crosslib_page = _crosslib_page(
        run_dir, summary, worst, title or run_dir.name, FactsBook.of_environments(environments)
    )
    previous = previous_run(run_dir, summary)
    data = dashboard.page_data(summary, model, loaded, previous, slowdowns(run_dir, previous))
    data["details"] = case_details(findings.records(), cell_of, run_dir)
    page, parts = page_files.split(data)
    html = (
        _template_environment()
        .get_template("index.html.j2")
        .render(
            crosslib_page=crosslib_page,
            title=title or run_dir.name,
            summary=summary,
            headline=data["headline"],
            tone=data["tone"],
            new=data["new"],
            findings=data["findings"],
            uncalibrated=data["uncalibrated"],
            uncalibrated_note=markdown.UNCALIBRATED_NOTE,
            data_json=page_files.script_json(page),
            dashboard_css=_asset("dashboard.css"),
            dashboard_js="".join(_asset(name) for name in ("cells.js", "drill.js", "dashboard.js")),
            environments=environments,
            modules=module_behaviours(summary),
            warnings=warnings(summary),
            changed=baseline_changes(summary),
            compared_with_baseline=any(g.check == "baseline" for g in summary.groups),
            timing_charts=_timing_charts(run_dir),
        )
    )
    write_atomically(run_dir / "summary.md", markdown.summary_markdown(title or run_dir.name, data, summary))
    page_files.write(run_dir, parts)
    index = run_dir / "index.html"
    write_atomically(index, html)
    return index


def _crosslib_page(
    run_dir: Path, summary: Summary, worst: crosslib.WorstRecords, title: str, targets: FactsBook
) -> str | None:
    """crosslib.html when the run checked operations with several implementations (its name, else None)."""
    page = run_dir / "crosslib.html"
    if page.is_symlink() or page.is_dir():
        return None
    model = crosslib.model(summary, worst, targets)
    if model is None:
        if page.is_file():
            page.unlink()
        return None
    heat = heatmaps(model)
    cards = crosslib.cards(model, worst, run_dir, shown_entries(heat))
    html = (
        _template_environment()
        .get_template("crosslib.html.j2")
        .render(title=title, model=model, heat=heat, cards=cards)
    )
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


def _asset(name: str) -> str:
    """The page's stylesheet or script, inlined (the page needs no network)."""
    return (Path(__file__).parent / "templates" / name).read_text(encoding="utf-8")
