"""A run whose pytest process ended before it wrote its summary: what `python -m conformance run` still makes
of its folder.

Why: with `-n 0` the op runs in pytest's only process, so an op that calls `os._exit` (or crashes it, or a
kill -9) ends the run mid-line: no summary.json, no message, and the exit code is whatever the op chose (0
passes a gate).  The launcher outlives it, so it finishes the folder as the session would have: the item that
was running recorded as a crash (like a crashed xdist worker's), summary.json and the report marked
incomplete, and one line to say so.
"""

from __future__ import annotations

import json
from pathlib import Path

from conformance.report.terminal import finish_run_folder
from conformance.store.crashes import last_case_started
from conformance.store.reader import ENDED
from conformance.store.records import RecordWriter

SINGLE = "main"  # the journal of pytest's own process (the xdist controller's, or the one process of -n 0)


def unfinished(run_dir: Path) -> bool:
    """Whether the run's session never reached its end (summary.json, then `ended.json`)."""
    return not (run_dir / ENDED).exists()


def began(run_dir: Path) -> bool:
    """Whether an item wrote a record (a session that ended before one, at collection or on a usage error,
    leaves no summary on purpose)."""
    return (run_dir / "outcomes").is_dir()


def running_item(run_dir: Path, worker: str = SINGLE) -> str | None:
    """The item `worker` began and never ended: the process died in it."""
    try:
        lines = (run_dir / "outcomes" / f"{worker}.jsonl").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if '"kind":"item' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:  # the line it was writing when it died
            continue
        if not isinstance(record, dict) or record.get("kind") not in ("item", "item_end"):
            continue
        nodeid = record.get("nodeid")
        return nodeid if record["kind"] == "item" and isinstance(nodeid, str) else None
    return None


def finish(run_dir: Path, crash: str | None) -> str:
    """Record the running item as a crash (`crash`: how the process ended), unless the run was stopped (None);
    write summary.json and the report marked incomplete; the line that says so."""
    said = ""
    nodeid = running_item(run_dir) if crash is not None else None
    if crash is not None and nodeid is not None:
        writer = RecordWriter(run_dir, "launcher", dict)
        writer.crash(nodeid, f"pytest's process {crash}", last_case_started(run_dir, nodeid))
        writer.close()
        said = f" (it was running {nodeid}: recorded as a crash)"
    try:
        (run_dir / "outcomes").mkdir(exist_ok=True)  # stopped before any record: a summary of nothing, incomplete
        finish_run_folder(run_dir, interrupted=True)
    except Exception as exc:  # noqa: BLE001 - one line, whatever the records hold
        return f"{said}; its summary could not be written ({type(exc).__name__}: {exc})"
    return f"{said}; {run_dir / 'summary.json'} written, marked incomplete"
