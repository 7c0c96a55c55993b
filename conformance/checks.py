"""The standard checks every op gets, in one place (the `check_kernel` idea).

One case on one target gives one outcome per check:
  error        the op raised;
  placement    output on the input's device; on accelerators also: no op mixed devices, no
               image-sized host<->device copy inside the call, a module's tensors follow
               `.to()`, and an unmoved module works or raises a clear device error;
  invariants   dtype, shape and memory format kept; input not mutated;
  reference    output against the independent float64 reference;
  cross_device output against the cpu output for the same case (accelerators only).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import torch

from conformance.baselines import Baselines, InputImage, expected_output
from conformance.calls import OpRun, run_op
from conformance.compare import Metrics, Tolerance, measure
from conformance.recipes import DTYPES, Case, to_float64
from conformance.spec import OpSpec, Sampled
from conformance.targets import Target
from conformance.virtual import host_tensor

__all__ = ["Baselines", "CaseResult", "CheckOutcome", "check_case", "expected_output"]


@dataclass
class CheckOutcome:
    """The verdict of one check on one case and target."""

    check: str
    passed: bool
    message: str = ""
    metrics: Metrics | None = None
    tolerance: Tolerance | None = None
    traceback: str | None = None
    details: dict[str, Any] | None = None  # e.g. the placement log


@dataclass
class CaseResult:
    """All outcomes of one case on one target, and the arrays behind them."""

    outcomes: list[CheckOutcome]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    not_emulatable: str | None = None  # a virtual target cannot run this op
    resource: str | None = None  # the case ran out of memory: recorded, not a verdict

    @property
    def failures(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if not o.passed]


def data_range(dtype: str) -> float:
    return 255.0 if dtype == "uint8" else 1.0


def _dense(shape: tuple[int, ...], strides: tuple[int, ...]) -> bool:
    """Whether sizes/strides describe a row-major dense layout (size-1 dims may have any stride)."""
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
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


def check_invariants(tensor_in: torch.Tensor, source: InputImage, output: Any, expected: np.ndarray,
                     expected_dtype: torch.dtype, keep_format: bool = True) -> CheckOutcome:
    """Dtype, shape, memory format kept (unless the output was read from another kind of object);
    input not mutated."""
    problems = []
    if not isinstance(output, torch.Tensor):
        return CheckOutcome("invariants", False, f"returned {type(output).__name__}, expected a torch.Tensor")
    if output.dtype != expected_dtype:
        problems.append(f"dtype: returned {output.dtype}, expected {expected_dtype}")
    if tuple(output.shape) != expected.shape:
        problems.append(f"shape: returned {tuple(output.shape)}, expected {expected.shape}")
    kept = memory_formats(tensor_in)  # a strided (non-dense) input has no format to keep
    if kept and keep_format and not kept & memory_formats(output):
        problems.append(f"memory format: input is {' or '.join(sorted(kept))}, "
                        f"output strides {tuple(output.stride())} are not")
    after = host_tensor(tensor_in)
    if not torch.equal(after, source.dense):  # inputs hold no NaN, so equal values mean untouched
        after64, before = to_float64(after), source.values
        changed = ~((after64 == before) | (np.isnan(after64) & np.isnan(before)))
        if changed.any():
            where = tuple(int(i) for i in np.argwhere(changed)[0])
            problems.append(f"input mutated: {int(changed.sum())} elements changed, first at {list(where)}")
    return CheckOutcome("invariants", not problems, "; ".join(problems))


def compare_check(check: str, actual: np.ndarray, expected: np.ndarray, tolerance: Tolerance,
                  dtype: str, against: str) -> CheckOutcome:
    if actual.shape != expected.shape:
        return CheckOutcome(check, False, f"shape {actual.shape} cannot be compared with {against} {expected.shape}",
                            tolerance=tolerance)
    metrics = measure(actual, expected, tolerance, data_range(dtype))
    violations = tolerance.violations(metrics)
    if not violations:
        return CheckOutcome(check, True, metrics=metrics, tolerance=tolerance)
    worst = ""
    if metrics.worst_index is not None:
        worst = (f"; worst at {list(metrics.worst_index)}: got {metrics.worst_actual:.6g}, "
                 f"{against} {metrics.worst_expected:.6g}")
    message = f"vs {against}: " + "; ".join(violations) + worst + f" [tolerance {tolerance.name!r}]"
    return CheckOutcome(check, False, message, metrics=metrics, tolerance=tolerance)


def _image_plane(value: Any) -> int | None:
    return value.shape[-2] * value.shape[-1] if isinstance(value, torch.Tensor) and value.dim() >= 2 else None


def check_placement(spec: OpSpec, case: Case, target: Target, tensor_in: torch.Tensor, run: OpRun,
                    sampled: Sampled | None, baselines: Baselines) -> CheckOutcome:
    """The output stays on the input's device; on accelerators, everything the log and module show."""
    problems = list(run.module_problems)
    details: dict[str, Any] = {}
    device = getattr(run.output, "device", None)
    expected = torch.device("cpu") if spec.host_output else tensor_in.device
    if isinstance(run.output, torch.Tensor) and device != expected:
        problems.append(f"output on {device}, input on {tensor_in.device}"
                        + (" (this op's output belongs on the host)" if spec.host_output else ""))
    if run.log is not None:
        details.update(run.log.to_dict())
        problems += [f"uses {name} ({use})" for name, use in run.log.used.items()]
        planes = [p for p in (_image_plane(tensor_in), _image_plane(run.output)) if p is not None]
        if not (spec.host_transfers or spec.host_output) and planes:
            problems += [f"implicit {t.describe()}: an image-sized copy inside the call (declare "
                         f"host_transfers on the spec if the op needs it)" for t in run.log.bulk_transfers(min(planes))]
    if spec.module is not None and target.is_accelerator:
        behaviour, acceptable = baselines.unmoved(spec, case, target, tensor_in, sampled)
        details["unmoved_module"] = behaviour
        if not acceptable:
            problems.append(f"module left on the cpu, called with a {target.device} input: {behaviour}")
    return CheckOutcome("placement", not problems, "; ".join(problems), details=details or None)


def check_expected_error(spec: OpSpec, case: Case, target: Target, baselines: Baselines, run: OpRun,
                         source: InputImage, mode: str) -> CheckOutcome:
    """An invalid input must raise, and on every target the exception class the cpu raises."""
    invalid = spec.error_modes[mode]
    if run.error is None:
        return CheckOutcome("error", False, f"returned a result for an invalid input ({invalid}); expected an exception")
    raised = run.error.split(":", 1)[0]
    details = {"raised": raised}
    if target.is_accelerator:
        cpu = baselines.cpu(spec, case, source)
        on_cpu = cpu.error.split(":", 1)[0] if cpu.error is not None else None
        details["cpu_raised"] = on_cpu
        if on_cpu != raised:
            what = f"raised {on_cpu}" if on_cpu else "returned a result"
            return CheckOutcome("error", False, f"raised {raised} on {target.name} but the cpu {what} for an invalid "
                                f"input ({invalid}): {run.error}", traceback=run.error_text, details=details)
    return CheckOutcome("error", True, f"raises {run.error}", details=details)


# dB: an rms error of 1% of the range (2.5 levels of 255). A lossy op that close to its input counts as
# faithful, so a reference that happens to be lossless (a constant image) does not set an impossible bar.
PSNR_CEILING = 40.0


def psnr(actual: np.ndarray, expected: np.ndarray, peak: float) -> float:
    """PSNR in dB, capped at PSNR_CEILING."""
    mse = float(np.mean((actual - expected) ** 2)) if actual.size else 0.0
    return PSNR_CEILING if mse == 0 else min(PSNR_CEILING, 10 * np.log10(peak**2 / mse))


def check_fidelity(fidelity: tuple[float, str], output64: np.ndarray, expected: np.ndarray, input64: np.ndarray,
                   dtype: str) -> CheckOutcome:
    """A lossy op may lose at most `margin` dB more than the reference does, both against the input."""
    margin, reason = fidelity
    if output64.shape != input64.shape:
        return CheckOutcome("fidelity", False, f"output shape {output64.shape} differs from the input's {input64.shape}")
    peak = data_range(dtype)
    ours, theirs = psnr(output64, input64, peak), psnr(expected, input64, peak)
    details = {"psnr_vs_input": ours, "reference_psnr_vs_input": theirs, "margin_db": margin}
    if ours >= theirs - margin:
        return CheckOutcome("fidelity", True, details=details)
    return CheckOutcome("fidelity", False, f"PSNR against the input {ours:.2f} dB, the reference's {theirs:.2f} dB: "
                        f"more than {margin:g} dB worse ({reason})", details=details)


def _identical(output64: np.ndarray, cpu_output: Any) -> bool:
    return (isinstance(cpu_output, np.ndarray) and cpu_output.shape == output64.shape
            and np.array_equal(output64, cpu_output, equal_nan=True))


def check_case(spec: OpSpec, case: Case, target: Target, baselines: Baselines, mode: str) -> CaseResult:
    """Run one case on one target through every standard check."""
    source = baselines.input(case)
    arrays = {"input": source.values}
    sampled = baselines.sampled(spec, case, source)
    tensor_in = source.on(target)  # the op's own fresh tensor, in the recipe's layout
    run = run_op(spec, tensor_in, case, target, sampled)
    if run.not_emulatable is not None:
        return CaseResult([], arrays, not_emulatable=run.not_emulatable)
    if run.resource is not None:
        return CaseResult([], arrays, resource=run.resource)
    if run.mixed_devices:
        details = run.log.to_dict() if run.log is not None else None
        return CaseResult([CheckOutcome("placement", False, run.error, traceback=run.error_text, details=details)],
                          arrays)
    if mode in spec.error_modes:
        return CaseResult([check_expected_error(spec, case, target, baselines, run, source, mode)], arrays)
    if run.error is not None:
        return CaseResult([CheckOutcome("error", False, run.error, traceback=run.error_text)], arrays)

    dtype = spec.output_dtype_of(case)
    expected = baselines.reference(spec, case, source, sampled, dtype)
    arrays["reference"] = expected
    outcomes = [check_placement(spec, case, target, tensor_in, run, sampled, baselines),
                check_invariants(tensor_in, source, run.output, expected, DTYPES[dtype],
                                 keep_format=spec.keeps_memory_format and spec.read_output is None
                                 and not spec.host_output)]
    if not isinstance(run.output, torch.Tensor):
        return CaseResult(outcomes, arrays)
    output64 = to_float64(host_tensor(run.output))
    arrays["output"] = output64
    item_dtype = case.recipe.dtype  # tolerances are keyed by the test item's dtype
    tol = spec.tolerance("reference", item_dtype, mode, target.name)
    cpu_run = baselines.cpu(spec, case, source) if target.is_accelerator else None
    identical = cpu_run is not None and cpu_run.error is None and _identical(output64, cpu_run.output)
    # Bit-identical to the cpu output under the same tolerance: the cpu item's reference outcome is this one's.
    cpu_reference = baselines.cpu_reference_check(spec, case) if identical else None
    if cpu_reference is not None and cpu_reference.tolerance is tol:
        reference_check = replace(cpu_reference)
    else:
        reference_check = compare_check("reference", output64, expected, tol, dtype, "reference")
    outcomes.append(reference_check)
    if spec.fidelity is not None:
        outcomes.append(check_fidelity(spec.fidelity, output64, expected, source.values, dtype))

    if cpu_run is None:
        baselines.remember_cpu(spec, case, OpRun(output=output64), reference_check)
    elif cpu_run.error is not None:
        outcomes.append(CheckOutcome("cross_device", False, f"cpu raised {cpu_run.error}; "
                                     f"{target.name} returned a result", traceback=cpu_run.error_text))
    else:
        arrays["cpu"] = cpu_run.output
        tol = spec.tolerance("cross_device", item_dtype, mode, target.name)
        if identical:
            outcomes.append(CheckOutcome("cross_device", True, metrics=Metrics.identical(output64.size),
                                         tolerance=tol))
        else:
            outcomes.append(compare_check("cross_device", output64, cpu_run.output, tol, dtype, "cpu"))
    return CaseResult(outcomes, arrays)
