"""The `ambient` relation: the op gives the same answer under the modes users' code runs it in.

Training and inference code calls image ops inside `torch.autocast` (bfloat16 on the cpu, float16 on cuda), inside
`torch.inference_mode()`, and with `torch.use_deterministic_algorithms(True)`.  Each changes which kernels run and in
which dtype: under autocast a matmul or a convolution computes in the lower precision and returns it, so an op that
builds a sampling grid with a matmul samples at half-precision positions, and one that convolves hands the lower
dtype back to a caller who gave float32.  Each case is run once more under each mode, on the same target with the
same (replayed or seeded) parameters, and must give what the plain call gives:

- autocast (float32 images only: it changes nothing else): the same dtype, and values within two roundings of the
  autocast dtype per step (the uncalibrated default for that dtype), or the same error class;
- inference_mode: the same kernels run, so identical values (not on a virtual device, whose emulation cannot run
  inside it);
- deterministic algorithms (warnings only, as users set them to find the ops without such an implementation): the
  same values under the op's `cross_device` tolerance (another kernel may sum in another order).

A spec's rule scoped to `ambient` replaces each default.  Which autocast a target gets is its class's
(`Target.autocast()`: a virtual cuda device gets cuda's float16).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch

from conformance.checks.context import CaseContext
from conformance.checks.forms import IDENTICAL, differs, eager_tensor_call, first_cases, usable
from conformance.checks.registry import Check, CheckOutcome, register
from conformance.checks.requests import Steps, call
from conformance.devices.targets import Target
from conformance.spec.tolerances import UNCALIBRATED, Tolerance, pick_tolerance

# Cases of a variant checked on a target, per process: a mode's path differs on the first cases that reach it
AMBIENT_CASES = 10


@contextlib.contextmanager
def deterministic() -> Iterator[None]:
    """`torch.use_deterministic_algorithms(True, warn_only=True)` for the block, the previous setting restored."""
    enabled = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an op without a deterministic kernel says so: not this relation's finding
            yield
    finally:
        torch.use_deterministic_algorithms(enabled, warn_only=warn_only)


def half_precision(dtype: torch.dtype) -> Tolerance:
    """The uncalibrated default of the autocast dtype (a few of its roundings)."""
    name = str(dtype).removeprefix("torch.")
    return pick_tolerance(UNCALIBRATED, check="ambient", dtype=name, mode="*", target="*")


@dataclass(frozen=True)
class Ambient:
    """One mode: how to enter it on a target, which images it changes anything for, and the default tolerance."""

    name: str
    enter: Callable[[Target], AbstractContextManager[Any]]
    dtypes: tuple[str, ...] | None  # the image dtypes it applies to (None: every one)
    default: Callable[[CaseContext], Tolerance]
    on: Callable[[Target], bool] = lambda target: True  # the targets that can run under it


MODES = (
    Ambient(
        "autocast",
        lambda target: target.autocast(),
        ("float32",),
        lambda ctx: half_precision(ctx.target.autocast_dtype),
    ),
    Ambient(
        "inference_mode",
        lambda target: torch.inference_mode(),
        None,
        lambda ctx: IDENTICAL,
        lambda target: target.inference_mode,
    ),
    Ambient("deterministic", lambda target: deterministic(), None, lambda ctx: ctx.tolerance("cross_device")),
)


def check_ambient(ctx: CaseContext) -> Steps[CheckOutcome | None]:
    if ctx.case.recipe.empty or not usable(ctx.run):
        return None
    dtype = ctx.case.recipe.dtype
    modes = [mode for mode in MODES if (mode.dtypes is None or dtype in mode.dtypes) and mode.on(ctx.target)]
    if not modes or not (yield from first_cases(ctx, "ambient", AMBIENT_CASES)):
        return None
    tried: list[str] = []
    for mode in modes:
        with mode.enter(ctx.target):  # open while the engine runs the call: its input is made under the mode too
            run = yield from call(ctx.spec, ctx.source.on(ctx.target), ctx.case, ctx.target, ctx.sampled)
        if not usable(run):
            continue
        tried.append(mode.name)
        found = differs(ctx, "ambient", run, ctx.run, "the plain call", mode.default(ctx))
        if found is not None:
            label = mode.name if mode.name != "autocast" else f"autocast({ctx.target.autocast_dtype})"
            found.message = f"under {label}: {found.message}"
            found.cause, found.details = f"{mode.name} {found.cause}", {"modes": tried}
            return found
    return CheckOutcome("ambient", True, details={"modes": tried}) if tried else None


register(
    Check(
        "ambient",
        71,
        "plain call",
        "the op under torch.autocast (float32 images), inference_mode and deterministic algorithms gives the plain "
        "call's dtype and values (autocast: within its dtype's roundings)",
        eager_tensor_call,
        check_ambient,
        judges_values=True,
        relation=True,
        nothing="the op raised in each case or no case was made, or "
        f"{AMBIENT_CASES} cases of the variant were checked on this target already",
    )
)
