"""Exact geometry: flips, rotation by quarter turns, crop, centre crop and pad, each through every
library that has it (torchvision v2 and v1, kornia, Pillow, OpenCV).  kornia's random flips and crop
are in cases/test_geometry_random.py.

Reference: conformance.references.geometry (numpy index arithmetic).  Every output pixel is a copy
of an input pixel or the fill value, so every implementation must match exactly, in every dtype: any
difference is a wrong index, a wrong fill or another convention (listed in known_issues.toml with its
reason).  Features name the mechanisms those entries are scoped to (an odd margin, a window ending
before the image, one image per batch), so an entry covers its mechanism and nothing else.

The domain drawn: every dtype each library takes in each op's main mode (uint8 and float32 in the others,
plus the dtypes whose code path differs there), torchvision's functionals also with PIL images (the `pil`
check), and as error modes the inputs just outside each op's range: a window of -1, a mirror wider than the
image, a padding of -1, a uint8 fill out of range, an empty image to mirror.
"""

from __future__ import annotations

import importlib
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
    Accepted,
    Case,
    Counterpart,
    Implementation,
    Operation,
    Recipe,
    batched,
    empty_recipes,
    image_recipes,
    keywords,
    module_class,
    peak,
    per_host_image,
    pillow_image_op,
    versions,
)
from conformance.references import geometry
from conformance.spec.case_pieces import (
    HOST_COPY,
    HOST_SPEC,
    NO_LAYOUT_PROMISE,
    TORCHVISION_PIL_SPEC,
    exception_class,
    pixel_copy_rules,
)

Call = Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]
# torchvision copies pixels in every dtype (v2: "[..., C, H, W]", no dtype named); numpy (OpenCV) has no bfloat16;
# Pillow holds one image as uint8 (L, RGB, RGBA), one 16-bit plane ("I;16") or one float32 plane ("F").
DTYPES = ("uint8", "uint16", "float16", "bfloat16", "float32", "float64")
BASE = ("uint8", "float32")  # the dtypes of an op's secondary modes
OPENCV_DTYPES = ("uint8", "uint16", "float16", "float32", "float64")
PILLOW_DTYPES = ("uint8", "uint16", "float32")
EXACT = pixel_copy_rules(DTYPES)
# torch's cpu flip (hflip, vflip and v2 rotate's rot90 fast path) takes uint16 in 2.15, where 2.11 raises
# NotImplementedError "flip_cpu" not implemented for 'UInt16' (seen on a GPU machine; CUDA's came with pytorch#137781)
FLIP_UINT16 = versions.satisfies("torch", ">=2.15")
FLIP_DTYPES = tuple(d for d in DTYPES if FLIP_UINT16 or d != "uint16")
FLIP_NARROWED = {} if FLIP_UINT16 else {"narrowed": "torch < 2.15: no uint16 (its cpu flip has no uint16 kernel)"}
TV_FLIP_SPEC = {**TORCHVISION_PIL_SPEC, **FLIP_NARROWED}


def lazy(module: str) -> Any:
    """An optional library, imported at the call (its op's items skip, naming it, where it is missing)."""
    return importlib.import_module(module)


def opencv_spec(function: str) -> dict[str, Any]:
    return {**HOST_SPEC, "needs": (f"cv2.{function}",)}


def geometry_recipes(dtype: str) -> st.SearchStrategy[Recipe]:
    """Up to 48 pixels a side, 1-4 channels (2 channels reach the per-channel paths of host libraries)."""
    return image_recipes(dtype, channels=(3, 1, 4, 2), max_side=48)


def variants(main: str, *others: str) -> list[tuple[str, str]]:
    """Every dtype in the op's main mode, uint8 and float32 in the others (the same kernels)."""
    return [(d, main) for d in DTYPES] + [(d, m) for m in others for d in BASE]


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


def folded(module: Any, image: torch.Tensor, p: dict[str, Any], sampled: Any) -> torch.Tensor:
    """A (B, C, H, W) module called as `batched` calls its function: leading dims folded into one batch."""
    return batched(lambda images, q: module(images))(image, p)


ALWAYS = {"p": 1.0}  # torchvision's random flip applied with probability 1: deterministic


def pillow_op(function: Callable[[Any, dict[str, Any]], Any]) -> Call:
    """pillow_image_op, and uint16 images one plane at a time in Pillow's 16-bit unsigned mode ("I;16")."""

    def plane(array: np.ndarray, p: dict[str, Any]) -> np.ndarray:
        return np.asarray(function(lazy("PIL.Image").fromarray(array[..., 0]), p))

    eight_bit, planes = pillow_image_op(function), per_host_image(plane, channelwise=True)
    return lambda image, p: (planes if image.dtype == torch.uint16 else eight_bit)(image, p)


# -- flips ---------------------------------------------------------------------------------------
def _flip(
    name: str, reference: Callable, tv2: Callable, tv1: Callable, pillow: str, opencv_code: int, tv_class: str
) -> Operation:
    """kornia documents its flips for any rank, and names no dtype ("flips the last dimension"): every dtype.
    torchvision's module form is its random flip with p=1 (`tv_class`), kornia's Hflip or Vflip."""
    return Operation(
        name=name,
        description=f"{name} of image tensors",
        reference=lambda image, case: reference(image),
        params=lambda recipe, mode: st.just({}),
        dtypes=DTYPES,
        modes=("default",),
        tolerances=EXACT,
        recipes=geometry_recipes,
        implementations=[
            Implementation(
                library=TV2,
                call=lambda image, p: tv2(image),
                counterpart=module_class(f"torchvision.transforms.v2.{tv_class}", lambda p: ALWAYS),
                dtypes=FLIP_DTYPES,
                spec=TV_FLIP_SPEC,
            ),
            Implementation(
                library=TV1,
                call=lambda image, p: tv1(image),
                counterpart=module_class(f"torchvision.transforms.{tv_class}", lambda p: ALWAYS),
                dtypes=FLIP_DTYPES,
                spec=TV_FLIP_SPEC,
            ),
            Implementation(
                library=KORNIA,
                call=lambda image, p: getattr(lazy("kornia").geometry.transform, name)(image),
                counterpart=module_class(f"kornia.geometry.transform.{name.capitalize()}", lambda p: {}),
                dtypes=FLIP_DTYPES,
                spec={**NO_LAYOUT_PROMISE, **FLIP_NARROWED, "needs": (f"kornia.geometry.transform.{name}",)},
            ),
            Implementation(
                library=PILLOW,
                call=pillow_op(lambda picture, p: picture.transpose(lazy("PIL.Image").Transpose[pillow])),
                dtypes=PILLOW_DTYPES,
                host_only=HOST_COPY,
                spec=HOST_SPEC,
            ),
            Implementation(
                library=OPENCV,
                call=per_host_image(lambda image, p: lazy("cv2").flip(image, opencv_code)),
                dtypes=OPENCV_DTYPES,
                host_only=HOST_COPY,
                spec=opencv_spec("flip"),
            ),
        ],
    )


HFLIP = _flip("hflip", geometry.hflip, F_v2.horizontal_flip, F_v1.hflip, "FLIP_LEFT_RIGHT", 1, "RandomHorizontalFlip")
VFLIP = _flip("vflip", geometry.vflip, F_v2.vertical_flip, F_v1.vflip, "FLIP_TOP_BOTTOM", 0, "RandomVerticalFlip")


# -- rotation by quarter turns --------------------------------------------------------------------
# Exact multiples of 90 degrees only: at 90 + 1e-9 the expanded size has no single documented meaning (torchvision's
# tensor path snaps the bounding box to 1e-4 pixel, Pillow's rotate, which its PIL path calls, takes the ceiling and
# grows by one or two pixels), so no almost-quarter-turn mode is drawn.
def rotate_features(case: Case) -> dict[str, Any]:
    """odd_side_difference: height - width is odd, where v1 computes the expanded size one pixel too large;
    two_dimensional: both sides above one pixel, where a transposed view is dense in no layout."""
    rows, cols = case.recipe.height, case.recipe.width
    return {
        **layout_features(case, cols, rows),
        "odd_side_difference": (rows - cols) % 2 == 1,
        "two_dimensional": rows > 1 and cols > 1,
    }


def _tv_rotate(rotate: Callable) -> Call:
    """A quarter-turn rotation is `rotate(angle=90k, expand=True)`; the interpolation is left to the documented
    default (nearest), which copies pixels."""
    return lambda image, p: rotate(image, 90.0 * p["turns"], expand=True)


def _quarter_turns_class(transforms: str) -> Counterpart:
    """RandomRotation given the one angle 90k (degrees=(90k, 90k)) and expand=True: deterministic."""
    return module_class(f"{transforms}.RandomRotation", lambda p: {"degrees": (90.0 * p["turns"],) * 2, "expand": True})


def _pillow_turns(picture: Any, p: dict[str, Any]) -> Any:
    return picture.transpose(lazy("PIL.Image").Transpose[("ROTATE_90", "ROTATE_180", "ROTATE_270")[p["turns"] - 1]])


def _opencv_turns(image: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    cv2 = lazy("cv2")
    return cv2.rotate(image, (cv2.ROTATE_90_COUNTERCLOCKWISE, cv2.ROTATE_180, cv2.ROTATE_90_CLOCKWISE)[p["turns"] - 1])


QUARTER_TURNS = Operation(
    name="rotate_quarter_turns",
    description="rotation by 90, 180 or 270 degrees counter-clockwise",
    reference=lambda image, case: geometry.rotate_quarter_turns(image, case.params["turns"]),
    params=lambda recipe, mode: st.fixed_dictionaries({"turns": st.integers(1, 3)}),
    dtypes=DTYPES,
    modes=("default",),
    tolerances=EXACT,
    recipes=geometry_recipes,
    spec={"features": rotate_features},
    implementations=[
        Implementation(
            library=TV2,
            call=_tv_rotate(F_v2.rotate),
            counterpart=_quarter_turns_class("torchvision.transforms.v2"),
            description="v2 rotate(90k, expand=True)",
            dtypes=FLIP_DTYPES,  # its quarter turns are torch.rot90, a flip
            spec=TV_FLIP_SPEC,
        ),
        Implementation(
            library=TV1,
            call=_tv_rotate(F_v1.rotate),
            counterpart=_quarter_turns_class("torchvision.transforms"),
            description="v1 rotate(90k, expand=True)",
            spec=TORCHVISION_PIL_SPEC,
        ),
        Implementation(
            library=PILLOW, call=pillow_op(_pillow_turns), dtypes=PILLOW_DTYPES, host_only=HOST_COPY, spec=HOST_SPEC
        ),
        Implementation(
            library=OPENCV,
            call=per_host_image(_opencv_turns),
            dtypes=OPENCV_DTYPES,
            host_only=HOST_COPY,
            spec=opencv_spec("rotate"),
        ),
    ],
)


# -- crop ------------------------------------------------------------------------------------------
@st.composite
def crop_box(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """ "inside": a window within the image; "beyond": a window reaching past an edge (zeros there);
    "negative-size" (invalid): a window within the image but for a height or width of -1."""
    rows, cols = recipe.height, recipe.width
    if mode == "beyond":
        height, width = draw(st.integers(1, rows + 8), label="height"), draw(st.integers(1, cols + 8), label="width")
        top = draw(st.integers(-height - 2, rows + 2), label="top")
        left = draw(st.integers(-width - 2, cols + 2), label="left")
    else:
        height, width = draw(st.integers(1, rows), label="height"), draw(st.integers(1, cols), label="width")
        top, left = draw(st.integers(0, rows - height), label="top"), draw(st.integers(0, cols - width), label="left")
    if mode == "negative-size":
        height, width = (-1, width) if draw(st.booleans(), label="negative_height") else (height, -1)
    return {"top": top, "left": left, "height": height, "width": width}


def _returned(side: int, start: int, end: int) -> int:
    """The side torchvision's crop returns for a window [start, end) of a side: the slice it takes (a negative end
    counted from the far edge, as Python does) and the padding it adds (crop_image, v1 and v2 alike)."""
    kept = len(range(side)[max(start, 0) : end])
    return kept + max(min(end, 0) - start, 0) + max(end - max(side, start), 0)


def crop_features(case: Case) -> dict[str, Any]:
    """ends_before_image: the window ends before the image's first row or column but less than a side
    before it (a negative slice end that Python counts from the far edge); outside: some of the window is
    off the image (torchvision pads it); misses_image: none of it is on the image (all fill).  Whether the
    layout can be seen is judged on the size torchvision returns, which differs from the window's where it
    ends before the image (vision-crop-window-ending-before-the-image; dev seed 11: a 1x1 window of a 3x1 image
    came back 3x1, and its layout with it)."""
    p, rows, cols = case.params, case.recipe.height, case.recipe.width
    bottom, right = p["top"] + p["height"], p["left"] + p["width"]
    return {
        **layout_features(case, _returned(rows, p["top"], bottom), _returned(cols, p["left"], right)),
        "ends_before_image": -rows < bottom < 0 or -cols < right < 0,
        "outside": p["top"] < 0 or p["left"] < 0 or bottom > rows or right > cols,
        "misses_image": bottom <= 0 or right <= 0 or p["top"] >= rows or p["left"] >= cols,
    }


def _tv_crop(crop: Callable) -> Call:
    return lambda image, p: crop(image, p["top"], p["left"], p["height"], p["width"])


def _kornia_crop(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """kornia crops a (B, C, H, W) batch by the four corners (x, y) of a box, inclusive; the box is float32, as
    kornia's own RandomCrop passes it (a box in the image's dtype could not hold a negative corner in uint8)."""
    top, left, bottom, right = p["top"], p["left"], p["top"] + p["height"] - 1, p["left"] + p["width"] - 1
    corners = [[left, top], [right, top], [right, bottom], [left, bottom]]
    boxes = torch.tensor([corners], dtype=torch.float32, device=image.device).expand(image.shape[0], 4, 2)
    return lazy("kornia").geometry.transform.crop_by_indices(image, boxes)


CROP = Operation(
    name="crop",
    description="crop a window (top, left, height, width)",
    reference=lambda image, case: geometry.crop(image, *(case.params[k] for k in ("top", "left", "height", "width"))),
    params=crop_box,
    dtypes=DTYPES,
    modes=("inside", "beyond", "negative-size"),
    variants=[*variants("inside", "beyond"), ("uint8", "negative-size")],
    invalid={"negative-size": "a window height or width of -1"},
    tolerances=EXACT,
    recipes=geometry_recipes,
    spec={"features": crop_features},
    implementations=[
        Implementation(library=TV2, call=_tv_crop(F_v2.crop), spec=TORCHVISION_PIL_SPEC),
        Implementation(library=TV1, call=_tv_crop(F_v1.crop), spec=TORCHVISION_PIL_SPEC),
        Implementation(
            library=KORNIA,
            call=batched(_kornia_crop),
            modes=("inside",),  # a window off the image is resized or wraps (Python slices), by design
            raises={"negative-size": RuntimeError},  # "Trying to create tensor with negative dimension -1"
            spec={**NO_LAYOUT_PROMISE, "needs": ("kornia.geometry.transform.crop_by_indices",)},
        ),
        Implementation(
            library=PILLOW,
            call=pillow_op(
                lambda pic, p: pic.crop((p["left"], p["top"], p["left"] + p["width"], p["top"] + p["height"]))
            ),
            dtypes=PILLOW_DTYPES,
            raises={"negative-size": ValueError},  # "Coordinate 'right' is less than 'left'"
            host_only=HOST_COPY,
            spec=HOST_SPEC,
        ),
    ],
)


# -- centre crop -----------------------------------------------------------------------------------
@st.composite
def center_size(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """ "smaller": a window within the image; "larger": wider or taller than it (padded with zeros);
    "empty-window": one side 0 (an empty output); "negative-size" (invalid): one side -1."""
    if mode == "larger":
        height = draw(st.integers(1, recipe.height + 9), label="height")
        low = recipe.width + 1 if height <= recipe.height else 1
        return {"height": height, "width": draw(st.integers(low, recipe.width + 9), label="width")}
    height = draw(st.integers(1, recipe.height), label="height")
    width = draw(st.integers(1, recipe.width), label="width")
    if mode in ("empty-window", "negative-size"):
        side = 0 if mode == "empty-window" else -1
        height, width = (side, width) if draw(st.booleans(), label="short_height") else (height, side)
    return {"height": height, "width": width}


def center_features(case: Case) -> dict[str, Any]:
    """Per axis the margin m = image - window.  An odd margin cannot be split evenly: the reference leaves the
    extra pixel after the window (offset floor(m / 2)).  half_even_rounds_up: some m >= 0 has m % 4 == 3, where
    round-half-to-even gives the next offset; odd_padding: some m < 0 is odd (the window is wider than the
    image); odd_margin: either kind; pads_and_crops: one axis is padded, the other cropped;
    pads_one_pixel_side: an axis one pixel long is padded.  A window with no pixels has none of these (where it
    starts cannot be seen)."""
    sides = ((case.recipe.height, case.params["height"]), (case.recipe.width, case.params["width"]))
    margins = [side - window for side, window in sides]
    seen = min(case.params["height"], case.params["width"]) > 0
    return {
        **layout_features(case, case.params["height"], case.params["width"]),
        "odd_margin": seen and any(m % 2 for m in margins),
        "half_even_rounds_up": seen and any(m >= 0 and m % 4 == 3 for m in margins),
        "odd_padding": seen and any(m < 0 and m % 2 for m in margins),
        "pads_and_crops": seen and min(margins) < 0 < max(margins),
        "pads_one_pixel_side": seen and any(side == 1 < window for side, window in sides),
    }


def _tv_center_crop(center_crop: Callable) -> Call:
    return lambda image, p: center_crop(image, [p["height"], p["width"]])


CENTER_SIZE = lambda p: {"size": [p["height"], p["width"]]}  # noqa: E731 - torchvision's CenterCrop(size)


def _kornia_center_crop(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """kornia's documented defaults: bilinear sampling, zeros outside the image, align_corners=True."""
    return lazy("kornia").geometry.transform.center_crop(image, (p["height"], p["width"]))


CENTER_CROP = Operation(
    name="center_crop",
    description="crop a window at the centre (height, width)",
    reference=lambda image, case: geometry.center_crop(image, case.params["height"], case.params["width"]),
    params=center_size,
    dtypes=DTYPES,
    modes=("smaller", "larger", "empty-window", "negative-size"),
    variants=[*variants("smaller", "larger"), ("float32", "empty-window"), ("float32", "negative-size")],
    invalid={"negative-size": "a window height or width of -1"},
    tolerances=EXACT,
    recipes=geometry_recipes,
    spec={"features": center_features},
    implementations=[
        Implementation(
            library=TV2,
            call=_tv_center_crop(F_v2.center_crop),
            counterpart=module_class("torchvision.transforms.v2.CenterCrop", CENTER_SIZE),
            spec=TORCHVISION_PIL_SPEC,
        ),
        Implementation(
            library=TV1,
            call=_tv_center_crop(F_v1.center_crop),
            counterpart=module_class("torchvision.transforms.CenterCrop", CENTER_SIZE),
            spec=TORCHVISION_PIL_SPEC,
        ),
        Implementation(
            library=KORNIA,
            call=batched(_kornia_center_crop),
            # its class crops by slicing by default (cropping_mode="slice"), the function warps
            counterpart=module_class(
                "kornia.geometry.transform.CenterCrop2D", lambda p: {"size": (p["height"], p["width"])}, forward=folded
            ),
            # float only: its warp raises for integer images ("expected scalar type Byte but found Float")
            dtypes=("float16", "bfloat16", "float32", "float64"),
            raises={"negative-size": ValueError},  # "Output size must be non-negative"
            spec={**NO_LAYOUT_PROMISE, "needs": ("kornia.geometry.transform.center_crop",)},
        ),
    ],
)


# -- pad -------------------------------------------------------------------------------------------
PAD_MODES = ("constant", "edge", "reflect", "symmetric")
MIRRORS = ("reflect", "symmetric")
# Symmetric padding beyond the side is not drawn: CUDA answers it with a device-side assert that leaves the worker's
# CUDA context unusable (docs/findings.md#torchvisions-symmetric-pad-beyond-the-image-asserts-on-cuda).
PAD_INVALID = {
    "reflect-too-wide": "reflect padding of the image's side or more",
    "negative-padding": "a padding of -1 on one side",
    "fill-out-of-range": "a uint8 fill of 256 or -1",
    "mirror-empty-image": "an image with no pixels to repeat or mirror (edge, reflect, symmetric)",
}


@st.composite
def padding(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """(left, top, right, bottom); reflect mirrors without the border pixel, so it can add at most side - 1
    pixels; symmetric at most side.  A valid mode is the padding mode; `fill` (constant only) may be left out: 0
    by default; a float fill is a multiple of 1/256, which every float dtype holds.  The error modes draw one side
    just outside that range (reflect-too-wide: the side or side + 1; negative-padding: -1), a fill just outside
    uint8's (with padding on every side: a fill is used only there), or 1 to 3 pixels a side around an empty image."""
    rows, cols = recipe.height, recipe.width
    fixed = {"reflect-too-wide": "reflect", "negative-padding": "constant", "fill-out-of-range": "constant"}
    padding_mode = fixed.get(mode, mode)
    if mode == "mirror-empty-image":
        padding_mode = draw(st.sampled_from(PAD_MODES[1:]), label="mode")
    most = {"reflect": (cols - 1, rows - 1), "symmetric": (cols, rows)}.get(padding_mode, (12, 12))
    names = ("left", "top", "right", "bottom")
    if mode == "mirror-empty-image":
        sides = [draw(st.integers(1, 3), label=name) for name in names]
    else:
        low = 1 if mode == "fill-out-of-range" else 0
        sides = [draw(st.integers(low, min(12, most[n % 2])), label=name) for n, name in enumerate(names)]
    if mode in ("reflect-too-wide", "negative-padding"):
        n = draw(st.integers(0, 3), label="side")
        sides[n] = most[n % 2] + draw(st.integers(1, 2), label="beyond") if mode == "reflect-too-wide" else -1
    params: dict[str, Any] = {"padding": sides, "mode": padding_mode}
    if mode == "fill-out-of-range":
        params["fill"] = draw(st.sampled_from((256, -1)), label="fill")
    elif padding_mode == "constant":
        integer = recipe.dtype in ("uint8", "uint16")
        level = draw(st.integers(0, int(peak(recipe.dtype)) if integer else 256), label="fill")
        params["fill"] = level if integer else level / 256
    return params


def pad_features(case: Case) -> dict[str, Any]:
    left, top, right, bottom = case.params["padding"]
    return layout_features(case, case.recipe.height + top + bottom, case.recipe.width + left + right)


def _tv1_pad(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """v1 documents at most 2 leading dimensions (C, H, W or one batch dim) for reflect and symmetric: a
    deeper batch is folded into one, as kornia's are.  Edge is documented for 5-D (padding the last 3
    dimensions) and is called as it is.  A PIL image (the `pil` check) has no ndim: one image."""

    def pad(x: torch.Tensor, q: dict[str, Any]) -> torch.Tensor:
        return F_v1.pad(x, q["padding"], padding_mode=q["mode"], **keywords(q, fill=None))

    return (batched(pad) if p["mode"] in MIRRORS and getattr(image, "ndim", 3) > 4 else pad)(image, p)


def _pad_arguments(p: dict[str, Any]) -> dict[str, Any]:
    """torchvision's Pad(padding, fill, padding_mode): the function's keywords (fill only where the case gives one)."""
    return {"padding": p["padding"], "padding_mode": p["mode"], **keywords(p, fill=None)}


def _tv1_pad_forward(module: Any, image: torch.Tensor, p: dict[str, Any], sampled: Any) -> torch.Tensor:
    """v1's Pad called as _tv1_pad calls its function: a deeper batch folded for the mirror modes."""
    return folded(module, image, p, sampled) if p["mode"] in MIRRORS and image.ndim > 4 else module(image)


def _pillow_pad(picture: Any, p: dict[str, Any]) -> Any:
    """Pillow reads a fill as a colour of the image's mode (an int is a packed pixel: red only, for RGB):
    one value per band."""
    bands = len(picture.getbands())
    fill = keywords(p, fill=("fill", lambda v: v if bands == 1 else (v,) * bands))
    return lazy("PIL.ImageOps").expand(picture, border=tuple(p["padding"]), **fill)


def _opencv_pad(image: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    """OpenCV's border value is a 4-channel scalar: a plain number would fill the first channel only."""
    cv2 = lazy("cv2")
    left, top, right, bottom = p["padding"]
    borders = {"constant": cv2.BORDER_CONSTANT, "edge": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT_101}
    border = borders.get(p["mode"], cv2.BORDER_REFLECT)  # symmetric
    value = keywords(p, fill=("value", lambda v: (v,) * 4))
    return cv2.copyMakeBorder(image, top, bottom, left, right, border, **value)


TV_PAD_RAISES = {
    "reflect-too-wide": RuntimeError,  # "Padding size should be less than the corresponding input dimension"
    "fill-out-of-range": RuntimeError,  # "value cannot be converted to type uint8_t without overflow"
    "mirror-empty-image": (RuntimeError, IndexError),  # "Expected 3D or 4D ... non-zero dimensions" / "index is ..."
}
OPENCV_SATURATES = Accepted(
    documentation="OpenCV, Introduction, 'Saturation Arithmetics': a value stored in an 8-bit image is saturate_cast "
    "to 0..255, and 'This semantics is used everywhere in the library' (https://docs.opencv.org/4.x/d1/dfb/intro.html)",
    meaning=lambda p: {**p, "fill": min(max(p["fill"], 0), 255)},
)
# Documented defaults of `fill`: torchvision v1/v2 "Default is 0", Pillow ImageOps.expand "Default is 0
# (black)", OpenCV copyMakeBorder `value=Scalar()` (zeros).
PAD = Operation(
    name="pad",
    description="pad (left, top, right, bottom) with a fill value or the image's own pixels",
    reference=lambda image, case: geometry.pad(
        image, case.params["padding"], case.params["mode"], case.params.get("fill", 0)
    ),
    params=padding,
    dtypes=DTYPES,
    modes=(*PAD_MODES, *PAD_INVALID),
    # every dtype for constant; edge and reflect also uint16 (torchvision pads it in float32) and bfloat16 (torch's
    # replicate and reflect kernels in half precision); symmetric gathers indices whatever the dtype
    variants=[
        *variants("constant", "symmetric"),
        *[(d, m) for m in ("edge", "reflect") for d in ("uint8", "uint16", "bfloat16", "float32")],
        *[("uint8", m) for m in PAD_INVALID],
    ],
    invalid=PAD_INVALID,
    tolerances=EXACT,
    optional=lambda mode: () if mode == "fill-out-of-range" else ("fill",),
    spec={
        "features": pad_features,
        "mode_recipes": lambda dtype, mode: (
            empty_recipes(dtype) if mode == "mirror-empty-image" else geometry_recipes(dtype)
        ),
    },
    implementations=[
        Implementation(
            library=TV2,
            call=lambda image, p: F_v2.pad(image, p["padding"], padding_mode=p["mode"], **keywords(p, fill=None)),
            counterpart=module_class("torchvision.transforms.v2.Pad", _pad_arguments),
            defaults={"fill": 0},
            raises=TV_PAD_RAISES,
            spec=TORCHVISION_PIL_SPEC,
        ),
        Implementation(
            library=TV1,
            call=_tv1_pad,
            counterpart=module_class("torchvision.transforms.Pad", _pad_arguments, forward=_tv1_pad_forward),
            defaults={"fill": 0},
            raises=TV_PAD_RAISES,
            spec=TORCHVISION_PIL_SPEC,
        ),
        Implementation(
            library=PILLOW,
            call=pillow_op(_pillow_pad),
            dtypes=PILLOW_DTYPES,
            modes=("constant",),
            defaults={"fill": 0},
            not_applicable={
                "reflect-too-wide": "ImageOps.expand pads with a colour only: it has no mirror mode",
                "mirror-empty-image": "ImageOps.expand pads with a colour only: no pixel of the image is repeated",
            },
            host_only=HOST_COPY,
            spec=HOST_SPEC,
        ),
        Implementation(
            library=OPENCV,
            call=per_host_image(_opencv_pad),
            dtypes=OPENCV_DTYPES,
            defaults={"fill": 0},
            # cv2.error "top >= 0 && bottom >= 0 && left >= 0 && right >= 0"
            raises={"negative-padding": exception_class("cv2.error", Exception)},
            accepts={"fill-out-of-range": OPENCV_SATURATES},
            not_applicable={
                "mirror-empty-image": "not drawn: copyMakeBorder never returns on an empty image in its mirror modes "
                "(a native loop the harness cannot stop; docs/findings.md#opencv-pads-an-empty-image-forever)"
            },
            host_only=HOST_COPY,
            spec=opencv_spec("copyMakeBorder"),
        ),
    ],
)

for _operation in (HFLIP, VFLIP, QUARTER_TURNS, CROP, CENTER_CROP, PAD):
    globals().update(_operation.tests())
