"""Rotate and affine warps with nearest and bilinear sampling and a fill value, through torchvision v2
and v1, kornia, Pillow and OpenCV (kornia's random versions and its matrix helpers are in test_affine_random.py).

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

The domain: uint8 and uint16 (torchvision, OpenCV), float16/bfloat16 (torch libraries, bilinear), float32,
float64 (bilinear); 1-4 channels, every batch layout; PIL images for torchvision's functionals (the `pil` check).
Error modes (INVALID), held on every library: a fill outside uint8's range on a uint8 image, and affine's scale
<= 0 (torchvision raises; Pillow and OpenCV take a matrix this module builds, so they have no scale).
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
    Accepted,
    Case,
    ExpectedError,
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
    stored_fill,
    versions,
)
from conformance import fills as shared_fills
from conformance.references import warp
from conformance.spec.case_pieces import (
    HOST_COPY,
    HOST_SPEC,
    OPENCV_FIXED_WEIGHTS,
    TORCHVISION_PIL_SPEC,
    WARP_MODES,
    WARP_NEAREST_EXACT,
    WARP_PIL_FILTERS,
    warp_variants,
)
from conformance.spec.libraries import SUFFIXES

VALID = warp_variants()
INVALID = {
    "fill-out-of-range": "a fill outside 0..255 (256..1000 or -1000..-1) on a uint8 image (nearest)",
    "scale-not-positive": "affine's scale 0 or negative (torchvision: 'Argument scale should be positive')",
}
# v2 rotate turns a multiple of 90 degrees into rot90, a flip: torch's cpu flip has no uint16 kernel before 2.15
# (NotImplementedError on 2.11, the lent GPU machine's image; test_geometry.py gates its flips alike)
ROT90_UINT16 = versions.satisfies("torch", ">=2.15")
# Angles where samples fall exactly on cell edges (ties) for some sizes, and arbitrary ones.
SPECIAL_ANGLES = (0.0, 90.0, -90.0, 180.0, 270.0, 45.0, 30.0, -60.0)


def warp_recipes(dtype: str) -> st.SearchStrategy[Recipe]:
    """Up to 48 pixels a side (1-pixel sides included), one batch dim (v1 takes at most 4-D), 1-4 channels
    (2 reach the one-channel-at-a-time paths of Pillow)."""
    return image_recipes(dtype, channels=(3, 1, 4, 2), max_side=48, max_batch_dims=1)


def angles() -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from(SPECIAL_ANGLES), st.decimals(-180, 180, places=2).map(float))


def fills(dtype: str, mode: str) -> st.SearchStrategy[float]:
    if mode == "fill-out-of-range":
        return st.one_of(st.integers(256, 1000), st.integers(-1000, -1))
    return shared_fills(dtype)


def _common(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """Error modes warp with nearest: a fill pixel is then the stored fill itself."""
    return {
        "angle": draw(angles(), label="angle"),
        "interpolation": mode if mode in WARP_MODES else "nearest",
        "fill": draw(fills(recipe.dtype, mode), label="fill"),
    }


@st.composite
def rotate_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    return {**_common(draw, recipe, mode), "expand": False}


@st.composite
def affine_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """Integer translations (v1 documents integers) up to a quarter of the side, scale 0.5-2 (0 or negative in
    "scale-not-positive"), shears up to 40 degrees."""
    shear = st.one_of(st.just(0.0), st.decimals(-40, 40, places=1).map(float))
    scale = st.one_of(st.just(1.0), st.decimals("0.5", 2, places=2).map(float))
    if mode == "scale-not-positive":
        scale = st.one_of(st.just(0.0), st.decimals(-2, "-0.01", places=2).map(float))
    return {
        **_common(draw, recipe, mode),
        "translate": [
            draw(st.integers(-(recipe.width // 4), recipe.width // 4), label="tx"),
            draw(st.integers(-(recipe.height // 4), recipe.height // 4), label="ty"),
        ],
        "scale": draw(scale, label="scale"),
        "shear": [draw(shear, label="shear_x"), draw(shear, label="shear_y")],
    }


def rotate_inverse(params: dict[str, Any], height: int, width: int) -> np.ndarray:
    return warp.rotation_inverse(params["angle"], height, width)


def affine_inverse(params: dict[str, Any], height: int, width: int) -> np.ndarray:
    return warp.affine_inverse(params["angle"], params["translate"], params["scale"], params["shear"], height, width)


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
        rotate's fast path).  None for a scale <= 0 (no inverse map)."""
        if case.params.get("scale", 1.0) <= 0:
            return {}
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
    def call(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:  # touches no tensor attribute: PIL works
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
    with one: get_rotation_matrix2d + warp_affine.  align_corners is left at its default.  Every tensor is in
    the image's dtype, as kornia requires of the matrix (so a half image gets a half matrix)."""
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


def _pil_keywords(picture: Any, p: dict[str, Any]) -> dict[str, Any]:
    bands = len(picture.getbands())
    color = (lambda v: float(v)) if picture.mode == "F" else (lambda v: int(v) if bands == 1 else (int(v),) * bands)
    return keywords(p, interpolation=("resample", WARP_PIL_FILTERS.get), fill=("fillcolor", color))


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
def _half(name: str, ulp: float) -> Tolerance:
    return Tolerance(
        f"{name}-output-rounding",
        atol=ulp + 3.1e-5,
        reason=f"what a {name} image can hold: two roundings to {name} (the sample, the fill blend) of values below 2, "
        f"an ulp at [1, 2) ({ulp:.3g}), plus float32 positions (3.1e-5); measured at most 9.9e-4 (float16), 7.8e-3 "
        f"(bfloat16) where the known issues do not apply: torchvision and kornia position {name} samples more "
        "coarsely (vision-half-precision-grid-*, kornia-half-precision-matrix-*)",
    )


PILLOW_TRUNCATES = Tolerance(
    "pillow-truncates",
    atol=1,
    reason="Pillow's 8-bit bilinear filter truncates the interpolated value instead of rounding it: up to one level "
    "below; measured 1 (Pillow's own calls and torchvision's PIL path)",
)
TOLERANCES = [
    Rule(WARP_NEAREST_EXACT, mode="nearest"),
    Rule(WARP_NEAREST_EXACT, mode="fill-out-of-range"),  # warps with nearest
    Rule(PILLOW_TRUNCATES, check="pil", dtype="uint8", mode="bilinear"),  # torchvision hands a PIL image to Pillow
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
            "uint16-rounding",
            atol=1,
            reason="one level from round(reference): torchvision interpolates in float32 (24 bits: up to ~4e-3 of a "
            "level at 65535) and rounds, so a value that close to a half level may round the other way; measured "
            "max 1 (v1 and v2, 300 cases per variant)",
        ),
        dtype="uint16",
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
    Rule(
        Tolerance(
            "float64-coordinates",
            atol=1e-12,
            reason="float64 grid and weights: a few ulps of coordinates up to 64 (1.4e-14 each) times a slope of 2; "
            "measured 2.3e-14 (kornia), 1.3e-14 (torchvision), 300 cases per variant",
        ),
        dtype="float64",
    ),
    Rule(_half("float16", 2**-10), dtype="float16"),
    Rule(_half("bfloat16", 2**-7), dtype="bfloat16"),
]


def _split(library: str, call: Any, default: str, *, defaults: dict[str, Any], **fields: Any) -> list[Implementation]:
    """The library's implementation for its default interpolation (which a case may leave out) and, suffixed
    with the other one, an implementation that always passes it.  Both get the error modes."""
    other = WARP_MODES[1 - WARP_MODES.index(default)]
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


def _tv2_fields(name: str) -> dict[str, Any]:
    """v2's fields; rotate draws no uint16 where its rot90 path cannot flip one (ROT90_UINT16), and says so."""
    if name != "rotate" or ROT90_UINT16:
        return {"spec": TORCHVISION_PIL_SPEC}
    narrowed = "torch < 2.15: no uint16 (v2 rotate's rot90 flips, and its cpu flip has no uint16 kernel)"
    dtypes = ("uint8", "float16", "bfloat16", "float32", "float64")
    return {"dtypes": dtypes, "spec": {**TORCHVISION_PIL_SPEC, "narrowed": narrowed}}


TV_RAISES = {"scale-not-positive": ExpectedError("torchvision checks scale", ValueError, match="scale should be pos")}
HOST_FIELDS = {"host_only": HOST_COPY, "spec": HOST_SPEC}
KORNIA_SPEC = {"keeps_memory_format": False, "needs": ("kornia.geometry.transform.warp_affine",)}
OPENCV_SPEC = {**HOST_FIELDS["spec"], "needs": ("cv2.warpAffine",)}
NO_SCALE = {"scale-not-positive": "it takes the affine matrix, which this module builds (forward_affine): no scale"}
# OpenCV documents saturation for every value it stores (its borderValue too): the fill is clamped, after rounding
OPENCV_SATURATES = Accepted(
    "docs.opencv.org/4.x/d1/dfb/intro.html 'Saturation Arithmetics': 'to store r, the result of an operation, to an "
    "8-bit image, you find the nearest value within the 0..255 range ... This semantics is used everywhere in the "
    "library'",
    meaning=lambda p: p | {"fill": min(max(round(p["fill"]), 0), 255)},
)


def _operation(name, description, params, inverse_of, optional, tv2, tv1, kornia_call, pillow_call, opencv_call):
    # Documented defaults: torchvision's rotate/affine interpolation NEAREST and fill 0 (RandomRotation, RandomAffine);
    # kornia's mode "bilinear" and padding "zeros"; Pillow's resample NEAREST, no fillcolor (black); OpenCV's flags
    # INTER_LINEAR, borderValue 0.  No library expands by default; kornia and OpenCV always keep the size.
    fixed = {"fill": 0, **({"expand": False} if "expand" in optional else {})}
    invalid = {mode: why for mode, why in INVALID.items() if name == "affine" or mode != "scale-not-positive"}
    errors = [("uint8", "fill-out-of-range")] + ([("float32", "scale-not-positive")] if name == "affine" else [])
    no_scale, tv_raises = (NO_SCALE, TV_RAISES) if name == "affine" else ({}, {})
    return Operation(
        name=name,
        description=description,
        reference=_reference(inverse_of),
        params=params,
        dtypes=("uint8", "uint16", "float16", "bfloat16", "float32", "float64"),
        modes=WARP_MODES,
        invalid=invalid,
        variants=VALID + errors,
        tolerances=TOLERANCES,
        recipes=warp_recipes,
        optional=lambda mode: optional if mode in WARP_MODES else (),
        spec={"features": _features(inverse_of)},
        # linear in the image (the fill is a constant): the gradient is the transposed sampling weights.  Not for
        # nearest: its forward tolerance lets a share of samples at ties take the neighbour (docs/tolerances.md),
        # and their gradient moves with them; that is the same allowance, not a backward to judge.
        gradient=Gradient(modes=("bilinear",)),
        implementations=[
            # torchvision documents no fill range and wraps an out-of-range fill (a finding: undeclared)
            *_split(TV2, tv2, "nearest", defaults=fixed, raises=tv_raises, **_tv2_fields(name)),
            *_split(TV1, tv1, "nearest", defaults=fixed, raises=tv_raises, spec=TORCHVISION_PIL_SPEC),
            # kornia checks no scale (a finding); it takes float images only, so no uint8 fill
            *_split(
                KORNIA,
                batched(kornia_call),
                "bilinear",
                defaults=fixed,
                dtypes=("float16", "bfloat16", "float32", "float64"),
                spec=KORNIA_SPEC,
            ),
            # Pillow clamps an out-of-range fill without documenting it (a finding: undeclared)
            *_split(
                PILLOW,
                pillow_image_op(pillow_call),
                "nearest",
                defaults=fixed,
                dtypes=("uint8", "float32"),
                tolerances=[Rule(PILLOW_TRUNCATES, dtype="uint8", mode="bilinear")],
                not_applicable=no_scale,
                **HOST_FIELDS,
            ),
            *_split(
                OPENCV,
                per_host_image(opencv_call),
                "bilinear",
                defaults=fixed,
                dtypes=("uint8", "uint16", "float32", "float64"),
                tolerances=OPENCV_FIXED_WEIGHTS,
                accepts={"fill-out-of-range": OPENCV_SATURATES},
                not_applicable=no_scale,
                host_only=HOST_COPY,
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
