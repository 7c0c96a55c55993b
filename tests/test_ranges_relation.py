"""The `ranges` relation: the output's values stay in the ranges the library's docstring gives them.

The plant is kornia's rgb_to_hsv with a float32 saturation 8e-7 too large: within the tolerance the suite holds
float32 HSV to (1e-6), so before the relation every item passed it, but a fully saturated pixel's S is above the
documented 0..1 by more than float32's rounding.  The relation's items fail it and pass the real library.
"""

from __future__ import annotations

import math

import kornia.color
import kornia.enhance
from case_modules import control_then_plant, library_plant

from conformance.checks.registry import REGISTRY
from conformance.devices.targets import CPU
from conformance.spec.documented import OutputRange, output_ranges
from conformance.spec.opspec import OpSpec

SATURATION_PAST_ONE = library_plant(
    "kornia.color.hsv",
    "rgb_to_hsv",
    """
def rgb_to_hsv(image, eps=1e-8):
    # the plant: a float32 saturation 8e-7 too large (within the reference's 1e-6), past 1 where a pixel is fully
    # saturated
    found = _real(image, eps)
    if found.dtype != torch.float32:
        return found
    return torch.cat([found[..., :1, :, :], found[..., 1:2, :, :] * (1 + 8e-7), found[..., 2:, :, :]], dim=-3)
""",
    rebind="kornia.color.rgb_to_hsv",
)


def test_an_output_outside_its_documented_range_fails_the_stock_suite_and_the_real_library_passes(
    pytester, monkeypatch
):
    monkeypatch.setenv("CONFORMANCE_RELATIONS", "all")
    control_then_plant(
        pytester,
        "saturation-past-one",
        SATURATION_PAST_ONE,
        "test_color_convert.py",
        "rgb_to_hsv",
        "documents 'S and V are in the range 0..1.'",
        examples=10,
        check="ranges",
    )


def test_documented_ranges_are_read_per_channel_with_their_conditions():
    hsv = output_ranges(kornia.color.rgb_to_hsv)
    assert hsv[0] == OutputRange(0.0, 2 * math.pi, True, (0,), {}, hsv[0].text)
    assert (hsv[1].low, hsv[1].high, hsv[1].high_open, hsv[1].channels) == (0.0, 1.0, False, (1, 2))
    lab = output_ranges(kornia.color.rgb_to_lab)
    assert [(r.low, r.high, r.channels) for r in lab] == [(0.0, 100.0, (0,)), (-128.0, 127.0, (1, 2))]
    (clipped,) = output_ranges(kornia.color.lab_to_rgb)
    assert clipped.channels is None and clipped.when == {"clip": True}
    assert clipped.holds_for({"clip": True}) and not clipped.holds_for({"clip": False})
    assert output_ranges(kornia.enhance.adjust_brightness) == ()  # nothing documented, nothing read


def test_ranges_items_are_made_where_the_named_callable_documents_a_range_or_none_is_named():
    def spec(*needs):
        return OpSpec(name="op", call=lambda image, params: image, reference=None, dtypes=("float32",), needs=needs)

    applies = REGISTRY["ranges"].applies
    assert applies(spec("kornia.color.rgb_to_hsv"), CPU, "default")
    assert applies(spec("kornia.color.RgbToHsv"), CPU, "default")  # the class: the function it wraps
    assert not applies(spec("kornia.enhance.adjust_brightness"), CPU, "default")  # documents none: no items
    assert applies(spec(), CPU, "default")  # names none: the call's entered callable decides, case by case
