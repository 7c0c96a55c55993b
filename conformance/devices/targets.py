"""Targets: where an op runs.  A kind of target is one class, and everything that differs between kinds is a
method or attribute of it: how to put a tensor or module there, how to wait for it, how to seed it, how to call
the op there (eager, compiled, in another process), what its output is compared with, what it cannot run, how a
rerun line names it and where it sorts in tables.  No module outside `conformance.devices` tests a target's name
or type; records and reports read what they need of it from its `facts()`, which the run's environment keeps.  A
kind that starts something (a worker process, a connection) does it in its lifecycle: `start` on the run's
controller, `setup_worker` and `close_worker` in each worker process, `stop` on the controller.

Built-in kinds: `cpu` (this module); `cuda:N`, `mps`, `xpu:N` (conformance.devices.accelerators); `vcuda:N`,
virtual (CPU data, CUDA device rules enforced: conformance.devices.virtual_target); `cpu:<level>`, the cpu's kernels
for a lower instruction set in a worker process (conformance.devices.isa_target); `<device>+compile`
(conformance.devices.compiled_target).  Other packages add kinds through the `conformance.targets` entry point
group (conformance.devices.discovery).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from conformance.devices.facts import ScriptDevice, TargetFacts, target_label
from conformance.devices.placement import ObserverMode, PlacementLog
from conformance.devices.torch_private import only_lift_cpu_tensors, set_only_lift_cpu_tensors

if TYPE_CHECKING:  # for annotations only: the run types sit beside the calls that make them
    from conformance.devices.runs import OpRun
    from conformance.spec.opspec import OpSpec, Sampled
    from conformance.spec.recipes import Case


class TargetSelectionError(ValueError):
    """A target list that names nothing, or something this machine does not have."""


@dataclass(frozen=True)
class Target:
    """One place an op can run: the base of every kind (a subclass overrides what differs; `CpuTarget` is the host)."""

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
    table_rank: ClassVar[float] = 5.0  # where it sorts in tables: the built-in kinds first, an installed one's after

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
    def moves_inputs(self) -> bool:
        """Its op reads tensors from memory apart from the host's (an accelerator): an input is moved there first,
        a parameter tensor may be there or on the host, a PIL image (host memory) is never its input."""
        return self.is_accelerator

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

    def place(self, value: Any) -> Any:
        """A value where this target's op reads it: moved when it has memory of its own, else the value itself."""
        return self.put(value) if self.moves_inputs else value

    def fresh_copy(self, tensor: torch.Tensor) -> torch.Tensor:
        """A copy of a host tensor on this target that the op may change without touching the original."""
        return self.put(tensor) if self.moves_inputs else tensor.clone()

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

    # -- what records, reports and repro scripts know of it

    @property
    def label(self) -> str:
        """Its name in messages, marked when it is virtual."""
        return target_label(self.name, self.virtual)

    def script_device(self) -> ScriptDevice:
        """Where a repro script reruns its failures on a real machine: the device of its name."""
        return ScriptDevice(self.name)

    def facts(self) -> TargetFacts:
        return TargetFacts(
            name=self.name,
            kind=self.kind,
            description=self.description,
            virtual=self.virtual,
            compiled=self.compiled,
            named_in_rerun=not self.in_default_selection,
            table_rank=self.table_rank,
            script=self.script_device(),
        )

    def to_dict(self) -> dict[str, object]:
        return self.facts().to_dict()

    # -- which items it has

    def has_items(self, spec: OpSpec) -> bool:
        """Whether the op has items here: a host library's only on the cpu itself; an op that asks nothing of the
        cpu's kernels, none on the cpu's other instruction-set paths."""
        if spec.host_only:
            return self.hosts_libraries
        return spec.cpu_paths or not self.cpu_path

    @property
    def hosts_libraries(self) -> bool:
        """A host library (Pillow, OpenCV) runs here: the cpu itself only."""
        return False

    def none_run_reason(self, spec: OpSpec) -> str | None:
        """Where the op has no items here, why, when an item of the variant should say it (None: nothing said)."""
        return None

    def lacks(self, needs_real_device: str | None) -> str | None:
        """Why an op that needs a real device (`OpSpec.needs_real_device`) is not run here (None: it is)."""
        return self.not_run_message(needs_real_device) if self.virtual and needs_real_device else None

    def finding_is_warning(self, virtual_findings: str) -> bool:
        """Whether a finding here is a warning (--virtual-findings=warn on a virtual target)."""
        return self.virtual and virtual_findings == "warn"

    @property
    def own_device(self) -> bool:
        """A real accelerator: a worker can keep to it (grouping items by target)."""
        return self.is_accelerator and not self.virtual and not self.compiled

    @property
    def eager_op(self) -> bool:
        """Its op runs as written (not through torch.compile)."""
        return not self.compiled

    @property
    def runs_eager_here(self) -> bool:
        """Its op runs eager in this process (what `conformance timing` measures here)."""
        return self.eager_op and self.child_environment is None

    @property
    def times_kernels(self) -> bool:
        """A timing here measures its kernels (a virtual device's are the cpu's behind an emulation)."""
        return not self.virtual

    # -- lifecycle: the run's controller starts it, each worker process sets it up and closes it, the controller
    # stops it.  A target that runs in this process needs none of them.

    def start(self, folder: str) -> dict[str, str] | None:
        """On the controller, before the workers start; `folder` is the run's own temporary folder.  Returns what
        each worker needs to reach what was started (JSON-able), or None."""
        return None

    def setup_worker(self, handed: dict[str, str] | None) -> None:
        """In each worker process (or the only one), before its first item: `handed` is what `start` returned."""

    def close_worker(self) -> None:
        """In each worker process at its session's end."""

    def stop(self, now: bool) -> None:
        """On the controller at the end; `now`: the run was stopped, do not wait for anything."""


@dataclass(frozen=True)
class CpuTarget(Target):
    """`cpu`: the host."""

    table_rank = 0.0

    @property
    def hosts_libraries(self) -> bool:
        return True


CPU = CpuTarget("cpu", "cpu", "host CPU")
