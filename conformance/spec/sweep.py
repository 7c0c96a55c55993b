"""Every transform of a module, no spec needed: discovery and the OpSpecs of a device sweep.

Device bugs hide in the transforms nobody wrote a spec for: noise made on the cpu, a tensor attribute
that is not a buffer, an input changed in place.  They show without a reference, from placement, module
state and invariants alone.  `discover(module)` lists the module's transform classes, each swept or
skipped with a reason; `specs(module)` makes one OpSpec per swept class, without a reference, so only the
reference-free checks apply (error, placement, invariants, unmoved, sampling, cross_device), with the
same items, ids, known issues and report as any other op.

Each class runs in two modes: "p1" (p=1: the transform always applies) and "default" (its documented
defaults, so a random augmentation's default probability blends applied and skipped samples).  A kornia
augmentation's parameters are drawn once on the cpu and replayed on every target (`params=`), so its
outputs are compared across devices; torchvision draws its parameters with the global cpu generator, which
the harness seeds alike on every target, so its outputs are compared too, except where it draws
image-sized noise on the device (`sweep_tables.DEVICE_RANDOM`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch
from hypothesis import strategies as st

from conformance.spec.callers import caller_file
from conformance.spec.forms import Counterpart, ModuleOp
from conformance.spec.opspec import OpSpec
from conformance.spec.recipes import CONTENTS
from conformance.spec.sampled import kornia_parameters
from conformance.spec.strategies import image_recipes
from conformance.spec.sweep_functions import FUNCTIONS, Function
from conformance.spec.sweep_import import DEFAULT_MODULES, import_module
from conformance.spec.sweep_references import REFERENCES
from conformance.spec.sweep_tables import (
    BATCH_OF_ONE,
    CHANNELS,
    CONTAINERS,
    DEVICE_RANDOM,
    NAMED_BY_MODULE,
    SKIPS,
    UNBATCHED,
    arguments,
)
from conformance.spec.tolerances import Rule, Tolerance

# Sides of 32 or 64: placement bugs do not hide in odd sizes, and documented defaults need room (kornia's
# RandomRain drops up to 20 pixels tall, torchvision's ElasticTransform blurs with a 41-pixel kernel).
SIDE = 32
MODES = ("p1", "default")
# Cases an item: a device bug of a transform shows in its first cases (every planted one did in the first);
# 100 a variant, as the ci profile draws for the specs, cost 219 s for 3,294 items, 10 cost about 40 s.
EXAMPLES = 10

# Augmentations document images in [0, 1]; out-of-range floats are a spec's business (equalize indexes a
# 256-bin histogram with them and raises), not a device question.
IN_RANGE = [c for c in CONTENTS if c != "out_of_range"]

CROSS_DEVICE = Rule(
    Tolerance(
        "sweep-cross-device",
        atol=1e-4,
        rtol=1e-4,
        reason="the same float32 transform with the same parameters on two devices: kernels differ in rounding "
        "order only; a parameter or a sample drawn differently differs by far more",
    ),
    check="cross_device",
)
BATCH = Rule(
    Tolerance(
        "sweep-batch",
        atol=1e-4,
        rtol=1e-4,
        reason="one sample alone and in a batch, with the same parameters on the same device: a kernel may sum "
        "in another order for another batch size; another sample's parameters or pixels differ by far more",
    ),
    check="batch",
)
# Why the samples of a batch are transformed one by one, by library (the `batch` check holds them to it); a
# user's module promises it through kornia's interface (per-sample parameters), else it has no batch items.
BATCHED = {
    "kornia": "kornia draws one row of parameters per sample (same_on_batch=False) and applies each to its sample",
    "torchvision": "torchvision v2 draws one set of parameters per call and applies it to every image of a batch",
}


@dataclass(frozen=True)
class Discovered:
    """One class found in a module: swept, or skipped with the reason."""

    module: str
    name: str
    cls: type | None
    reason: str = ""  # why it is skipped ("" : swept)

    @property
    def qualified(self) -> str:
        return f"{self.module}.{self.name}"

    @property
    def op(self) -> str:
        # the top package names the op (kornia, torchvision, a user's), the whole module where class names repeat
        # across a package's modules (kornia.enhance.Rescale, kornia.geometry.transform.Rescale)
        scope = self.module if self.module in NAMED_BY_MODULE else self.module.split(".")[0]
        return "sweep_" + "".join(c if c.isalnum() else "_" for c in f"{scope}_{self.name}")


@cache
def discover(module_name: str) -> list[Discovered]:
    """Every public nn.Module class of the module, each swept or skipped with a reason."""
    module = import_module(module_name)
    found = []
    for name, value in sorted(vars(module).items()):
        if name.startswith("_") or not inspect.isclass(value) or not issubclass(value, torch.nn.Module):
            continue
        container = f"{module_name}.{name}" in CONTAINERS
        reason = "" if container else next((why for matches, why in SKIPS if matches(name)), "")
        if not reason and inspect.isabstract(value):
            reason = "an abstract base class"
        found.append(Discovered(module_name, name, value, reason or _unbuildable(module_name, name, value)))
    return found


def _unbuildable(module_name: str, name: str, cls: type) -> str:
    """Why the class cannot be built here with its table's arguments (an optional dependency missing, an
    argument the table lacks), or ""."""
    try:
        _build(Discovered(module_name, name, cls))({})
    except ImportError as exc:
        return f"an optional dependency is not installed ({str(exc).splitlines()[0][:120]})"
    except Exception as exc:  # noqa: BLE001 - any constructor failure is a reason to skip, with its text
        return f"cannot be built with its documented defaults: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    return ""


def _accepts_p(found: Discovered) -> bool:
    """Whether the class takes `p` (a container: whether its members do, and they all take it here)."""
    if found.qualified in CONTAINERS:
        return True
    try:
        return "p" in inspect.signature(found.cls).parameters  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def _build(found: Discovered) -> Callable[[dict[str, Any]], torch.nn.Module]:
    fixed = arguments(found.module, found.name)
    container = CONTAINERS.get(found.qualified)
    cls = found.cls
    assert cls is not None

    def build(params: dict[str, Any]) -> torch.nn.Module:
        if container is not None:
            return container(cls, params.get("p"))
        return cls(**fixed, **params)

    return build


def _counterpart(found: Discovered) -> Counterpart | None:
    """The class's function form (sweep_functions.FUNCTIONS), called with the arguments the class is built with."""
    function: Function | None = FUNCTIONS.get(found.qualified)
    if function is None:
        return None
    fixed = dict(arguments(found.module, found.name))
    named = getattr(function, "__qualname__", "")
    return Counterpart(
        name=named if "." in named and "<" not in named else f"the function of {found.qualified}",
        call=lambda image, params: function(image, _on_device_of(image, fixed)),
    )


def _on_device_of(image: torch.Tensor, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments as a caller of the function passes them: its tensor arguments on the image's device (the
    class moves its own with `.to()`)."""
    return {k: v.to(image.device) if isinstance(v, torch.Tensor) else v for k, v in arguments.items()}


def spec_of(found: Discovered) -> OpSpec:
    """The sweep's OpSpec of one discovered class (no reference: only the reference-free checks)."""
    assert found.cls is not None and not found.reason
    # kornia's interface (its own classes, or a user's subclasses): parameters drawn apart and replayed
    kornia = callable(getattr(found.cls, "forward_parameters", None))
    with_p = _accepts_p(found)
    device_random = found.qualified in DEVICE_RANDOM
    referenced = REFERENCES.get(found.qualified)  # the reference of the operation it implements, if any
    library = "kornia" if kornia else found.module.split(".")[0]  # whose batch promise applies (none: a user's)
    return OpSpec(
        name=found.op,
        description=f"{found.qualified} swept with {'p=1 and ' if with_p else ''}its documented defaults",
        module=ModuleOp(build=_build(found), sample=kornia_parameters if kornia else None),
        reference=None if referenced is None else referenced.reference,
        dtypes=("float32",),
        modes=MODES if with_p else ("default",),
        params=lambda recipe, mode: st.just({"p": 1.0} if mode == "p1" else {}),
        recipes=lambda dtype: image_recipes(
            dtype,
            channels=(CHANNELS.get(found.qualified, 3),),  # the channels its input has (sweep_tables.CHANNELS)
            min_batch_dims=1,
            max_batch_dims=1,
            max_batch=1 if found.qualified in BATCH_OF_ONE else 3,  # per-sample arguments of one row
            max_side=2 * SIDE,
            side_multiple=SIDE,
            contents=IN_RANGE,
        ),
        tolerances=[CROSS_DEVICE, BATCH, *([] if referenced is None else [referenced.rule])],
        keeps_memory_format=False,  # neither library promises it for its augmentations
        needs=(found.qualified,),
        counterpart=_counterpart(found),
        max_examples=EXAMPLES,
        cpu_paths=False,  # what it checks is placement and module state, not the cpu's kernels
        not_comparable="draws with the device's generator" if device_random else "",
        # noise drawn per call for the whole input: alone, a sample draws other noise
        batch_consistent="" if device_random or found.qualified in UNBATCHED else BATCHED.get(library, ""),
    )


def specs(module_name: str) -> list[OpSpec]:
    return [spec_of(found) for found in discover(module_name) if not found.reason]


def coverage(module_names: list[str]) -> dict[str, Any]:
    """Found, swept and skipped (by reason) per module, for the header and the report."""
    report: dict[str, Any] = {}
    for name in module_names:
        found = discover(name)
        skipped: dict[str, list[str]] = {}
        for entry in found:
            if entry.reason:
                skipped.setdefault(entry.reason, []).append(entry.name)
        report[name] = {"found": len(found), "swept": sum(1 for f in found if not f.reason), "skipped": skipped}
    return report


def parse(text: str) -> list[str]:
    """`--sweep`'s value: comma-separated module names, "default" standing for DEFAULT_MODULES."""
    found: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        for name in DEFAULT_MODULES if part == "default" else (part,) if part else ():
            if name not in found:
                found.append(name)
    return found


def tests(module_names: list[str]) -> dict[str, Callable[..., None]]:
    """`test_<op>` for every swept class of the modules (cases/test_sweep.py)."""
    source = caller_file(1)
    found: dict[str, Callable[..., None]] = {}
    for name in module_names:
        for spec in specs(name):
            found[f"test_{spec.name}"] = spec.test(source=source)
    return found
