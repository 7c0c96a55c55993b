"""Targets: where an op runs.  A kind of target is one class, and everything that differs between kinds is a
method or attribute of it: how to put a tensor or module there, how to wait for it, how to seed it, how to call
the op there (eager, compiled, in another process), what its output is compared with, what it cannot run, how a
rerun line names it and where it sorts in tables.  No module outside `conformance.devices` tests a target's name
or type.

Built-in kinds: `cpu`, `cuda:N`, `mps`, `xpu:N` (this module); `vcuda:N`, virtual (CPU data, CUDA device rules
enforced); `cpu:<level>`, the cpu's kernels for a lower instruction set in a worker process
(conformance.devices.isa_target); `<device>+compile` (conformance.devices.compiled_target).  Other packages add
kinds through the `conformance.targets` entry point group (conformance.devices.discovery).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from conformance.devices.placement import ObserverMode, PlacementLog
from conformance.devices.torch_private import only_lift_cpu_tensors, set_only_lift_cpu_tensors
from conformance.devices.virtual.facade import virtual_cuda
from conformance.devices.virtual.tensor import to_virtual

if TYPE_CHECKING:  # for annotations only: the run types sit beside the calls that make them
    from conformance.devices.runs import OpRun
    from conformance.spec.opspec import OpSpec, Sampled
    from conformance.spec.recipes import Case


class TargetSelectionError(ValueError):
    """A target list that names nothing, or something this machine does not have."""


@dataclass(frozen=True)
class Target:
    """One place an op can run: the cpu, and the base of every other kind (a subclass overrides what differs)."""

    name: str
    kind: str
    description: str = ""
    virtual: bool = False
    by_default: bool = True  # in the `default` selection (see `discover` for the one that is not)

    holds_values: ClassVar[bool] = True  # its outputs hold values (a meta device's do not: only device, dtype, shape)
    cpu_path: ClassVar[bool] = False  # the cpu's kernels for another instruction set (ops that need none skip it)
    prefetches: ClassVar[bool] = False  # its runs can start ahead of their items (`prefetch`): its items go last
    backward_by_walking: ClassVar[bool] = False  # its backward runs node by node (the autograd engine cannot run on it)
    # torch.autocast on it: the device type its kernels run under and the lower precision users pick there
    autocast_device: ClassVar[str] = "cpu"
    autocast_dtype: ClassVar[torch.dtype] = torch.bfloat16
    inference_mode: ClassVar[bool] = True  # torch.inference_mode() can be entered around its calls

    @property
    def device(self) -> torch.device:
        return torch.device(self.name)

    def autocast(self) -> torch.autocast:
        """`torch.autocast` as users enter it on this target (entered by the caller around the op's call)."""
        return torch.autocast(self.autocast_device, dtype=self.autocast_dtype)

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

    @property
    def twin_label(self) -> str:
        """What its twin is called in messages and records."""
        return "cpu"

    @property
    def twin_check(self) -> str:
        """The check that compares its output with its twin's."""
        return "cross_device"

    @property
    def child_environment(self) -> dict[str, str] | None:
        """What a child process needs in its environment to run as this target (None: it runs in this one)."""
        return None

    @property
    def in_default_selection(self) -> bool:
        return self.by_default and not self.compiled

    def can_run(self, *, in_process: bool, values: bool) -> bool:
        """Whether a check that needs the op in this process (`in_process`) or output values (`values`) runs here."""
        return (not in_process or not self.out_of_process) and (not values or self.holds_values)

    def put(self, value: Any) -> Any:
        """Move a tensor or module onto this target (a copy for tensors, in place for modules)."""
        return value.to(self.device)

    def synchronize(self) -> None:
        """Wait for queued work so timings and errors belong to the right case (the cpu queues nothing)."""

    def seed(self, seed: int) -> None:
        """Seed the generators the op may draw from here.  Not `torch.manual_seed`: on a CUDA build with no GPU
        initialised, it queues a lazy seeding call for cuda, xpu and mtia each, about 8 ms per call."""
        torch.default_generator.manual_seed(seed)

    def release_memory(self) -> None:
        """Give cached memory back after an allocation failed."""

    def op_function(self, spec: OpSpec) -> Callable[..., Any]:
        """What runs the op here: the module's forward or the function (a compiled target compiles it)."""
        if spec.module is not None:
            return spec.module.forward
        assert spec.call is not None
        return spec.call

    def not_run_reason(self, spec: OpSpec) -> str | None:
        """Why the op is not run here at all (None: it is)."""
        return None

    def call_timeout(self, spec: OpSpec, timeout_s: float) -> float:
        """The per-call time limit for the op here (0: none), from --case-timeout's."""
        return timeout_s

    def run_elsewhere(self, spec: OpSpec, case: Case, sampled: Sampled | None, timeout_s: float) -> OpRun | None:
        """The op's run where it does not run in this process (None: it does, conformance.devices.calls)."""
        return None

    def prefetch(self, spec: OpSpec, case: Case, sampled: Sampled | None, timeout_s: float) -> None:
        """Start the op's run on a case ahead of its item (a target that `prefetches`: it runs elsewhere)."""

    def discard_prefetched(self) -> None:
        """Drop answers prefetched for cases no item will ask for any more."""

    def not_run_message(self, reason: str) -> str:
        """How a skip says why a case or item was not run here."""
        return f"not run on {self.name}: {reason}"

    def cannot_run(self, exc: BaseException) -> str | None:
        """Why an exception the op raised here says the target cannot run it, not that the op is wrong (None)."""
        return None

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


CPU = Target("cpu", "cpu", "host CPU")


@dataclass(frozen=True)
class CudaTarget(Target):
    """`cuda:N` (also a ROCm build's devices, which PyTorch names cuda)."""

    autocast_device = "cuda"
    autocast_dtype = torch.float16

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

    def synchronize(self) -> None:
        torch.mps.synchronize()

    def seed(self, seed: int) -> None:
        super().seed(seed)
        torch.mps.manual_seed(seed)


@dataclass(frozen=True)
class XpuTarget(Target):
    """`xpu:N`: Intel GPUs."""

    autocast_device = "xpu"

    def synchronize(self) -> None:
        torch.xpu.synchronize(self.device)

    def seed(self, seed: int) -> None:
        super().seed(seed)
        if torch.xpu.is_initialized():
            torch.xpu.manual_seed_all(seed)


@dataclass(frozen=True)
class VirtualTarget(Target):
    """`vcuda:N`: tensors report cuda:N, data and kernels stay on the CPU (see conformance.devices.virtual)."""

    count: int = 2  # how many virtual devices torch.cuda reports while active

    backward_by_walking = True  # the autograd engine would look for a real CUDA device to run on
    autocast_device = "cuda"  # what a cuda device's users enter; the emulation casts as cuda's autocast would
    autocast_dtype = torch.float16
    inference_mode = False  # inside it the emulated tensors' `.cpu()` keeps the device: a finding of the emulation

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
