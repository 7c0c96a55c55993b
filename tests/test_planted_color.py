"""The colour family catches planted wrong implementations; the real ones pass the same cases."""

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


color = case_module("test_color")


def outcomes(spec, case, mode, target=CPU):
    return {o.check: o for o in check_case(spec, case, target, CaseCache(), mode).outcomes}


def implementation(operation, suffix: str):
    """The operation's implementation by one library (tv2, kornia, ...)."""
    return next(spec for spec in operation.specs() if spec.name == f"{operation.name}_{suffix}")


def image(seed: int, content: str = "noise") -> Recipe:
    return Recipe(7, 6, channels=3, batch=(2,), dtype="float32", content=content, seed=seed)


def bt709(picture: torch.Tensor, params) -> torch.Tensor:
    r, g, b = picture.unbind(-3)
    return (0.2126 * r + 0.7152 * g + 0.0722 * b).unsqueeze(-3)


# name: (operation, the real implementation that follows the documented meaning in float32, mode, params,
# wrong call).  torchvision's luma weight for red is 0.2989 (a known issue), so the luma ops use kornia's.
PLANTED = {
    "gray-swapped-r-b": (
        color.GRAYSCALE,
        "kornia",
        "one",
        {"num_output_channels": 1},
        lambda x, p: F.rgb_to_grayscale(x.flip(-3), num_output_channels=1),
    ),
    "gray-bt709-weights": (color.GRAYSCALE, "kornia", "one", {"num_output_channels": 1}, bt709),
    "hue-shifted-the-wrong-way": (
        color.HUE,
        "tv2",
        "default",
        {"hue_factor": 0.125},
        lambda x, p: F.adjust_hue(x, -p["hue_factor"]),
    ),
    "brightness-added": (
        color.BRIGHTNESS,
        "tv2",
        "default",
        {"brightness_factor": 1.5},
        lambda x, p: (x + (p["brightness_factor"] - 1)).clamp(0, 1),
    ),
    "brightness-not-clamped": (
        color.BRIGHTNESS,
        "tv2",
        "default",
        {"brightness_factor": 1.5},
        lambda x, p: x * p["brightness_factor"],
    ),
    "contrast-with-the-mean-of-rgb": (
        color.CONTRAST,
        "kornia",
        "default",
        {"contrast_factor": 0.5},
        lambda x, p: (
            p["contrast_factor"] * x + (1 - p["contrast_factor"]) * x.mean(dim=(-3, -2, -1), keepdim=True)
        ).clamp(0, 1),
    ),
    "saturation-swapped-r-b": (
        color.SATURATION,
        "kornia",
        "default",
        {"saturation_factor": 0.25},
        lambda x, p: F.adjust_saturation(x.flip(-3), p["saturation_factor"]).flip(-3),
    ),
}


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_a_planted_colour_bug_fails_the_reference_check_and_the_real_op_passes(name):
    operation, library, mode, params, wrong = PLANTED[name]
    # without gradient items: v2 hue's backward raises (a known issue, which check_case does not judge)
    spec = dataclasses.replace(implementation(operation, library), gradient=None)
    case = Case(spec.name, image(seed=sorted(PLANTED).index(name)), params)
    for target in (CPU, VCUDA1):
        real = outcomes(spec, case, mode, target)
        # a warning (kornia copies a float factor to the device on each call) is not a failure
        failed = {k: o.message for k, o in real.items() if not (o.passed or o.warning)}
        assert not failed, failed
    planted = dataclasses.replace(spec, name="planted", call=wrong)
    for target in (CPU, VCUDA1):
        reference = outcomes(planted, case, mode, target)["reference"]
        assert not reference.passed, f"{name} on {target.name}: {reference.message}"
        assert reference.metrics.max_abs > 1e-3, reference.message


convert = case_module("test_color_convert")
JITTER_CASE = Case(
    "planted",
    Recipe(6, 5, channels=3, batch=(3,), dtype="float32", content="noise", seed=11),
    {"brightness": 0.5, "contrast": 0.5, "saturation": 0.5, "hue": 0.25},
)


def _jitter_with(change):
    """A ColorJitter whose transform sees the replayed parameters changed by `change`."""
    import kornia

    class Planted(kornia.augmentation.ColorJitter):
        def apply_transform(self, input, params, flags, transform=None):
            return super().apply_transform(input, change(dict(params)), flags, transform)

    return lambda params: Planted(**{k: params[k] for k in convert.JITTER_KEYS if k in params}, p=1.0)


@pytest.mark.parametrize(
    "name, change",
    [
        ("steps-in-reverse-order", lambda p: p | {"order": p["order"].flip(0)}),
        (
            "first-image-factors-for-all",
            lambda p: p | {k: p[k][:1].expand_as(p[k]).clone() for k in p if k.endswith("_factor")},
        ),
    ],
)
def test_a_colour_jitter_that_ignores_its_sampled_order_or_per_image_factors_is_caught(name, change):
    for target in (CPU, VCUDA1):
        real = outcomes(convert.COLOR_JITTER, JITTER_CASE, "default", target)
        failed = {k: o.message for k, o in real.items() if not (o.passed or o.warning)}
        assert not failed, failed
    planted = dataclasses.replace(
        convert.COLOR_JITTER,
        name="planted",
        module=dataclasses.replace(convert.COLOR_JITTER.module, build=_jitter_with(change)),
    )
    reference = outcomes(planted, JITTER_CASE, "default")["reference"]
    assert not reference.passed and reference.metrics.max_abs > 1e-3, reference.message
