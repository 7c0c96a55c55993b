"""The `error` and `invariants` checks: did the op raise (or raise what it must), and did it keep
dtype, shape, memory format and device, and leave its input alone."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from conformance.checks.context import CaseContext
from conformance.checks.registry import Check, CheckOutcome, always, failed, register, valid_inputs
from conformance.devices.virtual.tensor import holds_values, host_tensor, unwrap
from conformance.spec.recipes import DTYPES, to_float64


def check_error(ctx: CaseContext) -> CheckOutcome | None:
    if ctx.expected_error is not None:
        return _expected_error(ctx)
    run = ctx.run
    if run.error is None or run.mixed_devices:
        return None if run.mixed_devices else CheckOutcome("error", True)  # mixing devices is placement's
    cause = "timeout" if run.timed_out else run.raised or "error"
    return CheckOutcome("error", False, run.error, traceback=run.error_text, cause=cause)


def _expected_error(ctx: CaseContext) -> CheckOutcome:
    """An invalid input must raise the named class, and on every target the class the cpu raises."""
    expected, run = ctx.expected_error, ctx.run
    assert expected is not None
    details: dict[str, Any] = {"raised": run.raised, "expected": expected.describe()}
    invalid = f"for an invalid input ({expected.why})"
    if run.timed_out:
        return CheckOutcome(
            "error",
            False,
            f"{run.error}: a hang is not the expected {expected.describe()}",
            traceback=run.error_text,
            details=details,
            cause="timeout",
            against="expected error",
        )
    if run.error is None:
        return CheckOutcome(
            "error",
            False,
            f"returned a result {invalid}; expected {expected.describe()}",
            details=details,
            cause="returned",
            against="expected error",
        )
    if run.mixed_devices:
        return CheckOutcome(
            "error",
            False,
            f"mixed devices instead of rejecting the input {invalid}: {run.error}",
            traceback=run.error_text,
            details=details,
            cause="mixed devices",
            against="expected error",
        )
    assert run.error_type is not None
    problem = expected.problem(run.error_type, run.error_message)
    if problem is not None:
        return CheckOutcome(
            "error",
            False,
            f"{problem} {invalid}: {run.error}",
            traceback=run.error_text,
            details=details,
            cause="class",
            against="expected error",
        )
    cpu = ctx.twin
    if cpu is not None:
        details["cpu_raised"] = cpu.run.raised
        if cpu.run.raised != run.raised:
            what = f"raised {cpu.run.raised}" if cpu.run.raised else "returned a result"
            return CheckOutcome(
                "error",
                False,
                f"raised {run.raised} on {ctx.target.name} but the cpu {what} {invalid}: {run.error}",
                traceback=run.error_text,
                details=details,
                cause="differs from the cpu",
                against="cpu",
            )
    return CheckOutcome("error", True, f"raises {run.error}", details=details, against="expected error")


def _dense(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether sizes/strides describe a row-major dense layout (size-1 dims may have any stride)."""
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides), strict=False):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def memory_formats(tensor: torch.Tensor) -> set[str]:
    """Which dense layouts a tensor satisfies (possibly both, possibly none); from its strides,
    without running an op on it."""
    shape, strides = tuple(tensor.shape), tuple(tensor.stride())
    if 0 in shape:
        return {"contiguous", "channels_last"} if len(shape) >= 3 else {"contiguous"}
    formats = set()
    if _dense(shape, strides):
        formats.add("contiguous")
    if len(shape) >= 3:
        order = [*range(len(shape) - 3), len(shape) - 2, len(shape) - 1, len(shape) - 3]  # channels innermost
        if _dense(tuple(shape[i] for i in order), tuple(strides[i] for i in order)):
            formats.add("channels_last")
    return formats


def _view_of(output: torch.Tensor, tensor_in: torch.Tensor) -> bool:
    """Whether the output is a view into the input's memory (a crop): it has the input's strides, not a
    layout of its own, so there is no memory format to keep."""
    try:
        # unwrapped, not copied to the host: a copy has storage of its own (on a real GPU no crop was a view);
        # a storage without data (meta, fake) has address 0 whatever it is, so it says nothing
        found = unwrap(output).untyped_storage().data_ptr()
        return found != 0 and found == unwrap(tensor_in).untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # a tensor without storage (e.g. a fake one): not a view
        return False


def expected_shape(ctx: CaseContext) -> tuple[int, ...] | None:
    """The reference's shape; for an op without a reference (a swept transform) the cpu's output's, on
    another target (on the cpu itself nothing says what the shape should be)."""
    if ctx.spec.reference_in(ctx.mode) is not None:
        return tuple(ctx.expected.shape)
    twin = ctx.twin
    if twin is not None and twin.returned_tensor:
        return tuple(twin.run.output.shape)
    return None


def _non_finite(ctx: CaseContext, output: torch.Tensor) -> list[tuple[str, str]]:
    """A finite input gives a finite output in every float dtype (inputs are always finite): an inf or NaN is an
    overflow (a half-precision path) or a division by zero, whatever the reference says."""
    if not output.is_floating_point() or not np.isfinite(ctx.source.values).all():
        return []
    values = ctx.output64
    assert values is not None
    bad = ~np.isfinite(values)
    if not bad.any():
        return []
    where = [int(i) for i in np.argwhere(bad)[0]]
    first = values[tuple(where)]
    return [("non-finite", f"non-finite output: {int(bad.sum())} of {bad.size} values (first {first} at {where})")]


def check_invariants(ctx: CaseContext) -> CheckOutcome | None:
    """Tensor returned; dtype, shape, memory format kept (unless the output was read from another kind
    of object); input not mutated."""
    run, spec = ctx.run, ctx.spec
    if run.error is not None:
        return None
    output, tensor_in = run.output, ctx.tensor_in
    if not isinstance(output, torch.Tensor):
        return CheckOutcome(
            "invariants", False, f"returned {type(output).__name__}, expected a torch.Tensor", cause="type"
        )
    if ctx.target.holds_values and not holds_values(output):
        return CheckOutcome(
            "invariants",
            False,
            f"returned a tensor on the {output.device} device, which holds no data: expected its values on "
            f"{ctx.target.name}",
            cause="no data",
        )
    problems: list[tuple[str, str]] = []
    expected_dtype = DTYPES[ctx.output_dtype]
    if output.dtype != expected_dtype:
        problems.append(("dtype", f"dtype: returned {output.dtype}, expected {expected_dtype}"))
    shape = expected_shape(ctx)
    if shape is not None and tuple(output.shape) != shape:
        problems.append(("shape", f"shape: returned {tuple(output.shape)}, expected {shape}"))
    keep_format = spec.keeps_memory_format and spec.returns.read is None and not spec.returns.host
    kept = memory_formats(tensor_in)  # a strided (non-dense) input has no format to keep
    if kept and keep_format and not kept & memory_formats(output) and not _view_of(output, tensor_in):
        problems.append(
            (
                "memory format",
                f"memory format: input is {' or '.join(sorted(kept))}, output strides {tuple(output.stride())} are not",
            )
        )
    if not ctx.target.holds_values:  # a meta device's output and input hold no values to read
        return failed("invariants", problems)
    problems += _non_finite(ctx, output)
    after = host_tensor(tensor_in)
    source = ctx.source
    if not torch.equal(after, source.dense):  # inputs hold no NaN, so equal values mean untouched
        after64, before = to_float64(after), source.values
        changed = ~((after64 == before) | (np.isnan(after64) & np.isnan(before)))
        if changed.any():
            where = tuple(int(i) for i in np.argwhere(changed)[0])
            problems.append(
                ("input mutated", f"input mutated: {int(changed.sum())} elements changed, first at {list(where)}")
            )
    return failed("invariants", problems)


register(
    Check(
        "error",
        10,
        "expected error",
        "the op raised; in an error mode: it did not raise the named class "
        "(a hang or a device-mixing error never counts), or raised another class than on the cpu",
        always,
        check_error,
        output_only=True,
    )
)
register(
    Check(
        "invariants",
        30,
        "input",
        "output not a tensor, wrong dtype or shape, layout not kept, a non-finite value from a finite input, input "
        "mutated",
        valid_inputs,
        check_invariants,
    )
)
