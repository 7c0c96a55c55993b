"""The `inverse` relation: what a library pairs as inverses undoes itself.

Two plants, one per way a library names an inverse.  kornia's xyz_to_rgb with its red row 1% too large: the device
sweep has no reference for XyzToRgb (nor for RgbToXyz), so before the relation every item passed it; rgb_to_xyz
then xyz_to_rgb no longer comes back.  kornia's RandomAffine undoing its warp with the forward matrix instead of its
inverse: no check called inverse() before.  Each relation item fails its plant and passes the real library.
"""

from __future__ import annotations

import kornia.color
import kornia.enhance
import torchvision.transforms.v2.functional as tvf
from case_modules import control_then_plant, library_plant

from conformance.checks.inverse import named_pair, paired_name

RED_ROW_TOO_LARGE = library_plant(
    "kornia.color.xyz",
    "xyz_to_rgb",
    """
def xyz_to_rgb(image):
    # the plant: the red row of the D65 matrix 1% too large
    found = _real(image)
    return torch.cat([found[..., :1, :, :] * 1.01, found[..., 1:, :, :]], dim=-3)
""",
    rebind="kornia.color.xyz_to_rgb",
)

FORWARD_AS_INVERSE = """
import kornia.augmentation as K

def compute_inverse_transformation(self, transform):
    # the plant: inverse() warps with the forward matrix again
    return transform

K.RandomAffine.compute_inverse_transformation = compute_inverse_transformation
"""


def test_a_pair_by_name_that_is_not_inverse_fails_the_stock_suite_and_the_real_library_passes(pytester, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_RELATIONS", "all")
    control_then_plant(
        pytester,
        "red-row-too-large",
        RED_ROW_TOO_LARGE,
        "test_sweep.py",
        "Xyz",
        "kornia.color.xyz.xyz_to_rgb are not inverse",
        examples=5,
        sweep="kornia.color",
        check="inverse",
    )


def test_an_inverse_that_does_not_undo_the_warp_fails_the_stock_suite_and_the_real_library_passes(
    pytester, monkeypatch
):
    monkeypatch.setenv("CONFORMANCE_RELATIONS", "all")
    control_then_plant(
        pytester,
        "forward-as-inverse",
        FORWARD_AS_INVERSE,
        "test_sweep.py",
        "sweep_kornia_RandomAffine",
        "inverse() against the output warped back by the reported matrix",
        examples=5,
        sweep="kornia.augmentation",
        check="inverse",
    )


def test_inverse_pairs_are_found_by_the_libraries_names():
    assert paired_name("rgb_to_hsv") == "hsv_to_rgb" and paired_name("denormalize") == "normalize"
    assert named_pair("kornia.color.RgbToLab") == (kornia.color.rgb_to_lab, kornia.color.lab_to_rgb)
    assert named_pair("kornia.enhance.normalize") == (kornia.enhance.normalize, kornia.enhance.denormalize)
    found = named_pair("torchvision.transforms.v2.functional.rgb_to_grayscale")
    assert found == (tvf.rgb_to_grayscale, tvf.grayscale_to_rgb)
    assert named_pair("kornia.enhance.adjust_brightness") is None  # no pair by name: no items
    assert named_pair("kornia.color.NoSuchClass") is None
