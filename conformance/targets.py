"""Targets: where an op runs, how to get tensors there and back, how to wait.

Real targets are `cpu`, `cuda:N`, `mps` and `xpu:N`.  A selection string
("all", "gpu", "cpu,cuda:1", "cuda") is resolved against what this machine
actually has; asking for something absent is a usage error that names what
exists, never a silent skip.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

import torch


class TargetSelectionError(ValueError):
    """A target list that names nothing, or something this machine does not have."""


@dataclass(frozen=True)
class Target:
    """One place an op can run."""

    name: str
    kind: str
    description: str = ""
    virtual: bool = False

    @property
    def device(self) -> torch.device:
        return torch.device(self.name)

    @property
    def is_accelerator(self) -> bool:
        return self.kind != "cpu"

    def put(self, value):
        """Move a tensor or module onto this target."""
        return value.to(self.device)

    def synchronize(self) -> None:
        """Wait for queued work so timings and errors belong to the right case."""
        if self.kind == "cuda":
            torch.cuda.synchronize(self.device)
        elif self.kind == "xpu":
            torch.xpu.synchronize(self.device)
        elif self.kind == "mps":
            torch.mps.synchronize()

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Context in which the op runs; real targets need none, virtual ones will."""
        yield

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "kind": self.kind, "description": self.description, "virtual": self.virtual}


CPU = Target("cpu", "cpu", "host CPU")


def discover() -> list[Target]:
    """Every target visible to this process, cpu first, in a stable order."""
    found = [CPU]
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            found.append(Target(f"cuda:{index}", "cuda", torch.cuda.get_device_name(index)))
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append(Target("mps", "mps", "Apple Metal"))
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        for index in range(xpu.device_count()):
            found.append(Target(f"xpu:{index}", "xpu", xpu.get_device_name(index)))
    return found


def parse_selection(text: str) -> list[str]:
    """Split a selection string; syntax errors are found without importing devices."""
    tokens = [token.strip() for token in text.split(",")]
    if not text.strip() or any(not token for token in tokens):
        raise TargetSelectionError(f"empty entry in target list {text!r}; use e.g. 'cpu,cuda:0', 'all' or 'gpu'")
    return tokens


def select(text: str, available: list[Target]) -> list[Target]:
    """Resolve a selection against the available targets, keeping their order."""
    by_name = {target.name: target for target in available}
    names = ", ".join(by_name)
    chosen: set[str] = set()
    for token in parse_selection(text):
        if token == "all":
            chosen.update(by_name)
        elif token == "gpu":
            accelerators = [t.name for t in available if t.is_accelerator]
            if not accelerators:
                raise TargetSelectionError(f"'gpu' selects no target: no accelerator is visible (available: {names})")
            chosen.update(accelerators)
        elif token in by_name:
            chosen.add(token)
        elif token in {t.kind for t in available}:  # "cuda" means every cuda:N
            chosen.update(t.name for t in available if t.kind == token)
        else:
            raise TargetSelectionError(f"unknown target {token!r} (available: {names}; or 'all', 'gpu')")
    return [target for target in available if target.name in chosen]
