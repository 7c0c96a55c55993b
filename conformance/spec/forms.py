"""How an op is called: as a function, or as an nn.Module (`ModuleOp`); and its other form in the same library
(`Counterpart`).

kornia and torchvision offer most operations twice, a module class and a function (kornia.enhance.AdjustBrightness
and adjust_brightness, torchvision's v2.Grayscale and v2.functional.rgb_to_grayscale).  A spec that tests one form
names the other once, as its counterpart: the `module` check then holds the two to the same output for the same
parameters on every target (a module that forwards an argument wrongly to its function, or has another default,
fails), and the `history` check calls one instance of the module form on a sequence of different inputs.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from conformance.spec import versions
from conformance.spec.recipes import Case
from conformance.spec.tolerances import Tolerance

OpFunction = Callable[[torch.Tensor, dict[str, Any]], Any]
Sampled = dict[str, Any]


def _call_module(module: torch.nn.Module, image: torch.Tensor, params: dict[str, Any], sampled: Sampled | None):
    return module(image) if sampled is None else module(image, params=sampled)


UNMOVED_PROMISES = ("works", "device-error")


@dataclass(frozen=True, kw_only=True)
class ModuleOp:
    """An op that is an nn.Module: built per case on the cpu, moved with `.to(target)`, then called.

    build:   (params) -> a fresh module on the cpu.
    forward: (module, image, params, sampled) -> output; default `module(image)`, or
             `module(image, params=sampled)` for random augmentations.
    sample:  for random augmentations, (module, host image, params) -> the random parameters;
             drawn once per case on the cpu with a fixed seed and replayed on every target, so
             outputs can be compared across devices (kornia modules accept `params=`).  The
             spec's reference is then called as reference(input, case, sampled).  On accelerators the
             module's own sampling also runs there (the `sampling` check).
    bounds:  for random augmentations, (params) -> {name: (low, high)}: the documented range of
             each sampled value, checked on every target's own sample (the values themselves differ
             between devices' generators; shapes, dtypes and these ranges must not).
    features: for random augmentations, (case, sampled) -> named facts about the sampled values, added to
             the spec's case features for known-issue scoping (e.g. how close a sampled warp puts a sample
             to a nearest-neighbour tie).
    unmoved: what the module promises when left on the cpu and called with a device input (the
             `unmoved` check): "works" (same result, on the input's device: what users of
             parameter-free augmentations rely on) or "device-error" (it may instead raise an error
             that names the device problem).  Anything else is a broken promise.
    """

    build: Callable[[dict[str, Any]], torch.nn.Module]
    forward: Callable[[torch.nn.Module, torch.Tensor, dict[str, Any], Sampled | None], Any] = _call_module
    sample: Callable[[torch.nn.Module, torch.Tensor, dict[str, Any]], Sampled] | None = None
    bounds: Callable[[dict[str, Any]], dict[str, tuple[float, float]]] | None = None
    features: Callable[[Case, Sampled], dict[str, Any]] | None = None
    unmoved: str = "device-error"

    def __post_init__(self) -> None:
        if self.unmoved not in UNMOVED_PROMISES:
            raise ValueError(f"ModuleOp(unmoved={self.unmoved!r}): promise one of {UNMOVED_PROMISES}")


@dataclass(frozen=True, kw_only=True)
class Counterpart:
    """The operation's other form in its library, called with the same parameters as the spec's own form.

    name:      the other form as the library spells it ("kornia.enhance.AdjustBrightness"), for messages.
    module:    for a spec that calls a function: the module class, built with the case's params and called.
    call:      for a spec that is a module: the function, called with the case's params.
    tolerance: None (the default): both forms give identical outputs (the same kernel behind both); else how far
               they may differ, with its reason (a module that computes in another order by design).
    """

    name: str
    module: ModuleOp | None = None
    call: OpFunction | None = None
    tolerance: Tolerance | None = None

    def __post_init__(self) -> None:
        if (self.module is None) == (self.call is None):
            raise ValueError(f"Counterpart {self.name!r}: give exactly one of module= (a class) or call= (a function)")
        if self.module is not None and self.module.sample is not None:
            raise ValueError(
                f"Counterpart {self.name!r}: a random module draws its own parameters, which a function cannot be "
                "given: name counterparts for deterministic forms only"
            )

    def unmet(self) -> str | None:
        """Why the other form cannot be called here (the imported library lacks the dotted name it is), or None."""
        parts = self.name.split(".")
        if len(parts) < 2 or not all(part.isidentifier() for part in parts):
            return None  # a name for messages only
        return versions.missing(f"the counterpart {self.name}", (self.name,))


def module_class(
    dotted: str, arguments: Callable[[dict[str, Any]], dict[str, Any]] = lambda params: {}, **fields: Any
) -> Counterpart:
    """The library's module class at `dotted` as an implementation's counterpart: built with the keywords `arguments`
    makes from the params its function gets (imported when first built); `fields`: ModuleOp's other fields, such as
    `forward=` where the class is called otherwise than module(image)."""
    where, _, name = dotted.rpartition(".")

    def build(params: dict[str, Any]) -> torch.nn.Module:
        built: torch.nn.Module = getattr(importlib.import_module(where), name)(**arguments(params))
        return built

    return Counterpart(name=dotted, module=ModuleOp(build=build, **fields))
