"""The device checks: `placement` (where the output and the image data went), `unmoved` (what a module
left on the cpu promises) and `constant_upload` (the op copies its own constants to the device on every call:
a lesser finding).  A random module's own sampler on the target is `sampling` (conformance.checks.sampling)."""

from __future__ import annotations

from typing import Any

import torch

from conformance.checks.context import CaseContext
from conformance.checks.registry import (
    Check,
    CheckOutcome,
    compare_check,
    failed,
    on_accelerator,
    register,
    valid_inputs,
)
from conformance.checks.requests import Steps, call
from conformance.devices.placement import PlacementLog
from conformance.devices.runs import OpRun
from conformance.devices.targets import Target
from conformance.devices.virtual.tensor import host_tensor
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import to_float64

HOST_DATA = (
    "image-sized data made on the host inside the call and uploaded (noise or a mask drawn with the cpu generator, "
    "or a field built on the host, instead of on the target)"
)


def _plane(value: Any) -> int | None:
    return value.shape[-2] * value.shape[-1] if isinstance(value, torch.Tensor) and value.dim() >= 2 else None


def device_problems(ctx: CaseContext, run: OpRun, log: PlacementLog | None, how: str = "") -> list[tuple[str, str]]:
    """Output on the wrong device, image data copied between host and device, module tensors used off target."""
    spec, problems = ctx.spec, []
    expected = torch.device("cpu") if spec.returns.host else ctx.tensor_in.device
    device = getattr(run.output, "device", None)
    if isinstance(run.output, torch.Tensor) and device != expected:
        problems.append(
            (
                "output device",
                f"{how}output on {device}, input on {ctx.tensor_in.device}"
                + (" (this op's output belongs on the host)" if spec.returns.host else ""),
            )
        )
    if log is not None:
        problems += [("left behind", f"{how}uses {name} ({use})") for name, use in log.used.items()]
        planes = [p for p in (_plane(ctx.tensor_in), _plane(run.output)) if p is not None]
        if not (spec.host_transfers or spec.returns.host) and planes:
            problems += [
                (
                    "image copy",
                    f"{how}implicit {t.describe()}: the image left the device inside the call "
                    f"(declare host_transfers on the spec if the op needs it)",
                )
                for t in log.image_copies(min(planes))
            ]
            problems += [
                ("host data", f"{how}implicit {t.describe()}: {HOST_DATA}") for t in log.host_made_uploads(min(planes))
            ]
    return problems


def check_placement(ctx: CaseContext) -> CheckOutcome | None:
    run = ctx.run
    problems = [("left behind", p) for p in run.module_problems]
    if run.mixed_devices:
        problems.append(("device mix", run.error or ""))
    elif run.error is not None and not problems:
        return None  # the error check owns an op that raised
    else:
        problems += device_problems(ctx, run, run.log)
    details = run.log.to_dict() if run.log is not None else None
    return failed("placement", problems, details=details, traceback=run.error_text if run.mixed_devices else None)


PROMISES = {"works": "work", "device-error": "work or raise an error that names the device problem"}


def _unmoved_behaviour(ctx: CaseContext, run: OpRun) -> tuple[str, str]:
    """(short label, detail) of a module left on the cpu, called with an input on the target."""
    if run.timed_out:
        return "hangs", run.error or ""
    if run.error is not None:
        clear = run.mixed_devices or "device" in run.error.lower()
        return ("raises a device error" if clear else "raises an unclear error"), run.error
    output, moved = run.output, ctx.run.output
    expected = torch.device("cpu") if ctx.spec.returns.host else ctx.tensor_in.device
    if not isinstance(output, torch.Tensor):
        return "returns no tensor", type(output).__name__
    if output.device != expected:
        return f"returns its output on {output.device}", f"the input is on {expected}"
    if (output.shape, output.dtype) != (moved.shape, moved.dtype):
        return (
            "returns another shape or dtype",
            f"{list(output.shape)} {output.dtype}, moved: {list(moved.shape)} {moved.dtype}",
        )
    if ctx.spec.module is not None and ctx.spec.module.sample is None:  # deterministic: values must agree too
        assert ctx.output64 is not None
        compared = compare_check(
            "unmoved",
            to_float64(host_tensor(output)),
            ctx.output64,
            ctx.tolerance("cross_device"),
            ctx.output_dtype,
            "the moved module's output",
        )
        if not compared.passed:
            return "returns other values", compared.message
    return "works", ""


def check_unmoved(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    """A module left on the cpu, called with a device input as users call parameter-free augmentations
    (its own sampling, no `.to()`): it must keep the spec's promise."""
    if ctx.run.error is not None or ctx.spec.module is None:
        return None  # the moved module already fails: nothing to compare with
    run = yield from call(ctx.spec, ctx.source.on(ctx.target), ctx.case, ctx.target, None, move_module=False)
    if run.not_run is not None or run.resource is not None:
        return None
    promise = ctx.spec.module.unmoved
    behaviour, detail = _unmoved_behaviour(ctx, run)
    details = {"promise": promise, "behaviour": behaviour}
    kept = behaviour == "works" or (promise == "device-error" and behaviour == "raises a device error")
    where = f"left on the cpu with a {ctx.target.device} input"
    if kept:
        return CheckOutcome(
            "unmoved", True, f"{where}: {behaviour}", details=details, behaviour=behaviour, against="promise"
        )
    return CheckOutcome(
        "unmoved",
        False,
        f"promises to {PROMISES[promise]} when left on the cpu, but {behaviour} ({where}): {detail}".rstrip(": "),
        traceback=run.error_text,
        details=details,
        behaviour=behaviour,
        cause=behaviour,
        against="promise",
    )


def check_constant_upload(ctx: CaseContext) -> CheckOutcome | None:
    """Constants the op copies from the host on every call (a table, a mean/std list): a host->device
    copy and a synchronisation per call, a cost (vision#8565), not a wrong answer."""
    run = ctx.run
    if run.error is not None or run.log is None:
        return None
    planes = [p for p in (_plane(ctx.tensor_in), _plane(run.output)) if p is not None]
    uploads = run.log.constant_uploads(min(planes) if planes else None)  # larger ones fail placement
    if not uploads:
        return CheckOutcome("constant_upload", True)
    return CheckOutcome(
        "constant_upload",
        False,
        "uploads on every call: " + "; ".join(t.describe() for t in uploads),
        details={"uploads": [t.to_dict() for t in uploads]},
        cause="upload",
        warning=True,
    )


def _module_op(spec: OpSpec, target: Target, mode: str) -> bool:
    return spec.module is not None and on_accelerator(spec, target, mode)


register(
    Check(
        "placement",
        20,
        "input device",
        "output not on the input's device; on accelerators also device mixing, "
        "image data copied between host and device, module tensors left behind by .to()",
        valid_inputs,
        check_placement,
    )
)
register(
    Check(
        "unmoved",
        70,
        "promise",
        "a module left on the cpu, called with a device input, breaks its promise "
        "(works, or raises a clear device error)",
        _module_op,
        check_unmoved,
        reads_values=True,
    )
)
register(
    Check(
        "constant_upload",
        90,
        "host",
        "the op copies a constant of its own from the host on every call (a warning: a cost, not a wrong answer)",
        on_accelerator,
        check_constant_upload,
        gating=False,
    )
)
