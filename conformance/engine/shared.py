"""What one case's items share: the input, the reference, sampled parameters, and each target's
`CaseContext` (its op run and the outcomes of its checks).

Each is computed once per case and reused by every check's and every target's item (they run
back to back, see the plugin's parametrization), so adding a target costs only its own op call
and comparisons, and adding a check only its comparison.  The cache is bounded by bytes: a long
run must not grow with every example.
"""
from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from conformance.devices.calls import sample_params
from conformance.spec.recipes import Case, Recipe, apply_layout, materialize, to_float64
from conformance.spec.opspec import OpSpec, Sampled
from conformance.devices.targets import CPU, Target

if TYPE_CHECKING:
    from conformance.checks.context import CaseContext


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


class SharedCases:
    """Per-case values shared across targets, least recently used first out."""

    def __init__(self, max_bytes: int = 256 * 2**20, overrides: tuple[Any, ...] = ()) -> None:
        self.overrides = overrides  # the run's --tolerances rules, tried before each op's own
        self._entries: OrderedDict[tuple[str, str, str], Any] = OrderedDict()
        self._bytes = 0
        self.max_bytes = max_bytes
        self.baseline: Any = None  # checks.baseline.BaselineOutputs under --baseline
        self._tolerances: dict[tuple[str, str, str, str, str], Any] = {}

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

    def tolerance(self, spec: OpSpec, check: str, dtype: str, mode: str, target: str) -> Any:
        """The tolerance an op's check uses for a dtype, mode and target (the user's override first)."""
        key = (spec.name, check, dtype, mode, target)
        found = self._tolerances.get(key)
        if found is None:
            found = self._tolerances[key] = spec.tolerance(check, dtype, mode, target, self.overrides)
        return found

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

    def has_context(self, spec: OpSpec, case: Case, target: Target, mode: str) -> bool:
        """Whether the op already ran for this case on this target (else `context` runs it)."""
        return (spec.name, case.key, f"{target.name}/{mode}") in self._entries

    def context(self, spec: OpSpec, case: Case, target: Target, mode: str) -> "CaseContext":
        """The case on a target, its op already run (so its size is known when cached)."""
        from conformance.checks.context import CaseContext

        key = (spec.name, case.key, f"{target.name}/{mode}")
        if key in self._entries:
            self._entries.move_to_end(key)
            return self._entries[key]
        found = CaseContext(spec, case, target, mode, self)
        found.run  # noqa: B018 - run the op now, so the cache counts its output
        self.put(key, found)
        return found

    def sampled(self, spec: OpSpec, case: Case, source: InputImage) -> Sampled | None:
        """Random-augmentation parameters, drawn once per case and replayed on every target."""
        if spec.module is None or spec.module.sample is None:
            return None
        return self._get((spec.name, case.key, "sampled"),
                         lambda: _Cached(sample_params(spec, source.on(CPU), case))).value
