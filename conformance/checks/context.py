"""What the checks read: one case on one target, as data.

The engine (conformance.engine.cases) builds a `CaseContext` with every part already made: the case's
`CaseInputs` (input, sampled parameters, reference), the op's input on the target and its run, the
twin's context of the same case (the cpu's, or eager's for a compiled target), the tolerance book and the
baseline's outputs.  The checks only read it; what they derive from it (the output in float64) is computed once,
on first use, and their outcomes are kept on it (`outcomes`), so the items of one case's checks share the work.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Generic, TypeVar

import numpy as np
import torch

from conformance.checks.requests import Steps
from conformance.devices.runs import OpRun
from conformance.devices.targets import Target
from conformance.devices.virtual.tensor import holds_values, host_tensor
from conformance.spec.opspec import ExpectedError, OpSpec, Sampled
from conformance.spec.overrides import Override
from conformance.spec.recipes import INTEGER_PEAKS, Case, Recipe, apply_layout, materialize, to_float64
from conformance.spec.tolerances import Tolerance
from conformance.store.outputs import BaselineOutputs

T = TypeVar("T")


@dataclass
class InputImage:
    """A case's input: dense host pixels (never handed to an op) and their float64 values."""

    recipe: Recipe
    dense: torch.Tensor
    values: np.ndarray

    @classmethod
    def make(cls, recipe: Recipe) -> InputImage:
        dense = materialize(dataclasses.replace(recipe, layout="contiguous"))
        values = to_float64(dense)
        values.setflags(write=False)  # shared by every target's reference and checks
        return cls(recipe, dense, values)

    @classmethod
    def unallocated(cls, recipe: Recipe) -> InputImage:
        """Stands in for an input too large to make (its case is a `resource` outcome; no check reads it)."""
        return cls(recipe, torch.empty(0), np.empty(0))

    def on(self, target: Target) -> torch.Tensor:
        """A fresh tensor on the target in the recipe's layout; the layout is made on the target,
        because copying a strided view to another device densifies it."""
        moved = target.fresh_copy(self.dense)
        return apply_layout(moved, self.recipe.layout)

    @property
    def nbytes(self) -> int:
        return self.dense.nbytes + self.values.nbytes


def expected_output(ideal: np.ndarray, dtype: str) -> np.ndarray:
    """The reference in the output dtype's meaning: an integer image is rounded and saturated."""
    if dtype in INTEGER_PEAKS:
        return np.clip(np.rint(ideal), 0, INTEGER_PEAKS[dtype])
    return ideal


@dataclass
class CaseInputs:
    """What every target's context of one case of one op shares: the input, the parameters a random module
    sampled on the cpu, and the reference (made on first use by `reference`, which the engine memoises)."""

    spec: OpSpec
    case: Case
    source: InputImage
    sampled: Sampled | None
    reference: Callable[[], np.ndarray]
    memo: CaseMemo | None = None  # the engine's memo of other per-case values

    @property
    def output_dtype(self) -> str:
        return self.spec.output_dtype_of(self.case)

    def derived(self, name: str, compute: Callable[[], Steps[T]]) -> Steps[T]:
        """A per-case value a check derives (e.g. the gradient check's probe), made once for every target where
        the engine's memo keeps it (`compute()`'s steps must return an object with `nbytes`, which it counts)."""
        held: T | None = None if self.memo is None else self.memo.held(name)
        if held is not None:
            return held
        value = yield from compute()
        if self.memo is not None:
            self.memo.keep(name, value)
        return value


@dataclass(frozen=True)
class CaseMemo:
    """Where the engine keeps what checks derive per case (`held`: None where it holds nothing under the name)."""

    held: Callable[[str], Any]
    keep: Callable[[str, Any], None]


class Tolerances:
    """The tolerance each op's check uses for a dtype, mode and target (the user's --tolerances rules first),
    looked up once each: checks compare tolerances by identity (the cpu's reference outcome is reused only
    under the same one)."""

    def __init__(self, overrides: Sequence[Override] = ()) -> None:
        self.overrides = tuple(overrides)
        self._found: dict[tuple[str, str, str, str, str], Tolerance] = {}

    def get(self, spec: OpSpec, check: str, dtype: str, mode: str, target: str) -> Tolerance:
        key = (spec.name, check, dtype, mode, target)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = spec.tolerance(check, dtype, mode, target, self.overrides)
        return found


NO_PEERS: tuple[dict[str, dict[str, Any]], dict[str, np.ndarray]] = ({}, {})


@dataclass(frozen=True, eq=False)
class Derived(Generic[T]):
    """A value checks derive from a case on a target and share (a backward run, the call that records what it
    entered), made once per context: `yield from ctx.derive(WHAT)` (its compute asks the engine for runs).  The
    object itself is the key, so two modules cannot collide on a name, and what it holds is typed."""

    name: str
    compute: Callable[[CaseContext], Steps[T]]


class CaseContext:
    """One case on one target, with the op already run there."""

    def __init__(
        self,
        inputs: CaseInputs,
        target: Target,
        mode: str,
        tensor_in: torch.Tensor | None,
        run: OpRun,
        *,
        twin: CaseContext | None = None,
        tolerances: Tolerances | None = None,
        baseline: BaselineOutputs | None = None,
    ) -> None:
        self.inputs, self.target, self.mode = inputs, target, mode
        self.spec, self.case, self.source, self.sampled = inputs.spec, inputs.case, inputs.source, inputs.sampled
        self._tensor_in = tensor_in  # the op's own input on the target (None: it could not be allocated)
        self.run = run
        self.twin = twin  # the same case on the target's twin (the cpu; eager for a compiled target)
        self.tolerances = tolerances or Tolerances()
        self.baseline = baseline  # another build's recorded outputs, under --baseline
        self.expected_error: ExpectedError | None = self.spec.error_modes.get(mode)
        # the cross-library measurement against the operation's earlier implementations and their outputs
        # (conformance.checks.peers), set by the engine before a check that reads it
        self.peers: tuple[dict[str, dict[str, Any]], dict[str, np.ndarray]] = NO_PEERS
        self.peers_measured = False
        self.outcomes: dict[str, Any] = {}  # check name -> its CheckOutcome or None (conformance.checks.registry)
        self._derived: dict[Derived[Any], Any] = {}  # what checks computed on this target for later items

    def derive(self, what: Derived[T]) -> Steps[T]:
        """`what`'s value for this case on this target, computed on first use."""
        if what not in self._derived:
            self._derived[what] = yield from what.compute(self)
        found: T = self._derived[what]
        return found

    def derived_if_made(self, what: Derived[T]) -> T | None:
        """`what`'s value where a check has made it (None: none asked for it)."""
        found: T | None = self._derived.get(what)
        return found

    @property
    def tensor_in(self) -> torch.Tensor:
        """The op's own input on the target, checked for mutation after the call."""
        assert self._tensor_in is not None, "the case's input could not be allocated (run.resource): nothing to check"
        return self._tensor_in

    @property
    def returned_tensor(self) -> bool:
        """The op returned a tensor to check: one with values, where the target's outputs hold them (a tensor on the
        meta device, which holds none, is the invariants check's finding there, and nothing to compare)."""
        output = self.run.output
        readable = holds_values(output) or not self.target.holds_values
        return self.run.error is None and isinstance(output, torch.Tensor) and readable

    @property
    def output_dtype(self) -> str:
        return self.inputs.output_dtype

    @property
    def expected(self) -> np.ndarray:
        return self.inputs.reference()

    @cached_property
    def output64(self) -> np.ndarray | None:
        """The output as host float64, the only form in which values are compared (None: it holds no values)."""
        return to_float64(host_tensor(self.run.output)) if self.returned_tensor and self.target.holds_values else None

    def tolerance(self, check: str) -> Tolerance:
        """Tolerances are keyed by the test item's dtype (the input's), mode and target."""
        return self.tolerances.get(self.spec, check, self.case.recipe.dtype, self.mode, self.target.name)

    @property
    def nbytes(self) -> int:
        """What this context holds beyond the shared inputs (an estimate for the engine's cache)."""
        total = 2048
        for value in (self._tensor_in, self.run.output):
            if isinstance(value, torch.Tensor):
                total += value.numel() * (value.element_size() + 8)  # the tensor and its float64 copy
        return total

    def __repr__(self) -> str:
        return f"CaseContext({self.spec.name}, {self.target.name}, {self.case.json})"
