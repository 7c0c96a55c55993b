"""A write the disk refused because it is full (or a file-size limit, `ulimit -f`, was reached), said in one line
that names the file: a run that fills its disk ends with that line, not with a traceback per record (99
INTERNALERROR lines, once), and leaves no half-written file behind."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

FULL = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})


class DiskFull(OSError):
    """A file of the run that could not be written because the disk is full: its message is the line to print."""


def full_disk(exc: BaseException, path: Path | str | None = None) -> str | None:
    """The line that says a full disk refused to write `path` (or the file the error names), where `exc` is that;
    else None."""
    if isinstance(exc, DiskFull):
        return str(exc)
    if not isinstance(exc, OSError) or exc.errno not in FULL:
        return None
    where = path or exc.filename or "a file of the run"
    return f"cannot write {where}: the disk is full ({os.strerror(exc.errno)})"


@contextlib.contextmanager
def whole_or_none(path: Path, target: Path | None = None) -> Iterator[Path]:
    """Write `path` (a temporary file for `target`) inside the block: if that fails, what was written of it is
    removed, and a full disk's refusal is raised as DiskFull naming the file."""
    try:
        yield path
    except BaseException as exc:
        path.unlink(missing_ok=True)
        said = full_disk(exc, target or path)
        if said is None or isinstance(exc, DiskFull):
            raise
        error = DiskFull(said)
        error.errno = exc.errno  # type: ignore[attr-defined]
        raise error from None
