"""What the warp case modules share (cases/test_affine.py, test_perspective.py, test_elastic.py): their modes,
the dtype and mode pairs they draw, and their image recipes.  A case module never imports another, so these live
here, once."""

from __future__ import annotations

from functools import partial

from conformance.spec.strategies import image_recipes

MODES = ("nearest", "bilinear")
HALF = ("float16", "bfloat16")
# Nearest copies pixels, so a dtype matters there only for integer rounding: float64 and half draw bilinear only.
VALID = [(d, m) for d in ("uint8", "uint16", "float32") for m in MODES] + [(d, "bilinear") for d in ("float64", *HALF)]
# up to 4 channels (2: gray with alpha), up to 48 pixels a side, at most one batch dimension
RECIPES = partial(image_recipes, channels=(3, 1, 4, 2), max_side=48, max_batch_dims=1)
