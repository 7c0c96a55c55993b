"""CPU instruction-set paths as targets: `cpu:default` (and each level below the machine's best).

PyTorch picks a CPU kernel per instruction set once per process (ATEN_CPU_CAPABILITY), so a
kernel whose lower-ISA path rounds differently (uint8 interpolation did) is invisible on a
machine that always takes its best path.  An ISA target runs each case in a worker process
started with that variable set and hands back the output; the cpu target (the machine's best
path) is its cross-device baseline, and the reference checks it like any target.

Only what crosses a process boundary is checked there: errors, values against the reference and
against the cpu, fidelity, baselines.  Placement, mutation and module checks stay with the cpu.
"""
from __future__ import annotations

import io
import os
import platform
import struct
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import torch

ORDER = {"x86_64": ["default", "avx2", "avx512"], "AMD64": ["default", "avx2", "avx512"],
         "aarch64": ["default", "sve256"], "arm64": ["default", "sve256"], "s390x": ["default", "zvector"]}
CHECKS = frozenset({"error", "reference", "fidelity", "cross_device", "baseline"})
ENV = "ATEN_CPU_CAPABILITY"


def lower_levels() -> list[str]:
    """The capability levels below the one this process runs with, lowest first."""
    try:
        best = torch.backends.cpu.get_cpu_capability().lower()
    except AttributeError:  # torch before 2.1 cannot say
        return []
    order = ORDER.get(platform.machine(), ["default"])
    if best not in order:
        return ["default"] if best != "default" else []
    return order[:order.index(best)]


def send(stream: Any, value: Any) -> None:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    data = buffer.getvalue()
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def receive(stream: Any) -> Any:
    header = stream.read(8)
    if len(header) < 8:
        raise EOFError("the ISA worker closed its pipe")
    (size,) = struct.unpack("<Q", header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the ISA worker closed its pipe mid-message")
    return torch.load(io.BytesIO(data), weights_only=True)


@dataclass
class Answer:
    output: torch.Tensor | None = None
    error: str | None = None
    error_type: str | None = None  # "module:qualname" of the raised class
    error_message: str = ""
    timed_out: bool = False
    unavailable: str | None = None  # this level cannot be run here (the worker could not start or refused it)


class IsaWorker:
    """One worker process per level, started on first use and restarted after it dies."""

    def __init__(self, level: str) -> None:
        self.level = level
        self.process: subprocess.Popen | None = None
        self.unavailable: str | None = None

    def _start(self) -> None:
        env = dict(os.environ, **{ENV: self.level})
        env.pop("CONFORMANCE_TARGETS", None)
        self.process = subprocess.Popen([sys.executable, "-m", "conformance.isa_worker"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, env=env)
        try:
            hello = receive(self.process.stdout)
        except EOFError:
            self.unavailable = f"the {ENV}={self.level} worker did not start (exit {self.process.wait()})"
            return
        if hello.get("capability", "").lower() != self.level:
            self.unavailable = (f"{ENV}={self.level} was not honoured: the worker runs with "
                                f"{hello.get('capability')!r} (torch {torch.__version__})")

    def call(self, request: dict[str, Any], timeout: float) -> Answer:
        if self.process is None or self.process.poll() is not None:
            if self.unavailable is None:
                self._start()
        if self.unavailable is not None:
            return Answer(unavailable=self.unavailable)
        assert self.process is not None
        try:
            send(self.process.stdin, request)
            reply = receive(self.process.stdout)
        except (EOFError, BrokenPipeError, OSError):
            code = self.process.wait()
            self.process = None
            return Answer(error=f"the {ENV}={self.level} worker process died while running the op (exit {code})",
                          error_type="builtins:RuntimeError", error_message=f"worker exit {code}")
        return Answer(**reply)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.stdin.close()
            self.process.wait(timeout=10)


_workers: dict[str, IsaWorker] = {}


def worker(level: str) -> IsaWorker:
    if level not in _workers:
        _workers[level] = IsaWorker(level)
    return _workers[level]


def error_class(name: str | None) -> type[BaseException]:
    """The raised class by its module and name, or a stand-in of the same name."""
    module, _, qualname = (name or "builtins:Exception").partition(":")
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if isinstance(found, type) and issubclass(found, BaseException):
        return found
    return type(qualname.rpartition(".")[2] or "Exception", (Exception,), {})
