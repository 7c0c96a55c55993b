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

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from conformance.calls import OpRun, run_op, sample_params, unmoved_module_behaviour
from conformance.compare import Metrics, Tolerance, measure
from conformance.recipes import Case, materialize, to_float64
from conformance.spec import OpSpec, Sampled
from conformance.targets import CPU, Target


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

    @property
    def failures(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if not o.passed]


def expected_output(ideal: np.ndarray, dtype: str) -> np.ndarray:
    """The reference in the output dtype's meaning: uint8 is rounded and saturated."""
    if dtype == "uint8":
        return np.clip(np.rint(ideal), 0, 255)
    return ideal


def data_range(dtype: str) -> float:
    return 255.0 if dtype == "uint8" else 1.0


class Baselines:
    """Reference and cpu outputs per case, computed once and shared across targets.

    Bounded by bytes: a long run must not grow memory with every example.
    """

    def __init__(self, max_bytes: int = 256 * 2**20) -> None:
        self._entries: OrderedDict[tuple[str, str, str], np.ndarray | OpRun] = OrderedDict()
        self._bytes = 0
        self.max_bytes = max_bytes

    def _get(self, key: tuple[str, str, str], compute) -> Any:
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        value = compute()
        self.put(key, value)
        return value

    def put(self, key: tuple[str, str, str], value: np.ndarray | OpRun) -> None:
        if key in self._entries:
            self._bytes -= self._entries.pop(key).nbytes
        self._entries[key] = value
        self._bytes += value.nbytes
        while self._bytes > self.max_bytes and len(self._entries) > 1:
            _, old = self._entries.popitem(last=False)
            self._bytes -= old.nbytes

    def reference(self, spec: OpSpec, case: Case, input64: np.ndarray, sampled: Sampled | None) -> np.ndarray:
        """The reference output; random augmentations also get their sampled parameters."""
        def compute() -> np.ndarray:
            return spec.reference(input64, case) if sampled is None else spec.reference(input64, case, sampled)

        return self._get((spec.name, case.key, "reference"), compute)

    def cpu(self, spec: OpSpec, case: Case, host_input: torch.Tensor) -> OpRun:
        """The cpu output for a case; `host_input` is a cpu tensor of it the caller no longer needs."""
        def compute() -> OpRun:
            run = run_op(spec, host_input, case, CPU, self.sampled(spec, case, host_input))
            if isinstance(run.output, torch.Tensor):
                run.output = to_float64(run.output)
            return run

        return self._get((spec.name, case.key, "cpu"), compute)

    def remember_cpu(self, spec: OpSpec, case: Case, run: OpRun) -> None:
        self.put((spec.name, case.key, "cpu"), run)

    def sampled(self, spec: OpSpec, case: Case, host_input: torch.Tensor) -> Sampled | None:
        """Random-augmentation parameters, drawn once per case and replayed on every target."""
        if spec.module is None or spec.module.sample is None:
            return None
        return self._get((spec.name, case.key, "sampled"), lambda: _Sampled(sample_params(spec, host_input, case))).value


@dataclass
class _Sampled:
    value: Sampled | None
    nbytes: int = 1024


def memory_formats(tensor: torch.Tensor) -> set[str]:
    """Which dense layouts a tensor satisfies (possibly both, possibly none)."""
    formats = set()
    if tensor.is_contiguous():
        formats.add("contiguous")
    if tensor.dim() >= 3 and tensor.movedim(-3, -1).is_contiguous():
        formats.add("channels_last")
    return formats


def check_invariants(tensor_in: torch.Tensor, before: np.ndarray, output: Any, expected: np.ndarray,
                     expected_dtype: torch.dtype) -> CheckOutcome:
    """Dtype, shape, memory format kept; input not mutated."""
    problems = []
    if not isinstance(output, torch.Tensor):
        return CheckOutcome("invariants", False, f"returned {type(output).__name__}, expected a torch.Tensor")
    if output.dtype != expected_dtype:
        problems.append(f"dtype: returned {output.dtype}, expected {expected_dtype}")
    if tuple(output.shape) != expected.shape:
        problems.append(f"shape: returned {tuple(output.shape)}, expected {expected.shape}")
    kept = memory_formats(tensor_in)  # a strided (non-dense) input has no format to keep
    if kept and not kept & memory_formats(output):
        problems.append(f"memory format: input is {' or '.join(sorted(kept))}, "
                        f"output strides {tuple(output.stride())} are not")
    after = to_float64(tensor_in)
    changed = ~((after == before) | (np.isnan(after) & np.isnan(before)))
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
                    sampled: Sampled | None) -> CheckOutcome:
    """The output stays on the input's device; on accelerators, everything the log and module show."""
    problems = list(run.module_problems)
    details: dict[str, Any] = {}
    device = getattr(run.output, "device", None)
    if isinstance(run.output, torch.Tensor) and device != tensor_in.device:
        problems.append(f"output on {device}, input on {tensor_in.device}")
    if run.log is not None:
        details.update(run.log.to_dict())
        problems += [f"uses {name} ({use})" for name, use in run.log.used.items()]
        planes = [p for p in (_image_plane(tensor_in), _image_plane(run.output)) if p is not None]
        if not spec.host_transfers and planes:
            problems += [f"implicit {t.describe()}: an image-sized copy inside the call (declare "
                         f"host_transfers on the spec if the op needs it)" for t in run.log.bulk_transfers(min(planes))]
    if spec.module is not None and target.is_accelerator:
        behaviour, acceptable = unmoved_module_behaviour(spec, tensor_in, case, target, sampled)
        details["unmoved_module"] = behaviour
        if not acceptable:
            problems.append(f"module left on the cpu, called with a {target.device} input: {behaviour}")
    return CheckOutcome("placement", not problems, "; ".join(problems), details=details or None)


def check_case(spec: OpSpec, case: Case, target: Target, baselines: Baselines, mode: str) -> CaseResult:
    """Run one case on one target through every standard check."""
    dtype = case.recipe.dtype
    host_input = materialize(case.recipe)
    input64 = to_float64(host_input)
    sampled = baselines.sampled(spec, case, host_input)
    expected = expected_output(baselines.reference(spec, case, input64, sampled), dtype)
    arrays = {"input": input64, "reference": expected}

    # The op gets its own tensor: on the cpu the host copy (input64 already holds its values),
    # elsewhere one made on the target so that its layout survives the transfer; the host
    # copy then feeds the cpu baseline.
    tensor_in = materialize(case.recipe, put=target.put) if target.is_accelerator else host_input
    run = run_op(spec, tensor_in, case, target, sampled)
    if run.not_emulatable is not None:
        return CaseResult([], arrays, not_emulatable=run.not_emulatable)
    if run.error is not None:
        check = "placement" if run.mixed_devices else "error"
        details = run.log.to_dict() if run.log is not None and run.mixed_devices else None
        return CaseResult([CheckOutcome(check, False, run.error, traceback=run.error_text, details=details)], arrays)

    outcomes = [check_placement(spec, case, target, tensor_in, run, sampled),
                check_invariants(tensor_in, input64, run.output, expected, case.recipe.torch_dtype)]
    if not isinstance(run.output, torch.Tensor):
        return CaseResult(outcomes, arrays)
    output64 = to_float64(run.output)
    arrays["output"] = output64
    tol = spec.tolerance("reference", dtype, mode, target.name)
    outcomes.append(compare_check("reference", output64, expected, tol, dtype, "reference"))

    if target.is_accelerator:
        cpu_run = baselines.cpu(spec, case, host_input)
        if cpu_run.error is not None:
            outcomes.append(CheckOutcome("cross_device", False, f"cpu raised {cpu_run.error}; "
                                         f"{target.name} returned a result", traceback=cpu_run.error_text))
        else:
            arrays["cpu"] = cpu_run.output
            tol = spec.tolerance("cross_device", dtype, mode, target.name)
            outcomes.append(compare_check("cross_device", output64, cpu_run.output, tol, dtype, "cpu"))
    else:
        baselines.remember_cpu(spec, case, OpRun(output=output64))
    return CaseResult(outcomes, arrays)
