"""Exact geometry catches a planted wrong implementation of each operation class (cases/test_geometry.py and
cases/test_geometry_random.py).

Every planted bug is the kind a real library or adapter makes: an index off by one, the wrong axis or
direction, the wrong border rule, a fill given in the library's own colour convention, a layout lost, the
image sent through the host.  Each is caught by the check that owns it, and the real implementation passes
every check on the same case, on the cpu and (for device libraries) on a virtual accelerator.
"""

import dataclasses

import pytest
import torch
import torchvision.transforms.v2.functional as F
from case_modules import case_module

from conformance.devices.targets import CPU
from conformance.devices.virtual_target import virtual_targets
from conformance.engine.cases import CaseCache, check_case
from conformance.spec.adapters import per_host_image, pillow_image_op
from conformance.spec.recipes import Case, Recipe

VCUDA1 = virtual_targets(2)[1]


geometry, random_geometry = case_module("test_geometry"), case_module("test_geometry_random")


def spec_named(name):
    return getattr(geometry, f"test_{name}").conformance_spec


def outcomes(spec, case, mode, target=CPU):
    return {o.check: o for o in check_case(spec, case, target, CaseCache(), mode).outcomes}


def assert_all_pass(spec, case, mode, targets):
    """Every check passes; a constant uploaded on every call (v1's rotation matrix) is only a warning."""
    for target in targets:
        found = outcomes(spec, case, mode, target)
        failing = {
            k: o.message for k, o in found.items() if not o.passed and not (k == "constant_upload" and o.warning)
        }
        assert found and not failing, (target.name, failing)


def caught(spec, call, case, mode, check="reference", target=CPU):
    planted = dataclasses.replace(spec, name="planted", call=call)
    outcome = outcomes(planted, case, mode, target)[check]
    assert not outcome.passed, f"{check} did not catch the planted bug"
    return outcome


def image(height=5, width=7, dtype="uint8", layout="contiguous", batch=(2,), channels=3, seed=11):
    return Recipe(height, width, channels=channels, batch=batch, dtype=dtype, layout=layout, content="noise", seed=seed)


DEVICE_TARGETS = (CPU, VCUDA1)


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_a_flip_off_by_one_column_and_a_flip_of_the_wrong_axis_are_caught(dtype, virtual_device):
    case = Case("planted", image(dtype=dtype), {})
    hflip, vflip = spec_named("hflip_tv2"), spec_named("vflip_tv2")
    assert_all_pass(hflip, case, "default", DEVICE_TARGETS)
    assert_all_pass(vflip, case, "default", DEVICE_TARGETS)
    off_by_one = caught(hflip, lambda img, p: F.horizontal_flip(img).roll(1, dims=-1), case, "default")
    assert "[tolerance 'exact']" in off_by_one.message and off_by_one.metrics.max_abs > 0
    caught(vflip, lambda img, p: F.horizontal_flip(img), case, "default")


def test_a_quarter_turn_in_the_wrong_direction_is_caught(virtual_device):
    """v1 is the real implementation here: on these shapes (sides differing by an even number, contiguous) it
    has none of its known issues, where v2's quarter turns return a transposed layout (a known issue)."""
    square = Case("planted", image(6, 6), {"turns": 1})
    oblong = Case("planted", image(4, 6), {"turns": 3})
    spec = spec_named("rotate_quarter_turns_tv1")
    clockwise = lambda img, p: torch.rot90(img, -p["turns"], dims=(-2, -1)).contiguous()  # noqa: E731
    for case in (square, oblong):
        assert_all_pass(spec, case, "default", DEVICE_TARGETS)
        assert caught(spec, clockwise, case, "default").metrics.max_abs > 0
    half_turn = caught(spec, lambda img, p: torch.rot90(img, 2, dims=(-2, -1)), oblong, "default")
    assert "cannot be compared" in half_turn.message  # a wrong count: 4x6 stays 4x6


def test_a_crop_off_by_one_row_is_caught(virtual_device):
    case = Case("planted", image(9, 8), {"top": 2, "left": 1, "height": 4, "width": 5})
    spec = spec_named("crop_tv2")
    assert_all_pass(spec, case, "inside", DEVICE_TARGETS)
    shifted = caught(spec, lambda img, p: F.crop(img, p["top"] + 1, p["left"], p["height"], p["width"]), case, "inside")
    assert shifted.metrics.max_abs > 0


def test_a_centre_crop_leaving_the_odd_pixel_before_the_window_is_caught(virtual_device):
    """Margin 5 on each axis: torchvision's round(2.5) = 2 is the floor; the plant takes the ceiling."""
    case = Case("planted", image(9, 9), {"height": 4, "width": 4})
    spec = spec_named("center_crop_tv2")
    assert_all_pass(spec, case, "smaller", DEVICE_TARGETS)
    caught(spec, lambda img, p: F.crop(img, 3, 3, p["height"], p["width"]), case, "smaller")


def test_a_pad_repeating_the_edge_instead_of_mirroring_is_caught(virtual_device):
    case = Case("planted", image(5, 6), {"padding": [2, 1, 3, 4], "mode": "reflect"})
    spec = spec_named("pad_tv2")
    assert_all_pass(spec, case, "reflect", DEVICE_TARGETS)
    caught(spec, lambda img, p: F.pad(img, p["padding"], padding_mode="edge"), case, "reflect")
    symmetric = dataclasses.replace(case, params={**case.params, "mode": "symmetric"})
    assert_all_pass(spec, symmetric, "symmetric", DEVICE_TARGETS)
    caught(spec, lambda img, p: F.pad(img, p["padding"], padding_mode="reflect"), symmetric, "symmetric")


def test_host_library_fills_given_in_their_own_colour_conventions_are_caught():
    """Pillow reads an int as a colour of its own (red only, for RGB); OpenCV a plain number as the first
    channel of a 4-scalar.  The adapters pass one value per band; the plants pass the number as it is."""
    case = Case("planted", image(4, 5), {"padding": [1, 2, 0, 1], "fill": 141, "mode": "constant"})
    pil, cv2_spec = spec_named("pad_pil"), spec_named("pad_cv2")
    assert_all_pass(pil, case, "constant", (CPU,))
    assert_all_pass(cv2_spec, case, "constant", (CPU,))

    def pil_int_fill(picture, p):
        from PIL import ImageOps

        return ImageOps.expand(picture, border=tuple(p["padding"]), fill=p["fill"])

    def cv2_scalar_fill(array, p):
        import cv2

        left, top, right, bottom = p["padding"]
        return cv2.copyMakeBorder(array, top, bottom, left, right, cv2.BORDER_CONSTANT, value=p["fill"])

    assert caught(pil, pillow_image_op(pil_int_fill), case, "constant").metrics.max_abs == 141
    assert caught(cv2_spec, per_host_image(cv2_scalar_fill), case, "constant").metrics.max_abs == 141


def test_a_flip_that_loses_the_layout_or_writes_into_its_input_fails_the_invariants(virtual_device):
    case = Case("planted", image(5, 7, layout="channels_last"), {})
    spec = spec_named("hflip_tv2")
    assert_all_pass(spec, case, "default", DEVICE_TARGETS)
    layout = caught(spec, lambda img, p: F.horizontal_flip(img).contiguous(), case, "default", check="invariants")
    assert "memory format" in layout.message

    def in_place(img, p):
        return img.copy_(img.flip(-1))

    assert "input mutated" in caught(spec, in_place, case, "default", check="invariants").message


def test_a_flip_through_host_memory_fails_placement_on_an_accelerator(virtual_device):
    case = Case("planted", image(5, 7), {})
    spec = spec_named("hflip_tv2")

    def through_numpy(img, p):
        host = img.cpu().numpy()[..., ::-1].copy()
        return torch.from_numpy(host).to(img.device)

    placement = caught(spec, through_numpy, case, "default", check="placement", target=VCUDA1)
    assert "host" in placement.message
    assert outcomes(dataclasses.replace(spec, name="planted", call=through_numpy), case, "default")["placement"].passed


def test_random_flips_replay_their_parameters_and_the_wrong_flip_is_caught(virtual_device):
    import kornia

    case = Case("planted", image(5, 7, dtype="float32"), {})
    hflip = random_geometry.RANDOM_HFLIP
    assert_all_pass(hflip, case, "default", DEVICE_TARGETS)
    assert_all_pass(random_geometry.RANDOM_VFLIP, case, "default", DEVICE_TARGETS)
    wrong = dataclasses.replace(
        hflip,
        name="planted",
        module=dataclasses.replace(hflip.module, build=lambda params: kornia.augmentation.RandomVerticalFlip(p=1.0)),
    )
    assert not outcomes(wrong, case, "default")["reference"].passed


def test_a_random_crop_off_by_one_row_is_caught(virtual_device):
    import kornia

    class OffByOneRow(kornia.augmentation.RandomCrop):
        def apply_transform(self, input, params, flags, transform=None):
            src = params["src"].clone()
            src[..., 1] += 1  # every corner one row down
            return super().apply_transform(input, params | {"src": src}, flags, transform)

    spec = random_geometry.RANDOM_CROP
    case = Case(
        "planted",
        image(9, 8, dtype="float32"),
        {
            "size": [4, 5],
            "padding": [1, 0, 2, 1],
            "pad_if_needed": False,
            "padding_mode": "reflect",
            "image_size": [9, 8],
        },
    )
    assert_all_pass(spec, case, "default", DEVICE_TARGETS)
    planted = dataclasses.replace(
        spec,
        name="planted",
        module=dataclasses.replace(
            spec.module,
            build=lambda params: OffByOneRow(
                tuple(params["size"]), padding=tuple(params["padding"]), padding_mode=params["padding_mode"], p=1.0
            ),
        ),
    )
    reference = outcomes(planted, case, "default")["reference"]
    assert not reference.passed and reference.metrics.max_abs > 0
