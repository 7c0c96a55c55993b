"""One library's implementation of an operation, as data (conformance.spec.operations names the operation):
its call with its own parameter mapping, its documented defaults, dtypes, modes, tolerances and where it
runs; and how it becomes an OpSpec's call, module and reference (the keywords a case leaves out dropped
from the call, and given the library's documented default in the reference)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from hypothesis import strategies as st

from conformance.spec.forms import Counterpart, ModuleOp
from conformance.spec.opspec import ANY_ERROR, Accepted, ExpectedError
from conformance.spec.recipes import Case, Recipe
from conformance.spec.tolerances import Rule

OMIT = "omit"  # the params key listing the optional keywords a case leaves out


Default = Any  # a documented default value, or a function of the other params giving it


@dataclass(frozen=True, kw_only=True)
class Implementation:
    """One library's implementation of an operation.

    library:   the library, as the cross-library page names it (TV2, KORNIA, PILLOW, ...).
    call:      (tensor on the target, params) -> output.  `params` holds the operation's keywords in its
               own names and units, without those the case leaves out and this library has a default
               for: the function maps them to the library's arguments (see `keywords`).
    module:    instead of `call`, an nn.Module (ModuleOp); build/forward get the same params.
    name:      the op name (default `<operation>_<suffix>`); keep existing names stable.
    defaults:  the documented default of each optional keyword this library lets callers leave out,
               in the operation's units (a value, or a function of the other params).
    dtypes, modes: the subset of the operation's it implements (default: all).
    raises:    error mode -> what this library raises for that invalid input (a class, classes, or an
               ExpectedError).
    accepts:   error mode -> Accepted: an invalid input this library documents accepting (its words, and the
               valid params it then stands for).  An error mode in neither is held to raising some exception:
               a library that returns a result there fails (or is a known issue), which is how the run says
               which libraries accept what the others refuse.
    not_applicable: error mode -> why this library has no such input (it takes no such parameter): no items.
               `modes` restricts the valid modes only.
    tolerances: rules tried before the operation's (e.g. a library computing in fixed point).
    host_only: why it runs on the cpu only (a host library such as Pillow or OpenCV): no items on
               other targets; accelerators' implementations are compared with its cpu output.
    recipes:   recipes of its own (it then draws its own cases instead of the operation's).
    counterpart: the library's other form of the operation (conformance.spec.forms), called with the same params.
    spec:      any other OpSpec field (needs, requires, precondition, keeps_memory_format, ...).
    """

    library: str
    call: Callable[[Any, dict[str, Any]], Any] | None = None
    module: ModuleOp | None = None
    name: str = ""
    suffix: str = ""
    description: str = ""
    defaults: Mapping[str, Default] = field(default_factory=dict)
    dtypes: Sequence[str] | None = None
    modes: Sequence[str] | None = None
    raises: Mapping[str, Any] = field(default_factory=dict)
    accepts: Mapping[str, Accepted] = field(default_factory=dict)
    not_applicable: Mapping[str, str] = field(default_factory=dict)
    tolerances: Sequence[Rule] = ()
    host_only: str = ""
    recipes: Callable[[str], st.SearchStrategy[Recipe]] | None = None
    counterpart: Counterpart | None = None
    spec: Mapping[str, Any] = field(default_factory=dict)

    def passed(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """The keywords this library is called with: those left out where it has a default are dropped."""
        left_out = set(params.get(OMIT, ()))
        return {k: v for k, v in params.items() if k != OMIT and not (k in left_out and k in self.defaults)}

    def effective(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """What the call means: keywords left out take this library's documented default."""
        found = {k: v for k, v in params.items() if k != OMIT}
        for name in params.get(OMIT, ()):
            if name in self.defaults:
                default = self.defaults[name]
                found[name] = default(found) if callable(default) else default
        return found


def keywords(params: Mapping[str, Any], **mapping: str | tuple[str, Callable[[Any], Any]] | None) -> dict[str, Any]:
    """A library's keyword arguments from the params it is called with: `keywords(p, sigma="sigma_x",
    interpolation=("mode", to_library_mode))` renames and converts the keywords present in `p`, and
    leaves out those absent (the library's default then applies)."""
    found = {}
    for name, how in mapping.items():
        if name not in params:
            continue
        if how is None:
            found[name] = params[name]
        elif isinstance(how, str):
            found[how] = params[name]
        else:
            found[how[0]] = how[1](params[name])
    return found


def expected_error(why: str, raised: Any) -> ExpectedError:
    """What an error mode's invalid input must raise: the library's declared class, else any exception."""
    if raised is None:
        return ExpectedError(why, ANY_ERROR.raises)
    return raised if isinstance(raised, ExpectedError) else ExpectedError(why, raised)


def calling(impl: Implementation) -> Callable[[Any, dict[str, Any]], Any]:
    call = impl.call
    assert call is not None

    def call_library(image: Any, params: dict[str, Any]) -> Any:
        return call(image, impl.passed(params))

    call_library.__qualname__ = getattr(call, "__qualname__", "call_library")
    return call_library


def module_of(impl: Implementation) -> ModuleOp:
    module = impl.module
    assert module is not None
    sample, bounds = module.sample, module.bounds
    return dataclasses.replace(
        module,
        build=lambda params: module.build(impl.passed(params)),
        forward=lambda m, image, params, sampled: module.forward(m, image, impl.passed(params), sampled),
        sample=None if sample is None else lambda m, image, params: sample(m, image, impl.passed(params)),
        bounds=None if bounds is None else lambda params: bounds(impl.passed(params)),
    )


def counterpart_of(impl: Implementation) -> Counterpart | None:
    """The implementation's counterpart, called with the params its own form gets (left-out keywords dropped)."""
    found = impl.counterpart
    if found is None:
        return None
    if found.module is not None:
        return dataclasses.replace(found, module=module_of(dataclasses.replace(impl, module=found.module)))
    return dataclasses.replace(found, call=calling(dataclasses.replace(impl, call=found.call)))


def reference_of(reference: Callable[..., np.ndarray], impl: Implementation) -> Callable[..., np.ndarray]:
    def implementation_reference(image: np.ndarray, case: Case, *sampled: Any) -> np.ndarray:
        return reference(image, dataclasses.replace(case, params=impl.effective(case.params)), *sampled)

    implementation_reference.__qualname__ = getattr(reference, "__qualname__", "reference")
    return implementation_reference
