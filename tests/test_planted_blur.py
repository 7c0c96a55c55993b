"""The Gaussian blur family catches planted wrong implementations on its reference check, and the real
implementations pass the same cases, on the cpu and on a virtual accelerator.

Each planted bug is one a blur implementation could plausibly ship: the default sigma from another
formula, zero padding instead of reflection, a kernel not normalised to sum 1, the kernel size read
as (ky, kx), and a random augmentation that blurs every image with the first image's sigma."""

import dataclasses
import math

import pytest
import torch
import torchvision.transforms.v2.functional as F
from case_modules import case_module

from conformance.devices.targets import CPU
from conformance.devices.virtual_target import virtual_targets
from conformance.engine.cases import CaseCache, check_case
from conformance.spec.implementations import OMIT
from conformance.spec.recipes import Case, Recipe

VCUDA1 = virtual_targets(2)[1]
TARGETS = [CPU, VCUDA1]


blur = case_module("test_blur")
blur_kornia = case_module("test_blur_kornia")  # kornia's kernel builders and RandomGaussianBlur
TV2 = next(s for s in blur.GAUSSIAN_BLUR.specs() if s.name == "gaussian_blur_tv2")

# 2 images of 3 channels, 9 x 11 (H x W), a 5 x 3 (kx x ky) kernel: x and y differ, so a swap shows
EXPLICIT = Case(
    "planted",
    Recipe(9, 11, channels=3, batch=(2,), dtype="float32", content="noise", seed=11),
    {"kernel_size": [5, 3], "sigma": [1.3, 0.7]},
)
# the same with sigma left out: torchvision's documented default 0.3 * ((k - 1) * 0.5 - 1) + 0.8 applies
DEFAULT = dataclasses.replace(EXPLICIT, params={"kernel_size": [5, 3], "sigma": 1.0, OMIT: ["sigma"]})


def outcomes(spec, case, target, mode="default"):
    return {o.check: o for o in check_case(spec, case, target, CaseCache(), mode).outcomes}


def planted(call):
    return dataclasses.replace(TV2, name="planted", call=call)


def _sigma(p):
    """The sigma a planted call passes: none where the case left it out (the library's default applies)."""
    return None if "sigma" in p.get(OMIT, ()) else p["sigma"]


def _kernel1d(size: int, sigma: float, image: torch.Tensor, normalise: bool = True) -> torch.Tensor:
    offsets = torch.arange(size, dtype=image.dtype, device=image.device) - (size - 1) / 2
    weights = torch.exp(-(offsets**2) / (2 * sigma**2))
    return weights / weights.sum() if normalise else weights


def _conv(image, p, *, normalise=True, padding_mode="reflect"):
    """A hand-made blur: (x, y) kernel sizes and sigmas, as the operation names them."""
    (kx, ky), (sx, sy) = p["kernel_size"], p["sigma"]
    kernel = torch.outer(_kernel1d(ky, sy, image, normalise), _kernel1d(kx, sx, image, normalise))
    channels = image.shape[-3]
    batch = image.reshape(-1, channels, *image.shape[-2:])
    if padding_mode == "zeros":
        padded = torch.nn.functional.pad(batch, [kx // 2, kx // 2, ky // 2, ky // 2])
    else:
        padded = torch.nn.functional.pad(batch, [kx // 2, kx // 2, ky // 2, ky // 2], mode=padding_mode)
    out = torch.nn.functional.conv2d(padded, kernel.expand(channels, 1, ky, kx), groups=channels)
    return out.reshape(image.shape)


def _wrong_default(image, p):
    """sigma = 0.3 * k when left out (a plausible misreading of the documented formula)."""
    sigma = _sigma(p)
    return F.gaussian_blur(image, p["kernel_size"], sigma if sigma is not None else [0.3 * k for k in p["kernel_size"]])


PLANTS = {
    "wrong-default-sigma": (_wrong_default, DEFAULT),
    "zero-padding": (lambda image, p: _conv(image, p, padding_mode="zeros"), EXPLICIT),
    "unnormalised-kernel": (lambda image, p: _conv(image, p, normalise=False), EXPLICIT),
    "transposed-kernel-size": (lambda image, p: F.gaussian_blur(image, p["kernel_size"][::-1], _sigma(p)), EXPLICIT),
}


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
@pytest.mark.parametrize("bug", sorted(PLANTS))
def test_a_planted_blur_fails_its_reference_check(bug, target, virtual_device):
    call, case = PLANTS[bug]
    reference = outcomes(planted(call), case, target)["reference"]
    assert not reference.passed, f"{bug} passed the reference check"
    assert "[tolerance 'float32-accumulation']" in reference.message
    assert reference.metrics.max_abs > 1e-3  # far beyond float32 rounding: the check sees the bug itself


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
@pytest.mark.parametrize("case", [EXPLICIT, DEFAULT], ids=["explicit-sigma", "default-sigma"])
def test_the_real_blurs_pass_the_same_cases(case, target, virtual_device):
    for spec in blur.GAUSSIAN_BLUR.specs():
        if not target.has_items(spec) or "float32" not in spec.dtypes:
            continue
        found = outcomes(spec, case, target)
        assert found, spec.name
        failed = {k: o.message for k, o in found.items() if not o.passed and not o.warning}
        if spec.name == "gaussian_blur_cv2" and case is DEFAULT:
            # OpenCV's small-kernel table at sigma 0: a known issue (opencv-sigma-zero-small-kernel-table)
            assert set(failed) == {"reference"}, failed
            continue
        assert not failed, (spec.name, failed)


def test_the_hand_made_blur_itself_passes():
    """The planted variants differ from a correct blur by their one bug only."""
    found = outcomes(planted(lambda image, p: _conv(image, p)), EXPLICIT, CPU)
    assert found["reference"].passed, found["reference"].message


RANDOM_CASE = Case(
    "planted",
    Recipe(8, 10, channels=3, batch=(3,), dtype="float32", content="checkerboard", seed=12),
    {"kernel_size": [5, 3], "sigma_range": [0.5, 2.5]},
)


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_a_random_blur_with_one_sigma_for_the_batch_is_caught(target, virtual_device):
    import kornia

    class FirstSigmaForAll(kornia.augmentation.RandomGaussianBlur):
        def apply_transform(self, input, params, flags, transform=None):
            first = params["sigma"][:1].expand_as(params["sigma"])
            return super().apply_transform(input, params | {"sigma": first}, flags, transform)

    real = outcomes(blur_kornia.RANDOM_GAUSSIAN_BLUR, RANDOM_CASE, target)
    failed = {k: o.message for k, o in real.items() if not o.passed and not o.warning}
    assert not failed, failed
    module = blur_kornia.RANDOM_GAUSSIAN_BLUR.module
    plant = dataclasses.replace(
        blur_kornia.RANDOM_GAUSSIAN_BLUR,
        name="planted",
        module=dataclasses.replace(
            module,
            build=lambda p: FirstSigmaForAll(
                blur_kornia.kornia_kernel_size(p["kernel_size"]), tuple(p["sigma_range"]), p=1.0
            ),
        ),
    )
    reference = outcomes(plant, RANDOM_CASE, target)["reference"]
    assert not reference.passed and reference.metrics.max_abs > 1e-3 and math.isfinite(reference.metrics.max_abs)
