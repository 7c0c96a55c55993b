"""The commands that rerun a failure, each spelt once: the rerun line (`python -m conformance run ID --replay CASE`,
for a failure and for a crashed item's record) and the one that writes an item's repro script (`python -m
conformance repro`: the terminal's failure text, the report's failure card and summary.md)."""

from __future__ import annotations

import shlex
from pathlib import Path

from conformance.devices.facts import TargetFacts


def rerun_line(nodeid: str, case_json: str, target: TargetFacts) -> str:
    """The line that replays one case of one item; it names a target the default selection leaves out."""
    line = f"python -m conformance run {shlex.quote(nodeid)} --replay {shlex.quote(case_json)}"
    return line + (f" --targets {shlex.quote(target.name)}" if target.named_in_rerun else "")


def rerun_id(line: str) -> str | None:
    """The item id a rerun line names (None for anything else)."""
    try:
        words = shlex.split(line)
    except ValueError:
        return None
    return words[4] if words[:4] == ["python", "-m", "conformance", "run"] and len(words) > 4 else None


def repro_command(nodeid: str, run_dir: Path | str) -> str:
    """The command for an item of a run; the run named as it is found from here (a link such as reports/latest would
    move on at the next run)."""
    resolved = Path(run_dir).resolve()
    try:
        shown = str(resolved.relative_to(Path.cwd()))
    except ValueError:
        shown = str(resolved)
    return f"python -m conformance repro {shlex.quote(nodeid)} --run {shlex.quote(shown)}"


# the checks a repro script holds a target to: values against the reference or a twin, the invariants, an error
SCRIPTED_CHECKS = ("reference", "cross_device", "compiled", "invariants", "error")


def repro_line(nodeid: str, check: str, run_dir: Path | str) -> str:
    """The command where the check's failures get a script, else ""."""
    return repro_command(nodeid, run_dir) if check in SCRIPTED_CHECKS else ""
