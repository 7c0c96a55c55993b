"""Calling the op under test on one target, and keeping whatever happens as data.

Function ops are called with the input tensor; module ops are built on the cpu,
moved with `.to(target)` (what is left behind is noted), given the case's
sampled random parameters, and called.  On accelerators the call runs with a
`PlacementLog`.  An exception never escapes: it becomes text on the `OpRun`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from conformance.devices.placement import PlacementLog, is_device_mix_error, left_behind
from conformance.devices.runs import CaseTimeout, OpRun, Sampling, describe_error, time_limit
from conformance.devices.targets import CPU, Target
from conformance.devices.trees import map_leaves
from conformance.devices.virtual.state import NotEmulatable
from conformance.spec.opspec import OpSpec, Sampled
from conformance.spec.recipes import Case

# what PyTorch's cpu allocator raises when the host has no memory left (a RuntimeError, not torch.OutOfMemoryError)
_HOST_ALLOCATION_FAILURES = ("DefaultCPUAllocator: can't allocate memory", "DefaultCPUAllocator: not enough memory")


def is_allocation_failure(exc: BaseException) -> bool:
    """An allocation the machine could not serve: a `resource` outcome, not a finding about the op."""
    return isinstance(exc, RuntimeError) and any(text in str(exc) for text in _HOST_ALLOCATION_FAILURES)


def on_target(value: Any, target: Target) -> Any:
    """Sampled parameters moved to a target (tensors moved, everything else as is)."""
    return map_leaves(lambda v: target.put(v) if isinstance(v, torch.Tensor) else v, value)


def sample_params(spec: OpSpec, host_input: torch.Tensor, case: Case) -> Sampled | None:
    """A random augmentation's parameters, drawn once on the cpu with the case's seed."""
    if spec.module is None or spec.module.sample is None:
        return None
    with torch.random.fork_rng(devices=[]):
        CPU.seed(case.recipe.seed)
        return spec.module.sample(spec.module.build(dict(case.params)), host_input, dict(case.params))


def library_draw(module: Any, image: torch.Tensor) -> Any:
    """The module's parameters for the image, drawn by the library's own sampler (kornia: `forward_parameters`;
    torchvision v2: `make_params`, `_get_params` before 0.21 named it), or None where it has no sampler."""
    if hasattr(module, "forward_parameters"):
        return module.forward_parameters(image.shape)
    sampler = getattr(module, "make_params", None) or getattr(module, "_get_params", None)
    return sampler([image]) if sampler is not None else None


def draws(spec: OpSpec, params: dict[str, Any], image: torch.Tensor, seeds: Sequence[int]) -> list[Any]:
    """A module op's parameters for `image`, drawn on the cpu by the library's own sampler (`library_draw`) with
    one instance, once per seed; what the constructor or the sampler raises is raised."""
    assert spec.module is not None
    module = spec.module.build(params)
    found = []
    with torch.random.fork_rng(devices=[]):
        for seed in seeds:
            CPU.seed(seed)
            found.append(library_draw(module, image))
    return found


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
            target.seed(case.recipe.seed)
            found.params = spec.module.sample(module, tensor, dict(case.params))
            target.synchronize()
    except NotEmulatable as exc:
        found.not_run = str(exc)
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
    elsewhere = target.run_elsewhere(spec, case, sampled, timeout_s)
    if elsewhere is not None:
        return elsewhere
    log = PlacementLog(target.device) if target.is_accelerator else None
    if log is not None:
        log.taint(tensor)
    run = OpRun(log=log)
    with torch.random.fork_rng(devices=[]):
        target.seed(case.recipe.seed)
        _call(spec, tensor, case, target, sampled, move_module, run, timeout_s, then)
    return run


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
    run.not_run = target.not_run_reason(spec)
    if run.not_run is not None:
        return
    timeout_s = target.call_timeout(spec, timeout_s)
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
            function = target.op_function(spec)
            if spec.module is not None and module is not None:
                output = function(module, tensor, dict(case.params), replayed)
            else:
                output = function(tensor, dict(case.params))
            if then is not None:
                output = then(output)
            target.synchronize()
        run.output = spec.returns.read(output) if spec.returns.read is not None and then is None else output
    except NotEmulatable as exc:
        run.not_run = str(exc)
    except (torch.OutOfMemoryError, MemoryError) as exc:
        run.resource = describe_error(exc)
        target.release_memory()
    except CaseTimeout as exc:
        run.fail(exc)
        run.timed_out = True
    except Exception as exc:  # noqa: BLE001 - any op failure is an outcome
        if (not_here := target.cannot_run(exc)) is not None:
            run.not_run = not_here
        elif is_allocation_failure(exc):
            run.resource = describe_error(exc)
        else:
            run.fail(exc)
