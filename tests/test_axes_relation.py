"""The `axes` relation: a sampled displacement moves pixels as far whatever the image's aspect ratio.

The plant is torchvision's ElasticTransform dividing its x displacement by the height and its y displacement by the
width (torchvision 0.25's `dx * alpha[0] / size[0]` and `dy * alpha[1] / size[1]`, size being [height, width]): the
device sweep has no reference for it and every check replays or redraws the module's own field, so before the
relation every item passed it (on 34f6784's code with the plant: 15 passed, 4 skipped, 2 xfailed).  The relation
draws the field for a landscape image and its transpose and fails it, and passes the real library.
"""

from __future__ import annotations

import torch
import torchvision.transforms.v2 as T
from case_modules import control_then_plant

from conformance.checks.axes import DRAWS, fields, mean_squares
from conformance.devices.calls import draws
from conformance.spec.opspec import ModuleOp, OpSpec

AXES_SWAPPED = """
import torchvision.transforms.v2 as T

_real = T.ElasticTransform.make_params

def make_params(self, flat_inputs):
    # the plant: torchvision 0.25's axes, x normalised by the height and y by the width (`/ size[0]`, `/ size[1]`)
    found = _real(self, flat_inputs)
    displacement = found["displacement"].clone()
    height, width = displacement.shape[1:3]
    displacement[..., 0] *= width / height
    displacement[..., 1] *= height / width
    return {"displacement": displacement}

T.ElasticTransform.make_params = make_params
"""


def test_a_displacement_scaled_by_the_wrong_side_fails_the_stock_suite_and_the_real_library_passes(
    pytester, monkeypatch
):
    monkeypatch.setenv("CONFORMANCE_RELATIONS", "all")
    control_then_plant(
        pytester,
        "axes-swapped",
        AXES_SWAPPED,
        "test_sweep.py",
        "sweep_torchvision_ElasticTransform",
        "it scales with the image's other side",
        examples=5,
        sweep="torchvision.transforms.v2",
        check="axes",
    )


def test_grid_fields_are_found_by_shape_and_measured_in_pixels():
    found = fields({"displacement": torch.zeros(1, 4, 6, 2), "noise": torch.zeros(1, 2, 4, 6)}, 4, 6)
    assert list(found) == ["displacement"]  # (..., H, W, 2): a grid; (B, 2, H, W) is not one
    spec = OpSpec(name="elastic", module=ModuleOp(build=lambda params: T.ElasticTransform()), reference=None, dtypes=())
    seeds = tuple(range(DRAWS))
    landscape = mean_squares(draws(spec, {}, torch.rand(1, 3, 32, 128), seeds), 32, 128)["displacement"]
    portrait = mean_squares(draws(spec, {}, torch.rand(1, 3, 128, 32), seeds), 128, 32)["displacement"]
    assert all(0.5 < wide / tall < 2 for wide, tall in zip(landscape, portrait, strict=True))
