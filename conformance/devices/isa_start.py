"""Starting an ISA worker process (conformance.devices.isa_worker): the xdist controller's shared ones and a
process's own.  Without torch: the xdist glue starts them.

The worker ignores the process group's stops (Ctrl-C, SIGTERM) from its first instruction: a stop is the run's
to answer, and the worker ends when its parent closes its pipe, or kills it.  Ignored before the exec, because
Python installs its Ctrl-C handler only where SIGINT was not ignored already: a stop that landed in the seconds
of the interpreter's start and torch's import printed a KeyboardInterrupt traceback of the worker's own.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

STOPS = (signal.SIGINT, signal.SIGTERM)


def _ignore_stops() -> None:
    for signum in STOPS:
        signal.signal(signum, signal.SIG_IGN)


def start(args: list[str], env: dict[str, str], **popen: Any) -> subprocess.Popen[bytes]:
    """The worker process, with `args` (`--listen PATH` for a shared one) and Popen's other arguments."""
    command = [sys.executable, "-m", "conformance.devices.isa_worker", *args]
    before_exec = _ignore_stops if os.name == "posix" else None  # elsewhere the worker ignores them at its start
    return subprocess.Popen(command, env=env, preexec_fn=before_exec, **popen)
