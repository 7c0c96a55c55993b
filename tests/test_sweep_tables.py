"""The sweep's tables: each FUNCTIONS entry is the function form of a class the sweep sweeps, and on the cpu the
class built as the sweep builds it gives exactly its function's output."""

import pytest
import torch

from conformance.spec import sweep
from conformance.spec.sweep_tables import ARGUMENTS, BATCH_OF_ONE, CHANNELS, FUNCTIONS

# Entries whose class and function really differ (kornia 0.9.0, torch 2.15, 32x32 float32 images): a finding each,
# held here strictly (an unexpected pass fails: remove the entry).  docs/findings.md has the repro.
_ALIGN = (
    "defaults align_corners=True, kornia.geometry.transform.resize's default is None (False for bilinear): max abs "
    "difference 0.75 for 32x32 -> 8 pixels (https://github.com/kornia/kornia/issues/4412)"
)
_CROP = (
    "crops by slicing (cropping_mode='slice', the default): exact pixels; kornia.geometry.transform.center_crop "
    "resamples with a bilinear warp whose matrix is solved in float32: max abs difference 3.3e-6 for an aligned crop"
)
DIVERGES: dict[str, str] = {
    "kornia.augmentation.Resize": _ALIGN,
    "kornia.augmentation.LongestMaxSize": _ALIGN,
    "kornia.augmentation.SmallestMaxSize": _ALIGN,
    "kornia.augmentation.CenterCrop": _CROP,
    "kornia.geometry.transform.CenterCrop2D": _CROP,
    "kornia.geometry.transform.Rescale": "defaults align_corners=True, rescale's default is None (False for bilinear): "
    "max abs difference 0.33 for a (2, 3) upscale of 32x32",
    "kornia.geometry.transform.Shear": "defaults align_corners=True, shear's default is False: max abs difference "
    "4.0e-6 for shear (0.5, 0)",
}


def _swept() -> dict[str, sweep.Discovered]:
    return {found.qualified: found for name in sweep.DEFAULT_MODULES for found in sweep.discover(name)}


def test_every_function_is_of_a_swept_class():
    swept = _swept()
    assert FUNCTIONS
    for qualified in FUNCTIONS:
        assert qualified in swept, f"{qualified}: not a class the sweep discovers"
        assert not swept[qualified].reason, f"{qualified}: skipped ({swept[qualified].reason})"
    for qualified in (*CHANNELS, *BATCH_OF_ONE):
        assert qualified in swept and not swept[qualified].reason, qualified


def test_op_names_are_unique_across_the_default_modules():
    """Two classes with one op name would be one test (the second replacing the first in the case module)."""
    ops: dict[str, str] = {}
    for name in sweep.DEFAULT_MODULES:
        for found in sweep.discover(name):
            assert ops.setdefault(found.op, found.qualified) == found.qualified, (found.op, ops[found.op])
    assert ops["sweep_kornia_Resize"] == "kornia.augmentation.Resize"  # the names known issues already use


def test_every_argument_entry_builds_a_discovered_class():
    swept = _swept()
    for qualified in ARGUMENTS:
        if qualified in swept:  # the default modules' classes (a table may name a class of an older release)
            assert isinstance(ARGUMENTS[qualified], dict), qualified


@pytest.mark.parametrize(
    "qualified",
    [
        pytest.param(q, marks=pytest.mark.xfail(strict=True, reason=DIVERGES[q])) if q in DIVERGES else q
        for q in FUNCTIONS
    ],
)
def test_the_module_equals_its_function_on_the_cpu(qualified):
    found = _swept()[qualified]
    assert found.cls is not None
    arguments = ARGUMENTS.get(qualified, {})
    generator = torch.Generator().manual_seed(0)
    batch = 1 if qualified in BATCH_OF_ONE else 2
    image = torch.rand(batch, CHANNELS.get(qualified, 3), 32, 32, generator=generator)
    module = found.cls(**arguments)
    expected = module(image.clone())
    got = FUNCTIONS[qualified](image.clone(), arguments)
    assert isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor)
    assert expected.shape == got.shape and expected.dtype == got.dtype
    assert torch.equal(expected, got), f"max abs difference {(expected.double() - got.double()).abs().max():.3g}"
