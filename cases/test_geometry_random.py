"""kornia's random geometry augmentations (p=1) with replayed parameters: RandomHorizontalFlip,
RandomVerticalFlip and RandomCrop.

Their parameters are drawn once per case on the cpu with `forward_parameters` and replayed on every
target; the module's own sampling also runs on every target (the `sampling` check, against the
documented ranges in `bounds`).  Reference: conformance.references.geometry from the sampled values
(which images flip, each crop's top-left corner); the crop's padding follows kornia's documented rule,
never its sampled `padding_size`.  kornia documents (C, H, W) or (B, C, H, W) images of the float dtypes it
checks ("Expected input of [torch.bfloat16, torch.float16, torch.float32, torch.float64]"): all four are drawn.
Error modes: p outside [0, 1] (kornia documents "p: probability"), a crop size of -1.  The valid mode
"fill-ignored" gives RandomCrop a fill with a mirror or replicate padding, which its docs say is "only used when
the padding_mode is constant".
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from conformance import (
    KORNIA,
    Case,
    ExpectedError,
    Implementation,
    ModuleOp,
    Operation,
    OpSpec,
    Recipe,
    image_recipes,
    keywords,
    kornia_parameters,
)
from conformance.references import geometry
from conformance.spec.case_pieces import pixel_copy_rules

DTYPES = ("float16", "bfloat16", "float32", "float64")
EXACT = pixel_copy_rules(DTYPES)
P_INVALID = "p outside [0, 1] (a probability)"
RECIPES = partial(image_recipes, channels=(3, 1, 4), min_batch_dims=1, max_batch_dims=1, max_side=48)
SELECTED = (1.0, 1.0)  # p=1: every image of the batch is selected


def _selected(sampled: dict[str, torch.Tensor]) -> np.ndarray:
    return sampled["batch_prob"].numpy() > 0.5


def probability(mode: str, draw: st.DrawFn) -> dict[str, Any]:
    """p=1 (every image selected), or, in the error mode, just outside [0, 1]."""
    return {"p": draw(st.sampled_from((-1 / 64, 1 + 1 / 64)), label="p")} if mode == "p-out-of-range" else {}


def _flip_spec(name: str, module: str, flip: Any) -> OpSpec:
    def reference(image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor]) -> np.ndarray:
        return np.where(_selected(sampled)[:, None, None, None], flip(image), image)

    def build(params: dict[str, Any]) -> torch.nn.Module:
        import kornia

        return getattr(kornia.augmentation, module)(p=params.get("p", 1.0))

    return OpSpec(
        name=name,
        description=f"kornia.augmentation.{module}(p=1) with replayed parameters",
        module=ModuleOp(
            build=build, sample=kornia_parameters, bounds=lambda params: {"batch_prob": SELECTED}, unmoved="works"
        ),
        reference=reference,
        dtypes=DTYPES,
        modes=("default", "p-out-of-range"),
        variants=[(d, "default") for d in DTYPES] + [("float32", "p-out-of-range")],
        error_modes={"p-out-of-range": ExpectedError(P_INVALID, Exception)},
        params=st.composite(lambda draw, recipe, mode: probability(mode, draw)),
        recipes=RECIPES,
        tolerances=EXACT,
        keeps_memory_format=False,
        needs=(f"kornia.augmentation.{module}",),
    )


RANDOM_HFLIP = _flip_spec("random_horizontal_flip_kornia", "RandomHorizontalFlip", geometry.hflip)
RANDOM_VFLIP = _flip_spec("random_vertical_flip_kornia", "RandomVerticalFlip", geometry.vflip)

# -- random crop -----------------------------------------------------------------------------------
# kornia's padding modes, by the reference's names
PADDING_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}


@st.composite
def crop_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """size (h, w); padding (left, top, right, bottom) up to 4, or left out (documented default None: no
    padding); pad_if_needed; padding_mode; fill (constant only; left out: documented default 0).  Reflect
    mirrors without the border pixel, so every side's padding stays below the image's side.  Without
    pad_if_needed the window fits the image, padded or not (kornia resizes an oversized one, kornia#4414);
    with it, it may be up to 4 pixels larger than the image on each axis.  image_size: for the bounds.
    "fill-ignored": reflect or replicate padding of at least one pixel with a fill of 1/256 to 1, which kornia
    documents as unused there; "negative-size" (invalid): a height or width of -1."""
    rows, cols = recipe.height, recipe.width
    modes = list(PADDING_MODES) if mode != "fill-ignored" else ["replicate", "reflect"][: 1 + (rows * cols > 1)]
    padding_mode = draw(st.sampled_from(modes), label="padding_mode")
    most_rows, most_cols = (min(4, rows - 1), min(4, cols - 1)) if padding_mode == "reflect" else (4, 4)
    left, right = (draw(st.integers(0, most_cols), label=n) for n in ("left", "right"))
    top, bottom = (draw(st.integers(0, most_rows), label=n) for n in ("top", "bottom"))
    if mode == "fill-ignored" and left + right + top + bottom == 0:  # a pixel of padding, where a mirror has one
        left, top = (1, 0) if most_cols else (0, 1)
    pad_if_needed = draw(st.booleans(), label="pad_if_needed")
    extra_rows, extra_cols = (most_rows, most_cols) if pad_if_needed else (0, 0)  # fits with padding left out
    size = [
        draw(st.integers(1, rows + extra_rows), label="height"),
        draw(st.integers(1, cols + extra_cols), label="width"),
    ]
    if mode == "negative-size":
        size[draw(st.integers(0, 1), label="negative_side")] = -1
    params: dict[str, Any] = {
        "size": size,
        "padding": [left, top, right, bottom],
        "pad_if_needed": pad_if_needed,
        "padding_mode": padding_mode,
        "image_size": [rows, cols],
        **probability(mode, draw),
    }
    if padding_mode == "constant" or mode == "fill-ignored":
        params["fill"] = draw(st.integers(int(mode == "fill-ignored"), 256), label="fill") / 256  # exact in every dtype
    return params


def crop_padding(params: dict[str, Any]) -> list[int]:
    """(left, top, right, bottom), as kornia documents it: the explicit padding, and with pad_if_needed each
    side padded by at least the crop-minus-input size on its axis."""
    left, top, right, bottom = params.get("padding") or (0, 0, 0, 0)
    if params["pad_if_needed"]:
        (rows, cols), (height, width) = params["image_size"], params["size"]
        if width > cols:
            left, right = max(left, width - cols), max(right, width - cols)
        if height > rows:
            top, bottom = max(top, height - rows), max(bottom, height - rows)
    return [left, top, right, bottom]


def crop_reference(image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor]) -> np.ndarray:
    """Pad as documented, then each image's window from its sampled top-left corner (p=1 selects every image:
    the bounds check that on every target's own sample)."""
    p = case.params
    padded = geometry.pad(image, crop_padding(p), PADDING_MODES[p["padding_mode"]], p.get("fill", 0))
    corners = [(int(y), int(x)) for x, y in sampled["src"][:, 0].tolist()]  # kornia's corners are (x, y)
    return geometry.crop_each(padded, corners, *p["size"])


def crop_bounds(params: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """Every corner of the window lies in the padded image; the padding is the documented one."""
    left, top, right, bottom = crop_padding(params)
    rows, cols = params["image_size"][0] + top + bottom, params["image_size"][1] + left + right
    return {
        "src": (0.0, float(max(rows, cols) - 1)),
        "batch_prob": SELECTED,
        "padding_size": (float(min(left, top, right, bottom)), float(max(left, top, right, bottom))),
    }


def build_crop(params: dict[str, Any]) -> torch.nn.Module:
    """The keywords a case leaves out are not passed: kornia's defaults apply.  The padding goes as a tuple:
    kornia 0.9 rejects a list, which its docs allow (docs/findings.md#kornia-randomcrop-rejects-a-padding-list)."""
    import kornia

    return kornia.augmentation.RandomCrop(
        tuple(params["size"]),
        pad_if_needed=params["pad_if_needed"],
        padding_mode=params["padding_mode"],
        p=params.get("p", 1.0),
        **keywords(params, padding=("padding", tuple), fill=None),
    )


# An operation of one implementation, for the documented defaults of the keywords a case leaves out:
# "padding: ... Default is None, i.e no padding", "fill: ... Default is 0" (kornia's RandomCrop docstring).
RANDOM_CROP_OPERATION = Operation(
    name="random_crop",
    description="kornia.augmentation.RandomCrop(p=1) with replayed parameters",
    reference=crop_reference,
    params=crop_params,
    optional=lambda mode: () if mode == "fill-ignored" else ("padding", "fill"),
    dtypes=DTYPES,
    modes=("default", "fill-ignored", "p-out-of-range", "negative-size"),
    variants=[(d, "default") for d in DTYPES]
    + [("float32", m) for m in ("fill-ignored", "p-out-of-range", "negative-size")],
    invalid={"p-out-of-range": P_INVALID, "negative-size": "a crop height or width of -1"},
    recipes=RECIPES,
    tolerances=EXACT,
    implementations=[
        Implementation(
            library=KORNIA,
            module=ModuleOp(build=build_crop, sample=kornia_parameters, bounds=crop_bounds, unmoved="works"),
            defaults={"padding": None, "fill": 0.0},
            # ValueError "Input image size must be positive", RuntimeError "... tensor with negative dimension -1"
            raises={"negative-size": (ValueError, RuntimeError)},
            spec={"keeps_memory_format": False, "needs": ("kornia.augmentation.RandomCrop",)},
        )
    ],
)
RANDOM_CROP = RANDOM_CROP_OPERATION.specs()[0]

test_random_horizontal_flip_kornia = RANDOM_HFLIP.test()
test_random_vertical_flip_kornia = RANDOM_VFLIP.test()
globals().update(RANDOM_CROP_OPERATION.tests())
