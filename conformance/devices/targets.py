"""Targets: where an op runs, how to get tensors there and back, how to wait.

Real targets are `cpu`, `cuda:N`, `mps` and `xpu:N`; virtual ones are
`vcuda:N` (conformance.devices.virtual: CPU data, CUDA device, device rules enforced); `cpu:<level>`
runs the cpu's kernels for a lower instruction set in a worker process (conformance.devices.isa).
A selection string ("all", "gpu", "vcuda", "cpu,vcuda:1", "cuda") is resolved
against what this machine actually has; asking for something absent is a
usage error that names what exists, never a silent skip.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from conformance.devices.isa import ENV, lower_levels
from conformance.devices.placement import ObserverMode, PlacementLog
from conformance.devices.target_names import COMPILED_SUFFIX
from conformance.devices.torch_private import only_lift_cpu_tensors, set_only_lift_cpu_tensors
from conformance.devices.virtual import probe
from conformance.devices.virtual.facade import virtual_cuda
from conformance.devices.virtual.tensor import to_virtual


class TargetSelectionError(ValueError):
    """A target list that names nothing, or something this machine does not have."""


@dataclass(frozen=True)
class Target:
    """One place an op can run."""

    name: str
    kind: str
    description: str = ""
    virtual: bool = False
    by_default: bool = True  # in the `default` selection (see `discover` for the one that is not)

    @property
    def device(self) -> torch.device:
        return torch.device(self.name)

    @property
    def is_accelerator(self) -> bool:
        return self.kind != "cpu"

    @property
    def compared_with_cpu(self) -> bool:
        """Its outputs are checked against the cpu target's (accelerators, and cpu ISA paths)."""
        return self.is_accelerator

    @property
    def out_of_process(self) -> bool:
        """The op runs in another process: only what crosses back (its output, what it raised) can be checked."""
        return False

    @property
    def compiled(self) -> bool:
        """The op runs through torch.compile (a `<device>+compile` target)."""
        return False

    @property
    def twin(self) -> Target | None:
        """The target whose output this one's is compared with: the cpu for accelerators and ISA paths,
        eager on the same device for a compiled target; None for the cpu itself."""
        return CPU if self.compared_with_cpu else None

    def put(self, value: Any) -> Any:
        """Move a tensor or module onto this target (a copy for tensors, in place for modules)."""
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
    def active(self, log: PlacementLog | None = None) -> Iterator[None]:
        """Context in which the op runs: on an accelerator, `log` records transfers and watched tensors."""
        if log is None or not self.is_accelerator:
            yield
            return
        # torch.tensor(data, device=...) then builds on the host and copies in a step the mode can see,
        # as it does under fake tensors: a constant uploaded per call shows up in the log
        lift = only_lift_cpu_tensors()
        set_only_lift_cpu_tensors(True)
        try:
            with ObserverMode(log):
                yield
        finally:
            set_only_lift_cpu_tensors(lift)

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "kind": self.kind, "description": self.description, "virtual": self.virtual}


@dataclass(frozen=True)
class VirtualTarget(Target):
    """`vcuda:N`: tensors report cuda:N, data and kernels stay on the CPU (see conformance.devices.virtual)."""

    count: int = 2  # how many virtual devices torch.cuda reports while active

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

    @contextlib.contextmanager
    def active(self, log: PlacementLog | None = None) -> Iterator[None]:
        with virtual_cuda(self.count, log):
            yield


@dataclass(frozen=True)
class IsaTarget(Target):
    """`cpu:<level>`: the cpu with kernels for a lower instruction set, in a worker process
    (conformance.devices.isa)."""

    level: str = "default"

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def compared_with_cpu(self) -> bool:
        return True

    @property
    def out_of_process(self) -> bool:
        return True


CPU = Target("cpu", "cpu", "host CPU")


@dataclass(frozen=True)
class CompiledTarget(Target):
    """`<device>+compile`: the op through torch.compile (Inductor) on a real device, compared with the reference
    and with eager on that device.  Virtual devices are not compile targets (their dispatch is Python)."""

    eager: Target = CPU

    @property
    def device(self) -> torch.device:
        return self.eager.device

    @property
    def compiled(self) -> bool:
        return True

    @property
    def compared_with_cpu(self) -> bool:
        return False  # its `compiled` check compares it with eager on its own device

    @property
    def twin(self) -> Target | None:
        return self.eager

    def put(self, value: Any) -> Any:
        return self.eager.put(value)

    def synchronize(self) -> None:
        self.eager.synchronize()

    def active(self, log: PlacementLog | None = None) -> Any:
        return self.eager.active(log)


def compile_targets(real: list[Target]) -> list[Target]:
    """One `+compile` target per real device."""
    return [
        CompiledTarget(
            f"{t.name}{COMPILED_SUFFIX}", t.kind, f"{t.description}, through torch.compile (Inductor)", eager=t
        )
        for t in real
    ]


def isa_targets() -> list[Target]:
    return [
        IsaTarget(f"cpu:{level}", "cpu", f"host CPU, {ENV}={level} (worker process)", level=level)
        for level in lower_levels()
    ]


VIRTUAL_DESCRIPTION = "virtual: cpu data and kernels, cuda device rules"
ALL_VIRTUAL = "--targets default,vcuda"
SECOND_RUN = "CUDA_VISIBLE_DEVICES= python -m conformance run --targets vcuda"


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


def default_virtual_count(real: list[Target]) -> int:
    """Two virtual devices unless two real accelerators can already show device-index bugs."""
    return 2 if sum(t.is_accelerator for t in real) < 2 else 0


def virtual_unavailable_reason() -> str | None:
    """Why this process offers no vcuda targets, or None.

    Not beside a real CUDA device: vcuda:N shares the name cuda:N with it, so library caches keyed by
    device hand real tensors to virtual runs and back, and bindings that set the real device guard
    fail for an index the GPU lacks.  Not where torch lacks a private API they rest on (the probe)."""
    real_cuda = [t.name for t in _real_targets() if t.kind == "cuda"]
    if real_cuda:
        return (
            f"virtual targets are not offered beside a real CUDA device ({', '.join(real_cuda)}): vcuda:N "
            f"would share the name cuda:N with it (library caches keyed by device would mix real and virtual "
            f"tensors); run them as a second run without the GPU: {SECOND_RUN}"
        )
    return probe.unavailable_reason()


def discover(virtual: int | None = None, isa: bool = True) -> list[Target]:
    """Every target visible to this process: cpu, its lower ISA paths, real accelerators, virtual ones.

    `virtual`: how many vcuda:N targets to add (None: `default_virtual_count`, or none where
    `virtual_unavailable_reason` gives a reason; asking for some then is an error saying it).  Unless the
    count was asked for, the `default` selection takes only the last, vcuda:1: the op runs on a device
    that is not the current one, so a tensor made on the current device or left on the host meets the
    input as a device mix, which is all vcuda:0 shows too (their 3,207 items of the `ci` suite gave the same
    verdicts), at half the cost; `--targets vcuda` or `all` still name both.
    """
    found = _real_targets()
    reason = virtual_unavailable_reason() if virtual != 0 else None
    if reason is not None and virtual is not None:
        raise TargetSelectionError(f"{virtual} virtual devices were asked for (--virtual-devices): {reason}")
    count = 0 if reason is not None else default_virtual_count(found) if virtual is None else virtual
    virtual_ones = virtual_targets(count, only_last_by_default=virtual is None)
    return found[:1] + (isa_targets() if isa else []) + found[1:] + compile_targets(found) + virtual_ones


def _real_targets() -> list[Target]:
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
        elif token == "default":  # every target but the compiled ones (they compile each op: opt in) and vcuda:0
            chosen.update(t.name for t in available if not t.compiled and t.by_default)
        elif token == "compile":
            chosen.update(t.name for t in available if t.compiled)
        elif token == "gpu":
            accelerators = [t.name for t in available if t.is_accelerator and not t.virtual and not t.compiled]
            if not accelerators:
                raise TargetSelectionError(
                    f"'gpu' selects no target: no real accelerator is visible "
                    f"(available: {names}; virtual ones are selected by 'vcuda')"
                )
            chosen.update(accelerators)
        elif token in by_name:
            chosen.add(token)
        elif token == "isa":
            chosen.update(t.name for t in available if isinstance(t, IsaTarget))
        elif token in {t.kind for t in available}:  # "cuda" means every cuda:N (eager)
            chosen.update(t.name for t in available if t.kind == token and not t.compiled)
        elif (
            token.split(":")[0] == "vcuda"
            and not any(t.virtual for t in available)
            and (reason := virtual_unavailable_reason()) is not None
        ):
            raise TargetSelectionError(f"{token!r}: {reason}")
        else:
            raise TargetSelectionError(
                f"unknown target {token!r} (available: {names}; or 'default', 'all', 'gpu', 'vcuda', 'isa', 'compile')"
            )
    return [target for target in available if target.name in chosen]
