"""What a run prints at its end: the conformance section of pytest's terminal summary."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def write_section(terminalreporter: Any, config: pytest.Config, run_dir: Path, narrowed: dict[str, str],
                  report_path: Path | None, report_error: str | None) -> None:
    from conformance.results import format_modules, format_table

    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():
        return
    summary = json.loads(summary_path.read_text())
    write = terminalreporter.write_line
    terminalreporter.section("conformance summary")
    for line in format_table(summary):
        write(line)
    modules = format_modules(summary)
    if modules:
        write("modules left on the cpu, called with a device input (unmoved):")
        for line in modules:
            write(line)
    for op, why in sorted(narrowed.items()):
        write(f"narrowed: {op}: {why}")
    totals = ", ".join(f"{count} {verdict.replace('_', ' ')}" for verdict, count in summary["totals"].items())
    write(f"outcomes: {totals}")
    selected = bool(config.option.keyword or config.option.markexpr or any("::" in a for a in config.args))
    for issue_id in [] if selected else summary["unused_known_issues"]:  # a -k run leaves most entries out
        write(f"warning: known issue {issue_id!r} applied to no test item")
    for issue_id in [] if selected else summary.get("unreproduced_known_issues", []):
        write(f"warning: known issue {issue_id!r} matched no failure in this run (fixed, or out of this run's draws?)")
    if summary["torn_lines"]:
        write(f"warning: {summary['torn_lines']} torn record line(s) skipped")
    write(f"results: {summary_path}")
    if report_path:
        write(f"report: {report_path}")
    if report_error:
        write(f"warning: the HTML report could not be built ({report_error}); retry with: "
              f"python -m conformance report {run_dir}")


def finish_run_folder(run_dir: Path, interrupted: bool) -> tuple[Path | None, str | None]:
    """At the end of the session (controller or single process): summary.json, the HTML report and
    the `latest` link.  Returns (report path, why the report failed)."""
    from conformance.results import write_summary

    write_summary(run_dir, complete=not interrupted)  # each streams the records: memory stays flat
    report_path, report_error = None, None
    try:
        from conformance.report import build_report

        report_path = build_report(run_dir)
    except Exception as exc:  # noqa: BLE001 - the report must never turn a run's verdict into a crash
        report_error = f"{type(exc).__name__}: {exc}"
    latest = run_dir.parent / "latest"
    try:
        if latest.is_symlink() or not latest.exists():
            latest.unlink(missing_ok=True)
            latest.symlink_to(run_dir.name)
    except OSError:
        pass
    return report_path, report_error
