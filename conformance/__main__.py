"""`python -m conformance`.  A SIGTERM while the command's imports run (seconds: torch) ends it with exit 2,
pytest's "interrupted", and one line, not the signal's silent 143; `run` answers its own once it starts
pytest (conformance.launch)."""

import os
import signal
import sys


def _stopped_early(signum: int, frame: object) -> None:
    sys.stderr.write(f"conformance: stopped ({signal.Signals(signum).name}) before the command started\n")
    os._exit(2)  # nothing started yet: no child, no file to close


signal.signal(signal.SIGTERM, _stopped_early)

from conformance.cli import main  # noqa: E402 - after the handler: this import takes seconds

signal.signal(signal.SIGTERM, signal.SIG_DFL)  # each command as before
sys.exit(main())
