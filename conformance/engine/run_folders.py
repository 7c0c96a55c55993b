"""A run's folder in the reports folder: named, checked writable (a usage error said once, before any item runs),
claimed by creating it so two runs started at once never share one, and given back when nothing was written.

Light on purpose (no torch): the plugin names the folder in every pytest session.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import pytest

from conformance.store.writer import safe_name


def run_dir(config: pytest.Config, validate: bool = True) -> Path:
    """This run's folder: the controller's under xdist, else a new one in the reports folder, claimed
    (created) here when `validate`, where an unusable reports folder is a usage error.  Without `validate`
    (an xdist controller that nothing asked for conformance yet: it stays inert) it is only named."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "conformance_run_dir" in workerinput:
        return Path(workerinput["conformance_run_dir"])
    reports = Path(
        config.getoption("reports_dir") or os.environ.get("CONFORMANCE_REPORTS") or config.rootpath / "reports"
    )
    name = config.getoption("run_name") or default_run_name()
    if not validate:
        return unique_run_dir(reports, name)
    problem = unwritable(reports)  # said once, before any item runs
    if problem:
        raise pytest.UsageError(f"--reports-dir: cannot write runs into {str(reports)!r}: {problem}")
    try:
        return claim_run_dir(reports, name)
    except OSError as exc:
        raise pytest.UsageError(f"--reports-dir: cannot write runs into {str(reports)!r}: {exc}") from None


def unwritable(folder: Path) -> str | None:
    """Why runs cannot be written into `folder` (created later, with its parents), or None."""
    existing = folder
    while not existing.exists():
        if existing.is_symlink():
            return f"{existing} is a broken symlink"
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None


def default_run_name() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def unique_run_dir(reports_dir: Path, name: str) -> Path:
    """A run folder that does not exist yet (nothing is created here)."""
    candidate, n = reports_dir / safe_name(name), 1
    while candidate.exists():
        n += 1
        candidate = reports_dir / f"{safe_name(name)}-{n}"
    return candidate


def claim_run_dir(reports_dir: Path, name: str) -> Path:
    """Create this run's folder: `name`, else the first free `name-2`, `name-3`, ...  The mkdir is the claim:
    it fails where the folder exists, so two runs started at once with one name get two folders (naming a
    free folder and creating it at the first record let both take the same one, and one's examples table
    overwrote the other's)."""
    reports_dir.mkdir(parents=True, exist_ok=True)
    base, n = safe_name(name), 1
    while True:
        candidate = reports_dir / (base if n == 1 else f"{base}-{n}")
        try:
            candidate.mkdir()
        except FileExistsError:  # another run's folder (or a link, such as `latest`)
            n += 1
        else:
            return candidate


def release_run_dir(run_dir: Path) -> None:
    """Give back a claimed run folder that nothing was written into (a run that collected nothing)."""
    with contextlib.suppress(OSError):  # not empty, or gone: nothing to give back
        run_dir.rmdir()
