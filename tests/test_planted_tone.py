"""Tone curves and dtype conversion catch planted wrong implementations; the real ones pass the same case
on the cpu and a virtual accelerator."""

import dataclasses

import pytest
import torch
import torchvision.transforms.v2.functional as F
from case_modules import case_module

from conformance.devices.targets import CPU
from conformance.devices.virtual_target import virtual_targets
from conformance.engine.cases import CaseCache, check_case
from conformance.spec.recipes import Case, Recipe

VCUDA1 = virtual_targets(2)[1]


tone, dtype = case_module("test_tone"), case_module("test_dtype")
SPECS = {
    spec.name: spec
    for op in (tone.POSTERIZE, tone.SOLARIZE, tone.EQUALIZE, tone.AUTOCONTRAST, dtype.TO_DTYPE)
    for spec in op.specs()
}


def outcomes(spec, case, mode, target=CPU):
    return {o.check: o for o in check_case(spec, case, target, CaseCache(), mode).outcomes}


def solarize_above(image, p):
    """`>` where the documented meaning is `>=`: a pixel equal to the threshold stays."""
    return torch.where(image > p["threshold"], 255 - image, image)


def posterize_one_bit_more(image, p):
    return F.posterize(image, min(p["bits"] + 1, 8))


def equalize_inclusive_cdf(image, p):
    """Pillow's table reads the pixels strictly below each level; this one counts the level itself too."""
    planes = image.reshape(-1, image.shape[-2] * image.shape[-1]).long()
    out = []
    for plane in planes:
        hist = torch.bincount(plane, minlength=256)
        present = hist[hist > 0]
        step = (present.sum() - present[-1]) // 255
        lut = ((hist.cumsum(0) + step // 2) // step.clamp(min=1)).clamp(max=255) if step else torch.arange(256)
        out.append(lut.to(plane.device)[plane])
    return torch.stack(out).reshape(image.shape).to(torch.uint8)


def autocontrast_whole_image(image, p):
    """One min and max over all channels instead of one per channel."""
    low = image.float().amin(dim=(-3, -2, -1), keepdim=True)
    high = image.float().amax(dim=(-3, -2, -1), keepdim=True)
    return ((image.float() - low) * 255 / (high - low)).clamp(0, 255).to(torch.uint8)


def to_dtype_by_256(image, p):
    return image.to(getattr(torch, p["dtype"])) / 256


PLANTED = {
    "solarize_tv2": (
        solarize_above,
        Case("planted", Recipe(6, 5, channels=3, dtype="uint8", content="extremes", seed=1), {"threshold": 255}),
        "default",
    ),
    "posterize_tv2": (
        posterize_one_bit_more,
        Case("planted", Recipe(7, 6, channels=3, dtype="uint8", seed=2), {"bits": 3}),
        "default",
    ),
    "equalize_tv2": (
        equalize_inclusive_cdf,
        Case("planted", Recipe(24, 20, channels=1, dtype="uint8", seed=3), {}),
        "default",
    ),
    "autocontrast_tv2": (
        autocontrast_whole_image,
        Case("planted", Recipe(9, 8, channels=3, dtype="uint8", content="checkerboard", seed=4), {"cutoff": 0}),
        "default",
    ),
    "to_dtype_v2": (
        to_dtype_by_256,
        Case("planted", Recipe(5, 7, channels=3, dtype="uint8", seed=5), {"dtype": "float32", "scale": True}),
        "to-float32",
    ),
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_planted_bug_fails_the_reference_check_and_the_real_op_passes(name):
    planted_call, case, mode = PLANTED[name]
    spec = SPECS[name]
    for target in (CPU, VCUDA1):
        real = outcomes(spec, case, mode, target)
        assert all(o.passed for o in real.values()), {k: o.message for k, o in real.items()}
    planted = dataclasses.replace(spec, name="planted", call=planted_call)
    for target in (CPU, VCUDA1):
        reference = outcomes(planted, case, mode, target)["reference"]
        assert not reference.passed, f"the planted {name} passed on {target.name}: {reference.message}"
        assert reference.metrics.max_abs >= MISSED_BY[name], reference.message


# how far each planted bug lands from the reference on its case (one level at least for uint8)
MISSED_BY = {"solarize_tv2": 255, "posterize_tv2": 16, "equalize_tv2": 1, "autocontrast_tv2": 2, "to_dtype_v2": 1e-3}
