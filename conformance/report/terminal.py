"""What a run prints: the header at its start, and at its end the conformance section of pytest's terminal
summary (one screen)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.devices.environment import header_lines
from conformance.report.build import build_report
from conformance.report.markdown import append_to_step_summary
from conformance.report.table import format_section
from conformance.store import compile_stats
from conformance.store.aggregate import write_summary
from conformance.store.disk import full_disk
from conformance.store.printable import printable
from conformance.store.reader import ENDED
from conformance.store.summary_model import Summary
from conformance.store.summary_reader import load_summary
from conformance.store.writer import write_atomically

LATEST = "latest"  # beside the runs: a link to the newest


def sweep_lines(coverage: dict[str, Any]) -> list[str]:
    """One header line per module the run sweeps: classes found, swept, and skipped by reason."""
    lines = []
    for name, found in coverage.items():
        skipped = sum(len(v) for v in found["skipped"].values())
        reasons = "; ".join(f"{len(v)} {why}" for why, v in sorted(found["skipped"].items(), key=lambda i: -len(i[1])))
        lines.append(
            f"conformance: sweep of {name}: {found['found']} classes found, {found['swept']} swept, {skipped} skipped"
            + (f" ({reasons})" if reasons else "")
        )
    return lines


def header(
    environment: dict[str, Any], run_dir: Path, workers: int | None, chosen: str | None, virtual_off: str | None
) -> list[str]:
    """The header lines of a conformance session: versions, devices and targets, why virtual targets are off
    (if they are), the hypothesis profile, the processes (`chosen`: the worker count `python -m conformance run`
    chose itself) and the run folder."""
    if workers:
        processes = f"{workers} pytest-xdist workers" + (
            " (chosen by `python -m conformance run`: one per core of this machine; -n 0 runs in one process)"
            if chosen and str(chosen) == str(workers)
            else ""
        )
    else:
        processes = "one process (-n N for pytest-xdist workers)"
    return (
        header_lines(environment)
        + ([f"conformance: virtual targets off: {virtual_off}"] if virtual_off else [])
        + [f"conformance: hypothesis profile {environment['hypothesis_profile']}; {processes}; run folder {run_dir}"]
    )


CHECKED = ("pass", "fail", "error", "known_issue", "warning")  # verdicts of a case some check looked at


def checked_nothing(summary: Summary) -> str | None:
    """Why a complete run that checked no case at all must not pass (every item skipped or out of memory), or None:
    a gate that checked nothing is not green."""
    totals = summary.totals
    if not summary.complete or any(totals.get(verdict) for verdict in CHECKED):
        return None
    counts = ", ".join(f"{n} {v}" for v, n in totals.items()) or "no outcome"
    return f"conformance: nothing was checked ({counts}): a run that checked nothing fails (exit 1)"


def write_section(
    terminalreporter: Any, config: pytest.Config, run_dir: Path, narrowed: dict[str, str], ended: RunEnd | None
) -> None:
    """The terminal's section, from the summary the run's end read back (or summary.json, where this process did
    not end the run)."""
    summary = ended.summary if ended is not None and ended.summary is not None else load_summary(run_dir)
    report_path, report_error = (ended.report_path, ended.report_error) if ended is not None else (None, None)
    if summary is None:
        return

    def write(line: str, **markup: bool) -> None:  # a summary's lines hold words of the ops' (their warnings)
        terminalreporter.write_line(printable(line), **markup)

    terminalreporter.section("conformance summary")
    selected = bool(  # a part of the suite: a known issue for an item outside it is not unused
        config.option.keyword
        or config.option.markexpr
        or getattr(config.option, "shard", None)
        or any("::" in a for a in config.args)
    )
    for line in format_section(summary, selected=selected):
        write(line)
    if narrowed:
        reasons = "; ".join(f"{op}: {why}" for op, why in sorted(narrowed.items()))
        write(f"narrowed for the imported library versions: {reasons}")
    if summary.torn_lines:
        write(f"warning: {summary.torn_lines} torn record line(s) skipped")
    compiled = compile_stats.line(compile_stats.read(run_dir))
    if compiled:
        write(compiled)
    write(f"results: {run_dir / 'summary.json'}")
    nothing = checked_nothing(summary)
    if nothing:
        write(nothing, red=True, bold=True)
    if report_path:
        write(f"report: {report_path}")
    if report_error:
        write(
            f"warning: the HTML report could not be built ({report_error}); retry with: "
            f"python -m conformance report {run_dir}"
        )
    stale = stale_latest(run_dir)
    if stale:
        write(f"warning: {stale}", yellow=True)


def stale_latest(run_dir: Path) -> str | None:
    """Why `latest` beside the run does not name it: a folder or file of someone's there (never replaced: it may
    hold their data), or a link that could not be made; None where it links to the run."""
    latest = run_dir.parent / LATEST
    if latest.is_symlink():
        return None
    if latest.exists():
        kind = "a folder" if latest.is_dir() else "a file"
        return (
            f"{latest} is {kind}, not the link to the newest run: it is left as it is, so it still names whatever "
            f"it held; move it away and the next run links it (this run: {run_dir})"
        )
    return f"{latest} could not be made a link to this run ({run_dir})"


@dataclass(frozen=True)
class RunEnd:
    """What the end of a run wrote: its summary as read back (None where it could not be), the report's path or
    why the report failed."""

    summary: Summary | None
    report_path: Path | None = None
    report_error: str | None = None


def finish_run_folder(run_dir: Path, interrupted: bool) -> RunEnd:
    """At the end of the session (controller or single process): summary.json, the HTML report and
    the `latest` link; DiskFull where summary.json could not be written.  summary.json is read back once, here,
    and handed to the report and to the caller (the exit status, the terminal's section): 0.4 s on the stock
    suite's 25,054 items each time it is read."""
    write_summary(run_dir, complete=not interrupted)
    write_atomically(run_dir / ENDED, json.dumps({"complete": not interrupted}) + "\n")
    summary: Summary | None = None
    report_path, report_error = None, None
    try:
        summary = load_summary(run_dir)
        report_path = build_report(run_dir, summary=summary)
        append_to_step_summary((run_dir / "summary.md").read_text(encoding="utf-8"))  # where CI shows it
    except Exception as exc:  # noqa: BLE001 - the report must never turn a run's verdict into a crash
        report_error = full_disk(exc) or f"{type(exc).__name__}: {exc}"
    latest = run_dir.parent / LATEST
    try:
        if latest.is_symlink() or not latest.exists():
            latest.unlink(missing_ok=True)
            latest.symlink_to(run_dir.name)
    except OSError:
        pass
    return RunEnd(summary, report_path, report_error)
