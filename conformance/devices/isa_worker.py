"""The worker process of an ISA target (see conformance.devices.isa): started with ATEN_CPU_CAPABILITY set, it
answers one request per case (the op's output on the cpu, or what it raised), as messages of plain values
with tensors as numpy arrays.

Two ways to run it: on its stdin/stdout for one pytest process (it ends when that process closes the
pipe), or, with `--listen PATH`, as a server on a Unix socket that the xdist controller starts once per
level for all its workers to share (it serves their requests in the order they arrive, and ends when the
controller closes its stdin)."""

from __future__ import annotations

import contextlib
import os
import pickle
import selectors
import socket
import sys
from collections import deque
from pathlib import Path
from typing import Any

import torch

from conformance.devices.calls import run_op
from conformance.devices.exits import end_now
from conformance.devices.isa import HEADER, frame, ignore_interrupts, receive, send, tensors
from conformance.devices.targets import CPU
from conformance.spec.loading import load_specs
from conformance.spec.recipes import Case, materialize


def _spec(source: str, op: str, cache: dict[tuple[str, str], Any]) -> Any:
    if (source, op) not in cache:
        for spec in load_specs([Path(source)]):
            cache[(source, spec.name)] = spec
    return cache[(source, op)]


def answer(request: dict[str, Any], cache: dict[tuple[str, str], Any]) -> dict[str, Any]:
    spec = _spec(request["source"], request["op"], cache)
    case = Case.from_json(request["case"])
    run = run_op(spec, materialize(case.recipe), case, CPU, request["sampled"], timeout_s=float(request["timeout"]))
    if run.error is not None:
        kind = run.error_type or Exception
        return {
            "error": run.error,
            "error_type": f"{kind.__module__}:{kind.__qualname__}",
            "error_message": run.error_message,
            "timed_out": run.timed_out,
        }
    output = run.output
    if not isinstance(output, torch.Tensor):
        return {"error": f"the op returned {type(output).__name__}, not a tensor", "error_type": "builtins:TypeError"}
    return {"output": output.detach()}


def reply(request: dict[str, Any], cache: dict[tuple[str, str], Any]) -> dict[str, Any]:
    try:
        return answer(request, cache)
    except Exception as exc:  # noqa: BLE001 - the harness's own failure, reported to the parent
        return {
            "error": f"the ISA worker could not run the case: {type(exc).__name__}: {exc}",
            "error_type": "builtins:RuntimeError",
            "error_message": str(exc),
        }


def hello() -> dict[str, Any]:
    return {"capability": torch.backends.cpu.get_cpu_capability()}


def main() -> None:
    """Serve until the parent closes the pipe, then end at once (`end_now`)."""
    ignore_interrupts()
    if sys.argv[1:2] == ["--listen"]:
        serve(sys.argv[2])
    else:
        answer_pipe()
    end_now()


def answer_pipe() -> None:
    """Answer the requests of one pytest process on stdin/stdout, until it closes stdin."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # anything the op prints must not corrupt the pipe
    send(stdout, hello())
    cache: dict[tuple[str, str], Any] = {}
    while True:
        try:
            request = receive(stdin)
        except EOFError:
            return
        send(stdout, reply(request, cache))


def serve(path: str) -> None:
    """Answer the requests of every connection, in the order they arrive, until stdin closes."""
    sys.stdout = sys.stderr
    greeting = frame(hello())
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".tmp")
    os.replace(path + ".tmp", path)  # a client connects once the socket is listening, never before
    listener.listen(64)
    listener.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(sys.stdin.buffer.fileno(), selectors.EVENT_READ, "parent")
    received: dict[socket.socket, bytes] = {}
    queue: deque[tuple[socket.socket, dict[str, Any]]] = deque()
    cache: dict[tuple[str, str], Any] = {}

    def drop(connection: socket.socket) -> None:
        selector.unregister(connection)
        received.pop(connection, None)
        connection.close()
        for item in [q for q in queue if q[0] is connection]:
            queue.remove(item)

    while True:
        for key, _ in selector.select(timeout=0 if queue else None):
            if key.data == "parent":
                if not os.read(sys.stdin.buffer.fileno(), 4096):
                    listener.close()
                    _remove(path)
                    return
            elif key.data == "accept":
                connection, _ = listener.accept()
                connection.sendall(greeting)
                connection.setblocking(False)
                received[connection] = b""
                selector.register(connection, selectors.EVENT_READ, "client")
            else:
                connection = key.fileobj  # type: ignore[assignment]
                try:
                    chunk = connection.recv(1 << 20)
                except BlockingIOError:
                    continue
                except OSError:
                    chunk = b""
                if not chunk:
                    drop(connection)
                    continue
                data = received[connection] + chunk
                while len(data) >= HEADER.size:
                    (size,) = HEADER.unpack_from(data)
                    if len(data) < HEADER.size + size:
                        break
                    queue.append((connection, tensors(pickle.loads(data[HEADER.size : HEADER.size + size]))))
                    data = data[HEADER.size + size :]
                received[connection] = data
        if queue:
            connection, request = queue.popleft()
            answered = frame(reply(request, cache))
            try:
                connection.setblocking(True)
                connection.sendall(answered)
                connection.setblocking(False)
            except OSError:
                drop(connection)


def _remove(path: str) -> None:
    """The socket, and its folder once the last level's worker has gone: the controller removes them too, but
    one killed (its stop overran) no longer can."""
    with contextlib.suppress(OSError):
        os.unlink(path)
        os.rmdir(os.path.dirname(path))


if __name__ == "__main__":
    main()
