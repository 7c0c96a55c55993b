"""One operation, several libraries: the operation and its reference are named once, and each
library's implementation is data (its call with its own parameter mapping, its documented
defaults, dtypes, modes, tolerances and known issues).

    BLUR = Operation(name="gaussian_blur", reference=blur_reference, params=blur_params, ...,
                     optional=("sigma",),
                     implementations=[
                         Implementation(library=TV2, call=tv2_blur, defaults={"sigma": tv_default_sigma}),
                         Implementation(library=KORNIA, call=kornia_blur, dtypes=("float32",)),
                         Implementation(library=PILLOW, call=pil_blur, host_only=PILLOW_HOST),
                     ])
    globals().update(BLUR.tests())      # test_gaussian_blur_tv2, test_gaussian_blur_kornia, ...

Every implementation becomes an `OpSpec` of its own (`<operation>_<suffix>`, or `name=`), so every
check, known issue, baseline and report works unchanged.  What the operation adds:

- **the same cases for every implementation**: an implementation without recipes of its own checks
  the cases the operation's first implementation drew for that dtype and mode (the plugin orders
  an operation's items together), so libraries are compared on identical inputs;
- **keyword arguments left out** (array-api-tests' `kwargs()`): a case may omit any of the
  operation's `optional` keywords; each implementation then calls its library without it, and its
  reference uses the default that library documents (`defaults`, transcribed from its docs, never
  read from its signature), so a changed default is a reference failure;
- **a cross-library measurement**: an implementation's reference check also measures its output
  against every earlier implementation's for the same case (on the same target; on the cpu for a
  host library).  It is recorded with the outcome (`details["peers"]`), never a verdict: the
  reference check is the gate, and a library that strays from the documented meaning fails (or is
  a known issue) there.  The report's cross-library page shows the numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
from hypothesis import strategies as st

from conformance.spec import versions
from conformance.spec.callers import caller_file
from conformance.spec.gradients import Gradient
from conformance.spec.implementations import (
    OMIT,
    Implementation,
    calling,
    counterpart_of,
    expected_error,
    module_of,
    reference_of,
)
from conformance.spec.libraries import SUFFIXES, implementing
from conformance.spec.opspec import OpSpec, ParamStrategy, _default_recipes
from conformance.spec.recipes import Recipe
from conformance.spec.tolerances import Rule


@dataclass(frozen=True, eq=False)
class Membership:
    """What an implementation's OpSpec knows of its operation (OpSpec.member)."""

    operation: Operation
    implementation: Implementation
    index: int  # its position among the operation's implementations
    shares_cases: bool  # it checks the operation's cases (no recipes of its own)

    @property
    def library(self) -> str:
        return self.implementation.library

    def earlier(self) -> list[OpSpec]:
        """The implementations listed before this one (the cross-library measurement's peers)."""
        return self.operation.specs()[: self.index]

    def effective(self, params: Mapping[str, Any]) -> dict[str, Any]:
        return self.implementation.effective(params)

    def on_invalid(self) -> dict[str, dict[str, str]]:
        """Per error mode of the operation, what this library declares: it raises a class, documents accepting the
        input (its words), has no such input, or declares nothing (then it must raise some exception)."""
        impl, found = self.implementation, {}
        for mode in self.operation.invalid:
            if mode in impl.not_applicable:
                found[mode] = {"declared": "not applicable", "why": impl.not_applicable[mode]}
            elif mode in impl.accepts:
                found[mode] = {"declared": "accepts", "why": impl.accepts[mode].documentation}
            elif mode in impl.raises:
                found[mode] = {"declared": "raises", "why": expected_error("", impl.raises[mode]).describe()}
            else:
                found[mode] = {"declared": "must raise", "why": "nothing declared: any exception"}
        return found

    def describe(self) -> dict[str, Any]:
        """What the report shows of an implementation: library, documented defaults, where it runs, and what it
        declares for each of the operation's invalid inputs."""
        impl = self.implementation
        return {
            "library": impl.library,
            "host_only": impl.host_only,
            "on_invalid": self.on_invalid(),
            "defaults": {
                k: (
                    f"f(params): {getattr(v, '__doc__', '') or getattr(v, '__name__', 'a function')}".strip()
                    if callable(v)
                    else v
                )
                for k, v in impl.defaults.items()
            },
        }


@dataclass(frozen=True, kw_only=True, eq=False)
class Operation:
    """An operation named once: its documented meaning (reference), the cases it is checked on, the
    tolerances every implementation gets, and the implementations.

    reference: (float64 input, case) -> ideal output, where case.params are the implementation's
               effective params (its defaults filled in); random modules also get `sampled`.
    params:    (recipe, mode) -> strategy of params, every optional keyword given a value (a case then
               may leave some out).
    gradient:  the operation's differentiability promise (conformance.spec.gradients), given to every
               implementation that is not a host library (an implementation's spec={"gradient": None} opts out).
    optional:  keywords a case may leave out, so each library's default is exercised; or a function of
               the mode giving them (where leaving a keyword out would change what the mode means).
    invalid:   error mode -> what is invalid about its inputs: values just outside the documented domain.  Every
               implementation gets its items: it must raise (the class it declares in `raises`, else any
               exception), unless it documents accepting the input (`accepts`).  An error mode that `modes` and
               `variants` do not name is drawn with the first dtype.
    Other fields are OpSpec's, shared by every implementation.
    """

    name: str
    reference: Callable[..., np.ndarray]
    params: ParamStrategy
    dtypes: Sequence[str]
    modes: Sequence[str]
    implementations: Sequence[Implementation]
    tolerances: Sequence[Rule] = ()
    description: str = ""
    optional: Sequence[str] | Callable[[str], Sequence[str]] = ()
    invalid: Mapping[str, str] = field(default_factory=dict)
    variants: Sequence[tuple[str, str]] = ()
    recipes: Callable[[str], st.SearchStrategy[Recipe]] = _default_recipes
    spec: Mapping[str, Any] = field(default_factory=dict)  # OpSpec fields for every implementation
    gradient: Gradient | None = None  # for every implementation that runs on devices (spec={"gradient": None}: not)

    def __post_init__(self) -> None:
        if not self.implementations:
            raise ValueError(f"operation {self.name!r} lists no implementations")
        names = [self._name(impl) for impl in self.implementations]
        if len(set(names)) != len(names):
            raise ValueError(f"operation {self.name!r}: two implementations are named alike ({names}); give name=")
        for impl in self.implementations:
            if (impl.call is None) == (impl.module is None):
                raise ValueError(f"operation {self.name!r}, {impl.library}: give exactly one of call= or module=")
            unknown = set(impl.defaults) - set(self.optional_keywords())
            if unknown:
                raise ValueError(
                    f"operation {self.name!r}, {impl.library}: defaults for {sorted(unknown)}, which are "
                    f"not optional keywords of the operation ({self.optional_keywords()})"
                )
            unknown = (set(impl.raises) | set(impl.accepts) | set(impl.not_applicable)) - set(self.invalid)
            if unknown:
                raise ValueError(
                    f"operation {self.name!r}, {impl.library}: raises or accepts for {sorted(unknown)}, which are "
                    f"not error modes of the operation ({list(self.invalid)})"
                )
            declared = [set(impl.raises), set(impl.accepts), set(impl.not_applicable)]
            twice = (declared[0] & declared[1]) | (declared[0] & declared[2]) | (declared[1] & declared[2])
            if twice:
                raise ValueError(
                    f"operation {self.name!r}, {impl.library}: error modes {sorted(twice)} declared twice "
                    f"(raises, accepts and not_applicable exclude each other)"
                )

    def optional_in(self, mode: str) -> tuple[str, ...]:
        return tuple(self.optional(mode) if callable(self.optional) else self.optional)

    def optional_keywords(self) -> list[str]:
        """Every keyword a case of some mode may leave out."""
        return list(dict.fromkeys(k for mode in self.modes for k in self.optional_in(mode)))

    def _name(self, impl: Implementation) -> str:
        return impl.name or f"{self.name}_{impl.suffix or SUFFIXES.get(impl.library) or impl.library}"

    def variant_pairs(self) -> list[tuple[str, str]]:
        """(dtype, mode) pairs: `variants`, else every dtype with every mode; an error mode named in neither is
        drawn with the first dtype (an invalid parameter is refused whatever the image's dtype)."""
        pairs = list(self.variants) or [(d, m) for d in self.dtypes for m in self.modes]
        named = {m for _, m in pairs}
        return pairs + [(self.dtypes[0], m) for m in self.invalid if m not in named]

    def specs(self) -> list[OpSpec]:
        """One OpSpec per implementation, in the order listed (built once)."""
        return self._specs

    @cached_property
    def _specs(self) -> list[OpSpec]:
        return [self._spec(index, impl) for index, impl in enumerate(self.implementations)]

    def _spec(self, index: int, impl: Implementation) -> OpSpec:
        name = self._name(impl)
        missing = _dtypes_not_yet(impl.library)
        pairs = [
            (d, m)
            for d, m in self.variant_pairs()
            if (impl.dtypes is None or d in impl.dtypes)
            and d not in missing
            and (m not in impl.not_applicable if m in self.invalid else impl.modes is None or m in impl.modes)
        ]
        if not pairs:
            raise ValueError(f"operation {self.name!r}: {name} implements none of its (dtype, mode) variants")
        fields: dict[str, Any] = dict(self.spec) | dict(impl.spec)
        dropped = {d for d, _ in self.variant_pairs() if d in missing and (impl.dtypes is None or d in impl.dtypes)}
        if dropped:  # said at the end of the run, as a version gate in a case module is
            fields["narrowed"] = "; ".join(filter(None, [fields.get("narrowed", ""), *(missing[d] for d in dropped)]))
        if self.gradient is not None and not impl.host_only and any(d in self.gradient.dtypes for d, _ in pairs):
            fields.setdefault("gradient", self.gradient)  # a host library returns no autograd graph
        fields["params"] = _omitting(self.params, self.optional_in)
        modes = {m for _, m in pairs}
        fields["error_modes"] = {
            mode: expected_error(why, impl.raises.get(mode))
            for mode, why in self.invalid.items()
            if mode in modes and mode not in impl.accepts
        }
        fields["accepted_modes"] = {mode: accepted for mode, accepted in impl.accepts.items() if mode in modes}
        if impl.recipes is not None:
            fields.pop("mode_recipes", None)
            fields["recipes"] = impl.recipes
        elif "mode_recipes" not in fields:
            fields["recipes"] = self.recipes
        if impl.counterpart is not None:
            fields["counterpart"] = counterpart_of(impl)
        if impl.call is not None:
            fields["call"] = calling(impl)
        else:
            fields["module"] = module_of(impl)
        return OpSpec(
            name=name,
            description=impl.description or f"{impl.library}: {self.description or self.name}",
            reference=reference_of(self.reference, impl),
            dtypes=tuple(dict.fromkeys(d for d, _ in pairs)),
            modes=tuple(dict.fromkeys(m for _, m in pairs)),
            variants=pairs,
            tolerances=[*impl.tolerances, *self.tolerances],
            host_only=impl.host_only,
            member=Membership(self, impl, index, shares_cases=impl.recipes is None),
            **fields,
        )

    def describe(self) -> dict[str, Any]:
        """The operation as the run records it (once per worker) for the cross-library page."""
        return {
            "name": self.name,
            "description": self.description,
            "optional": self.optional_keywords(),
            "invalid": dict(self.invalid),
            "implementations": [
                {"op": spec.name, "dtypes": list(spec.dtypes), "modes": list(spec.modes), **spec.member.describe()}
                for spec in self.specs()
            ],
        }

    def tests(self) -> dict[str, Callable[..., None]]:
        """`test_<name>` per implementation: `globals().update(OPERATION.tests())` in a case module."""
        source = caller_file(1)
        return {f"test_{spec.name}": spec.test(source=source) for spec in self.specs()}


def _dtypes_not_yet(implementation: str) -> dict[str, str]:
    """The dtypes the imported release of `implementation`'s library does not take yet, each with why."""
    library = implementing(implementation)
    if library is None:
        return {}
    found = versions.version_of(library.package)
    return {
        dtype: f"{library.package} {found} < {since}: no {dtype}"
        for dtype, since in library.dtypes_since
        if versions.below(library.package, since)
    }


@st.composite
def _with_omissions(
    draw: st.DrawFn, params: st.SearchStrategy[dict[str, Any]], optional: tuple[str, ...]
) -> dict[str, Any]:
    drawn = dict(draw(params))
    left_out = [name for name in optional if name in drawn and draw(st.booleans(), label=f"leave_out_{name}")]
    if left_out:
        drawn[OMIT] = left_out
    return drawn


def _omitting(params: ParamStrategy, optional: Callable[[str], tuple[str, ...]]) -> ParamStrategy:
    def drawn(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
        keys = optional(mode)
        return _with_omissions(params(recipe, mode), keys) if keys else params(recipe, mode)

    return drawn
