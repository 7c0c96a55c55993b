"""Feeding an ISA target's worker ahead of the items that need its outputs.

As soon as a variant's cases are known (while they are drawn, or from a plan), each is submitted; a
pump thread per level writes the requests and reads the answers while this process goes on with the
other targets, so an ISA item finds its outputs waiting.  The worker is a process of this pytest
process's own (started on first use), or, under pytest-xdist, one per level that the controller started
for every worker to share (a Unix socket; `use_shared`), which saves a process's start-up per xdist
worker and level.  If a shared worker goes away, this process carries on with a worker of its own.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import threading
import time
from collections import deque
from typing import Any

import torch

from conformance.devices.isa import ENV, HEADER, Answer, frame, tensors
from conformance.devices.isa_channels import OwnWorker, SharedWorker

GRACE_S = 30.0  # beyond the per-case limit, how long an answer may take before the worker is given up
POLL_S = 0.02  # how often the pump looks for new requests while it waits on the worker


class IsaWorker:
    """The worker of one level: requests queued by `submit`, answers waited for by `result`.

    One pump thread writes requests and reads answers (both directions in one thread, with select:
    neither pipe can fill up and block the other).  A worker of this process's own that dies costs the
    request it was running (answered as an error) and is restarted for the rest; one that takes longer
    than the per-case limit plus GRACE_S (a hang in native code the worker's own timer cannot interrupt)
    is killed the same way.  When a shared worker goes away or stalls, every request it had is sent
    again to a worker of this process's own, which attributes a crash to the right case.
    """

    def __init__(self, level: str, shared_path: str | None = None) -> None:
        self.level = level
        self.shared_path = shared_path
        self.unavailable: str | None = None
        self.timeout_s = 0.0
        self._lock = threading.Condition()
        self._pending: deque[tuple[Any, bytes]] = deque()  # submitted, not yet sent
        self._inflight: deque[Any] = deque()  # sent (or being sent), answer not yet read, in order
        self._done: dict[Any, Answer] = {}
        self._wanted: set[Any] = set()
        self._thread: threading.Thread | None = None
        self._channel: OwnWorker | SharedWorker | None = None
        self._closed = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)  # a full pipe means the pump is already due to wake

    # the caller's side
    def submit(self, key: Any, request: dict[str, Any]) -> None:
        """Queue a request (a no-op for a key already submitted); its answer waits for `result`.
        The pump finds it within POLL_S: waking it for each request (a write the pump thread answers at
        once) made this thread wait for the interpreter lock, a quarter of a millisecond a request."""
        with self._lock:
            if key in self._wanted:
                return
            self._wanted.add(key)
            if self.unavailable is not None:
                self._done[key] = Answer(unavailable=self.unavailable)
                return
            self._pending.append((key, frame(request)))
            self.timeout_s = float(request.get("timeout", 0.0))
            if self._thread is None:
                self._thread = threading.Thread(target=self._pump, name=f"isa-{self.level}", daemon=True)
                self._thread.start()

    def result(self, key: Any) -> Answer:
        """The answer to a submitted request (waiting for it)."""
        with self._lock:
            while key not in self._done:
                if self._thread is None or not self._thread.is_alive():
                    return Answer(error="the ISA worker's feeding thread stopped", error_type="builtins:RuntimeError")
                self._lock.wait(1.0)
            self._wanted.discard(key)
            return self._done.pop(key)

    def call(self, key: Any, request: dict[str, Any]) -> Answer:
        """A request this thread waits for at once: the pump is woken (not left to find it within POLL_S, which
        cost 20 ms a case where a cache miss asked again for an answer already taken)."""
        self.submit(key, request)
        with self._lock:
            waiting = key not in self._done
        if waiting:
            self._wake()
        return self.result(key)

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.write(self._wake_w, b"x")

    def discard(self) -> None:
        """Forget every answer not yet taken (the items that would take them have run)."""
        with self._lock:
            self._wanted.clear()
            self._done.clear()
            self._pending.clear()

    def close(self) -> None:
        """Stop feeding and tell the worker to end; `join` waits for it."""
        with self._lock:
            self._closed = True
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout=15)
        if self._channel is not None:
            self._channel.end()

    def join(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.wait()

    # the pump thread's side
    def _connect(self) -> OwnWorker | SharedWorker | None:
        """A worker to talk to (the shared one while it serves, else one of this process's own), or None, and
        `unavailable` says why, when this level cannot run here."""
        try:
            channel = SharedWorker(self.shared_path) if self.shared_path else OwnWorker(self.level)
        except (EOFError, OSError) as exc:
            if self.shared_path:  # carry on alone
                self.shared_path = None
                return self._connect()
            self.unavailable = f"the {ENV}={self.level} worker did not start ({exc})"
            return None
        if str(channel.hello.get("capability", "")).lower() != self.level:
            self.unavailable = (
                f"{ENV}={self.level} was not honoured: the worker runs with "
                f"{channel.hello.get('capability')!r} (torch {torch.__version__})"
            )
            channel.end()
            channel.wait()
            return None
        return channel

    def _answer(self, key: Any, answer: Answer) -> None:
        """Hand an answer over (dropped when nobody wants it any more); the lock is held."""
        if key in self._wanted:
            self._done[key] = answer
        self._lock.notify_all()

    def _died(self, frames: dict[Any, bytes], why: str, timed_out: bool = False) -> None:
        """The worker is gone: a worker of this process's own costs the request it was running (an error); a
        shared one costs nothing (this process goes on with its own, which runs everything again)."""
        channel, self._channel = self._channel, None
        code = channel.kill() if channel is not None else None
        shared = channel is not None and channel.shared
        if shared:
            self.shared_path = None
        with self._lock:
            lost = list(self._inflight)
            self._inflight.clear()
            if lost and not shared:
                message = (
                    f"the op ran longer than the per-case limit of {self.timeout_s:g} s plus {GRACE_S:g} s "
                    f"in the {ENV}={self.level} worker, which was killed"
                    if timed_out
                    else f"the {ENV}={self.level} worker process {why} (exit {code})"
                )
                self._answer(
                    lost[0],
                    Answer(
                        error=message,
                        error_type="builtins:RuntimeError",
                        error_message=f"worker exit {code}",
                        timed_out=timed_out,
                    ),
                )
                lost = lost[1:]
            for key in reversed(lost):
                self._pending.appendleft((key, frames[key]))
        frames.clear()

    def _next_request(self, frames: dict[Any, bytes]) -> bytes:
        """The next request to write (connecting first if needed), or b"" when there is none."""
        while True:
            with self._lock:
                while self._pending and self._pending[0][0] not in self._wanted:
                    self._pending.popleft()  # discarded before it was sent
                if not self._pending or self._closed:
                    return b""
                if self._channel is not None:
                    key, data = self._pending.popleft()
                    self._inflight.append(key)
                    frames[key] = data
                    return data
            channel = self._connect()
            with self._lock:
                if channel is None:
                    for key, _ in self._pending:
                        self._answer(key, Answer(unavailable=self.unavailable))
                    self._pending.clear()
                    return b""
                self._channel = channel

    def _pump(self) -> None:
        frames: dict[Any, bytes] = {}  # requests sent and not answered (sent again if the worker goes away)
        out, received, head_since = b"", b"", time.monotonic()
        while True:
            with self._lock:
                if self._closed:
                    return
            if not out:
                idle = not self._inflight
                out = self._next_request(frames)
                if out and idle:
                    head_since = time.monotonic()
            channel = self._channel
            readers = [self._wake_r] + ([channel.read_fd] if channel is not None else [])
            writers = [channel.write_fd] if channel is not None and out else []
            readable, writable, _ = select.select(readers, writers, [], POLL_S)
            if self._wake_r in readable:
                os.read(self._wake_r, 4096)
            if channel is None:
                continue
            if writable:
                try:
                    out = out[os.write(channel.write_fd, out) :]
                except BlockingIOError:
                    pass
                except OSError:  # a broken pipe or socket: the worker is gone
                    out, received = b"", b""
                    self._died(frames, "closed its pipe")
                    continue
            if channel.read_fd in readable:
                try:
                    chunk = os.read(channel.read_fd, 1 << 20)
                except BlockingIOError:
                    chunk = None
                except OSError:
                    chunk = b""
                if chunk == b"":
                    out, received = b"", b""
                    self._died(frames, "died while running the op")
                    continue
                received += chunk or b""
                while len(received) >= HEADER.size:
                    (size,) = HEADER.unpack_from(received)
                    if len(received) < HEADER.size + size:
                        break
                    data, received = received[HEADER.size : HEADER.size + size], received[HEADER.size + size :]
                    answer = Answer(**tensors(pickle.loads(data)))
                    with self._lock:
                        key = self._inflight.popleft()
                        frames.pop(key, None)
                        self._answer(key, answer)
                    head_since = time.monotonic()
            limit = self.timeout_s + GRACE_S if self.timeout_s > 0 else 0.0
            if channel.shared:
                limit *= 2  # a shared worker runs other processes' requests too
            if limit and self._inflight and time.monotonic() - head_since > limit:
                out, received = b"", b""
                self._died(frames, "hung", timed_out=True)


_workers: dict[str, IsaWorker] = {}
_shared: dict[str, str] = {}  # level -> the socket of the worker the xdist controller started


def use_shared(paths: dict[str, str]) -> None:
    """Talk to the xdist controller's shared workers (level -> socket path) instead of starting one's own."""
    _shared.update(paths)


def worker(level: str) -> IsaWorker:
    if level not in _workers:
        _workers[level] = IsaWorker(level, _shared.get(level))
    return _workers[level]


def close(level: str) -> None:
    """End this process's worker for the level (its own, or its connection to a shared one).  Every level's worker
    is told first (telling twice is harmless), so that they exit side by side, each taking a moment; then this
    level's is waited for."""
    for told in _workers.values():
        told.close()
    found = _workers.pop(level, None)
    if found is not None:
        found.join()
