"""A check never calls the op: it yields requests (conformance.checks.requests) and the engine runs them.

The engine's driver sends each request's result back to the check, raises what a request raised at the check's
`yield`, computes another check's verdict once, and refuses what it does not run; an import-linter contract keeps
checks/ away from the modules that call ops (tests/test_layers.py runs it).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from conformance import OpSpec, Rule, Tolerance
from conformance.checks.registry import REGISTRY, Check, CheckOutcome, Verdict, always, verdict
from conformance.checks.requests import Call, Request, Steps, call, first_case, parameters
from conformance.devices.runs import OpRun
from conformance.devices.targets import CPU
from conformance.engine.cases import CaseCache
from conformance.engine.check_runs import Runner, drive
from conformance.spec.opspec import ModuleOp
from conformance.spec.recipes import Case, Recipe

CALLS: list[torch.Tensor] = []


def _doubled(image: torch.Tensor, params: dict) -> torch.Tensor:
    CALLS.append(image)
    return image * 2


SPEC = OpSpec(
    name="doubled",
    call=_doubled,
    reference=lambda image, case: image * 2,
    dtypes=("float32",),
    modes=("default",),
    params=lambda recipe, mode: None,
    tolerances=[Rule(Tolerance("any", reason="test"))],
)
RECIPE = Recipe(batch=(), channels=1, height=2, width=3, dtype="float32", layout="contiguous", content="noise", seed=0)
CASE = Case("doubled", RECIPE, {})


def _refuses(params: dict) -> torch.nn.Module:
    raise ValueError("refused")


REFUSING = OpSpec(
    name="refusing", module=ModuleOp(build=_refuses, sample=lambda module, image, params: {}), reference=None, dtypes=()
)


def test_the_driver_sends_each_result_back_and_raises_at_the_yield():
    def steps() -> Steps[tuple[OpRun, str]]:
        run = yield from call(SPEC, torch.ones(1, 2, 2), CASE, CPU)
        try:
            yield from parameters(REFUSING, run.output, CASE)
        except ValueError as exc:
            return run, str(exc)
        return run, "no raise"

    CALLS.clear()
    run, said = drive(steps())
    assert len(CALLS) == 1 and torch.equal(run.output, torch.full((1, 2, 2), 2.0))
    assert said == "refused", said  # the sampler's build raised where the check asked, and the check went on


def test_a_request_the_engine_does_not_run_is_refused_by_name():
    class Unknown(Request):
        pass

    def steps() -> Steps[None]:
        yield Unknown()

    with pytest.raises(TypeError, match="Unknown"):
        drive(steps())


def test_a_check_that_yields_gets_its_run_from_the_engine_and_another_checks_verdict_once(monkeypatch):
    asked: list[Request] = []

    def check_twice(ctx):
        reference = yield from verdict(ctx, "reference")
        again = yield from call(ctx.spec, ctx.source.on(ctx.target), ctx.case, ctx.target, ctx.sampled)
        same = bool(np.array_equal(again.output.numpy(), ctx.run.output.numpy()))
        return CheckOutcome("twice", same and reference is not None and reference.passed)

    def recorded(ctx):
        steps = check_twice(ctx)
        reply = None
        while True:  # the engine's driver sees every request: recorded here on the way through
            try:
                request = steps.send(reply)
            except StopIteration as done:
                return done.value
            asked.append(request)
            reply = yield request

    monkeypatch.setitem(REGISTRY, "twice", Check("twice", 999, "itself", "twice", always, recorded))
    cache = CaseCache()
    CALLS.clear()
    ctx = cache.context(SPEC, CASE, CPU, "default")
    found = cache.outcome(ctx, "twice")
    assert found is not None and found.passed and found.against == "itself"
    assert [type(r) for r in asked] == [Verdict, Call]  # the reference's verdict was not made yet: the engine made it
    assert len(CALLS) == 2  # the case's run and the one the check asked for; the check itself called nothing
    assert ctx.outcomes["reference"] is not None and cache.outcome(ctx, "twice") is found  # each made once
    assert len(CALLS) == 2


def test_a_parameters_request_is_none_for_an_op_that_samples_nothing():
    assert drive(parameters(SPEC, torch.ones(1, 2, 2), CASE)) is None


def test_a_runner_counts_each_checks_first_cases_per_variant_and_another_runner_starts_afresh():
    variant = ("doubled", "float32", "default", "cpu")
    runner = Runner()
    taken = [runner.drive(first_case("types", variant, 2)) for _ in range(3)]
    assert taken == [True, True, False]
    assert runner.drive(first_case("flags", variant, 2))  # another check's count is its own
    assert runner.drive(first_case("types", ("doubled", "float64", "default", "cpu"), 2))  # and another variant's
    assert Runner().drive(first_case("types", variant, 2))  # and another run's


def test_the_documented_check_that_asks_for_a_second_call_works_as_written():
    """docs/adding-an-op.md's example, run as written: it passes a deterministic op and fails one that is not."""
    text = (Path(__file__).parents[1] / "docs" / "adding-an-op.md").read_text()
    snippet = re.search(r"```python\n(import torch\n\nfrom conformance\.checks\.registry .*?)```", text, re.S)
    assert snippet is not None, "the example is gone from docs/adding-an-op.md"
    try:
        exec(snippet[1], {})
        cache = CaseCache()
        assert cache.outcome(cache.context(SPEC, CASE, CPU, "default"), "twice").passed
        calls = iter(range(1, 100))
        drifting = dataclasses.replace(SPEC, name="drifting", call=lambda image, params: image + next(calls))
        cache = CaseCache()
        found = cache.outcome(cache.context(drifting, Case("drifting", RECIPE, {}), CPU, "default"), "twice")
        assert not found.passed and found.message == "a second call gives other values"
    finally:
        REGISTRY.pop("twice", None)


def test_a_call_a_check_asks_for_is_cut_at_the_runs_case_timeout():
    import time

    def hangs(image: torch.Tensor, params: dict) -> torch.Tensor:
        time.sleep(5)
        return image

    sleeping = dataclasses.replace(SPEC, name="hangs", call=hangs)
    started = time.monotonic()
    run = Runner(timeout_s=0.2).drive(call(sleeping, torch.ones(1, 2, 2), CASE, CPU))
    assert run.timed_out and "--case-timeout" in (run.error or ""), run.error
    assert time.monotonic() - started < 4
