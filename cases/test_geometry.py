"""Exact geometry: flips, rotation by quarter turns, crop, centre crop and pad, each through every
library that has it (torchvision v2 and v1, kornia, Pillow, OpenCV).  kornia's random flips and crop
are in cases/test_geometry_random.py.

Reference: conformance.references.geometry (numpy index arithmetic).  Every output pixel is a copy
of an input pixel or the fill value, so every implementation must match exactly: any difference
is a wrong index, a wrong fill or another convention (listed in known_issues.toml with its reason).
Features name the mechanisms those entries are scoped to (an odd margin, a window ending before the
image, one image per batch), so an entry covers its mechanism and nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torchvision.transforms.functional as F_v1
import torchvision.transforms.v2.functional as F_v2
from hypothesis import strategies as st

from conformance import (
    KORNIA,
    OPENCV,
    PILLOW,
    TV1,
    TV2,
    Case,
    Implementation,
    Operation,
    Recipe,
    Rule,
    Tolerance,
    batched,
    image_recipes,
    keywords,
    per_host_image,
    pillow_image_op,
)
from conformance.references import geometry

DTYPES = ("uint8", "float32")
EXACT = [Rule(Tolerance("exact", reason="every output pixel is a copy of one input pixel or the fill value"))]
HOST = "a host library: the image is copied to host memory and back"
HOST_SPEC = {"keeps_memory_format": False, "host_transfers": HOST}
KORNIA_SPEC = {"keeps_memory_format": False}  # kornia does not promise to keep layouts


def opencv_spec(function: str) -> dict[str, Any]:
    return {**HOST_SPEC, "needs": (f"cv2.{function}",)}


def geometry_recipes(dtype: str) -> st.SearchStrategy[Recipe]:
    """Up to 48 pixels a side, 1-4 channels (2 channels reach the per-channel paths of host libraries)."""
    return image_recipes(dtype, channels=(3, 1, 4, 2), max_side=48)


def layout_features(case: Case, out_height: int, out_width: int) -> dict[str, Any]:
    """flat_batch: the images in the batch (1 for one image): torchvision folds the batch dims into one, and
    PyTorch's layout rules treat a batch of one differently.  layout_matters: contiguous and channels-last
    are different layouts for the input and for the output (more than one channel, more than one pixel), so
    whether one is kept can be seen."""
    recipe = case.recipe
    return {
        "flat_batch": math.prod(recipe.batch),
        "layout_matters": recipe.channels > 1 and recipe.height * recipe.width > 1 and out_height * out_width > 1,
    }


def no_params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.just({})


# -- flips ---------------------------------------------------------------------------------------
def _kornia(name: str) -> Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]:
    def call(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        import kornia

        return getattr(kornia.geometry.transform, name)(image)

    return call


def _opencv_flip(code: int) -> Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]:
    def flip(image: np.ndarray, params: dict[str, Any]) -> np.ndarray:
        import cv2

        return cv2.flip(image, code)

    return per_host_image(flip)


def _pillow_transpose(name: str) -> Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]:
    def transpose(picture: Any, params: dict[str, Any]) -> Any:
        from PIL import Image

        return picture.transpose(getattr(Image.Transpose, name))

    return pillow_image_op(transpose)


def _flip(
    name: str,
    reference: Callable[[np.ndarray], np.ndarray],
    tv2: Callable,
    tv1: Callable,
    pillow: str,
    opencv_code: int,
) -> Operation:
    return Operation(
        name=name,
        description=f"{name} of image tensors",
        reference=lambda image, case: reference(image),
        params=no_params,
        dtypes=DTYPES,
        modes=("default",),
        tolerances=EXACT,
        recipes=geometry_recipes,
        implementations=[
            Implementation(library=TV2, call=lambda image, p: tv2(image)),
            Implementation(library=TV1, call=lambda image, p: tv1(image)),
            Implementation(
                library=KORNIA,
                call=_kornia(name),
                dtypes=("float32",),
                spec={**KORNIA_SPEC, "needs": (f"kornia.geometry.transform.{name}",)},
            ),
            Implementation(library=PILLOW, call=_pillow_transpose(pillow), host_only=HOST, spec=HOST_SPEC),
            Implementation(library=OPENCV, call=_opencv_flip(opencv_code), host_only=HOST, spec=opencv_spec("flip")),
        ],
    )


HFLIP = _flip("hflip", geometry.hflip, F_v2.horizontal_flip, F_v1.hflip, "FLIP_LEFT_RIGHT", 1)
VFLIP = _flip("vflip", geometry.vflip, F_v2.vertical_flip, F_v1.vflip, "FLIP_TOP_BOTTOM", 0)


# -- rotation by quarter turns --------------------------------------------------------------------
@st.composite
def turns(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    return {"turns": draw(st.integers(1, 3), label="turns")}


def rotate_features(case: Case) -> dict[str, Any]:
    """odd_side_difference: height - width is odd, where v1 computes the expanded size one pixel too large;
    two_dimensional: both sides above one pixel, where a transposed view is dense in no layout."""
    rows, cols = case.recipe.height, case.recipe.width
    return {
        **layout_features(case, cols, rows),
        "odd_side_difference": (rows - cols) % 2 == 1,
        "two_dimensional": rows > 1 and cols > 1,
    }


def _tv_rotate(rotate: Callable) -> Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]:
    """A quarter-turn rotation is `rotate(angle=90k, expand=True)`; the interpolation is left to the documented
    default (nearest), which copies pixels."""

    def call(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        return rotate(image, 90.0 * params["turns"], expand=True)

    return call


def _pillow_turns(picture: Any, params: dict[str, Any]) -> Any:
    from PIL import Image

    return picture.transpose(
        {1: Image.Transpose.ROTATE_90, 2: Image.Transpose.ROTATE_180, 3: Image.Transpose.ROTATE_270}[params["turns"]]
    )


def _opencv_turns(image: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    import cv2

    return cv2.rotate(
        image, {1: cv2.ROTATE_90_COUNTERCLOCKWISE, 2: cv2.ROTATE_180, 3: cv2.ROTATE_90_CLOCKWISE}[params["turns"]]
    )


QUARTER_TURNS = Operation(
    name="rotate_quarter_turns",
    description="rotation by 90, 180 or 270 degrees counter-clockwise",
    reference=lambda image, case: geometry.rotate_quarter_turns(image, case.params["turns"]),
    params=turns,
    dtypes=DTYPES,
    modes=("default",),
    tolerances=EXACT,
    recipes=geometry_recipes,
    spec={"features": rotate_features},
    implementations=[
        Implementation(library=TV2, call=_tv_rotate(F_v2.rotate), description="v2 rotate(90k, expand=True)"),
        Implementation(library=TV1, call=_tv_rotate(F_v1.rotate), description="v1 rotate(90k, expand=True)"),
        Implementation(library=PILLOW, call=pillow_image_op(_pillow_turns), host_only=HOST, spec=HOST_SPEC),
        Implementation(library=OPENCV, call=per_host_image(_opencv_turns), host_only=HOST, spec=opencv_spec("rotate")),
    ],
)


# -- crop ------------------------------------------------------------------------------------------
@st.composite
def crop_box(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """ "inside": a window within the image; "beyond": a window reaching past an edge (zeros there)."""
    rows, cols = recipe.height, recipe.width
    if mode == "inside":
        height, width = draw(st.integers(1, rows), label="height"), draw(st.integers(1, cols), label="width")
        top, left = draw(st.integers(0, rows - height), label="top"), draw(st.integers(0, cols - width), label="left")
    else:
        height, width = draw(st.integers(1, rows + 8), label="height"), draw(st.integers(1, cols + 8), label="width")
        top = draw(st.integers(-height - 2, rows + 2), label="top")
        left = draw(st.integers(-width - 2, cols + 2), label="left")
    return {"top": top, "left": left, "height": height, "width": width}


def crop_features(case: Case) -> dict[str, Any]:
    """ends_before_image: the window ends before the image's first row or column but less than a side
    before it (a negative slice end that Python counts from the far edge); outside: some of the window is
    off the image (torchvision pads it); misses_image: none of it is on the image (all fill)."""
    p, rows, cols = case.params, case.recipe.height, case.recipe.width
    bottom, right = p["top"] + p["height"], p["left"] + p["width"]
    return {
        **layout_features(case, p["height"], p["width"]),
        "ends_before_image": -rows < bottom < 0 or -cols < right < 0,
        "outside": p["top"] < 0 or p["left"] < 0 or bottom > rows or right > cols,
        "misses_image": bottom <= 0 or right <= 0 or p["top"] >= rows or p["left"] >= cols,
    }


def crop_reference(image: np.ndarray, case: Case) -> np.ndarray:
    p = case.params
    return geometry.crop(image, p["top"], p["left"], p["height"], p["width"])


def _tv_crop(crop: Callable) -> Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]:
    def call(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
        return crop(image, p["top"], p["left"], p["height"], p["width"])

    return call


def _kornia_crop(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """kornia crops a (B, C, H, W) batch by the four corners (x, y) of a box, inclusive."""
    import kornia

    top, left, bottom, right = p["top"], p["left"], p["top"] + p["height"] - 1, p["left"] + p["width"] - 1
    corners = [[left, top], [right, top], [right, bottom], [left, bottom]]
    boxes = torch.tensor([corners], dtype=image.dtype, device=image.device).expand(image.shape[0], 4, 2)
    return kornia.geometry.transform.crop_by_indices(image, boxes)


def _pillow_crop(picture: Any, p: dict[str, Any]) -> Any:
    return picture.crop((p["left"], p["top"], p["left"] + p["width"], p["top"] + p["height"]))


CROP = Operation(
    name="crop",
    description="crop a window (top, left, height, width)",
    reference=crop_reference,
    params=crop_box,
    dtypes=DTYPES,
    modes=("inside", "beyond"),
    tolerances=EXACT,
    recipes=geometry_recipes,
    spec={"features": crop_features},
    implementations=[
        Implementation(library=TV2, call=_tv_crop(F_v2.crop)),
        Implementation(library=TV1, call=_tv_crop(F_v1.crop)),
        Implementation(
            library=KORNIA,
            call=batched(_kornia_crop),
            dtypes=("float32",),
            modes=("inside",),
            spec={**KORNIA_SPEC, "needs": ("kornia.geometry.transform.crop_by_indices",)},
        ),
        Implementation(library=PILLOW, call=pillow_image_op(_pillow_crop), host_only=HOST, spec=HOST_SPEC),
    ],
)


# -- centre crop -----------------------------------------------------------------------------------
@st.composite
def center_size(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """ "smaller": a window within the image; "larger": wider or taller than it (padded with zeros)."""
    if mode == "smaller":
        return {
            "height": draw(st.integers(1, recipe.height), label="height"),
            "width": draw(st.integers(1, recipe.width), label="width"),
        }
    height = draw(st.integers(1, recipe.height + 9), label="height")
    low = recipe.width + 1 if height <= recipe.height else 1
    return {"height": height, "width": draw(st.integers(low, recipe.width + 9), label="width")}


def center_features(case: Case) -> dict[str, Any]:
    """Per axis the margin m = image - window.  An odd margin cannot be split evenly: the reference leaves the
    extra pixel after the window (offset floor(m / 2)).  half_even_rounds_up: some m >= 0 has m % 4 == 3, where
    round-half-to-even gives the next offset; odd_padding: some m < 0 is odd (the window is wider than the
    image); odd_margin: either kind; pads_and_crops: one axis is padded, the other cropped;
    pads_one_pixel_side: an axis one pixel long is padded."""
    sides = ((case.recipe.height, case.params["height"]), (case.recipe.width, case.params["width"]))
    margins = [side - window for side, window in sides]
    return {
        **layout_features(case, case.params["height"], case.params["width"]),
        "odd_margin": any(m % 2 for m in margins),
        "half_even_rounds_up": any(m >= 0 and m % 4 == 3 for m in margins),
        "odd_padding": any(m < 0 and m % 2 for m in margins),
        "pads_and_crops": min(margins) < 0 < max(margins),
        "pads_one_pixel_side": any(side == 1 < window for side, window in sides),
    }


def _tv_center_crop(center_crop: Callable) -> Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]:
    def call(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
        return center_crop(image, [p["height"], p["width"]])

    return call


def _kornia_center_crop(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """kornia's documented defaults: bilinear sampling, zeros outside the image, align_corners=True."""
    import kornia

    return kornia.geometry.transform.center_crop(image, (p["height"], p["width"]))


CENTER_CROP = Operation(
    name="center_crop",
    description="crop a window at the centre (height, width)",
    reference=lambda image, case: geometry.center_crop(image, case.params["height"], case.params["width"]),
    params=center_size,
    dtypes=DTYPES,
    modes=("smaller", "larger"),
    tolerances=EXACT,
    recipes=geometry_recipes,
    spec={"features": center_features},
    implementations=[
        Implementation(library=TV2, call=_tv_center_crop(F_v2.center_crop)),
        Implementation(library=TV1, call=_tv_center_crop(F_v1.center_crop)),
        Implementation(
            library=KORNIA,
            call=batched(_kornia_center_crop),
            dtypes=("float32",),
            spec={**KORNIA_SPEC, "needs": ("kornia.geometry.transform.center_crop",)},
        ),
    ],
)


# -- pad -------------------------------------------------------------------------------------------
PAD_MODES = ("constant", "edge", "reflect", "symmetric")


@st.composite
def padding(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """(left, top, right, bottom); reflect mirrors without the border pixel, so it can add at most
    side - 1 pixels; symmetric at most side.  The mode is the test mode (each its own item); `fill`
    (constant only) may be left out: 0 by default.  A float fill is a multiple of 1/256, which float32
    holds exactly (the output can then match exactly)."""
    most = {"reflect": (recipe.width - 1, recipe.height - 1), "symmetric": (recipe.width, recipe.height)}.get(
        mode, (12, 12)
    )
    sides = [
        draw(st.integers(0, min(12, most[n % 2])), label=name)
        for n, name in enumerate(("left", "top", "right", "bottom"))
    ]
    params: dict[str, Any] = {"padding": sides, "mode": mode}
    if mode == "constant":
        level = draw(st.integers(0, 255), label="fill")
        params["fill"] = level if recipe.dtype == "uint8" else level / 256
    return params


def pad_features(case: Case) -> dict[str, Any]:
    left, top, right, bottom = case.params["padding"]
    return layout_features(case, case.recipe.height + top + bottom, case.recipe.width + left + right)


def pad_reference(image: np.ndarray, case: Case) -> np.ndarray:
    return geometry.pad(image, case.params["padding"], case.params["mode"], case.params.get("fill", 0))


def _tv2_pad(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    return F_v2.pad(image, p["padding"], padding_mode=p["mode"], **keywords(p, fill=None))


def _tv1_pad(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """v1 documents at most 2 leading dimensions (C, H, W or one batch dim) for reflect and symmetric: a
    deeper batch is folded into one, as kornia's are.  Edge is documented for 5-D (padding the last 3
    dimensions) and is called as it is."""

    def pad(x: torch.Tensor, q: dict[str, Any]) -> torch.Tensor:
        return F_v1.pad(x, q["padding"], padding_mode=q["mode"], **keywords(q, fill=None))

    if p["mode"] in ("reflect", "symmetric") and image.ndim > 4:
        return batched(pad)(image, p)
    return pad(image, p)


def _pillow_pad(picture: Any, p: dict[str, Any]) -> Any:
    """Pillow reads a fill as a colour of the image's mode (an int is a packed pixel: red only, for RGB):
    one value per band."""
    from PIL import ImageOps

    fill = keywords(p, fill=("fill", lambda v: v if len(picture.getbands()) == 1 else (v,) * len(picture.getbands())))
    return ImageOps.expand(picture, border=tuple(p["padding"]), **fill)


def _opencv_pad(image: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    """OpenCV's border value is a 4-channel scalar: a plain number would fill the first channel only."""
    import cv2

    left, top, right, bottom = p["padding"]
    border = {
        "constant": cv2.BORDER_CONSTANT,
        "edge": cv2.BORDER_REPLICATE,
        "reflect": cv2.BORDER_REFLECT_101,
        "symmetric": cv2.BORDER_REFLECT,
    }[p["mode"]]
    value = keywords(p, fill=("value", lambda v: (v,) * 4))
    return cv2.copyMakeBorder(image, top, bottom, left, right, border, **value)


# Documented defaults of `fill`: torchvision v1/v2 "Default is 0", Pillow ImageOps.expand "Default is 0
# (black)", OpenCV copyMakeBorder `value=Scalar()` (zeros).
PAD = Operation(
    name="pad",
    description="pad (left, top, right, bottom) with a fill value or the image's own pixels",
    reference=pad_reference,
    params=padding,
    dtypes=DTYPES,
    modes=PAD_MODES,
    tolerances=EXACT,
    recipes=geometry_recipes,
    optional=("fill",),
    spec={"features": pad_features},
    implementations=[
        Implementation(library=TV2, call=_tv2_pad, defaults={"fill": 0}),
        Implementation(library=TV1, call=_tv1_pad, defaults={"fill": 0}),
        Implementation(
            library=PILLOW,
            call=pillow_image_op(_pillow_pad),
            modes=("constant",),
            defaults={"fill": 0},
            host_only=HOST,
            spec=HOST_SPEC,
        ),
        Implementation(
            library=OPENCV,
            call=per_host_image(_opencv_pad),
            defaults={"fill": 0},
            host_only=HOST,
            spec=opencv_spec("copyMakeBorder"),
        ),
    ],
)

for _operation in (HFLIP, VFLIP, QUARTER_TURNS, CROP, CENTER_CROP, PAD):
    globals().update(_operation.tests())
