"""How an op is declared: a spec, not a test program.

A case module builds one `OpSpec` per op and exposes `spec.test()` as a
module-level `test_<name>` function.  The plugin parametrizes it as
`test_<name>[<target>-<dtype>-<mode>-<check>]`, one item per check so one failing
check never hides another; hypothesis draws the rest (the image recipe and the op
parameters) once per (op, dtype, mode), and every item checks the same cases.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from conformance import versions
from conformance.spec import overrides
from conformance.spec.callers import caller_file
from conformance.spec.domain import ANY_ERROR, Accepted, ExpectedError, Returns  # noqa: F401 - re-exported
from conformance.spec.forms import Counterpart, ModuleOp, OpFunction, Sampled
from conformance.spec.gradients import Gradient
from conformance.spec.item_ids import ItemId, item_params_id, parse_item_id, variant_key  # noqa: F401 - re-exported
from conformance.spec.recipes import Case, Recipe, value_span
from conformance.spec.strategies import image_recipes
from conformance.spec.tolerances import UNCALIBRATED, Rule, Tolerance, pick_tolerance

Reference = Callable[..., np.ndarray]  # (float64 input, case) or, for a random module, (input, case, sampled)
ParamStrategy = Callable[[Recipe, str], st.SearchStrategy[dict[str, Any]]]
SOURCES: dict[str, str] = {}  # op name -> the case module that defined its test (ISA workers import it)


def _default_recipes(dtype: str) -> st.SearchStrategy[Recipe]:
    return image_recipes(dtype=dtype)


def no_params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
    """The params of an op that takes none but the image."""
    return st.just({})


@st.composite
def _cases(draw: st.DrawFn, spec: OpSpec, recipes: st.SearchStrategy[Recipe], mode: str) -> Case:
    recipe = draw(recipes)
    return Case(spec.name, recipe, draw(spec.params(recipe, mode)))


@dataclass(frozen=True, kw_only=True)
class OpSpec:
    """Everything the harness needs to test one op.

    name:        op id used in test names, records and known issues.
    call:        runs the implementation under test: (input tensor, params) -> output.
    module:      instead of `call`, for nn.Module ops (placement of the module's tensors is checked).
    reference:   independent float64 host implementation: (float64 input, case) -> ideal output. For uint8 outputs
                 the harness rounds and saturates it (the documented meaning). None for a transform swept without one
                 (conformance.spec.sweep): only the reference-free checks apply.
    dtypes/modes: the parametrized axes; a mode names a parameter regime (e.g. "bicubic-antialias"); one mode,
                 "default", when none is given.
    params:      hypothesis strategy of op parameters for a recipe and mode (default: none).
    tolerances:  ordered `Rule`s; the first match for (check, dtype, mode, target) applies.  None given: defaults per
                 dtype, marked "uncalibrated" in the report; rules given must cover every variant (or end with them).
    recipes:     strategy of input recipes for a dtype (default: `image_recipes`).
    variants:    explicit (dtype, mode) pairs when not every combination makes sense.
    features:    extra named facts about a case (e.g. output size) for known-issue scoping.
    host_transfers: why the op copies image data between host and device by design (e.g. to a PIL image); when
                 empty, such a copy inside the call fails the placement check.
    needs_real_device: why the op cannot run on a virtual device (e.g. an nvjpeg-only kernel): its virtual-target
                 items are skipped as "not emulatable".
    mode_recipes: (dtype, mode) -> recipes, instead of `recipes`, when a mode fixes part of the input (PIL's "LA").
    error_modes: mode -> ExpectedError: in these modes the inputs are invalid on purpose; the op must
                 raise the named class (and match), on every target the class the cpu raises.
    accepted_modes: mode -> Accepted: modes whose inputs are outside the operation's domain but which this library
                 documents accepting: they are checked as valid inputs (the reference with `meaning`'s params).
    returns:     what the op returns where it is not an image tensor of the input's dtype on its device
                 (conformance.spec.domain.Returns: its dtype per case, how to read it as a tensor, why on the host).
    fidelity:    for lossy ops, (margin in dB, reason): the output's PSNR against the input may be at
                 most this much below the reference's, both capped at 40 dB (a "fidelity" check).
    pil_input:   why the function takes a PIL image where it takes a tensor (the library's words): one image of each
                 uint8 case is then also handed over as a PIL image on the cpu (the `pil` check).
    keeps_memory_format: False when the library does not promise to keep channels-last/contiguous
                 layouts (kornia returns contiguous outputs); the invariants check then skips it.
    requires:    package -> version specifier (e.g. {"kornia": ">=0.7.2"}); items are skipped, naming the installed
                 version, when it does not match.
    needs:       dotted names the op uses (e.g. "kornia.augmentation.RandomJPEG"); items are skipped, naming the
                 installed version, when one is missing.
    precondition: () -> why the op cannot run here, or None; asked once, for what `requires` and `needs` cannot see
                 (e.g. a compiled extension that does not load with this torch); items are skipped with the reason.
    timing:      (recipe, mode) -> fixed parameters for timing the op on an input like the recipe (a data-loading
                 size: see conformance.engine.timing), or None where the mode does not apply; ops without it are not
                 timed; one that takes one (C, H, W) image returns None for a batched recipe (batch-1 shapes then
                 lose the batch dim).
    narrowed:    why the drawn inputs are narrower than usual for the imported library version
                 (e.g. "kornia 0.7.2 < 0.7.3: sides divisible by 16"); shown at the end of the run.
    host_only:   why the op runs on the host only (Pillow, OpenCV): items on the `cpu` target only.
    cpu_paths:   False when the cpu's lower instruction-set targets (`cpu:avx2`, ...) have nothing to show for
                 the op (the device sweep: device placement does not depend on the cpu's kernels).
    max_examples: at most this many cases an item, whatever the profile asks (the device sweep: what it
                 checks shows on the first cases of a transform, and it has thousands of items).
    not_comparable: why the outputs of one case differ between devices by design (noise drawn with the
                 device's generator): no cross_device items.
    batch_consistent: what promises that a batch's output is its samples' outputs one by one (each sample
                 with its share of a random module's parameters): then the `batch` check holds the op to it.
    gradient:    the op's promise that its output is differentiable in its input (conformance.spec.gradients):
                 its backward pass is then checked on every target (`gradient`, `gradient_device` items).
    counterpart: the operation's other form in the same library (conformance.spec.forms): the module class of a
                 function, or the function of a module, called with the same params (`module`, `history` checks).
    member:      set by `conformance.spec.operations.Operation` for one library's implementation of an
                 operation (shared cases, documented defaults, the cross-library measurement).
    """

    name: str
    call: OpFunction | None = None
    module: ModuleOp | None = None
    reference: Reference | None
    dtypes: Sequence[str]
    modes: Sequence[str] = ("default",)
    params: ParamStrategy = no_params
    tolerances: Sequence[Rule] = UNCALIBRATED
    recipes: Callable[[str], st.SearchStrategy[Recipe]] = _default_recipes
    description: str = ""
    variants: Sequence[tuple[str, str]] = field(default=())
    features: Callable[[Case], dict[str, Any]] | None = None
    host_transfers: str = ""
    needs_real_device: str = ""
    mode_recipes: Callable[[str, str], st.SearchStrategy[Recipe]] | None = None
    error_modes: Mapping[str, ExpectedError] = field(default_factory=dict)
    accepted_modes: Mapping[str, Accepted] = field(default_factory=dict)
    returns: Returns = field(default_factory=Returns)
    keeps_memory_format: bool = True
    pil_input: str = ""
    fidelity: tuple[float, str] | None = None
    requires: Mapping[str, str] = field(default_factory=dict)
    needs: Sequence[str] = ()
    precondition: Callable[[], str | None] | None = None
    narrowed: str = ""
    timing: Callable[[Recipe, str], dict[str, Any] | None] | None = None
    host_only: str = ""
    not_comparable: str = ""
    batch_consistent: str = ""
    max_examples: int | None = None
    cpu_paths: bool = True
    gradient: Gradient | None = None
    counterpart: Counterpart | None = None
    member: Any = None  # operations.Membership: the operation this spec implements, for a library

    def unmet_requirement(self) -> str | None:
        """Why this op cannot be tested with the imported packages (naming their versions), or None."""
        return (
            versions.unmet(self.name, self.requires)
            or versions.missing(self.name, tuple(self.needs))
            or (self.precondition() if self.precondition is not None else None)
        )

    def in_domain(self, mode: str) -> bool:
        """Whether the mode's inputs are inside the operation's documented domain (not an error mode, not an input
        only this library documents accepting): gradients and timings are measured there only."""
        return mode not in self.error_modes and mode not in self.accepted_modes

    def reference_in(self, mode: str) -> Reference | None:
        """The reference for a mode's cases: an accepted mode's documented meaning is applied to the params first
        (None: this op has no reference there)."""
        accepted = self.accepted_modes.get(mode)
        if accepted is None or self.reference is None:
            return self.reference
        meaning, reference = accepted.meaning, self.reference
        if meaning is None:
            return None

        def documented_meaning(image: np.ndarray, case: Case, *sampled: Any) -> np.ndarray:
            return reference(image, Case(case.op, case.recipe, meaning(dict(case.params))), *sampled)

        return documented_meaning

    def output_dtype_of(self, case: Case) -> str:
        return self.returns.dtype(case) if self.returns.dtype is not None else case.recipe.dtype

    def recipes_for(self, dtype: str, mode: str) -> st.SearchStrategy[Recipe]:
        return self.mode_recipes(dtype, mode) if self.mode_recipes is not None else self.recipes(dtype)

    def case_features(self, case: Case, sampled: Sampled | None = None) -> dict[str, Any]:
        """Named facts about a case that known issues can scope to (`where = {...}`), with a random module's
        facts about the parameters sampled for the case."""
        recipe = case.recipe
        found: dict[str, Any] = {
            "height": recipe.height,
            "width": recipe.width,
            "channels": recipe.channels,
            "batch_dims": len(recipe.batch),
            "layout": recipe.layout,
            "content": recipe.content,
            "value_span": value_span(recipe),
            "side": max(recipe.height, recipe.width),  # what a position's rounding grows with (a `scale_by` feature)
        }
        found.update({k: v for k, v in case.params.items() if isinstance(v, (str, int, float, bool))})
        if self.features is not None:
            found.update(self.features(case))
        if sampled is not None and self.module is not None and self.module.features is not None:
            found.update(self.module.features(case, sampled))
        return found

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"op name {self.name!r} must be a Python identifier (it names the test)")
        if (self.call is None) == (self.module is None):
            raise ValueError(f"op {self.name!r}: give exactly one of call= (a function) or module= (a ModuleOp)")
        if self.counterpart is not None and (self.counterpart.module is None) == (self.module is None):
            raise ValueError(
                f"op {self.name!r}: its counterpart {self.counterpart.name!r} is its other form (a module for a "
                "function, a function for a module)"
            )
        for mode, expected in self.error_modes.items():
            if not isinstance(expected, ExpectedError):
                raise ValueError(
                    f"op {self.name!r}, error mode {mode!r}: give an ExpectedError naming the exception "
                    f"class the invalid input must raise, not {expected!r}"
                )
        for mode, accepted in self.accepted_modes.items():
            if not isinstance(accepted, Accepted) or mode in self.error_modes:
                raise ValueError(
                    f"op {self.name!r}, accepted mode {mode!r}: give an Accepted quoting the documentation, for a "
                    f"mode that is not also an error mode"
                )
        if not self.tolerances:
            object.__setattr__(self, "tolerances", UNCALIBRATED)
        needed = ((c, d, m) for d, m in self.variant_pairs() for c in self.tolerance_checks(d, m))
        if (gap := next((n for n in needed if not any(rule.covers(*n) for rule in self.tolerances)), None)) is not None:
            raise ValueError(
                f"op {self.name!r}: no tolerance rule covers dtype {gap[1]!r} (check {gap[0]!r}, mode {gap[2]!r}, "
                "every target): add a Rule with its measured reason, or end them with *UNCALIBRATED (`from conformance "
                "import UNCALIBRATED`: defaults for the rest, marked uncalibrated in the report)"
            )

    def tolerance_checks(self, dtype: str, mode: str) -> tuple[str, ...]:
        """The checks that read the spec's rules in a variant (what its rules must cover; gradients have their own)."""
        if mode in self.error_modes:
            return ()
        return (
            *(("reference",) if self.reference_in(mode) is not None else ()),
            "cross_device",  # also what compiled targets and baselines are held to
            *(("pil",) if self.pil_input and dtype == "uint8" else ()),  # the pil check takes uint8 images
            *(("batch",) if self.batch_consistent else ()),
        )

    @property
    def samples(self) -> bool:
        """A random module that draws its own parameters (they are replayed to every target)."""
        return self.module is not None and self.module.sample is not None

    def other_form(self) -> OpSpec | None:
        """This op as its counterpart (the same spec calling the other form), or None."""
        if self.counterpart is None:
            return None
        return dataclasses.replace(self, call=self.counterpart.call, module=self.counterpart.module, counterpart=None)

    def module_form(self) -> OpSpec | None:
        """This op as a module (itself, or its counterpart's module class), or None for a function alone."""
        return self if self.module is not None else self.other_form() if self.counterpart is not None else None

    def variant_pairs(self) -> list[tuple[str, str]]:
        """(dtype, mode) pairs to parametrize; `variants` restricts the full product."""
        return list(self.variants) or [(d, m) for d in self.dtypes for m in self.modes]

    def cases(self, dtype: str, mode: str) -> st.SearchStrategy[Case]:
        return _cases(self, self.recipes_for(dtype, mode), mode)

    def tolerance(
        self, check: str, dtype: str, mode: str, target: str, user_rules: Sequence[overrides.Override] = ()
    ) -> Tolerance:
        """The user's override (--tolerances) if one matches, else the first of this op's rules."""
        chosen = overrides.pick(user_rules, self.name, check, dtype, mode, target)
        # gradients are measured in units of the gradient's size: the value rules (often check="*") do not fit
        rules = self.gradient.rules() if check.startswith("gradient") and self.gradient is not None else self.tolerances
        return chosen or pick_tolerance(rules, check=check, dtype=dtype, mode=mode, target=target)

    def test(self, source: str | None = None) -> Callable[..., None]:
        """The pytest test function for this op (assign it to `test_<name>`); one item per target,
        dtype, mode and check.  `source`: the case module's file (default: the caller's).  The inner function's
        source is what hypothesis seeds a derandomised (`ci`) run from: an edit of its two lines draws other cases
        for every item of the suite."""
        spec = self

        def conformance_test(target: str, dtype: str, mode: str, check: str, conformance_run, data) -> None:
            case = data.draw(conformance_run.case_strategy(spec, dtype, mode), label="case")
            conformance_run.check(spec, case)

        conformance_test.__name__ = conformance_test.__qualname__ = f"test_{self.name}"
        conformance_test.__doc__ = self.description or f"Conformance of {self.name} on every selected target."
        test = given(data=st.data())(conformance_test)
        test.conformance_spec = self  # type: ignore[attr-defined]
        source = source or caller_file(1)  # the case module, for worker processes
        if source:
            SOURCES[self.name] = source
        return test
