"""Placement bugs are caught on vcuda:1 with a message naming the cause; correct versions pass."""

import pytest
from planted_placement import (
    BufferGain,
    PlainAttributeGain,
    StaleDeviceGain,
    gain_via_host,
    gain_with_device,
    gain_without_device,
    make_gain_spec,
    random_gain_spec,
)

from conformance.devices.targets import CPU
from conformance.devices.virtual_target import virtual_targets
from conformance.engine.cases import CaseCache, check_case
from conformance.spec.opspec import ModuleOp
from conformance.spec.recipes import Case, Recipe

VCUDA1 = virtual_targets(2)[1]
CASE = Case("planted", Recipe(height=6, width=7, channels=3, batch=(2,), dtype="float32", seed=3), {})


def outcomes(spec, target=VCUDA1, case=CASE):
    result = check_case(spec, case, target, CaseCache(), "gain")
    return {o.check: o for o in result.outcomes}


def module_spec(cls):
    return make_gain_spec("planted", module=ModuleOp(build=lambda params: cls()))


@pytest.mark.parametrize(
    "spec",
    [make_gain_spec("planted", call=gain_with_device), module_spec(BufferGain), random_gain_spec(replay=True)],
    ids=["function", "buffer", "random-replayed"],
)
@pytest.mark.parametrize("target", [CPU, VCUDA1], ids=["cpu", "vcuda:1"])
def test_correct_versions_pass_every_check(spec, target):
    found = outcomes(spec, target)
    assert all(o.passed for o in found.values()), {k: o.message for k, o in found.items()}
    expected = {"error", "placement", "invariants", "reference"}
    if target.is_accelerator:
        expected |= {"cross_device", "constant_upload"} | ({"unmoved"} if spec.module else set())
    if spec.module and spec.module.sample:
        expected |= {"sampling"}  # on every target: the module's own sampler
    if spec.module:
        expected |= {"history"}  # on every target: one instance on earlier inputs, then the case
    assert set(found) == expected


def test_a_helper_that_builds_a_tensor_without_device_is_a_placement_failure_naming_where():
    found = outcomes(make_gain_spec("planted", call=gain_without_device))
    assert set(found) == {"placement"}  # not an "error": the op mixed devices
    message = found["placement"].message
    assert "Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cpu!" in message
    assert (
        "(in aten.mul.Tensor at " in message
        and "planted_placement.py" in message
        and "in gain_without_device" in message
    )
    assert "was created at " in message and "in _gains without device=" in message
    assert all(o.passed for o in outcomes(make_gain_spec("planted", call=gain_without_device), CPU).values())


def test_a_plain_tensor_attribute_left_on_the_cpu_is_named():
    found = outcomes(module_spec(PlainAttributeGain))
    message = found["placement"].message
    assert not found["placement"].passed
    assert "PlainAttributeGain.gains (a plain tensor attribute on cpu: Module.to() does not move it" in message


def test_a_table_stuck_on_cuda0_after_to_cuda1_is_named():
    message = outcomes(module_spec(StaleDeviceGain))["placement"].message
    assert "found at least two devices, cuda:0 and cuda:1!" in message
    assert "StaleDeviceGain.gains (a plain tensor attribute on cuda:0" in message
    # on vcuda:0 the same module happens to work: only a non-default index shows the bug
    assert all(o.passed for o in outcomes(module_spec(StaleDeviceGain), virtual_targets(2)[0]).values())


def test_an_image_round_trip_through_the_host_is_a_placement_failure_even_with_right_values():
    found = outcomes(make_gain_spec("planted", call=gain_via_host))
    placement = found["placement"]
    assert found["reference"].passed and found["cross_device"].passed
    assert not placement.passed
    assert (
        "implicit device -> host copy of data derived from the input image [2, 3, 6, 7] float32 (1008 bytes)"
        in placement.message
    )
    assert "implicit host -> device copy of data derived from the input image [2, 3, 6, 7] float32" in placement.message
    assert "in gain_via_host" in placement.message
    directions = [t["direction"] for t in placement.details["transfers"]]
    assert directions == ["to_host", "to_device"]


def test_a_constant_copied_per_call_is_a_warning_not_a_placement_failure():
    found = outcomes(make_gain_spec("planted", call=lambda image, params: image * _host_gains_to_device(image)))
    assert found["placement"].passed
    assert [(t["shape"], t["source"]) for t in found["placement"].details["transfers"]] == [([3, 1, 1], "constant")]
    upload = found["constant_upload"]
    assert not upload.passed and upload.warning
    assert "host -> device copy of a constant [3, 1, 1] float32 (12 bytes)" in upload.message


def _host_gains_to_device(image):
    from planted_placement import _gains

    return _gains(3).to(image.device)


def test_an_unmoved_module_is_held_to_its_promise():
    unmoved = outcomes(module_spec(BufferGain))["unmoved"]  # default promise: works or a clear device error
    assert unmoved.passed and unmoved.behaviour == "raises a device error"
    assert unmoved.details == {"promise": "device-error", "behaviour": "raises a device error"}

    class MovesItsTable(BufferGain):
        def forward(self, image):
            return image * self.gains.to(image.device)

    promised = make_gain_spec("planted", module=ModuleOp(build=lambda params: MovesItsTable(), unmoved="works"))
    assert outcomes(promised)["unmoved"].behaviour == "works" and outcomes(promised)["unmoved"].passed

    class UnclearError(BufferGain):
        def forward(self, image):
            if self.gains.device != image.device:
                raise ValueError("bad input")
            return image * self.gains

    unmoved = outcomes(module_spec(UnclearError))["unmoved"]
    assert not unmoved.passed and unmoved.behaviour == "raises an unclear error"
    assert "but raises an unclear error" in unmoved.message and "ValueError: bad input" in unmoved.message

    class WrongWhenUnmoved(BufferGain):
        def forward(self, image):
            return image * (self.gains.to(image.device) if self.gains.device == image.device else 1.0)

    unmoved = outcomes(module_spec(WrongWhenUnmoved))["unmoved"]
    assert not unmoved.passed and unmoved.behaviour == "returns other values"


def test_random_augmentations_replay_one_draw_on_every_target_and_sample_on_each_too():
    replayed = outcomes(random_gain_spec(replay=True))
    assert replayed["cross_device"].passed and replayed["cross_device"].metrics.max_abs == 0
    sampling = replayed["sampling"]
    assert sampling.passed and sampling.details["parameter_devices"] == {"gain": "cpu"}  # RandomGain samples on the cpu
    # without replay every call draws, seeded with the case: a --replay rerun draws the same again
    again = [check_case(random_gain_spec(replay=False), CASE, VCUDA1, CaseCache(), "gain") for _ in range(2)]
    assert next(r.arrays["output"].tolist() for r in again) == [r.arrays["output"].tolist() for r in again][1]


def test_every_layer_of_the_harness_is_its_own_frame_never_the_code_under_test():
    """Errors and device mixes point at the library or the user's op: a frame anywhere in the conformance
    package (every subpackage) is the harness's."""
    import conformance.checks.values
    import conformance.devices.calls
    import conformance.engine.session
    from conformance.devices.frames import is_library, is_plumbing

    for module in (conformance.engine.session, conformance.checks.values, conformance.devices.calls):
        assert is_plumbing(module.__file__) and not is_library(module.__file__), module.__name__
    assert is_library(__file__)  # a test module: code under test, as a user's op would be


def test_map_leaves_rebuilds_named_tuples_inside_lists():
    """kornia containers' parameters are a list of ParamItem(name, data) NamedTuples: each tensor in them must
    move to the target (before, a NamedTuple was one opaque leaf, and the replay mixed devices)."""
    from typing import NamedTuple

    from conformance.devices.trees import map_leaves

    class Item(NamedTuple):
        name: str
        data: dict

    moved = map_leaves(lambda v: v * 2 if isinstance(v, int) else v, [Item("a", {"x": 1, "y": [2]}), ("b", 3)])
    assert moved == [Item("a", {"x": 2, "y": [4]}), ("b", 6)] and isinstance(moved[0], Item)


def test_an_in_place_op_marks_the_tensor_it_wrote_into_as_image_data():
    """An op that writes image data into another tensor (a mutable aten schema) marks that tensor, even when the
    result the dispatcher hands back is another object (a wrapper), so its later copy counts as an image copy;
    an op that writes nothing leaves its first argument unmarked."""
    import torch

    from conformance.devices.placement import TAINT, PlacementLog

    for func, marked in ((torch.ops.aten.add_.Tensor, True), (torch.ops.aten.add.Tensor, False)):
        log = PlacementLog(torch.device("cpu"))
        image, buffer = torch.zeros(2, 2), torch.zeros(2, 2)
        log.taint(image)
        log.propagate(func, (buffer, image), {}, torch.zeros(2, 2))  # the result: another object than `buffer`
        assert (getattr(buffer, TAINT, None) is log.token) is marked, func
