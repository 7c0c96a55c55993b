"""What one case's targets share: the input, the reference, the cpu run, sampled parameters.

Each is computed once per case and reused by every target's item (they run back to back,
see the plugin's parametrization), so adding a target costs only its own op call and
comparisons.  The cache is bounded by bytes: a long run must not grow with every example.
"""
from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from conformance.calls import OpRun, run_op, sample_params, unmoved_module_behaviour
from conformance.recipes import Case, Recipe, apply_layout, materialize, to_float64
from conformance.spec import OpSpec, Sampled
from conformance.targets import CPU, Target


@dataclass
class InputImage:
    """A case's input: dense host pixels (never handed to an op) and their float64 values."""

    recipe: Recipe
    dense: torch.Tensor
    values: np.ndarray

    @classmethod
    def make(cls, recipe: Recipe) -> "InputImage":
        dense = materialize(dataclasses.replace(recipe, layout="contiguous"))
        values = to_float64(dense)
        values.setflags(write=False)  # shared by every target's reference and checks
        return cls(recipe, dense, values)

    def on(self, target: Target) -> torch.Tensor:
        """A fresh tensor on the target in the recipe's layout; the layout is made on the target,
        because copying a strided view to another device densifies it."""
        moved = target.put(self.dense) if target.is_accelerator else self.dense.clone()
        return apply_layout(moved, self.recipe.layout)

    @property
    def nbytes(self) -> int:
        return self.dense.nbytes + self.values.nbytes


@dataclass
class _Cached:
    """A small cached value (sampled parameters, a recorded behaviour, an outcome) with a nominal size."""

    value: Any
    nbytes: int = 1024


def expected_output(ideal: np.ndarray, dtype: str) -> np.ndarray:
    """The reference in the output dtype's meaning: uint8 is rounded and saturated."""
    if dtype == "uint8":
        return np.clip(np.rint(ideal), 0, 255)
    return ideal


class Baselines:
    """Per-case values shared across targets, least recently used first out."""

    def __init__(self, max_bytes: int = 256 * 2**20) -> None:
        self._entries: OrderedDict[tuple[str, str, str], Any] = OrderedDict()
        self._bytes = 0
        self.max_bytes = max_bytes

    def _get(self, key: tuple[str, str, str], compute: Callable[[], Any]) -> Any:
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        value = compute()
        self.put(key, value)
        return value

    def put(self, key: tuple[str, str, str], value: Any) -> None:
        if key in self._entries:
            self._bytes -= self._entries.pop(key).nbytes
        self._entries[key] = value
        self._bytes += value.nbytes
        while self._bytes > self.max_bytes and len(self._entries) > 1:
            _, old = self._entries.popitem(last=False)
            self._bytes -= old.nbytes

    def input(self, case: Case) -> InputImage:
        return self._get(("", case.recipe_key, "input"), lambda: InputImage.make(case.recipe))

    def reference(self, spec: OpSpec, case: Case, source: InputImage, sampled: Sampled | None,
                  dtype: str) -> np.ndarray:
        """The reference output in the output dtype's meaning; random augmentations also get
        their sampled parameters."""
        def compute() -> np.ndarray:
            ideal = (spec.reference(source.values, case) if sampled is None
                     else spec.reference(source.values, case, sampled))
            return expected_output(ideal, dtype)

        return self._get((spec.name, case.key, "reference"), compute)

    def cpu(self, spec: OpSpec, case: Case, source: InputImage) -> OpRun:
        """The cpu output for a case, as float64 values."""
        def compute() -> OpRun:
            run = run_op(spec, source.on(CPU), case, CPU, self.sampled(spec, case, source))
            if isinstance(run.output, torch.Tensor):
                run.output = to_float64(run.output)
            return run

        return self._get((spec.name, case.key, "cpu"), compute)

    def remember_cpu(self, spec: OpSpec, case: Case, run: OpRun, reference_check: Any) -> None:
        """The cpu item's own output, and its reference outcome: a target whose output is
        identical to the cpu's has the same reference outcome."""
        self.put((spec.name, case.key, "cpu"), run)
        self.put((spec.name, case.key, "cpu-reference"), _Cached(reference_check))

    def cpu_reference_check(self, spec: OpSpec, case: Case) -> Any:
        cached = self._entries.get((spec.name, case.key, "cpu-reference"))
        return None if cached is None else cached.value

    def unmoved(self, spec: OpSpec, case: Case, target: Target, tensor_in: torch.Tensor,
                sampled: Sampled | None) -> tuple[str, bool]:
        """How a module left on the cpu takes a device input: asked once per op, target and dtype
        (an extra call of the op, not worth paying for every case)."""
        key = (spec.name, f"{target.name}/{case.recipe.dtype}", "unmoved")
        return self._get(key, lambda: _Cached(
            unmoved_module_behaviour(spec, tensor_in, case, target, sampled))).value

    def sampled(self, spec: OpSpec, case: Case, source: InputImage) -> Sampled | None:
        """Random-augmentation parameters, drawn once per case and replayed on every target."""
        if spec.module is None or spec.module.sample is None:
            return None
        return self._get((spec.name, case.key, "sampled"),
                         lambda: _Cached(sample_params(spec, source.on(CPU), case))).value
