"""The real accelerator kinds: `cuda:N` (a ROCm build's devices too), `mps`, `xpu:N`.  Each is a Target that says how
to wait for it, seed it and give its cached memory back, and what autocast means there."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from conformance.devices.targets import Target


@dataclass(frozen=True)
class CudaTarget(Target):
    """`cuda:N` (also a ROCm build's devices, which PyTorch names cuda)."""

    autocast_device = "cuda"
    autocast_dtype = torch.float16
    table_rank = 1.0

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)

    def seed(self, seed: int) -> None:
        super().seed(seed)
        if torch.cuda.is_initialized():
            torch.cuda.manual_seed_all(seed)

    def release_memory(self) -> None:
        torch.cuda.empty_cache()


@dataclass(frozen=True)
class MpsTarget(Target):
    """`mps`: Apple Metal."""

    autocast_device = "mps"
    autocast_dtype = torch.float16
    table_rank = 2.0

    def synchronize(self) -> None:
        torch.mps.synchronize()

    def seed(self, seed: int) -> None:
        super().seed(seed)
        torch.mps.manual_seed(seed)


@dataclass(frozen=True)
class XpuTarget(Target):
    """`xpu:N`: Intel GPUs."""

    autocast_device = "xpu"
    table_rank = 3.0

    def synchronize(self) -> None:
        torch.xpu.synchronize(self.device)

    def seed(self, seed: int) -> None:
        super().seed(seed)
        if torch.xpu.is_initialized():
            torch.xpu.manual_seed_all(seed)
