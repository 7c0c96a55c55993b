"""`remote`: an out-of-process target kind, the shape a remote machine's would take.  The op runs on the cpu in a
server process (conformance_meta.remote_server) reached over a Unix socket; only what crosses back (its output, what
it raised) is checked.  Everything it starts is in its lifecycle: `start` on the run's controller launches one
server for every xdist worker, `setup_worker` tells each worker where it is, `close_worker` and `stop` end it (a run
without workers starts its own server on the first case)."""

from __future__ import annotations

import os
import pickle
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Client, Connection
from typing import Any, ClassVar

from conformance.devices.cpu_elsewhere import CpuElsewhereTarget
from conformance.devices.isa import error_class
from conformance.devices.runs import OpRun
from conformance.spec.opspec import SOURCES, OpSpec, Sampled
from conformance.spec.recipes import Case

KEY_ENV = "CONFORMANCE_META_SERVER_KEY"  # the key a connection to the server proves it knows
_SERVERS: dict[str, subprocess.Popen[bytes]] = {}  # target name -> the server this process started
_SOCKETS: dict[str, tuple[str, str]] = {}  # target name -> where this process reaches its server, and its key
_CONNECTIONS: dict[str, Connection] = {}
_OWN: dict[str, str] = {}  # target name -> the folder of the server this (worker) process started for itself


def _launch(path: str, key: str) -> subprocess.Popen[bytes]:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]), **{KEY_ENV: key})
    server = subprocess.Popen(
        [sys.executable, "-m", "conformance_meta.remote_server", path], stdin=subprocess.PIPE, env=env
    )
    deadline = time.monotonic() + 120
    while not os.path.exists(path):  # it listens once torch and the libraries are imported
        if server.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the remote server did not start (exit code {server.poll()})")
        time.sleep(0.05)
    return server


def _end(server: subprocess.Popen[bytes], now: bool) -> None:
    """It ends when its stdin closes; killed at once after a stop of the run."""
    if server.stdin is not None:
        server.stdin.close()
    try:
        server.wait(timeout=0 if now else 15)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


@dataclass(frozen=True)
class RemoteTarget(CpuElsewhereTarget):
    table_rank: ClassVar[float] = 6.0

    def start(self, folder: str) -> dict[str, str]:
        path, key = os.path.join(folder, f"{self.name}.sock"), secrets.token_hex(16)
        _SERVERS[self.name] = _launch(path, key)
        return {"socket": path, "key": key}

    def setup_worker(self, handed: dict[str, str] | None) -> None:
        if handed:
            _SOCKETS[self.name] = (handed["socket"], handed["key"])

    def close_worker(self) -> None:
        connection = _CONNECTIONS.pop(self.name, None)
        if connection is not None:
            connection.close()
        if self.name in _OWN:  # its own server (a run without workers), and the folder of its socket
            _end(_SERVERS.pop(self.name), now=False)
            shutil.rmtree(_OWN.pop(self.name), ignore_errors=True)

    def stop(self, now: bool) -> None:
        server = _SERVERS.pop(self.name, None)
        if server is not None:
            _end(server, now)

    def _connection(self) -> Connection:
        if self.name not in _CONNECTIONS:
            if self.name not in _SOCKETS:  # no controller started one: this process's own
                folder = tempfile.mkdtemp(prefix="conformance-remote-")
                path, key = os.path.join(folder, "server.sock"), secrets.token_hex(16)
                _SERVERS[self.name] = _launch(path, key)
                _SOCKETS[self.name] = (path, key)
                _OWN[self.name] = folder
            path, key = _SOCKETS[self.name]
            _CONNECTIONS[self.name] = Client(path, family="AF_UNIX", authkey=key.encode())
        return _CONNECTIONS[self.name]

    def run_elsewhere(self, spec: OpSpec, case: Case, sampled: Sampled | None, timeout_s: float) -> OpRun:
        run = OpRun()
        if spec.name not in SOURCES:
            run.not_run = f"{spec.name} was not defined by a case module (the server could not load it)"
            return run
        if os.environ.get("CONFORMANCE_META_REMOTE_ABORT"):  # the tests' crash: the worker dies mid-item here
            os.abort()
        request = {"source": SOURCES[spec.name], "op": spec.name, "case": case.json, "timeout": timeout_s}
        connection = self._connection()
        # plain pickle: Connection.send's would hand tensors over as shared memory (torch's reductions)
        connection.send_bytes(pickle.dumps(request | {"sampled": sampled}))
        answer: dict[str, Any] = pickle.loads(connection.recv_bytes())
        if "output" in answer:
            run.output = answer["output"]
        else:
            run.error = run.trace = answer["error"]
            run.error_type, run.error_message = error_class(answer.get("error_type")), answer.get("error_message", "")
            run.timed_out = bool(answer.get("timed_out"))
        return run
