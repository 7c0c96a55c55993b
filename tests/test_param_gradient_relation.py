"""The `param_gradient` relation: the gradient with respect to each float parameter a library callable accepts as a
tensor matches central differences of the same call.

The plant is kornia's adjust_brightness_accumulative (the suite's adjust_brightness_kornia) detaching a tensor
factor: the same values, no gradient for the factor.  The suite's gradient check differentiates with respect to the
image only, so before the relation every item passed the plant; the relation's items fail it and pass the real
library.
"""

from __future__ import annotations

import kornia.enhance
import torch
from case_modules import control_then_plant, library_plant

from conformance.checks.parameters import floating_parameters
from conformance.devices.entry import Entry, recording

FACTOR_DETACHED = library_plant(
    "kornia.enhance.adjust",
    "adjust_brightness_accumulative",
    """
def adjust_brightness_accumulative(image, factor, clip_output=True):
    # the plant: a tensor factor is detached, so its gradient is lost; the values are the library's
    if isinstance(factor, torch.Tensor):
        factor = factor.detach()
    return _real(image, factor, clip_output)
""",
    rebind="kornia.enhance.adjust_brightness_accumulative",
)


def test_a_lost_parameter_gradient_fails_the_stock_suite_and_the_real_library_passes(pytester, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_RELATIONS", "all")
    control_then_plant(
        pytester,
        "factor-detached",
        FACTOR_DETACHED,
        "test_color.py",
        "adjust_brightness_kornia and param_gradient",
        "the output holds no gradient for factor, and central differences give",
        examples=5,
        check="param_gradient",
    )


def test_the_float_parameters_a_callable_accepts_as_tensors_are_given_as_float64_tensors():
    image = torch.rand(2, 3, 4, 4, dtype=torch.float64)
    entries: list[Entry] = []
    with recording(entries):
        kornia.enhance.adjust_brightness(image, 0.25)
    found = floating_parameters(entries[0], tuple(image.shape))
    assert set(found) == {"factor"}  # the image is a tensor already, clip_output a flag
    assert found["factor"].dtype == torch.float64 and float(found["factor"].flatten()[0]) == 0.25
