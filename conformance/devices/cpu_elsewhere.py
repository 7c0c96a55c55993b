"""A target kind whose op runs on a cpu in another process (the ISA workers, an extension's server): what such a
kind is, said once.  Only what crosses back, its output or what it raised, is checked, against this process's
cpu; a subclass gives `run_elsewhere` and, where it starts anything, the lifecycle (`start`, `stop`, ...)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from conformance.devices.targets import Target


@dataclass(frozen=True)
class CpuElsewhereTarget(Target):
    @property
    def device(self) -> torch.device:
        """Its inputs stay on this host; they cross to the other process as bytes."""
        return torch.device("cpu")

    @property
    def compared_with_cpu(self) -> bool:
        return True

    @property
    def out_of_process(self) -> bool:
        return True
