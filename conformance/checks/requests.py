"""What a check asks the engine to run for it: a check never calls the op itself.

A check that needs more than the case's own run (the op on another input, with an argument changed, under
autocast, a backward pass, a random module's own draw, another check's verdict) is a generator: it yields one
request at a time and gets back what the engine ran (`run = yield from call(...)`), so the engine
(conformance.engine.check_runs) does every call, under its time limit, and the check compares what it is handed.
Where a later request depends on an earlier result (kornia's "both tensors or both tuples" retried together), the
check decides between yields.  The engine runs each request at once, in the check's thread, so a check may hold a
torch mode open around one (`with torch.enable_grad(): run = yield from call(...)`).

    Call       the op (or another spec: a form, a watched or kept build) on a target, its output or error as data
    Backward   the gradient of the op's output for a cotangent, on a target
    OwnDraw    a random module's own sampler on a target, the module moved there
    Parameters a random module's parameters drawn on the cpu with the case's seed (what the engine replays)
    Draws      a module's parameters drawn by the library's own sampler, once per seed (the axes relation)
    FirstCase  whether the case is among the first of its variant on its target that the check looks at

A check reads another check's verdict with `registry.verdict` (a request too: that check may need runs of its own).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

from conformance.devices.runs import OpRun, Sampling
from conformance.devices.targets import Target
from conformance.spec.opspec import OpSpec, Sampled
from conformance.spec.recipes import Case

T = TypeVar("T")


class Request:
    """Something a check asks the engine to run; the engine sends back its result."""


# A check's (or its helper's) steps: the requests it yields, and what it returns at the end.
Steps = Generator[Request, Any, T]


@dataclass(frozen=True, eq=False)
class Call(Request):
    """`spec` on `image` (already on `target`) for `case`; `sampled`: replayed parameters (None: a random module
    draws its own); `move_module=False`: a module op's module stays on the cpu; `then`: what to do with the output
    on the target, inside the call (its result is the run's output); `timed=False`: without the run's per-call
    limit (a host float64 evaluation)."""

    spec: OpSpec
    image: Any
    case: Case
    target: Target
    sampled: Sampled | None = None
    move_module: bool = True
    then: Callable[[Any], Any] | None = None
    timed: bool = True


@dataclass(frozen=True, eq=False)
class Backward(Request):
    """The gradient of <op(image), cotangent> with respect to `image`, on `target`."""

    spec: OpSpec
    image: torch.Tensor
    case: Case
    target: Target
    sampled: Sampled | None
    cotangent: torch.Tensor


@dataclass(frozen=True, eq=False)
class OwnDraw(Request):
    """A random module's sampler with the module moved to `target` and `image` there, seeded with the case."""

    spec: OpSpec
    image: torch.Tensor
    case: Case
    target: Target


@dataclass(frozen=True, eq=False)
class Parameters(Request):
    """A random module's parameters for `image`, drawn on the cpu with the case's seed (None: the op draws none);
    a sampler that raises raises at the check's `yield`."""

    spec: OpSpec
    image: torch.Tensor
    case: Case


@dataclass(frozen=True, eq=False)
class FirstCase(Request):
    """Whether this case is one of the first `limit` of its variant (op, dtype, mode) on its target that `check`
    looks at, counting it: a check that costs calls per case looks at a variant's first cases only, where what it
    looks for shows.  The engine keeps the counts, per run and process."""

    check: str
    variant: tuple[str, str, str, str]
    limit: int


@dataclass(frozen=True, eq=False)
class Draws(Request):
    """A module op's parameters for `image`, drawn on the cpu by the library's own sampler (kornia's
    `forward_parameters`, torchvision's `make_params`) with one instance built from `params`, once per seed."""

    spec: OpSpec
    params: dict[str, Any]
    image: torch.Tensor
    seeds: tuple[int, ...]


def call(
    spec: OpSpec,
    image: Any,
    case: Case,
    target: Target,
    sampled: Sampled | None = None,
    *,
    move_module: bool = True,
    then: Callable[[Any], Any] | None = None,
    timed: bool = True,
) -> Steps[OpRun]:
    """The run of a `Call`."""
    found = yield Call(spec, image, case, target, sampled, move_module, then, timed)
    assert isinstance(found, OpRun)
    return found


def backward(
    spec: OpSpec, image: torch.Tensor, case: Case, target: Target, sampled: Sampled | None, cotangent: torch.Tensor
) -> Steps[OpRun]:
    """The run of a `Backward`: the gradient in its output."""
    found = yield Backward(spec, image, case, target, sampled, cotangent)
    assert isinstance(found, OpRun)
    return found


def own_draw(spec: OpSpec, image: torch.Tensor, case: Case, target: Target) -> Steps[Sampling]:
    """What an `OwnDraw` drew, or its error."""
    found = yield OwnDraw(spec, image, case, target)
    assert isinstance(found, Sampling)
    return found


def parameters(spec: OpSpec, image: torch.Tensor, case: Case) -> Steps[Sampled | None]:
    """The parameters a `Parameters` drew."""
    found: Sampled | None = yield Parameters(spec, image, case)
    return found


def draws(spec: OpSpec, params: dict[str, Any], image: torch.Tensor, seeds: tuple[int, ...]) -> Steps[list[Any]]:
    """What a `Draws` drew, one value a seed."""
    found = yield Draws(spec, params, image, seeds)
    assert isinstance(found, list)
    return found


def first_case(check: str, variant: tuple[str, str, str, str], limit: int) -> Steps[bool]:
    """The answer to a `FirstCase`."""
    found = yield FirstCase(check, variant, limit)
    assert isinstance(found, bool)
    return found
