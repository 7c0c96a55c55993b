"""How an op is declared: a spec, not a test program.

A case module builds one `OpSpec` per op and exposes `spec.test()` as a
module-level `test_<name>` function.  The plugin parametrizes it as
`test_<name>[<target>-<dtype>-<mode>]`; hypothesis draws the rest (the image
recipe and the op parameters) inside each item.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from conformance.compare import Rule, Tolerance, pick_tolerance
from conformance.recipes import Case, Recipe
from conformance.strategies import image_recipes

OpFunction = Callable[[torch.Tensor, dict[str, Any]], Any]
Reference = Callable[[np.ndarray, Case], np.ndarray]
ParamStrategy = Callable[[Recipe, str], st.SearchStrategy[dict[str, Any]]]


def _default_recipes(dtype: str) -> st.SearchStrategy[Recipe]:
    return image_recipes(dtype=dtype)


@st.composite
def _cases(draw: st.DrawFn, spec: "OpSpec", dtype: str, mode: str) -> Case:
    recipe = draw(spec.recipes(dtype))
    return Case(spec.name, recipe, draw(spec.params(recipe, mode)))


@dataclass(frozen=True)
class OpSpec:
    """Everything the harness needs to test one op.

    name:        op id used in test names, records and known issues.
    call:        runs the implementation under test: (input tensor, params) -> output.
    reference:   independent float64 host implementation: (float64 input, case) -> ideal output.
                 For uint8 outputs the harness rounds and saturates it (the documented meaning).
    dtypes/modes: the parametrized axes; a mode names a parameter regime (e.g. "bicubic-antialias").
    params:      hypothesis strategy of op parameters for a recipe and mode.
    tolerances:  ordered `Rule`s; the first match for (check, dtype, mode, target) applies.
    recipes:     strategy of input recipes for a dtype (default: `image_recipes`).
    variants:    explicit (dtype, mode) pairs when not every combination makes sense.
    features:    extra named facts about a case (e.g. output size) for known-issue scoping.
    """

    name: str
    call: OpFunction
    reference: Reference
    dtypes: Sequence[str]
    modes: Sequence[str]
    params: ParamStrategy
    tolerances: Sequence[Rule]
    recipes: Callable[[str], st.SearchStrategy[Recipe]] = _default_recipes
    description: str = ""
    variants: Sequence[tuple[str, str]] = field(default=())
    features: Callable[[Case], dict[str, Any]] | None = None

    def case_features(self, case: Case) -> dict[str, Any]:
        """Named facts about a case that known issues can scope to (`where = {...}`)."""
        recipe = case.recipe
        found: dict[str, Any] = {
            "height": recipe.height, "width": recipe.width, "channels": recipe.channels,
            "batch_dims": len(recipe.batch), "layout": recipe.layout, "content": recipe.content,
        }
        found.update({k: v for k, v in case.params.items() if isinstance(v, (str, int, float, bool))})
        if self.features is not None:
            found.update(self.features(case))
        return found

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"op name {self.name!r} must be a Python identifier (it names the test)")

    def variant_pairs(self) -> list[tuple[str, str]]:
        """(dtype, mode) pairs to parametrize; `variants` restricts the full product."""
        return list(self.variants) or [(d, m) for d in self.dtypes for m in self.modes]

    def cases(self, dtype: str, mode: str) -> st.SearchStrategy[Case]:
        return _cases(self, dtype, mode)

    def tolerance(self, check: str, dtype: str, mode: str, target: str) -> Tolerance:
        return pick_tolerance(self.tolerances, check=check, dtype=dtype, mode=mode, target=target)

    def test(self) -> Callable[..., None]:
        """The pytest test function for this op (assign it to `test_<name>`)."""
        spec = self

        def conformance_test(target: str, dtype: str, mode: str, conformance_run, data) -> None:
            case = data.draw(conformance_run.case_strategy(spec, dtype, mode), label="case")
            conformance_run.check(spec, case)

        conformance_test.__name__ = conformance_test.__qualname__ = f"test_{self.name}"
        conformance_test.__doc__ = self.description or f"Conformance of {self.name} on every selected target."
        test = given(data=st.data())(conformance_test)
        test.conformance_spec = self  # type: ignore[attr-defined]
        return test
