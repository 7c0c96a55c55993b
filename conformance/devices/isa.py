"""CPU instruction-set paths as targets: `cpu:default` (and each level below the machine's best).

PyTorch picks a CPU kernel per instruction set once per process (ATEN_CPU_CAPABILITY), so a
kernel whose lower-ISA path rounds differently (uint8 interpolation did) is invisible on a
machine that always takes its best path.  An ISA target runs each case in a worker process
started with that variable set and hands back the output; the cpu target (the machine's best
path) is its cross-device baseline, and the reference checks it like any target.

Only what crosses a process boundary is checked there (the checks declared `output_only`: errors, values
against the reference and against the cpu, fidelity, baselines); placement, mutation and module checks stay
with the cpu.

This module holds what both ends share: the levels, the messages (pickled plain values, tensors as
numpy arrays: both ends are this harness's own processes, talking over their own pipes or socket) and
the answer.  `isa_feed` feeds a worker ahead of the items that need its outputs; `isa_worker` is the
worker process (one per pytest process, or one per level shared by pytest-xdist's workers).
"""

from __future__ import annotations

import pickle
import platform
import signal
import struct
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

ORDER = {
    "x86_64": ["default", "avx2", "avx512"],
    "AMD64": ["default", "avx2", "avx512"],
    "aarch64": ["default", "sve256"],
    "arm64": ["default", "sve256"],
    "s390x": ["default", "zvector"],
}
ENV = "ATEN_CPU_CAPABILITY"
HEADER = struct.Struct("<Q")


def lower_levels() -> list[str]:
    """The capability levels below the one this process runs with, lowest first."""
    try:
        best = torch.backends.cpu.get_cpu_capability().lower()
    except AttributeError:  # torch before 2.1 cannot say
        return []
    order = ORDER.get(platform.machine(), ["default"])
    if best not in order:
        return ["default"] if best != "default" else []
    return order[: order.index(best)]


# -- what crosses the pipe -------------------------------------------------------------------
class _Tensor:
    """A tensor in transit: its values as a numpy array (bfloat16 as its 16-bit pattern) and its dtype."""

    __slots__ = ("array", "dtype")

    def __init__(self, tensor: torch.Tensor) -> None:
        tensor = tensor.detach().cpu()
        self.dtype = str(tensor.dtype).removeprefix("torch.")
        self.array = (tensor.view(torch.int16) if tensor.dtype == torch.bfloat16 else tensor).numpy()

    def tensor(self) -> torch.Tensor:
        found = torch.from_numpy(np.ascontiguousarray(self.array))
        return found.view(torch.bfloat16) if self.dtype == "bfloat16" else found


def plain(value: Any) -> Any:
    """`value` with every tensor (in dicts, lists and tuples) replaced by a picklable `_Tensor`."""
    if isinstance(value, torch.Tensor):
        return _Tensor(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(plain(v) for v in value)
    return value


def tensors(value: Any) -> Any:
    """The inverse of `plain`."""
    if isinstance(value, _Tensor):
        return value.tensor()
    if isinstance(value, dict):
        return {k: tensors(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(tensors(v) for v in value)
    return value


def frame(value: Any) -> bytes:
    data = pickle.dumps(plain(value), protocol=5)
    return HEADER.pack(len(data)) + data


def send(stream: Any, value: Any) -> None:
    stream.write(frame(value))
    stream.flush()


def receive(stream: Any) -> Any:
    header = stream.read(HEADER.size)
    if len(header) < HEADER.size:
        raise EOFError("the ISA worker closed its pipe")
    (size,) = HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the ISA worker closed its pipe mid-message")
    return tensors(pickle.loads(data))


@dataclass
class Answer:
    output: torch.Tensor | None = None
    error: str | None = None
    error_type: str | None = None  # "module:qualname" of the raised class
    error_message: str = ""
    timed_out: bool = False
    unavailable: str | None = None  # this level cannot be run here (the worker could not start or refused it)


def error_class(name: str | None) -> type[BaseException]:
    """The raised class by its module and name, or a stand-in of the same name."""
    module, _, qualname = (name or "builtins:Exception").partition(":")
    found: Any = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if isinstance(found, type) and issubclass(found, BaseException):
        return found
    return type(qualname.rpartition(".")[2] or "Exception", (Exception,), {})


def ignore_interrupts() -> None:
    """In a worker: Ctrl-C and a SIGTERM to the process group reach it too, but it ends when its parent closes
    the pipe, or kills it (printing no traceback of its own, and never cutting a case short under the item
    that waits for it).  `isa_start` starts it so, before the exec; this is for one started otherwise."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
