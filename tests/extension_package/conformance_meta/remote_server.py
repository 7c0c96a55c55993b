"""The remote target's server: answers each connection's requests (one case each: the op's output on the cpu, or
what it raised) until its stdin closes.  `python -m conformance_meta.remote_server SOCKET`."""

from __future__ import annotations

import os
import pickle
import sys
import threading
from multiprocessing.connection import Connection, Listener
from typing import Any

from conformance.devices.isa_worker import reply

_LOCK = threading.Lock()  # one case at a time: the op's threads are the machine's
_CACHE: dict[tuple[str, str], Any] = {}


def _answer(connection: Connection) -> None:
    with connection:
        while True:
            try:
                request = pickle.loads(connection.recv_bytes())
            except (EOFError, OSError):
                return
            with _LOCK:
                connection.send_bytes(pickle.dumps(reply(request, _CACHE)))


def _log(event: str) -> None:
    """For the tests: when it started and ended, in the file CONFORMANCE_META_SERVER_LOG names."""
    path = os.environ.get("CONFORMANCE_META_SERVER_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(f"{event} {os.getpid()}\n")


def _end_when_stdin_closes() -> None:
    sys.stdin.buffer.read()
    _log("ended")
    os._exit(0)  # its connections' threads may be waiting in recv: nothing of this process is left to finish


def main(path: str) -> None:
    sys.stdout = sys.stderr  # anything an op prints goes to the log, never into a connection
    os.environ["CONFORMANCE_META_REMOTE"] = "1"  # an op can tell it runs here (the tests plant a difference)
    _log("started")
    threading.Thread(target=_end_when_stdin_closes, daemon=True).start()
    with Listener(path, family="AF_UNIX", authkey=os.environ["CONFORMANCE_META_SERVER_KEY"].encode()) as listener:
        while True:
            threading.Thread(target=_answer, args=(listener.accept(),), daemon=True).start()


if __name__ == "__main__":
    main(sys.argv[1])
