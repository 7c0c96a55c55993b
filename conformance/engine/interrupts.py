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
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from types import FrameType
from typing import Any

_requested: str | None = None


def clear() -> None:
    global _requested
    _requested = None


def requested() -> str | None:
    """Why the run was asked to stop ("signal 15 (SIGTERM)"), or None."""
    return _requested


def on_signal(signum: int, frame: FrameType | None) -> None:
    """A signal handler: remember the stop, then raise it where the main thread is now."""
    global _requested
    _requested = f"signal {signum} ({signal.Signals(signum).name})"
    if not getattr(sys.unraisablehook, "drops_requested_stop", False):  # wrap whichever hook is current now
        sys.unraisablehook = _dropping_requested_stop(sys.unraisablehook)
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
