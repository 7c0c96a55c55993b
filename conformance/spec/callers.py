"""Which case module called: `spec.test()`, `OPERATION.tests()` and the sweep's `tests()` record the file of the
module that calls them, from which a worker process (an ISA target's, a remote kind's) loads the op again."""

from __future__ import annotations

import inspect


def caller_file(depth: int) -> str | None:
    """The `__file__` of the frame `depth` calls above the caller of this function (1: the caller's caller).
    `inspect.currentframe` is the public handle on frames; None where the interpreter keeps none."""
    frame = inspect.currentframe()
    for _ in range(depth + 1):
        frame = frame.f_back if frame is not None else None
    return frame.f_globals.get("__file__") if frame is not None else None
