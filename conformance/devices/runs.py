"""What one call of an op gave, as data: its output, or its error as text with a traceback that keeps no
frames (so no tensors stay alive), and the per-call time limit that cuts a hanging op."""

from __future__ import annotations

import signal
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any

from conformance.devices import deadline
from conformance.devices.frames import is_library, is_plumbing
from conformance.devices.placement import PlacementLog, is_device_mix_error
from conformance.spec.opspec import Sampled


class CaseTimeout(BaseException):
    """The op ran past the per-case time limit (`--case-timeout`).

    A BaseException, like KeyboardInterrupt: a library's `except Exception:` fallback must not
    swallow it, and no expected error class can accept it."""


class time_limit:
    """Raise CaseTimeout in the op after `seconds` (the main thread of a POSIX process, which pytest and its
    xdist workers are; elsewhere no limit).  The SIGALRM handler runs only between Python bytecodes, so the
    call's deadline is also shared with the process's watchdog (`deadline`), which ends the process when native
    code overruns it.  The process's SIGALRM handler is saved and restored around the call (pytest-timeout,
    for one, uses SIGALRM too).  A class, not a generator: it wraps every op call."""

    __slots__ = ("previous", "seconds")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds if seconds > 0 and _CAN_ALARM and threading.current_thread() is _MAIN else 0.0
        self.previous: Any = None

    def _expire(self, signum: int, frame: Any) -> None:
        raise CaseTimeout(f"the op ran longer than the per-case limit of {self.seconds:g} s (--case-timeout)")

    def __enter__(self) -> None:
        if self.seconds:
            self.previous = signal.signal(signal.SIGALRM, self._expire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
            deadline.arm(self.seconds)

    def __exit__(self, *exc: Any) -> None:
        if self.seconds:
            deadline.disarm()
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


_CAN_ALARM = hasattr(signal, "setitimer")
_MAIN = threading.main_thread()


@dataclass
class OpRun:
    """What one call of the op gave: its output, or its error as text (no live exception:
    its traceback would keep every frame's tensors alive in the baseline cache)."""

    output: Any = None
    error: str | None = None  # describe_error(): type, message, raising frame
    trace: Any = None  # the traceback as text, or an ErrorTrace formatted when first read
    error_type: type[BaseException] | None = None  # the class only: no frames are kept
    error_message: str = ""
    timed_out: bool = False  # the harness cut the call at --case-timeout
    mixed_devices: bool = False  # the error is PyTorch's "tensors on different devices"
    not_run: str | None = None  # why the target did not run it (not emulatable, compile budget spent, ...)
    resource: str | None = None  # out of memory: not a verdict on the op
    log: PlacementLog | None = None
    module_problems: list[str] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return getattr(self.output, "nbytes", 1024)

    @property
    def error_text(self) -> str | None:
        """The full traceback (formatted on first use: with Python's carets it costs more than many ops, and most
        errors, an invalid input's expected one, are never shown)."""
        if isinstance(self.trace, ErrorTrace):
            self.trace = self.trace.format()
        return self.trace

    @property
    def raised(self) -> str | None:
        """The exception class name, or None when the call returned."""
        return self.error_type.__name__ if self.error_type is not None else None

    def fail(self, exc: BaseException) -> None:
        self.error = describe_error(exc)
        self.trace = ErrorTrace.capture(exc)
        self.error_type = type(exc)
        self.error_message = str(exc)
        self.mixed_devices = is_device_mix_error(str(exc))


def _frames(tb: Any) -> list[tuple[str, int, str]]:
    """(file, line, function) of a traceback's frames, read from the frames themselves: the traceback module's
    extraction checks every file's modification time, a system call per frame (an expected error per case)."""
    return [(frame.f_code.co_filename, lineno, frame.f_code.co_name) for frame, lineno in traceback.walk_tb(tb)]


CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


@dataclass(frozen=True)
class ErrorTrace:
    """An exception's traceback as plain data (no frames, so no tensors kept alive), chained exceptions included,
    formatted like Python's own when first shown."""

    parts: tuple[tuple[str, tuple[tuple[str, int, str], ...], str], ...]  # oldest first: (link, frames, exception)

    @classmethod
    def capture(cls, exc: BaseException) -> ErrorTrace:
        parts: list[tuple[str, tuple[tuple[str, int, str], ...], str]] = []
        seen: set[int] = set()
        current: BaseException | None = exc
        link = ""
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            parts.append(
                (
                    link,
                    tuple(_frames(current.__traceback__)),
                    "".join(traceback.format_exception_only(type(current), current)),
                )
            )
            if current.__cause__ is not None:
                current, link = current.__cause__, CAUSE
            elif current.__context__ is not None and not current.__suppress_context__:
                current, link = current.__context__, CONTEXT
            else:
                current = None
        parts.reverse()  # the newest exception last, each link moved to the part it introduces
        links = [link for link, _, _ in reversed(parts)]
        return cls(tuple((links[i], frames, text) for i, (_, frames, text) in enumerate(parts)))

    def format(self) -> str:
        out = []
        for link, frames, text in self.parts:
            out.append(link)
            if frames:
                out.append("Traceback (most recent call last):\n")
                out.extend(traceback.StackSummary.from_list([(f, n, name, None) for f, n, name in frames]).format())
            out.append(text)
        return "".join(out)


def describe_error(exc: BaseException) -> str:
    """Exception type and message, where it was raised and the library line that called into torch."""
    frames = [f for f in _frames(exc.__traceback__) if not is_plumbing(f[0])]
    where = ""
    if frames:
        raised = frames[-1]
        where = f" (raised at {raised[0]}:{raised[1]} in {raised[2]}"
        library = [f for f in frames if is_library(f[0])]
        if library and library[-1] is not raised:
            where += f", called from {library[-1][0]}:{library[-1][1]} in {library[-1][2]}"
        where += ")"
    return f"{type(exc).__name__}: {str(exc).strip()}{where}"


@dataclass
class Sampling:
    """A random module's own sampler, run on a target with the module moved there."""

    params: Sampled | None = None
    log: PlacementLog | None = None
    error: str | None = None
    mixed_devices: bool = False
    not_run: str | None = None  # why the target did not run it (not emulatable, compile budget spent, ...)
