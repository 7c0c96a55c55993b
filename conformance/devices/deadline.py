"""The deadline of the timed op call this process is in, in memory that a watchdog process maps too.

Why another process: an op stuck in native code that holds the GIL (a C loop such as `sum(range(10**11))`)
runs no Python code, so neither the SIGALRM handler of `runs.time_limit` nor any thread of this process runs
again until it returns; only another process sees its deadline pass (`conformance.watchdog`).  Set on every
op call and check, so it is a store into shared memory, never a system call.  Standard library only: the
watchdog maps it without importing torch.
"""

from __future__ import annotations

import mmap
import struct
import tempfile
import time
from typing import IO

# When the running call is given up (time.monotonic(), one clock for every process; 0: no timed call), its
# limit in seconds, its number (a call that ends and the next that starts never look alike), and the number
# of the check under way (`Store.running` writes it beside the case it names: is that case still running?).
LAYOUT = struct.Struct("=ddQQ")
CALL = struct.Struct("=ddQ")
STAMP = struct.Struct("=Q")
MIN_GRACE_S = 5.0


def grace_s(limit_s: float) -> float:
    """How long past its limit a call stuck in native code may go on before its process is ended: half the
    limit, at least MIN_GRACE_S (a slow native call that returns within it is cut at its limit all the same)."""
    return max(MIN_GRACE_S, limit_s / 2)


class SharedDeadline:
    """Written by the process that runs ops (`arm`, `disarm`, `stamp`), read by its watchdog (`read`)."""

    def __init__(self, file: IO[bytes] | None = None) -> None:
        # an unnamed file (removed at creation): nothing is left behind, whichever process ends first
        self.file = file if file is not None else tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        if file is None:
            self.file.truncate(LAYOUT.size)
        self.memory = mmap.mmap(self.file.fileno(), LAYOUT.size)
        self.calls = 0

    @classmethod
    def attach(cls, fd: int) -> SharedDeadline:
        """The watchdog's side: the file it was handed (`pass_fds`)."""
        return cls(open(fd, "r+b", buffering=0))

    def fileno(self) -> int:
        return self.file.fileno()

    def arm(self, limit_s: float) -> None:
        self.calls += 1
        CALL.pack_into(self.memory, 0, time.monotonic() + limit_s + grace_s(limit_s), limit_s, self.calls)

    def disarm(self) -> None:
        CALL.pack_into(self.memory, 0, 0.0, 0.0, self.calls)

    def stamp(self, check: int) -> None:
        STAMP.pack_into(self.memory, CALL.size, check)

    def read(self) -> tuple[float, float, int, int]:
        """(give-up time or 0, limit, call number, check number), read until two reads agree (a write may be
        under way)."""
        found = LAYOUT.unpack_from(self.memory)
        while (again := LAYOUT.unpack_from(self.memory)) != found:
            found = again
        return found

    def close(self) -> None:
        self.memory.close()
        self.file.close()


_installed: SharedDeadline | None = None
_checks = 0


def install(shared: SharedDeadline | None) -> None:
    """The deadline this process's timed calls set (None: none, where no watchdog runs)."""
    global _installed
    _installed = shared


def arm(limit_s: float) -> None:
    if _installed is not None:
        _installed.arm(limit_s)


def disarm() -> None:
    if _installed is not None:
        _installed.disarm()


def next_check() -> int:
    """A new check begins: its number, shared with the watchdog."""
    global _checks
    _checks += 1
    if _installed is not None:
        _installed.stamp(_checks)
    return _checks
