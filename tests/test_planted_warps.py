"""Perspective and elastic warps are checked for value, not only for placement: a bug planted in a library that every
device shares (a matrix solved in too low a precision, a warp shifted by a fraction of a pixel) fails the stock
suite's reference items, while the real library passes the same items.

Each plant is a conftest that replaces one library function before the case modules import it, in a process of its
own (the patch must not outlive the run), as tests/test_planted_domain.py does.  The suite before issue 38 (device
placement sweeps only) passed every plant.
"""

import pytest
from case_modules import control_then_plant

MATRIX_IN_HALF_PRECISION = """
import torch
import kornia.geometry.transform as kt
import kornia.geometry.transform.imgwarp as imgwarp

_real = imgwarp.get_perspective_transform

def get_perspective_transform(points_src, points_dst):
    # the plant: the homography solved from float16 points and cast back (about 1/32 pixel at 50 pixels, and the
    # projective row to 2^-11), on every device alike
    return _real(points_src.half().float(), points_dst.half().float()).half().to(points_src.dtype)

imgwarp.get_perspective_transform = get_perspective_transform
kt.get_perspective_transform = get_perspective_transform
"""

QUARTER_PIXEL_SHIFT = """
import torchvision.transforms.v2.functional as F

_real = F.perspective

def perspective(inpt, startpoints, endpoints, *args, **kwargs):
    # the plant: the output moved a quarter pixel to the right, on every device alike (the end points shifted)
    if endpoints is not None:
        endpoints = [[x + 0.25, y] for x, y in endpoints]
    return _real(inpt, startpoints, endpoints, *args, **kwargs)

F.perspective = perspective
"""

ELASTIC_QUARTER_PIXEL_SHIFT = """
import torchvision.transforms.v2.functional as F

_real = F.elastic

def elastic(inpt, displacement, *args, **kwargs):
    # the plant: every sample taken a quarter pixel further down (0.25 px = 0.5 / H in normalised units)
    shifted = displacement.clone()
    shifted[..., 1] += 0.5 / displacement.shape[1]
    return _real(inpt, shifted, *args, **kwargs)

F.elastic = elastic
"""

# plant: (case module, -k selection of stock items, what the run must say)
PLANTS = {
    "perspective-matrix-in-half-precision": (
        MATRIX_IN_HALF_PRECISION,
        "test_perspective.py",
        "(perspective_matrix_kornia or perspective_kornia) and float32 and (default or bilinear) and reference",
        "vs reference",
    ),
    "perspective-shifted-a-quarter-pixel": (
        QUARTER_PIXEL_SHIFT,
        "test_perspective.py",
        "perspective_tv2 and float32-bilinear and reference",
        "vs reference",
    ),
    "elastic-shifted-a-quarter-pixel": (
        ELASTIC_QUARTER_PIXEL_SHIFT,
        "test_elastic.py",
        "elastic_tv2 and float32-bilinear and reference",
        "vs reference",
    ),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_warp_bug_shared_by_every_device_fails_the_reference_items_and_the_real_library_passes(pytester, plant):
    failed = control_then_plant(pytester, plant, *PLANTS[plant], examples=30)
    # every device shares the bug: the reference items fail on the cpu and on the virtual accelerator alike
    assert any("[cpu-" in line for line in failed) and any("[vcuda:1-" in line for line in failed), failed
