"""One case on one target: everything its checks read, each part computed once, on first use.

Every check is its own pytest item, so the items of one case's checks share a `CaseContext`
(cached in `SharedCases`, bounded by bytes): the op runs once per case and target, the input and
reference once per case, and an accelerator's context reads the cpu's for the cross-device
comparison and for saying which side diverges.
"""
from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from conformance.devices.calls import OpRun, run_op
from conformance.spec.recipes import Case, to_float64
from conformance.spec.opspec import ExpectedError, OpSpec, Sampled
from conformance.devices.targets import CPU, Target
from conformance.devices.virtual import host_tensor

if TYPE_CHECKING:
    from conformance.engine.shared import SharedCases, InputImage
    from conformance.checks.registry import CheckOutcome


class CaseContext:
    def __init__(self, spec: OpSpec, case: Case, target: Target, mode: str, shared: "SharedCases") -> None:
        self.spec, self.case, self.target, self.mode, self.shared = spec, case, target, mode, shared
        self.expected_error: ExpectedError | None = spec.error_modes.get(mode)
        self._outcomes: dict[str, CheckOutcome | None] = {}

    @cached_property
    def source(self) -> "InputImage":
        return self.shared.input(self.case)

    @cached_property
    def sampled(self) -> Sampled | None:
        return self.shared.sampled(self.spec, self.case, self.source)

    @cached_property
    def tensor_in(self) -> torch.Tensor:
        """The op's own fresh input on the target, in the recipe's layout (checked for mutation after)."""
        return self.source.on(self.target)

    @cached_property
    def run(self) -> OpRun:
        try:
            tensor = self.tensor_in
        except (MemoryError, RuntimeError) as exc:  # torch.OutOfMemoryError is a RuntimeError
            if not isinstance(exc, MemoryError) and "alloc" not in str(exc).lower() \
                    and not isinstance(exc, torch.OutOfMemoryError):
                raise
            return OpRun(resource=f"the case's input could not be allocated: {type(exc).__name__}: "
                                  f"{str(exc).splitlines()[0][:200] if str(exc) else ''}")
        return run_op(self.spec, tensor, self.case, self.target, self.sampled)

    @property
    def returned_tensor(self) -> bool:
        return self.run.error is None and isinstance(self.run.output, torch.Tensor)

    @cached_property
    def output_dtype(self) -> str:
        return self.spec.output_dtype_of(self.case)

    @cached_property
    def expected(self) -> np.ndarray:
        return self.shared.reference(self.spec, self.case, self.source, self.sampled, self.output_dtype)

    @cached_property
    def output64(self) -> np.ndarray | None:
        """The output as host float64, the only form in which values are compared."""
        return to_float64(host_tensor(self.run.output)) if self.returned_tensor else None

    @cached_property
    def cpu(self) -> "CaseContext | None":
        """The same case on the cpu, for accelerators (None on the cpu itself)."""
        return self.shared.context(self.spec, self.case, CPU, self.mode) if self.target.compared_with_cpu else None

    @cached_property
    def peers(self) -> tuple[dict[str, dict[str, Any]], dict[str, np.ndarray]]:
        """The cross-library measurement against the operation's earlier implementations, and their
        outputs (conformance.checks.peers)."""
        from conformance.checks.peers import measure_peers

        return measure_peers(self)

    def tolerance(self, check: str):
        """Tolerances are keyed by the test item's dtype (the input's), mode and target (looked up once each)."""
        return self.shared.tolerance(self.spec, check, self.case.recipe.dtype, self.mode, self.target.name)

    def outcome(self, check: str) -> "CheckOutcome | None":
        """The check's outcome for this case (None: it does not apply to what happened), computed once."""
        if check not in self._outcomes:
            from conformance.checks.registry import REGISTRY

            found = REGISTRY[check].run(self)
            if found is not None:
                found.against = found.against or REGISTRY[check].against
            self._outcomes[check] = found
        return self._outcomes[check]

    def arrays(self) -> dict[str, np.ndarray]:
        """What a failure keeps for its report: input, reference, cpu output, this target's output."""
        kept: dict[str, np.ndarray] = {"input": self.source.values}
        if self.expected_error is None and self.run.error is None:
            kept["reference"] = self.expected
        if self.output64 is not None:
            kept["output"] = self.output64
        cpu = self.cpu
        if cpu is not None and cpu.output64 is not None:
            kept["cpu"] = cpu.output64
        baseline = getattr(self.shared, "baseline", None)
        if baseline is not None:
            from conformance.checks.baseline import output_key

            recorded = baseline.index.get(output_key(self))
            if recorded is not None and recorded.error is None:
                kept["baseline"] = baseline.reader.load(recorded).astype(np.float64)
        return kept

    @property
    def nbytes(self) -> int:
        """What this context holds beyond the shared input and reference (an estimate for the cache)."""
        total = 2048
        for value in (self.__dict__.get("tensor_in"), getattr(self.__dict__.get("run"), "output", None)):
            if isinstance(value, torch.Tensor):
                total += value.numel() * (value.element_size() + 8)  # the tensor and its float64 copy
        return total

    def __repr__(self) -> str:
        return f"CaseContext({self.spec.name}, {self.target.name}, {self.case.json})"

