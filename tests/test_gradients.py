"""Gradient checks: a backward that drops a term fails `gradient` on every target; a backward that is right on
the cpu and wrong on a device fails that device's `gradient` and `gradient_device`, not the cpu's."""

from pathlib import Path

import numpy as np
import pytest
import torch

from conformance.devices.backward import vjp_by_walking
from conformance.spec.gradients import Gradient
from conformance.store.reader import read_outcomes

PLANTED = Path(__file__).with_name("planted_ops.py").read_text()
CASES = '''
import dataclasses
import torch
from conformance import Gradient
from planted_ops import *


class Poly(torch.autograd.Function):
    """r + r*r/2, elementwise; its backward is right unless `how` plants a bug."""

    @staticmethod
    def forward(ctx, r, how):
        ctx.save_for_backward(r)
        ctx.how = how
        return r + 0.5 * r * r

    @staticmethod
    def backward(ctx, grad):
        (r,) = ctx.saved_tensors
        if ctx.how == "drops-a-term" or (ctx.how == "device-only" and grad.device.type != "cpu"):
            return grad, None  # the r * grad term is missing
        return grad * (1 + r), None


def poly(how):
    def call(image, params):
        return Poly.apply(good_resize(image, params), how)
    return call


def poly_reference(image, case):
    r = bilinear_reference(image, case)
    return r + 0.5 * r * r


def spec(name, how):
    made = make_spec(name, poly(how), dtypes=("float32", "float64"))
    return dataclasses.replace(made, reference=poly_reference, gradient=Gradient())


test_good = spec("good", "right").test()
test_drops = spec("drops", "drops-a-term").test()
test_device_only = spec("device_only", "device-only").test()
'''
RUN = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=6"]


@pytest.fixture
def project(pytester):
    pytester.makepyfile(planted_ops=PLANTED, test_cases=CASES)
    return pytester


def _failed(result) -> set[str]:
    return {line.split(" ", 2)[1] for line in result.stdout.lines if line.startswith("FAILED ")}


def test_a_backward_that_drops_a_term_fails_the_gradient_check_on_every_dtype(project):
    result = project.runpytest_inprocess(*RUN, "--targets=cpu")
    assert _failed(result) == {
        "test_cases.py::test_drops[cpu-float32-bilinear-gradient]",
        "test_cases.py::test_drops[cpu-float64-bilinear-gradient]",
    }
    rows, _ = read_outcomes(project.path / "reports" / "latest")
    gradient = [r for r in rows if r.get("kind") == "outcome" and r["check"] == "gradient"]
    assert {r["op"] for r in gradient if r["verdict"] == "pass"} >= {"good", "device_only"}
    failing = [r for r in gradient if r["verdict"] == "fail"]
    assert failing and all(r["op"] == "drops" for r in failing)
    assert "off the central differences of the reference" in failing[0]["message"]


def test_a_backward_wrong_only_on_a_device_fails_there_and_names_the_side(project):
    result = project.runpytest_inprocess(*RUN, "--targets=cpu,vcuda:0", "-k", "device_only or good")
    assert _failed(result) == {
        f"test_cases.py::test_device_only[vcuda:0-{dtype}-bilinear-{check}]"
        for dtype in ("float32", "float64")
        for check in ("gradient", "gradient_device")
    }
    rows, _ = read_outcomes(project.path / "reports" / "latest")
    device = [
        r for r in rows if r.get("kind") == "outcome" and r["check"] == "gradient_device" and r["verdict"] == "fail"
    ]
    assert device and "this target's is off the estimate, cpu's is not" in device[0]["message"]
    kept = [r for r in device if r.get("artifact")]
    assert kept, "a failing gradient case keeps its arrays"
    with np.load(project.path / "reports" / "latest" / kept[0]["artifact"]) as arrays:
        assert {"gradient", "cpu_gradient"} <= set(arrays.files)
        assert not np.allclose(arrays["gradient"], arrays["cpu_gradient"])


def test_the_walker_gives_what_the_autograd_engine_gives():
    """On the cpu both run; the walker must agree on a graph with broadcasting, a reused input, a view and a
    Python autograd.Function with a non-tensor argument between tensors."""

    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, factor, b):
            ctx.factor = factor
            return a * factor + b

        @staticmethod
        def backward(ctx, grad):
            return grad * ctx.factor, None, grad

    x = torch.rand(2, 3, 5, 4, dtype=torch.float64)
    bias = torch.rand(3, 1, 1, dtype=torch.float64, requires_grad=True)

    def f(t):
        y = torch.nn.functional.interpolate(t, size=(7, 3), mode="bicubic", antialias=True)
        return Scale.apply(y * t.mean() + bias, 1.5, y[..., 1:, :].sum(-2, keepdim=True)).clamp(min=0.2)

    cotangent = torch.rand(2, 3, 7, 3, dtype=torch.float64)
    engine_in = x.clone().requires_grad_(True)
    (expected,) = torch.autograd.grad(f(engine_in), engine_in, cotangent)
    walked_in = x.clone().requires_grad_(True)
    output = f(walked_in)
    with torch.no_grad():
        found = vjp_by_walking(output, cotangent, walked_in)
    torch.testing.assert_close(found, expected, rtol=0, atol=1e-12)


def test_a_virtual_tensor_indexed_with_basic_indices_keeps_its_autograd_graph():
    from conformance.devices.placement import PlacementLog
    from conformance.devices.virtual.state import NotEmulatable
    from conformance.devices.virtual.tensor import host_tensor
    from conformance.devices.virtual_target import virtual_targets

    target = virtual_targets(1)[0]
    host = torch.rand(1, 3, 4, 5)
    x = target.put(host).requires_grad_(True)
    with target.active(PlacementLog(target.device)):
        y = x[..., 1, :, 2:] * 2 + x[0, None, 2, :, 2:]
        assert y.grad_fn is not None
        with torch.no_grad():
            found = vjp_by_walking(y, target.put(torch.ones(1, 4, 3)), x)
        with pytest.raises(NotEmulatable, match="advanced"):
            _ = x[:, torch.tensor([0, 0])]
    reference = host.clone().requires_grad_(True)
    (reference[..., 1, :, 2:] * 2 + reference[0, None, 2, :, 2:]).backward(torch.ones(1, 4, 3))
    assert found.device == target.device
    torch.testing.assert_close(host_tensor(found), reference.grad)


def _pixelwise(name, call, reference, dtype):
    """A parameterless per-pixel op that promises a gradient, for checks of the gradient machinery itself."""
    from conformance import OpSpec, Rule, Tolerance

    return OpSpec(
        name=name,
        call=call,
        reference=reference,
        dtypes=(dtype,),
        modes=("default",),
        params=lambda recipe, mode: None,
        tolerances=[Rule(Tolerance("any", reason="test"))],
        gradient=Gradient(),
    )


def _recipe(channels, side, dtype):
    from conformance.spec.recipes import Recipe

    return Recipe(
        batch=(), channels=channels, height=side, width=side, dtype=dtype, layout="contiguous", content="noise", seed=0
    )


def test_kinks_are_found_and_left_out_of_the_cotangent():
    from conformance.checks.gradients import make_probe
    from conformance.engine.check_runs import drive
    from conformance.spec.recipes import Case

    def doubled(image, params):
        return (image * 2).clamp(0, 1)

    spec = _pixelwise("brightness", doubled, lambda image, case: np.clip(image * 2, 0, 1), "float64")
    recipe = _recipe(1, 2, "float64")
    values = np.array([[[0.5, 0.2], [0.7, 0.1]]])  # 0.5 doubles to the clamp's edge exactly
    probe = drive(make_probe(spec, Case("brightness", recipe, {}), values, None))
    assert probe.left_out == 1 and probe.cotangent[0, 0, 0] == 0.0 and probe.cotangent[0, 1, 0] != 0.0


def test_a_gradient_promise_is_checked_when_declared():
    with pytest.raises(ValueError, match="why="):
        Gradient(estimate="forward")
    with pytest.raises(ValueError, match="floating"):
        Gradient(dtypes=("uint8",))
    with pytest.raises(ValueError, match="one of"):
        Gradient(estimate="autograd")


def test_the_harness_puts_the_cotangent_on_the_device_outside_the_watched_call():
    """On a real GPU the gradient check's own upload of the cotangent was logged as the op's image-sized host
    data (48 items on an H200).  The meta device stands in for a real one here: the placement log sees a copy to
    it as it sees one to a GPU, which a virtual device's copy never shows."""
    from conformance.devices.backward import run_vjp
    from conformance.devices.targets import Target
    from conformance.spec.recipes import Case, materialize

    spec = _pixelwise("double", lambda image, params: image * 2, lambda image, case: image * 2, "float32")
    recipe = _recipe(3, 16, "float32")
    meta = Target("meta", "meta")
    run = run_vjp(spec, meta.put(materialize(recipe)), Case("double", recipe, {}), meta, None, torch.ones(3, 16, 16))
    assert run.error is None, run.error
    assert run.output.device.type == "meta" and run.output.shape == (3, 16, 16)
    assert run.log is not None and run.log.transfers == [], run.log.transfers
