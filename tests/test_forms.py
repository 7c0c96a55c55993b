"""The `module` and `history` checks on synthetic ops: what passes, what fails, and what each failure says."""

import dataclasses

import pytest
import torch
from planted_ops import bilinear_reference as spec_reference
from planted_ops import good_resize, make_spec, shifted_resize

from conformance.checks import history
from conformance.checks.registry import REGISTRY
from conformance.devices.targets import CPU
from conformance.devices.virtual_target import virtual_targets
from conformance.engine.cases import CaseCache, check_case
from conformance.spec.forms import Counterpart, ModuleOp
from conformance.spec.recipes import Case, Recipe


class Resizing(torch.nn.Module):
    """The module form of planted_ops' resize: `call` is what forward does with the params."""

    def __init__(self, size, call=good_resize):
        super().__init__()
        self.size, self.call = size, call

    def forward(self, image):
        return self.call(image, {"size": self.size})


class RemembersItsFirstSize(Resizing):
    """A module that keeps the first input's size and resizes every later input as if it had it."""

    def forward(self, image):
        if not hasattr(self, "first"):
            self.first = image.shape[-2:]
        out = good_resize(image, {"size": self.size})
        return out if image.shape[-2:] == self.first else out.flip(-1)


def run(spec, target=CPU, dtype="float32", cache=None):
    recipe = Recipe(height=17, width=23, channels=3, batch=(2,), dtype=dtype, content="noise", seed=1)
    result = check_case(spec, Case(spec.name, recipe, {"size": [11, 30]}), target, cache or CaseCache(), "bilinear")
    return {o.check: o for o in result.outcomes}


def with_counterpart(call, module_class=Resizing, module_call=good_resize):
    build = ModuleOp(build=lambda params: module_class(params["size"], module_call))
    return dataclasses.replace(make_spec("formed", call), counterpart=Counterpart(name="Resizing", module=build))


@pytest.mark.parametrize("target", [CPU, virtual_targets(2)[1]], ids=["cpu", "vcuda:1"])
def test_two_forms_that_agree_pass_both_checks(target):
    outcomes = run(with_counterpart(good_resize), target)
    assert outcomes["module"].passed and outcomes["history"].passed
    assert outcomes["history"].details["sequence"][-1] == {"input": "this case", "same": True}
    labels = [step["input"] for step in outcomes["history"].details["sequence"]]
    assert labels == ["23x17", "19x24, batch 3", "uint8", "this case"]


def test_a_module_that_calls_its_function_wrongly_fails_the_module_check_on_values():
    outcomes = run(with_counterpart(good_resize, module_call=shifted_resize))
    module = outcomes["module"]
    assert not module.passed and module.cause == "forms values" and module.metrics.max_abs > 0
    assert "the function and the module Resizing, same params" in module.message
    assert "identical" in module.message  # no rule for the check: identical outputs expected
    assert outcomes["reference"].passed  # the function itself is right


def test_one_form_raising_where_the_other_returns_fails_the_module_check():
    def raising(image, params):
        raise ValueError("no")

    outcomes = run(with_counterpart(good_resize, module_call=raising))
    assert not outcomes["module"].passed and outcomes["module"].cause == "forms raises"
    assert "raises ValueError" in outcomes["module"].message


def test_a_module_that_keeps_its_first_size_fails_the_history_check_not_the_others():
    spec = make_spec("stateful", good_resize)
    spec = dataclasses.replace(spec, call=None, module=ModuleOp(build=lambda p: RemembersItsFirstSize(p["size"])))
    outcomes = run(spec)
    found = outcomes["history"]
    assert not found.passed and found.cause == "state values"
    assert "one instance called on 23x17, then 19x24, batch 3, then uint8, then this case: on 19x24, batch 3" in (
        found.message
    )
    assert outcomes["reference"].passed and outcomes["invariants"].passed  # a fresh instance is right


class DrawsForItsFirstSize(Resizing):
    """A random module whose sampler keeps what it computed for the first input's size (kornia 0.6.9's
    LongestMaxSize kept its first output size): replayed parameters hide it, its own draws do not."""

    def draw(self, shape):
        if not hasattr(self, "first"):
            self.first = list(shape[-2:])
        return {"source_size": torch.tensor(self.first)}

    def forward(self, image, params=None):
        return good_resize(image, {"size": self.size})


def test_a_random_module_that_keeps_what_it_drew_first_fails_the_history_check():
    module = ModuleOp(
        build=lambda p: DrawsForItsFirstSize(p["size"]),
        sample=lambda module, image, params: module.draw(image.shape),
        forward=lambda module, image, params, sampled: module(image, params=sampled),
    )
    spec = dataclasses.replace(make_spec("draws", good_resize), call=None, module=module, reference=None)
    found = run(spec)["history"]
    assert not found.passed and found.cause == "state sampled"
    assert "on its own draw for this case, it draws source_size = [23, 17] where a fresh instance draws [17, 23]" in (
        found.message
    )
    assert [step["same"] for step in found.details["sequence"]] == [True, True, True, True, False]


def test_history_checks_only_the_first_cases_of_a_variant_on_a_target():
    """The run's engine counts them (a case cache's runner): another run in the same process starts afresh."""
    spec, cache = with_counterpart(good_resize), CaseCache()
    for _ in range(history.HISTORY_CASES):
        cache.begin_group(object())  # another group: the case is made and checked again, counted again
        assert run(spec, cache=cache)["history"].passed
    cache.begin_group(object())
    assert "history" not in run(spec, cache=cache)  # nothing to check: this variant's first cases were checked
    assert run(spec, cache=CaseCache())["history"].passed  # another run's count is its own


def test_a_counterpart_the_imported_library_lacks_skips_both_checks_naming_its_version():
    spec = with_counterpart(good_resize)
    missing = dataclasses.replace(spec.counterpart, name="torchvision.transforms.v2.NoSuchResize")
    spec = dataclasses.replace(spec, counterpart=missing)
    for check in ("module", "history"):
        reason = REGISTRY[check].unmet(spec)
        assert reason is not None and "torchvision.transforms.v2.NoSuchResize" in reason and "lacks" in reason
    assert REGISTRY["module"].unmet(with_counterpart(good_resize)) is None


def test_a_sampler_that_refuses_an_earlier_input_skips_that_input_not_the_item():
    """kornia 0.7's illumination samplers raise on a batch where no sample is drawn: the history check leaves that
    earlier input out (nothing to replay) and still holds the reused instance to a fresh one on the others."""

    def sample(module, image, params):
        if image.shape[0] != 2:
            raise RuntimeError("cannot reshape tensor of 0 elements")
        return {"gain": 1.0}

    module = ModuleOp(build=lambda p: Resizing(p["size"]), forward=lambda m, image, p, sampled: m(image), sample=sample)
    spec = dataclasses.replace(make_spec("refusing", good_resize), call=None, module=module)
    spec = dataclasses.replace(spec, reference=lambda image, case, sampled: spec_reference(image, case))
    history = run(spec)["history"]
    assert history.passed
    steps = [step["input"] for step in history.details["sequence"]]
    assert steps == ["23x17", "uint8", "this case", "its own draw for this case"]
