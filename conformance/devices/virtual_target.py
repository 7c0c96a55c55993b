"""`vcuda:N`: the virtual accelerator as a target kind (the emulation itself is conformance.devices.virtual)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from conformance.devices.facts import ScriptDevice
from conformance.devices.placement import PlacementLog
from conformance.devices.targets import Target
from conformance.devices.virtual.facade import virtual_cuda
from conformance.devices.virtual.tensor import to_virtual


@dataclass(frozen=True)
class VirtualTarget(Target):
    """`vcuda:N`: tensors report cuda:N, data and kernels stay on the CPU (see conformance.devices.virtual)."""

    count: int = 2  # how many virtual devices torch.cuda reports while active

    backward_by_walking = True  # the autograd engine would look for a real CUDA device to run on
    autocast_device = "cuda"  # what a cuda device's users enter; the emulation casts as cuda's autocast would
    autocast_dtype = torch.float16
    inference_mode = False  # inside it the emulated tensors' `.cpu()` keeps the device: a finding of the emulation
    table_rank = 4.0

    def script_device(self) -> ScriptDevice:
        """The CUDA device of its index: the script needs a CUDA machine."""
        device = f"cuda:{self.name.split(':')[1]}"
        note = (
            f"Found on the virtual device {self.name} (CPU data that reports a CUDA device, device rules enforced): "
            f"the script runs on {device}, which needs a CUDA machine."
        )
        return ScriptDevice(device, notes=(note,))

    @property
    def device(self) -> torch.device:
        return torch.device("cuda", int(self.name.split(":")[1]))

    def put(self, value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return to_virtual(value, self.device)
        with virtual_cuda(self.count):
            return value.to(self.device)

    def synchronize(self) -> None:
        """Nothing is queued: the CPU kernels have finished when the op returns."""

    def not_run_message(self, reason: str) -> str:
        return f"not emulatable on a virtual device: {reason}"

    def autocast(self) -> torch.autocast:
        with virtual_cuda(self.count):  # made while torch.cuda reports devices, or it disables itself
            return super().autocast()

    @contextlib.contextmanager
    def active(self, log: PlacementLog | None = None) -> Iterator[None]:
        with virtual_cuda(self.count, log):
            yield


VIRTUAL_DESCRIPTION = "virtual: cpu data and kernels, cuda device rules"
ALL_VIRTUAL = "--targets default,vcuda"


def virtual_targets(count: int, only_last_by_default: bool = False) -> list[Target]:
    """`count` vcuda:N targets, unconditionally (discovery decides whether to offer them); with
    `only_last_by_default`, the `default` selection takes only the last."""
    held_back = f"; not the current device (vcuda:0 too: {ALL_VIRTUAL})"
    return [
        VirtualTarget(
            f"vcuda:{i}",
            "vcuda",
            VIRTUAL_DESCRIPTION + (held_back if only_last_by_default and i == count - 1 and i > 0 else ""),
            virtual=True,
            by_default=not only_last_by_default or i == count - 1,
            count=count,
        )
        for i in range(count)
    ]
