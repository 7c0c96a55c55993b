"""A stop asked for by Ctrl-C or SIGTERM, remembered until the run has ended.

Why a flag and not only the KeyboardInterrupt: hypothesis replays each failure it found once more at
the end, and an exception raised in that replay joins the failures it reports.  With two distinct
failures the interrupt arrives inside a BaseExceptionGroup, pytest counts a plain failed test, and the
run goes on.  The plugin and the engine ask here instead, so a stop is a stop wherever it landed.

Where Python cannot raise at all (a gc callback, a ``__del__``, a weakref callback: hypothesis times
garbage collection with one), it reports the KeyboardInterrupt as "unraisable".  pytest turns that into
a warning that this project's settings make an error, and a cancelled run then ended with exit code 1
and a traceback.  Such a report of our own stop is dropped: the stop is remembered and the run ends at
its next check.

A stop is raised once.  The same SIGTERM reaches pytest twice when the whole process group gets it (`timeout`, a
CI cancellation, a container stop): from the group and from `python -m conformance run`, which passes its own
on.  Raised again while pytest reported the first (it parses source for that), it escaped as a traceback, the
process died of it (exit 254) and no summary was written.  And once the session is ending (`closing`: the
summary, the report, the workers' teardown), a stop is only remembered, so that the teardown runs to its end
(no traceback, no temporary folder left) and the run is then marked interrupted.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

STOPS = (signal.SIGINT, signal.SIGTERM)

_requested: str | None = None
_raised = False  # the stop was raised once already (see the docstring)
_closing = False  # the session is ending: a stop is remembered, not raised
_held = False  # inside `held`


def clear() -> None:
    global _requested, _raised, _closing, _held
    _requested, _raised, _closing, _held = None, False, False, False


def closing() -> None:
    """The session is ending: a stop from now on is remembered, not raised."""
    global _closing
    _closing = True


@contextlib.contextmanager
def held() -> Iterator[None]:
    """A stop inside the block is remembered, not raised: the next check (`raise_if_requested`) raises it.  For
    code that must not be cut in the middle (pytest ends a session whose start was interrupted without its
    end, and xdist's workers with it)."""
    global _held
    before, _held = _held, True
    try:
        yield
    finally:
        _held = before


@contextlib.contextmanager
def blocked() -> Iterator[None]:
    """Ctrl-C and SIGTERM blocked in this thread, and so in every process it starts meanwhile, which gets them
    once it unblocks them itself (`unblock`, where its handler is in place): a process stopped while its
    interpreter starts prints a KeyboardInterrupt traceback, or dies without a word."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def unblock() -> None:
    """Take the stops a parent's `blocked` left blocked: a stop that arrived meanwhile is delivered now."""
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPS)


def requested() -> str | None:
    """Why the run was asked to stop ("signal 15 (SIGTERM)"), or None."""
    return _requested


def on_signal(signum: int, frame: FrameType | None) -> None:
    """A signal handler: remember the stop, then raise it where the main thread is now, unless it was raised
    already or the session is ending."""
    global _requested, _raised
    if _requested is None:
        _requested = f"signal {signum} ({signal.Signals(signum).name})"
    if not getattr(sys.unraisablehook, "drops_requested_stop", False):  # wrap whichever hook is current now
        sys.unraisablehook = _dropping_requested_stop(sys.unraisablehook)
    if _raised or _closing or _held:
        return
    _raised = True
    raise KeyboardInterrupt(_requested)


def _dropping_requested_stop(hook: Callable[[Any], object]) -> Callable[[Any], object]:
    """``hook`` less the reports of a KeyboardInterrupt this module raised for a stop it remembers."""

    def filtered(unraisable: Any) -> object:
        exc = unraisable.exc_value
        if _requested is not None and isinstance(exc, KeyboardInterrupt) and exc.args == (_requested,):
            return None
        return hook(unraisable)

    filtered.drops_requested_stop = True  # type: ignore[attr-defined]
    return filtered


def raise_if_requested() -> None:
    if _requested is not None:
        raise KeyboardInterrupt(_requested)


def is_interrupt(failure: BaseException) -> bool:
    """A KeyboardInterrupt, also one wrapped in an exception group or chained as a cause (hypothesis
    wraps a BaseException it must put in an ExceptionGroup, and links it as the wrapper's cause)."""
    seen: set[int] = set()
    pending = [failure]
    while pending:
        exc = pending.pop()
        if id(exc) in seen:
            continue
        seen.add(id(exc))
        if isinstance(exc, KeyboardInterrupt):
            return True
        grouped = getattr(exc, "exceptions", None)  # a (Base)ExceptionGroup, also the backport's before 3.11
        if isinstance(grouped, tuple):
            pending.extend(e for e in grouped if isinstance(e, BaseException))
        pending.extend(e for e in (exc.__cause__, exc.__context__) if e is not None)
    return False
