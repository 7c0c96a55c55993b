"""The virtual device's process state: its errors, which virtual device is current on each thread, the
placement logs of the active targets, and the CUDA device guard that a machine without a driver lacks."""

from __future__ import annotations

import functools
import threading

import torch

from conformance.devices.placement import PlacementLog
from conformance.devices.torch_private import private


class NotEmulatable(RuntimeError):
    """The op needs something a virtual device cannot provide (a device-only kernel or API)."""


class DeviceMixError(RuntimeError):
    """Two devices met in one op: the error real CUDA raises, with the culprit named."""


class _State(threading.local):
    current_index = 0  # what `torch.cuda.current_device()` answers on this thread
    direct = 0  # > 0 while this package works on the cpu tensors inside virtual ones (no rules to apply)
    logs: list[PlacementLog | None]

    def __init__(self) -> None:
        self.logs = []  # one per active virtual_cuda() entry


state = _State()


def current_log() -> PlacementLog | None:
    return state.logs[-1] if state.logs else None


@functools.cache
def real_device_count() -> int:
    """Real CUDA devices, asked once (before torch.cuda is ever patched)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def ensure_device_guard() -> None:
    """Without a driver, C++ code that guards a cuda tensor's device would fail: make that
    guard a no-op, as PyTorch's fake tensors do.  With real CUDA nothing changes."""
    if real_device_count() == 0:
        private("torch._C._ensureCUDADeviceGuardSet")()
