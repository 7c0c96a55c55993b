"""The `transform_matrix` relation: the matrix a kornia geometric augmentation reports maps its input onto its output.

The plant is kornia's RandomAffine reporting the inverse of the matrix it warped with (what a warp that samples
source positions computes first): the output is the library's, so every value check passes it, and before the
relation no check read the matrix.  The relation warps the input with the reported matrix and fails it, and passes
the real library; `inverse`, whose inverse() undoes the warp with the reported matrix, fails it too.
"""

from __future__ import annotations

import torch
from case_modules import control_then_plant

from conformance.checks.matrix import warped

INVERSE_REPORTED = """
import torch
import kornia.augmentation as K

_real = K.RandomAffine.transform_matrix

def transform_matrix(self):
    # the plant: the inverse of the warp's matrix is what the module reports
    found = _real.fget(self)
    return None if found is None else torch.linalg.inv(found)

K.RandomAffine.transform_matrix = property(transform_matrix)
"""


def test_a_matrix_inconsistent_with_the_output_fails_the_stock_suite_and_the_real_library_passes(pytester, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_RELATIONS", "all")
    control_then_plant(
        pytester,
        "inverse-reported",
        INVERSE_REPORTED,
        "test_sweep.py",
        "sweep_kornia_RandomAffine",
        "the reported transform_matrix, applied to the input",
        examples=10,
        sweep="kornia.augmentation",
        check=("transform_matrix", "inverse"),  # inverse() undoes the warp with the reported matrix: it fails too
    )


def test_a_warp_by_a_shift_moves_each_pixel_and_masks_the_border():
    image = torch.arange(2 * 5 * 6, dtype=torch.float64).reshape(2, 1, 5, 6)
    shift = torch.tensor([[1.0, 0, 1], [0, 1, 0], [0, 0, 1]], dtype=torch.float64).repeat(2, 1, 1)  # one pixel right
    found, inside = warped(image, shift, (5, 6), "bilinear")
    assert (found[..., 1:, 2:][inside[..., 1:, 2:]] == image[..., 1:, 1:-1].numpy()[inside[..., 1:, 2:]]).all()
    assert not inside[..., 0, :].any() and not inside[..., :, :2].any()  # sources on or outside the border row
