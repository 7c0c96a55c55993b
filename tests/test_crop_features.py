"""The crop cases' scope features: whether a layout can be seen is judged on the size torchvision returns (dev seed
11: a 1x1 window ending before a 3x1 channels-last image comes back 3x1, so the layout entries must apply)."""

import torch
import torchvision.transforms.v2.functional as F
from case_modules import case_module

from conformance.spec.recipes import Case, Recipe


def test_the_returned_side_is_torchvisions_for_every_window():
    geometry = case_module("test_geometry")
    for side in range(1, 6):
        for start in range(-7, 8):
            for size in range(1, 8):
                got = F.crop(torch.zeros(1, side, 1), start, 0, size, 1).shape[1]
                assert geometry._returned(side, start, start + size) == got, (side, start, size)


def test_a_window_ending_before_the_image_is_judged_on_what_comes_back():
    geometry = case_module("test_geometry")
    recipe = Recipe(3, 1, channels=3, batch=(), dtype="uint8", layout="channels_last", content="constant", seed=0)
    features = geometry.crop_features(Case("crop_tv2", recipe, {"top": -2, "left": 0, "height": 1, "width": 1}))
    assert features["ends_before_image"] and features["layout_matters"]  # the requested 1x1 window said False
