"""Retention: delete old run folders from a reports folder.

Every session writes a folder; a thorough profile's is hundreds of MB.  Pruning is careful
because it deletes: it never follows a symlink (a linked entry is neither deleted nor entered),
never deletes the run `latest` points to, and touches only folders that look like runs (they
hold summary.json or outcomes/).
"""

from __future__ import annotations

import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

DAY = 86400.0


class PruneError(ValueError):
    """A reports folder that cannot be pruned, or options that select nothing."""


@dataclass
class Pruned:
    removed: list[Path] = field(default_factory=list)
    kept: list[Path] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # "<name>: why it is not a candidate"


def is_run_folder(path: Path) -> bool:
    """A real folder (not a link) holding summary.json or outcomes/ (neither a link)."""
    if path.is_symlink() or not path.is_dir():
        return False
    summary, outcomes = path / "summary.json", path / "outcomes"
    return (summary.is_file() and not summary.is_symlink()) or (outcomes.is_dir() and not outcomes.is_symlink())


def _finished_at(run: Path) -> float:
    """When the run last wrote: its summary, else its newest outcome file (the folder's own mtime
    moves whenever its report is rebuilt)."""
    summary = run / "summary.json"
    if summary.is_file() and not summary.is_symlink():
        return summary.lstat().st_mtime
    times = [p.lstat().st_mtime for p in (run / "outcomes").glob("*.jsonl")]
    return max(times, default=(run / "outcomes").lstat().st_mtime)


def _latest(reports: Path) -> Path | None:
    link = reports / "latest"
    if not link.is_symlink():
        return None
    target = link.readlink()
    return reports / target.name if target.parent in (Path(""), Path("."), reports) else (reports / target)


def prune(
    reports: Path,
    *,
    keep: int | None = None,
    older_than_days: float | None = None,
    dry_run: bool = False,
    now: float | None = None,
) -> Pruned:
    """Remove the runs beyond the `keep` newest and/or older than `older_than_days` (both given: a run
    goes only if both say so); `dry_run` removes nothing and reports what would go."""
    if keep is None and older_than_days is None:
        raise PruneError("say what to remove: --keep N and/or --older-than DAYS")
    if (keep is not None and keep < 0) or (older_than_days is not None and not 0 <= older_than_days < math.inf):
        raise PruneError("--keep and --older-than must be numbers, not negative (and --older-than finite)")
    if reports.is_symlink() or not reports.is_dir():
        raise PruneError(f"{reports} is not a reports folder (a directory, not a link)")
    latest = _latest(reports)
    result, runs = Pruned(), []
    for entry in sorted(reports.iterdir()):
        if entry.is_symlink():
            result.ignored.append(f"{entry.name}: a link, not followed")
        elif not is_run_folder(entry):
            result.ignored.append(f"{entry.name}: not a run folder (no summary.json or outcomes/)")
        else:
            runs.append((_finished_at(entry), entry.name, entry))
    runs.sort(reverse=True)  # newest first
    cutoff = None if older_than_days is None else (time.time() if now is None else now) - older_than_days * DAY
    for rank, (finished, _, run) in enumerate(runs):
        beyond_keep = keep is None or rank >= keep
        old = cutoff is None or finished < cutoff
        protected = latest is not None and run.name == latest.name
        if beyond_keep and old and not protected:
            if not dry_run:
                shutil.rmtree(run)  # removes links inside a run, never what they point to
            result.removed.append(run)
        else:
            result.kept.append(run)
    return result
