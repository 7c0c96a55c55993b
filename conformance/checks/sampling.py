"""The `sampling` check: a random module's own sampler on the target (module moved there), which replayed
parameters never exercise: its parameters' keys, shapes, dtypes and documented ranges against the cpu's sample,
and a call that draws its own parameters, under the placement rules."""

from __future__ import annotations

from typing import Any

import torch

from conformance.checks.context import CaseContext
from conformance.checks.devices import device_problems
from conformance.checks.registry import Check, CheckOutcome, failed, register, valid_inputs
from conformance.checks.requests import Steps, call, own_draw
from conformance.devices.targets import Target
from conformance.devices.virtual.tensor import host_tensor
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import to_float64
from conformance.spec.sampled import named_leaves


def _compare_sample(ctx: CaseContext, sampled: Any) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """What can be compared between the target's own sample and the cpu's: keys, shapes, dtypes, declared ranges
    (of every leaf, by its path in a container's nested parameters).  Values differ by design (each device has its
    own generator)."""
    problems, devices = [], {}
    params, reference = named_leaves(sampled), named_leaves(ctx.sampled or {})
    if set(params) != set(reference):
        problems.append(
            ("parameters differ", f"its sampler returns keys {sorted(params)}, on the cpu {sorted(reference)}")
        )
    for key in sorted(set(params) & set(reference)):
        mine, theirs = params[key], reference[key]
        if isinstance(mine, torch.Tensor):
            devices[key] = str(mine.device)
            if isinstance(theirs, torch.Tensor) and (mine.shape, mine.dtype) != (theirs.shape, theirs.dtype):
                problems.append(
                    (
                        "parameters differ",
                        f"parameter {key!r} is {list(mine.shape)} {mine.dtype}, on the "
                        f"cpu {list(theirs.shape)} {theirs.dtype}",
                    )
                )
    bounds = ctx.spec.module.bounds(dict(ctx.case.params)) if ctx.spec.module and ctx.spec.module.bounds else {}
    for key, (low, high) in bounds.items():
        value = params.get(key)
        if isinstance(value, torch.Tensor) and value.numel():
            values = to_float64(host_tensor(value))
            if not (values.min() >= low and values.max() <= high):
                problems.append(
                    (
                        "out of range",
                        f"parameter {key!r} ranges {values.min():g}..{values.max():g}, "
                        f"outside its documented {low:g}..{high:g}",
                    )
                )
    return problems, devices


def check_sampling(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    """A random module's own sampling on the target (module moved there), which replayed parameters
    never exercise: its sampler, and a call that draws its own parameters, under the placement rules."""
    spec, target = ctx.spec, ctx.target
    problems: list[tuple[str, str]] = []
    details: dict[str, Any] = {}
    sampling = yield from own_draw(spec, ctx.source.on(target), ctx.case, target)
    if sampling.not_run is not None:
        return None
    if sampling.error is not None:
        problems.append(
            (
                "sampler raises",
                f"its sampler, run on {target.name} with the module moved there, raises {sampling.error}",
            )
        )
    elif sampling.params is not None:
        found, details["parameter_devices"] = _compare_sample(ctx, sampling.params)
        problems += found
    run = yield from call(spec, ctx.source.on(target), ctx.case, target, None)  # its own parameters
    if run.not_run is not None or run.resource is not None:
        return None
    how = f"with its own sampling on {target.name}: "
    if run.mixed_devices or run.error is not None:
        problems.append(("own sampling " + ("mixes devices" if run.mixed_devices else "raises"), f"{how}{run.error}"))
    else:
        problems += [(f"own sampling: {cause}", text) for cause, text in device_problems(ctx, run, run.log, how)]
        moved = ctx.run.output
        if (
            isinstance(run.output, torch.Tensor)
            and isinstance(moved, torch.Tensor)
            and (run.output.shape, run.output.dtype) != (moved.shape, moved.dtype)
        ):
            problems.append(
                (
                    "own sampling: shape",
                    f"{how}returns {list(run.output.shape)} {run.output.dtype}, with "
                    f"replayed parameters {list(moved.shape)} {moved.dtype}",
                )
            )
    if run.log is not None:
        details.update(run.log.to_dict())
    return failed("sampling", problems, details=details or None, traceback=run.error_text, against="cpu sample")


def _random_module(spec: OpSpec, target: Target, mode: str) -> bool:
    return spec.samples and valid_inputs(spec, target, mode)


register(
    Check(
        "sampling",
        80,
        "cpu sample",
        "a random module's own sampling on the target (module moved there): its "
        "parameters' keys, shapes, dtypes and ranges, and a call that draws its own parameters, under the "
        "placement rules",
        _random_module,
        check_sampling,
        reads_values=True,
    )
)
