"""How the run's worker processes end (an ISA worker, an xdist worker): at once, once they have said everything.
Without torch, so that the xdist glue can register it without importing torch."""

from __future__ import annotations

import contextlib
import logging
import os
import sys


def end_now() -> None:
    """Flush the streams and logging, then end without the interpreter's finalization, which frees a heap of
    cached cases and torch's op tables object by object: 1-3 s that the controller waited for at the end of
    every run."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(0)
