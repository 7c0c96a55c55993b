"""Rotate and affine warps with nearest and bilinear sampling and a fill value, through torchvision v2
and v1, kornia, Pillow and OpenCV (kornia's random versions are in test_affine_random.py).

Reference: conformance.references.warp (float64 inverse mapping; pixel centres at integers, so
the centre of rotation is ((W - 1) / 2, (H - 1) / 2); nearest takes the pixel whose cell holds the
sample, bilinear extends the image by the fill).  Each call is mapped to mean that: torchvision's
and Pillow's half-pixel centre (W / 2, H / 2) is the same point; kornia and OpenCV get the centre in
pixel indices; torchvision's and kornia's affine angle turns clockwise (documented), Pillow and
OpenCV, which have no affine-from-parameters call, get the matrix built here.  What cannot be
mapped (tie rounding, fill blending, fixed-point coordinates) is a known issue, not a tolerance.

The interpolation is the test mode.  A case may leave `interpolation`, `expand` and `fill` out;
a library is then called without them and judged by its documented default, so each library's
implementation is split by mode: the one named plainly covers its default interpolation (and may
leave it out), the one suffixed with the other mode always passes it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torchvision.transforms.functional as F_v1
import torchvision.transforms.v2.functional as F_v2
from hypothesis import strategies as st
from torchvision.transforms import InterpolationMode

from conformance import (
    KORNIA,
    OMIT,
    OPENCV,
    PILLOW,
    TV1,
    TV2,
    Case,
    Gradient,
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
from conformance.references import warp
from conformance.spec.libraries import SUFFIXES

DTYPES, MODES = ("uint8", "float32"), ("nearest", "bilinear")
HOST = "a host library: the image is copied to host memory and back"
# Angles where samples fall exactly on cell edges (ties) for some sizes, and arbitrary ones.
SPECIAL_ANGLES = (0.0, 90.0, -90.0, 180.0, 270.0, 45.0, 30.0, -60.0)


def warp_recipes(dtype: str) -> st.SearchStrategy[Recipe]:
    """Up to 48 pixels a side (1-pixel sides included), one batch dim (v1 takes at most 4-D), 1-4 channels
    (2 reach the one-channel-at-a-time paths of Pillow)."""
    return image_recipes(dtype, channels=(3, 1, 4, 2), max_side=48, max_batch_dims=1)


def angles() -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from(SPECIAL_ANGLES), st.decimals(-180, 180, places=2).map(float))


def fills(dtype: str) -> st.SearchStrategy[float]:
    return st.integers(0, 255) if dtype == "uint8" else st.decimals(0, 1, places=3).map(float)


@st.composite
def rotate_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    return {
        "angle": draw(angles(), label="angle"),
        "interpolation": mode,
        "expand": False,
        "fill": draw(fills(recipe.dtype), label="fill"),
    }


@st.composite
def affine_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """Integer translations (v1 documents integers) up to a quarter of the side, scale 0.5-2, shears up to 40
    degrees."""
    shear = st.one_of(st.just(0.0), st.decimals(-40, 40, places=1).map(float))
    return {
        "angle": draw(angles(), label="angle"),
        "translate": [
            draw(st.integers(-(recipe.width // 4), recipe.width // 4), label="tx"),
            draw(st.integers(-(recipe.height // 4), recipe.height // 4), label="ty"),
        ],
        "scale": draw(st.one_of(st.just(1.0), st.decimals("0.5", 2, places=2).map(float)), label="scale"),
        "shear": [draw(shear, label="shear_x"), draw(shear, label="shear_y")],
        "interpolation": mode,
        "fill": draw(fills(recipe.dtype), label="fill"),
    }


def rotate_inverse(params: dict[str, Any], height: int, width: int) -> np.ndarray:
    return warp.rotation_inverse(params["angle"], height, width)


def affine_inverse(params: dict[str, Any], height: int, width: int) -> np.ndarray:
    return warp.affine_inverse(params["angle"], params["translate"], params["scale"], params["shear"], height, width)


def stored_fill(fill: float, dtype: str) -> float:
    """The fill as the output image holds it: a float32 image holds the value rounded to float32."""
    return float(np.float32(fill)) if dtype == "float32" else fill


def _reference(inverse_of):
    def reference(image: np.ndarray, case: Case) -> np.ndarray:
        p = case.params
        return warp.warp(
            image, inverse_of(p, *image.shape[-2:]), p["interpolation"], stored_fill(p["fill"], case.recipe.dtype)
        )

    return reference


def _features(inverse_of):
    def features(case: Case) -> dict[str, Any]:
        """Facts the known issues scope to: ties (nearest), samples between the image and the fill (bilinear),
        a fill passed explicitly, a side of one pixel, more than one image, a quarter turn of a square image (v2
        rotate's fast path)."""
        height, width = case.recipe.height, case.recipe.width
        inverse = inverse_of(case.params, height, width)
        nearest = case.params["interpolation"] == "nearest"
        turns = case.params["angle"] / 90
        return {
            "tie_gap": warp.tie_gap(warp.tie_distance(inverse, height, width)) if nearest else "n/a",
            "border_samples": warp.border_samples(inverse, height, width),
            "fill_passed": "fill" not in case.params.get(OMIT, ()),
            "singleton_axis": min(height, width) == 1,
            "batched": math.prod(case.recipe.batch) > 1,
            "square_quarter_turn": height == width > 1 and turns == int(turns) and int(turns) % 2 == 1,
        }

    return features


# -- the calls ---------------------------------------------------------------------------------------
TV_KEYWORDS = {"interpolation": ("interpolation", InterpolationMode), "fill": None}


def _tv_rotate(rotate):
    def call(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
        return rotate(image, p["angle"], **keywords(p, expand=None, **TV_KEYWORDS))

    return call


def _tv_affine(affine):
    def call(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
        return affine(image, p["angle"], p["translate"], p["scale"], p["shear"], **keywords(p, **TV_KEYWORDS))

    return call


def _scalars(image: torch.Tensor, *values: float) -> torch.Tensor:
    """A 1-D tensor on the image's device, filled there (no host copy per call)."""
    return torch.stack([torch.full((), float(v), dtype=image.dtype, device=image.device) for v in values])


def _kornia_fill(image: torch.Tensor, p: dict[str, Any]) -> dict[str, Any]:
    """kornia fills with a value through warp_affine(padding_mode="fill"); left out, its default zero padding."""
    return {"padding_mode": "fill", "fill_value": _scalars(image, p["fill"])} if "fill" in p else {}


def _kornia_rotate(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """kornia.geometry.transform.rotate (counter-clockwise about ((W-1)/2, (H-1)/2)); it takes no fill, so
    with one: get_rotation_matrix2d + warp_affine.  align_corners is left at its default."""
    from kornia.geometry import transform as kt

    angle, mode = _scalars(image, p["angle"]), keywords(p, interpolation="mode")
    if "fill" not in p:
        return kt.rotate(image, angle, **mode)
    height, width = image.shape[-2:]
    matrix = kt.get_rotation_matrix2d(
        _scalars(image, (width - 1) / 2, (height - 1) / 2)[None], angle, _scalars(image, 1.0, 1.0)[None]
    )
    return kt.warp_affine(image, matrix, (height, width), **mode, **_kornia_fill(image, p))


def _kornia_affine(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """get_affine_matrix2d composes T C R S SHy SHx C^-1 like torchvision (clockwise angle, shear in radians)."""
    from kornia.geometry import transform as kt

    height, width = image.shape[-2:]
    matrix = kt.get_affine_matrix2d(
        _scalars(image, *p["translate"])[None],
        _scalars(image, (width - 1) / 2, (height - 1) / 2)[None],
        _scalars(image, p["scale"], p["scale"])[None],
        _scalars(image, p["angle"]),
        _scalars(image, math.radians(p["shear"][0])),
        _scalars(image, math.radians(p["shear"][1])),
    )
    return kt.warp_affine(
        image, matrix[:, :2], (height, width), **keywords(p, interpolation="mode"), **_kornia_fill(image, p)
    )


def forward_affine(p: dict[str, Any], cx: float, cy: float) -> np.ndarray:
    """The forward 3x3 map T C R_cw S SHy SHx C^-1 about (cx, cy), for the libraries without an
    affine-from-parameters call (torchvision's documented composition)."""
    a, sx, sy = (math.radians(v) for v in (p["angle"], *p["shear"]))
    rotation = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    shear = np.array([[1.0, 0.0], [-math.tan(sy), 1.0]]) @ np.array([[1.0, -math.tan(sx)], [0.0, 1.0]])
    linear = p["scale"] * rotation @ shear
    matrix = np.eye(3)
    matrix[:2, :2] = linear
    matrix[:2, 2] = np.array([cx + p["translate"][0], cy + p["translate"][1]]) - linear @ np.array([cx, cy])
    return matrix


PIL_FILTERS = {"nearest": 0, "bilinear": 2}  # Image.Resampling.NEAREST, BILINEAR


def _pil_keywords(picture: Any, p: dict[str, Any]) -> dict[str, Any]:
    bands = len(picture.getbands())
    color = (lambda v: float(v)) if picture.mode == "F" else (lambda v: int(v) if bands == 1 else (int(v),) * bands)
    return keywords(p, interpolation=("resample", PIL_FILTERS.get), fill=("fillcolor", color))


def _pillow_rotate(picture: Any, p: dict[str, Any]) -> Any:
    return picture.rotate(p["angle"], **keywords(p, expand=None), **_pil_keywords(picture, p))


def _pillow_affine(picture: Any, p: dict[str, Any]) -> Any:
    """Image.transform(AFFINE) takes the output -> input map in half-pixel coordinates (centre W/2, H/2)."""
    from PIL import Image

    inverse = np.linalg.inv(forward_affine(p, picture.width / 2, picture.height / 2))
    return picture.transform(
        picture.size, Image.Transform.AFFINE, tuple(inverse[:2].ravel()), **_pil_keywords(picture, p)
    )


def _opencv_keywords(p: dict[str, Any]) -> dict[str, Any]:
    import cv2

    flags = {"nearest": cv2.INTER_NEAREST, "bilinear": cv2.INTER_LINEAR}
    return keywords(p, interpolation=("flags", flags.get), fill=("borderValue", lambda v: (v,) * 4))


def _opencv_rotate(image: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    """getRotationMatrix2D (counter-clockwise for a positive angle) about the centre in pixel indices."""
    import cv2

    height, width = image.shape[:2]
    matrix = cv2.getRotationMatrix2D(((width - 1) / 2, (height - 1) / 2), p["angle"], 1.0)
    return cv2.warpAffine(image, matrix, (width, height), **_opencv_keywords(p))


def _opencv_affine(image: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    import cv2

    height, width = image.shape[:2]
    matrix = forward_affine(p, (width - 1) / 2, (height - 1) / 2)[:2]
    return cv2.warpAffine(image, matrix, (width, height), **_opencv_keywords(p))


# -- tolerances --------------------------------------------------------------------------------------
TOLERANCES = [
    Rule(
        Tolerance(
            "exact",
            reason="nearest copies one input pixel or the fill: any difference is another pixel. "
            "Samples on or near cell edges are known issues (ties), not a tolerance",
        ),
        mode="nearest",
    ),
    Rule(
        Tolerance(
            "uint8-rounding",
            atol=1,
            reason="one level from round(reference): torchvision computes in float32 and rounds; measured max 1",
        ),
        dtype="uint8",
    ),
    Rule(
        Tolerance(
            "float32-coordinates",
            atol=3.1e-5,
            rtol=0,
            reason="float32 sampling grid and weights: the position error (up to 4 ulps of coordinates up "
            "to 64, 3.8e-6 each) times the local slope (up to 2 per pixel for out-of-range content): 3.1e-5; "
            "measured 2.23e-5 (kornia rotate by -180 degrees of a 46x40 image)",
        ),
        dtype="float32",
    ),
]
PILLOW_TRUNCATES = [
    Rule(
        Tolerance(
            "pillow-truncates",
            atol=1,
            reason="Pillow's 8-bit bilinear filter truncates the "
            "interpolated value instead of rounding it: up to one level below",
        ),
        dtype="uint8",
        mode="bilinear",
    )
]
OPENCV_FIXED_WEIGHTS = [
    Rule(
        Tolerance(
            "opencv-fixed-point", atol=1, reason="OpenCV's 8-bit bilinear weights are 15-bit fixed point, rounded once"
        ),
        dtype="uint8",
        mode="bilinear",
    )
]


def _split(library: str, call: Any, default: str, *, defaults: dict[str, Any], **fields: Any) -> list[Implementation]:
    """The library's implementation for its default interpolation (which a case may leave out) and, suffixed
    with the other one, an implementation that always passes it."""
    other = MODES[1 - MODES.index(default)]
    return [
        Implementation(
            library=library, call=call, modes=(default,), defaults={"interpolation": default, **defaults}, **fields
        ),
        Implementation(
            library=library,
            call=call,
            modes=(other,),
            suffix=f"{SUFFIXES[library]}_{other}",
            defaults=defaults,
            **fields,
        ),
    ]


HOST_FIELDS = {"host_only": HOST, "spec": {"keeps_memory_format": False, "host_transfers": HOST}}
KORNIA_SPEC = {"keeps_memory_format": False, "needs": ("kornia.geometry.transform.warp_affine",)}
OPENCV_SPEC = {**HOST_FIELDS["spec"], "needs": ("cv2.warpAffine",)}


def _operation(
    name: str,
    description: str,
    params,
    inverse_of,
    optional: tuple[str, ...],
    tv2,
    tv1,
    kornia_call,
    pillow_call,
    opencv_call,
) -> Operation:
    # Documented defaults: torchvision's rotate/affine interpolation NEAREST and fill 0 (RandomRotation, RandomAffine);
    # kornia's mode "bilinear" and padding "zeros"; Pillow's resample NEAREST, no fillcolor (black); OpenCV's flags
    # INTER_LINEAR, borderValue 0.  No library expands by default; kornia and OpenCV always keep the size.
    fixed = {"fill": 0, **({"expand": False} if "expand" in optional else {})}
    return Operation(
        name=name,
        description=description,
        reference=_reference(inverse_of),
        params=params,
        dtypes=DTYPES,
        modes=MODES,
        tolerances=TOLERANCES,
        recipes=warp_recipes,
        optional=optional,
        spec={"features": _features(inverse_of)},
        # linear in the image (the fill is a constant): the gradient is the transposed sampling weights.  Not for
        # nearest: its forward tolerance lets a share of samples at ties take the neighbour (docs/tolerances.md),
        # and their gradient moves with them; that is the same allowance, not a backward to judge.
        gradient=Gradient(modes=("bilinear",)),
        implementations=[
            *_split(TV2, tv2, "nearest", defaults=fixed),
            *_split(TV1, tv1, "nearest", defaults=fixed),
            *_split(KORNIA, batched(kornia_call), "bilinear", defaults=fixed, dtypes=("float32",), spec=KORNIA_SPEC),
            *_split(
                PILLOW,
                pillow_image_op(pillow_call),
                "nearest",
                defaults=fixed,
                tolerances=PILLOW_TRUNCATES,
                **HOST_FIELDS,
            ),
            *_split(
                OPENCV,
                per_host_image(opencv_call),
                "bilinear",
                defaults=fixed,
                tolerances=OPENCV_FIXED_WEIGHTS,
                host_only=HOST,
                spec=OPENCV_SPEC,
            ),
        ],
    )


ROTATE = _operation(
    "rotate",
    "rotation counter-clockwise about the image centre, same size",
    rotate_params,
    rotate_inverse,
    ("interpolation", "expand", "fill"),
    _tv_rotate(F_v2.rotate),
    _tv_rotate(F_v1.rotate),
    _kornia_rotate,
    _pillow_rotate,
    _opencv_rotate,
)
AFFINE = _operation(
    "affine",
    "affine map (clockwise angle, translate, scale, shear) about the image centre",
    affine_params,
    affine_inverse,
    ("interpolation", "fill"),
    _tv_affine(F_v2.affine),
    _tv_affine(F_v1.affine),
    _kornia_affine,
    _pillow_affine,
    _opencv_affine,
)

for _operation_ in (ROTATE, AFFINE):
    globals().update(_operation_.tests())
