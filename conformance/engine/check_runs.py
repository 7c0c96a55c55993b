"""Running what a check asks for (conformance.checks.requests): the only place a check's extra runs are made.

A check that needs more than the case's run yields requests; a `Runner` runs each through conformance.devices
(the op's call, its backward, a module's own sampler, a parameter draw) under the run's per-call limit, answers
whether a case is among a variant's first ones the check looks at (the counts are the runner's, so one run's do
not leak into another's in the same process), or computes another check's verdict, and sends the result back.  An
exception a request raises (a sampler that refuses the input) is raised at the check's `yield`, where a direct call
would have raised it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, TypeVar

from conformance.checks.context import CaseContext
from conformance.checks.registry import CheckOutcome, Verdict
from conformance.checks.requests import Backward, Call, Draws, FirstCase, OwnDraw, Parameters, Request, Steps
from conformance.devices.backward import run_vjp
from conformance.devices.calls import draws, run_op, sample_on, sample_params

T = TypeVar("T")
Verdicts = Callable[[CaseContext, str], "CheckOutcome | None"]


class Runner:
    """Runs checks' requests for one run: `timeout_s` is the per-call limit (--case-timeout), `verdicts` the engine's
    outcome of a check on a context (None: steps that ask for none)."""

    def __init__(self, timeout_s: float = 0.0, verdicts: Verdicts | None = None) -> None:
        self.timeout_s = timeout_s
        self.verdicts = verdicts
        self._taken: dict[tuple[str, tuple[str, str, str, str]], int] = {}  # (check, variant) -> cases looked at

    def fulfil(self, request: Request) -> Any:
        """What one request gives."""
        if isinstance(request, Call):
            return run_op(
                request.spec,
                request.image,
                request.case,
                request.target,
                request.sampled,
                move_module=request.move_module,
                timeout_s=self.timeout_s if request.timed else 0.0,
                then=request.then,
            )
        if isinstance(request, Backward):
            return run_vjp(
                request.spec,
                request.image,
                request.case,
                request.target,
                request.sampled,
                request.cotangent,
                timeout_s=self.timeout_s,
            )
        if isinstance(request, OwnDraw):
            return sample_on(request.spec, request.image, request.case, request.target, timeout_s=self.timeout_s)
        if isinstance(request, Parameters):
            return sample_params(request.spec, request.image, request.case)
        if isinstance(request, Draws):
            return draws(request.spec, request.params, request.image, request.seeds)
        if isinstance(request, FirstCase):
            return self._take(request)
        if isinstance(request, Verdict):
            if self.verdicts is None:
                raise TypeError(f"steps run without the engine's verdicts asked for {request.check!r}'s")
            return self.verdicts(request.ctx, request.check)
        raise TypeError(f"a check asked for {type(request).__name__}, which the engine does not run")

    def _take(self, request: FirstCase) -> bool:
        key = (request.check, request.variant)
        taken = self._taken.get(key, 0)
        if taken >= request.limit:
            return False
        self._taken[key] = taken + 1
        return True

    def drive(self, steps: Steps[T]) -> T:
        """Run a check's (or a helper's) steps to the end: each request fulfilled, its result sent back."""
        reply: Any = None
        raised: Exception | None = None
        while True:
            try:
                request = steps.send(reply) if raised is None else steps.throw(raised)
            except StopIteration as done:
                found: T = done.value
                return found
            raised = None
            try:
                reply = self.fulfil(request)
            except Exception as exc:  # noqa: BLE001 - raised where the check asked, as a direct call would be
                reply, raised = None, exc

    def finished(self, found: T | Generator[Request, Any, T]) -> T:
        """A check's result: as it returned it, or its steps driven to the end."""
        if isinstance(found, Generator):
            return self.drive(found)
        return found


def drive(steps: Steps[T]) -> T:
    """Steps driven by a runner of their own (no time limit, no verdicts): for a helper outside a run."""
    return Runner().drive(steps)
