"""The standard checks every op gets, in one place (the `check_kernel` idea).

One case on one target gives one outcome per check:
  error        the op raised;
  invariants   device, dtype, shape and memory format kept; input not mutated;
  reference    output against the independent float64 reference;
  cross_device output against the cpu output for the same case (accelerators only).
"""
from __future__ import annotations

import traceback
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from conformance.compare import Metrics, Tolerance, measure
from conformance.recipes import Case, materialize, to_float64
from conformance.spec import OpSpec
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


@dataclass
class CaseResult:
    """All outcomes of one case on one target, and the arrays behind them."""

    outcomes: list[CheckOutcome]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def failures(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if not o.passed]


@dataclass
class _OpRun:
    """What one call of the op gave: its output, or its error as text (no live
    exception: its traceback would keep every frame's tensors alive in the cache)."""

    output: Any = None
    error: str | None = None  # describe_error(): type, message, raising frame
    error_text: str | None = None  # the full traceback

    @property
    def nbytes(self) -> int:
        return self.output.nbytes if isinstance(self.output, np.ndarray) else 1024


def expected_output(ideal: np.ndarray, dtype: str) -> np.ndarray:
    """The reference in the output dtype's meaning: uint8 is rounded and saturated."""
    if dtype == "uint8":
        return np.clip(np.rint(ideal), 0, 255)
    return ideal


def data_range(dtype: str) -> float:
    return 255.0 if dtype == "uint8" else 1.0


def run_op(spec: OpSpec, tensor: torch.Tensor, case: Case, target: Target) -> _OpRun:
    """Call the op on a target; an exception becomes data, never a harness crash."""
    try:
        with target.active():
            output = spec.call(tensor, dict(case.params))
            target.synchronize()
        return _OpRun(output=output)
    except Exception as exc:  # noqa: BLE001 - any op failure is an outcome
        return _OpRun(error=describe_error(exc), error_text="".join(traceback.format_exception(exc)))


def describe_error(exc: BaseException) -> str:
    """Exception type, message and the innermost Python frame that raised it."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (raised at {frames[-1].filename}:{frames[-1].lineno} in {frames[-1].name})" if frames else ""
    return f"{type(exc).__name__}: {str(exc).strip()}{where}"


class Baselines:
    """Reference and cpu outputs per case, computed once and shared across targets.

    Bounded by bytes: a long run must not grow memory with every example.
    """

    def __init__(self, max_bytes: int = 256 * 2**20) -> None:
        self._entries: OrderedDict[tuple[str, str, str], np.ndarray | _OpRun] = OrderedDict()
        self._bytes = 0
        self.max_bytes = max_bytes

    def _get(self, key: tuple[str, str, str], compute) -> Any:
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        value = compute()
        self.put(key, value)
        return value

    def put(self, key: tuple[str, str, str], value: np.ndarray | _OpRun) -> None:
        if key in self._entries:
            self._bytes -= self._entries.pop(key).nbytes
        self._entries[key] = value
        self._bytes += value.nbytes
        while self._bytes > self.max_bytes and len(self._entries) > 1:
            _, old = self._entries.popitem(last=False)
            self._bytes -= old.nbytes

    def reference(self, spec: OpSpec, case: Case, input64: np.ndarray) -> np.ndarray:
        return self._get((spec.name, case.key, "reference"), lambda: spec.reference(input64, case))

    def cpu(self, spec: OpSpec, case: Case, host_input: torch.Tensor) -> _OpRun:
        """The cpu output for a case; `host_input` is a cpu tensor of it the caller no longer needs."""
        def compute() -> _OpRun:
            run = run_op(spec, host_input, case, CPU)
            if isinstance(run.output, torch.Tensor):
                run.output = to_float64(run.output)
            return run

        return self._get((spec.name, case.key, "cpu"), compute)

    def remember_cpu(self, spec: OpSpec, case: Case, run: _OpRun) -> None:
        self.put((spec.name, case.key, "cpu"), run)


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
    """Device, dtype, shape, memory format kept; input not mutated."""
    problems = []
    if not isinstance(output, torch.Tensor):
        return CheckOutcome("invariants", False, f"returned {type(output).__name__}, expected a torch.Tensor")
    if output.device != tensor_in.device:
        problems.append(f"device: output on {output.device}, input on {tensor_in.device}")
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


def check_case(spec: OpSpec, case: Case, target: Target, baselines: Baselines, mode: str) -> CaseResult:
    """Run one case on one target through every standard check."""
    dtype = case.recipe.dtype
    host_input = materialize(case.recipe)
    input64 = to_float64(host_input)
    expected = expected_output(baselines.reference(spec, case, input64), dtype)
    arrays = {"input": input64, "reference": expected}

    # The op gets its own tensor: on the cpu the host copy (input64 already holds its values),
    # elsewhere one made on the target so that its layout survives the transfer; the host
    # copy then feeds the cpu baseline.
    tensor_in = materialize(case.recipe, put=target.put) if target.is_accelerator else host_input
    run = run_op(spec, tensor_in, case, target)
    if run.error is not None:
        return CaseResult([CheckOutcome("error", False, run.error, traceback=run.error_text)], arrays)

    outcomes = [check_invariants(tensor_in, input64, run.output, expected, case.recipe.torch_dtype)]
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
        baselines.remember_cpu(spec, case, _OpRun(output=output64))
    return CaseResult(outcomes, arrays)
