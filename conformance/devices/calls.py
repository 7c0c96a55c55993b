"""Calling the op under test on one target, and keeping whatever happens as data.

Function ops are called with the input tensor; module ops are built on the cpu,
moved with `.to(target)` (what is left behind is noted), given the case's
sampled random parameters, and called.  On accelerators the call runs with a
`PlacementLog`.  An exception never escapes: it becomes text on the `OpRun`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from conformance.devices import isa, isa_feed
from conformance.devices.placement import PlacementLog, is_device_mix_error, left_behind, map_leaves
from conformance.devices.runs import CaseTimeout, OpRun, describe_error, time_limit
from conformance.devices.targets import Target
from conformance.devices.torch_private import compile_counts
from conformance.devices.virtual.state import NotEmulatable
from conformance.spec.opspec import SOURCES, OpSpec, Sampled
from conformance.spec.recipes import Case

# what PyTorch's cpu allocator raises when the host has no memory left (a RuntimeError, not torch.OutOfMemoryError)
_HOST_ALLOCATION_FAILURES = ("DefaultCPUAllocator: can't allocate memory", "DefaultCPUAllocator: not enough memory")


def is_allocation_failure(exc: BaseException) -> bool:
    """An allocation the machine could not serve: a `resource` outcome, not a finding about the op."""
    return isinstance(exc, RuntimeError) and any(text in str(exc) for text in _HOST_ALLOCATION_FAILURES)


def _release_memory(target: Target) -> None:
    if target.kind == "cuda" and torch.cuda.is_available():
        torch.cuda.empty_cache()


CPU_KIND = "cpu"


def seed_everything(seed: int, kind: str) -> None:
    """Seed the cpu generator, and the target's own where it is a real, initialised device.

    Not `torch.manual_seed`: on a CUDA build with no GPU initialised, it queues a lazy seeding call
    for cuda, xpu and mtia each, with a formatted stack, about 8 ms per call: most of a small case."""
    torch.default_generator.manual_seed(seed)
    if kind == "cuda" and torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)
    elif kind == "xpu" and torch.xpu.is_initialized():
        torch.xpu.manual_seed_all(seed)
    elif kind == "mps":
        torch.mps.manual_seed(seed)


def on_target(value: Any, target: Target) -> Any:
    """Sampled parameters moved to a target (tensors moved, everything else as is)."""
    return map_leaves(lambda v: target.put(v) if isinstance(v, torch.Tensor) else v, value)


def sample_params(spec: OpSpec, host_input: torch.Tensor, case: Case) -> Sampled | None:
    """A random augmentation's parameters, drawn once on the cpu with the case's seed."""
    if spec.module is None or spec.module.sample is None:
        return None
    with torch.random.fork_rng(devices=[]):
        seed_everything(case.recipe.seed, CPU_KIND)
        return spec.module.sample(spec.module.build(dict(case.params)), host_input, dict(case.params))


@dataclass
class Sampling:
    """A random module's own sampler, run on a target with the module moved there."""

    params: Sampled | None = None
    log: PlacementLog | None = None
    error: str | None = None
    mixed_devices: bool = False
    not_emulatable: str | None = None


def sample_on(spec: OpSpec, tensor: torch.Tensor, case: Case, target: Target, *, timeout_s: float = 0.0) -> Sampling:
    """`spec.module.sample` with the module moved to the target and the input there (seeded with the case)."""
    assert spec.module is not None and spec.module.sample is not None
    log = PlacementLog(target.device)
    log.taint(tensor)
    found = Sampling(log=log)
    try:
        with target.active():
            module = spec.module.build(dict(case.params))
        module = target.put(module)
        # the timer is innermost: disarmed before target.active restores torch.cuda, never firing inside it
        with torch.random.fork_rng(devices=[]), target.active(found.log), time_limit(timeout_s):
            seed_everything(case.recipe.seed, target.kind)
            found.params = spec.module.sample(module, tensor, dict(case.params))
            target.synchronize()
    except NotEmulatable as exc:
        found.not_emulatable = str(exc)
    except (Exception, CaseTimeout) as exc:  # noqa: BLE001 - recorded as the check's finding
        found.error = describe_error(exc)
        found.mixed_devices = is_device_mix_error(str(exc))
    return found


def run_op(
    spec: OpSpec,
    tensor: torch.Tensor,
    case: Case,
    target: Target,
    sampled: Sampled | None = None,
    *,
    move_module: bool = True,
    timeout_s: float = 0.0,
    then: Callable[[Any], Any] | None = None,
) -> OpRun:
    """Call the op on a target; with `move_module=False` a module op keeps its module on the cpu.
    A random module called without `sampled` draws its own parameters (seeded with the case).
    `timeout_s`: the per-call limit (--case-timeout; 0: none).  `then`: what to do with the output on the
    target, under the same placement log and time limit (the backward pass); its result is the run's output."""
    if getattr(target, "level", None) is not None:
        return _run_in_isa_worker(spec, case, target, sampled, timeout_s)
    log = PlacementLog(target.device) if target.is_accelerator else None
    if log is not None:
        log.taint(tensor)
    run = OpRun(log=log)
    with torch.random.fork_rng(devices=[]):
        seed_everything(case.recipe.seed, target.kind)
        _call(spec, tensor, case, target, sampled, move_module, run, timeout_s, then)
    return run


def isa_request(spec: OpSpec, case: Case, sampled: Sampled | None, timeout_s: float) -> dict[str, Any] | None:
    """What an ISA target's worker process needs to run the case (it rebuilds the input from the recipe);
    None for an op no case module defined (the worker could not load it)."""
    if spec.name not in SOURCES:
        return None
    return {"source": SOURCES[spec.name], "op": spec.name, "case": case.json, "timeout": timeout_s, "sampled": sampled}


def prefetch_on_isa(spec: OpSpec, case: Case, target: Target, sampled: Sampled | None, timeout_s: float) -> None:
    """Hand the case to the ISA target's worker now, so that its answer is ready when an item asks."""
    request = isa_request(spec, case, sampled, timeout_s)
    if request is not None:
        isa_feed.worker(target.level).submit((spec.name, case.key), request)  # type: ignore[attr-defined]


def _run_in_isa_worker(spec: OpSpec, case: Case, target: Target, sampled: Sampled | None, timeout_s: float) -> OpRun:
    """The case in the worker process of an ISA target (its answer may already be waiting)."""
    run = OpRun()
    request = isa_request(spec, case, sampled, timeout_s)
    if request is None:
        run.not_emulatable = f"{spec.name} was not defined by a case module (no source file to load it from)"
        return run
    answer = isa_feed.worker(target.level).call((spec.name, case.key), request)  # type: ignore[attr-defined]
    if answer.unavailable is not None:
        run.not_emulatable = answer.unavailable
    elif answer.error is not None:
        run.error, run.trace, run.error_message = answer.error, answer.error, answer.error_message
        run.error_type = CaseTimeout if answer.timed_out else isa.error_class(answer.error_type)
        run.timed_out = answer.timed_out
        run.mixed_devices = is_device_mix_error(answer.error_message)
    else:
        run.output = answer.output
    return run


_COMPILED: dict[str, Any] = {}
COMPILE_BUDGET_S = 120.0  # per op and process: past it, the op's further cases are not run compiled (a skip)
COMPILE_STATS: dict[str, dict[str, float]] = {}  # op -> seconds in calls that compiled, graphs, graph breaks


def compiled(spec: OpSpec) -> Any:
    """The op's call (or module forward) through torch.compile, one per op for the whole run: shapes and
    sizes are dynamic, so the cases of every dtype and mode reuse it instead of compiling per case.  Each call
    notes what it compiled (information, never a verdict: a recompile or a graph break is not wrong)."""
    if spec.name not in _COMPILED:
        call = spec.module.forward if spec.module is not None else spec.call
        _COMPILED[spec.name] = _counted(spec.name, torch.compile(call, backend="inductor", dynamic=True))
    return _COMPILED[spec.name]


def _counted(name: str, call: Any) -> Any:
    stats = COMPILE_STATS.setdefault(name, {"seconds": 0.0, "graphs": 0, "graph_breaks": 0, "calls": 0})

    def counting(*args: Any) -> Any:
        graphs, breaks = compile_counts()
        began = time.perf_counter()
        try:
            return call(*args)
        finally:
            now_graphs, now_breaks = compile_counts()
            new_graphs = now_graphs - graphs
            stats["calls"] += 1
            stats["graphs"] += new_graphs
            stats["graph_breaks"] += now_breaks - breaks
            if new_graphs:
                stats["seconds"] += time.perf_counter() - began

    return counting


def _call(
    spec: OpSpec,
    tensor: torch.Tensor,
    case: Case,
    target: Target,
    sampled: Sampled | None,
    move_module: bool,
    run: OpRun,
    timeout_s: float,
    then: Callable[[Any], Any] | None = None,
) -> None:
    log = run.log
    if target.compiled:
        spent = COMPILE_STATS.get(spec.name, {}).get("seconds", 0.0)
        if spent >= COMPILE_BUDGET_S:
            run.not_emulatable = (
                f"{spec.name} spent its compile budget in this process ({spent:.0f} s of calls that compiled, "
                f"budget {COMPILE_BUDGET_S:.0f} s): its further cases run eager only"
            )
            return
        if timeout_s:  # compiling is not hanging: the first calls may use what is left of the budget
            timeout_s += COMPILE_BUDGET_S - spent
    try:
        module = None
        if spec.module is not None:
            with target.active():  # construction sees what users' code sees on this target
                module = spec.module.build(dict(case.params))
            if move_module:
                module = target.put(module)
                if log is not None:
                    run.module_problems, log.watched = left_behind(module, target.device)
        # replayed parameters go to the target before the call: the harness's upload is not the op's
        replayed = None if sampled is None else on_target(sampled, target)
        with target.active(log), time_limit(timeout_s):  # the timer ends before the restore
            if spec.module is not None and module is not None:
                forward = compiled(spec) if target.compiled else spec.module.forward
                output = forward(module, tensor, dict(case.params), replayed)
            else:
                assert spec.call is not None
                output = (compiled(spec) if target.compiled else spec.call)(tensor, dict(case.params))
            if then is not None:
                output = then(output)
            target.synchronize()
        run.output = spec.read_output(output) if spec.read_output is not None and then is None else output
    except NotEmulatable as exc:
        run.not_emulatable = str(exc)
    except (torch.OutOfMemoryError, MemoryError) as exc:
        run.resource = describe_error(exc)
        _release_memory(target)
    except CaseTimeout as exc:
        run.fail(exc)
        run.timed_out = True
    except Exception as exc:  # noqa: BLE001 - any op failure is an outcome
        if is_allocation_failure(exc):
            run.resource = describe_error(exc)
        else:
            run.fail(exc)
