"""The run before this one, for what changed since: the latest earlier run folder beside it that finished,
with the same hypothesis profile (other profiles draw other cases, so their counts do not compare)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.store.summary_model import PreviousRun, Summary
from conformance.store.summary_reader import SummaryError, load_summary
from conformance.store.timings import TimingsError, compare, read


def _summary(run_dir: Path) -> Summary | None:
    """A folder's summary, where it has a readable one (a link is never followed)."""
    if (run_dir / "summary.json").is_symlink():
        return None
    try:
        return load_summary(run_dir)
    except SummaryError:
        return None


def _profile(summary: Summary) -> Any:
    return summary.environment.get("hypothesis_profile")


def previous_run(run_dir: Path, current: Summary) -> PreviousRun | None:
    """The comparable run before `run_dir` (whose summary is `current`), or None."""
    if run_dir.parent == run_dir:
        return None
    earlier = sorted(
        (p for p in run_dir.parent.iterdir() if p.is_dir() and not p.is_symlink() and p.name < run_dir.name),
        key=lambda p: p.name,
        reverse=True,
    )
    for candidate in earlier[:20]:
        summary = _summary(candidate)
        if summary is not None and summary.complete and _profile(summary) == _profile(current):
            return PreviousRun(candidate.name, candidate, summary)
    return None


def slowdowns(run_dir: Path, previous: PreviousRun | None) -> list[str]:
    """Calls that got slower against the calibration op since the previous run (both timed)."""
    if previous is None:
        return []
    paths = [run_dir / "timings.json", previous.path / "timings.json"]
    if not all(p.is_file() and not p.is_symlink() for p in paths):
        return []
    try:
        now, before = read(paths[0]), read(paths[1])
    except TimingsError:
        return []
    slower, _ = compare(before, now)
    return [f"{s.describe()} (since {previous.name})" for s in slower]
