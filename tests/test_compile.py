"""Compiled targets: `cpu+compile` runs the op through torch.compile and compares it with the reference and
with eager on the cpu; a compile-only divergence lands on the compiled target's cells."""

from pathlib import Path

import pytest

from conformance.store.reader import read_outcomes

PLANTED = Path(__file__).with_name("planted_ops.py").read_text()
CASES = '''
import torch
import torch.nn.functional as nnf
from planted_ops import *

def shifted_when_compiled(image, params):
    """Right in eager; compiled, the sampling grid moves by a quarter pixel (a sub-pixel shift)."""
    out = good_resize(image.float(), params)
    if torch.compiler.is_compiling():
        out = 0.75 * out + 0.25 * torch.roll(out, 1, dims=-1)
    return out

test_good = make_spec("good", good_resize, dtypes=("float32",)).test()
test_subpixel = make_spec("subpixel", shifted_when_compiled, dtypes=("float32",)).test()
'''
RUN = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=8", "--targets=cpu,cpu+compile"]


@pytest.fixture
def project(pytester):
    pytester.makepyfile(planted_ops=PLANTED, test_cases=CASES)
    return pytester


def test_a_compile_only_shift_fails_the_compiled_target_and_not_eager(project):
    result = project.runpytest_inprocess(*RUN)
    failed = {line.split(" ", 2)[1] for line in result.stdout.lines if line.startswith("FAILED ")}
    assert failed == {
        "test_cases.py::test_subpixel[cpu+compile-float32-bilinear-reference]",
        "test_cases.py::test_subpixel[cpu+compile-float32-bilinear-compiled]",
    }
    rows, _ = read_outcomes(project.path / "reports" / "latest")
    compiled = [r for r in rows if r.get("kind") == "outcome" and r["check"] == "compiled" and r["verdict"] == "fail"]
    assert compiled and "this target is off the reference" in compiled[0]["message"]
    assert all(r["against"] == "eager" for r in compiled)
    out = result.stdout.str()
    assert "cpu+compile: torch.compile (Inductor, dynamic shapes) once per op and process" in out
    assert "compiled: 2 ops, " in out and "graph breaks" in out  # what compiling cost, as information


def test_compile_targets_are_opt_in_by_name_by_compile_or_by_all():
    from conformance.devices.compiled_target import compile_targets
    from conformance.devices.discovery import select
    from conformance.devices.targets import CPU

    available = [CPU, *compile_targets([CPU])]
    assert [t.name for t in select("default", available)] == ["cpu"]
    assert [t.name for t in select("compile", available)] == ["cpu+compile"]
    assert [t.name for t in select("all", available)] == ["cpu", "cpu+compile"]
    (compiled,) = select("cpu+compile", available)
    assert compiled.twin is CPU and compiled.device.type == "cpu" and not compiled.compared_with_cpu


def test_an_op_that_spent_its_compile_budget_is_not_run_compiled_and_the_skip_says_so(monkeypatch):
    """Before its budget is spent the op runs compiled, with what is left of the budget added to the case timeout;
    after, its cases are not run there, and the skip says why."""
    import torch

    from conformance.devices import compiled_target
    from conformance.devices.calls import run_op
    from conformance.devices.compiled_target import COMPILE_BUDGET_S, compile_targets
    from conformance.devices.targets import CPU
    from conformance.spec.opspec import OpSpec
    from conformance.spec.recipes import Case, Recipe

    spec = OpSpec(
        name="budgeted",
        call=lambda image, params: image * 2,
        reference=lambda image, case: image * 2,
        dtypes=("float32",),
    )
    (compiled,) = compile_targets([CPU])
    case = Case("budgeted", Recipe(height=4, width=4, seed=1))
    monkeypatch.setattr(compiled_target, "COMPILE_STATS", {"budgeted": {"seconds": COMPILE_BUDGET_S - 20.0}})
    assert compiled.not_run_reason(spec) is None
    assert compiled.call_timeout(spec, 5.0) == pytest.approx(25.0) and compiled.call_timeout(spec, 0.0) == 0.0
    monkeypatch.setattr(compiled_target, "COMPILE_STATS", {"budgeted": {"seconds": COMPILE_BUDGET_S}})
    run = run_op(spec, torch.ones(3, 4, 4), case, compiled)
    assert run.output is None and run.not_run is not None and "spent its compile budget" in run.not_run
    assert compiled.not_run_message(run.not_run).startswith("not run compiled: budgeted spent its compile budget")
    assert CPU.call_timeout(spec, 5.0) == 5.0 and CPU.not_run_reason(spec) is None
