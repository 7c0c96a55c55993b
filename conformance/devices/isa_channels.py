"""The two ways to reach an ISA target's worker: a process of this process's own (its stdin/stdout) or a
connection to the one the xdist controller started for every worker to share (a Unix socket).

Both expose non-blocking file descriptors for the feed's pump (`read_fd`, `write_fd`), the worker's
hello message, and how to end, wait for or kill it.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import socket
import subprocess
import time
from typing import Any

from conformance.devices import isa_start
from conformance.devices.isa import ENV, HEADER, receive, tensors

CONNECT_S = 120.0  # how long a shared worker may take to start listening


class OwnWorker:
    """A worker process of this process's own, on its stdin/stdout."""

    shared = False

    def __init__(self, level: str) -> None:
        env = dict(os.environ, **{ENV: level})
        env.pop("CONFORMANCE_TARGETS", None)
        self.process = isa_start.start([], env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.process.stdout is not None and self.process.stdin is not None  # started with PIPE
        self.stdin = self.process.stdin
        self.hello = receive(self.process.stdout)  # EOFError: it did not start
        self.read_fd, self.write_fd = self.process.stdout.fileno(), self.process.stdin.fileno()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)

    def end(self) -> None:
        """Tell it to finish (it exits when its pipe closes)."""
        with contextlib.suppress(OSError):
            self.stdin.close()

    def wait(self) -> int:
        try:
            return self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def kill(self) -> int:
        if self.process.poll() is None:
            self.process.kill()
        return self.process.wait()


class SharedWorker:
    """A connection to a worker the xdist controller started for every worker to share."""

    shared = True

    def __init__(self, path: str) -> None:
        deadline = time.monotonic() + CONNECT_S
        while True:
            self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                self.socket.connect(path)
                break
            except OSError:
                self.socket.close()
                if time.monotonic() > deadline:
                    raise EOFError(f"no shared ISA worker listens at {path}") from None
                time.sleep(0.1)
        self.hello = receive_from(self.socket)
        self.read_fd = self.write_fd = self.socket.fileno()
        self.socket.setblocking(False)

    def end(self) -> None:
        self.socket.close()

    def wait(self) -> int:
        return 0

    def kill(self) -> int:
        self.socket.close()
        return 0


def receive_from(connection: socket.socket) -> Any:
    """One message from a blocking socket."""

    def exactly(size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = connection.recv(size - len(data))
            if not chunk:
                raise EOFError("the shared ISA worker closed the connection")
            data += chunk
        return data

    (size,) = HEADER.unpack(exactly(HEADER.size))
    return tensors(pickle.loads(exactly(size)))
