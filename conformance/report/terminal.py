"""What a run prints at its end: the conformance section of pytest's terminal summary (one screen)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


def write_section(terminalreporter: Any, config: pytest.Config, run_dir: Path, narrowed: dict[str, str],
                  report_path: Path | None, report_error: str | None) -> None:
    from conformance.report.table import format_section

    summary_path = run_dir / "summary.json"
    if not summary_path.is_file():
        return
    summary = json.loads(summary_path.read_text())
    write = terminalreporter.write_line
    terminalreporter.section("conformance summary")
    selected = bool(config.option.keyword or config.option.markexpr or any("::" in a for a in config.args))
    for line in format_section(summary, selected=selected):
        write(line)
    if narrowed:
        write(f"narrowed for the imported library versions: {'; '.join(f'{op}: {why}' for op, why in sorted(narrowed.items()))}")
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
    from conformance.store.aggregate import write_summary

    write_summary(run_dir, complete=not interrupted)
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
