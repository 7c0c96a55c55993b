"""Perspective warps from four point pairs, nearest and bilinear with a fill, through torchvision v2 and v1,
kornia (get_perspective_transform + warp_perspective), Pillow (Image.transform(PERSPECTIVE)) and OpenCV
(getPerspectiveTransform + warpPerspective); and kornia's get_perspective_transform against a float64 solve.
Elastic warps: test_elastic.py.

Reference: conformance.references.perspective (the homography solved in float64 from the four pairs) sampled by
conformance.references.warp.  The points are torchvision's: the four corners of the image, [top-left, top-right,
bottom-right, bottom-left], in the continuous coordinates torchvision's coefficients (and Pillow's, which its code
cites) are applied in, where pixel k covers [k, k + 1): the start points are (0, 0), (W, 0), (W, H), (0, H), the
end points those corners moved by integer offsets (torchvision documents "lists of two integers") up to 30% of the
side, halved until the quad is convex with a margin (a convex quad keeps its vanishing lines a third of a side
outside the image), or none (the identity).  kornia and OpenCV take pixel indices (kornia: "pixel centers"): they
get every point less half a pixel, the same warp.  Pillow gets the 8 coefficients solved here in float64.

The domain: uint8 and uint16 (torchvision, OpenCV), float16/bfloat16 (torch libraries, bilinear), float32, float64
(bilinear); 1-4 channels, every batch layout; PIL images for torchvision's functionals.  Error modes (INVALID): three
end points (torchvision documents four and raises; kornia's shape check, OpenCV's assertion), and degenerate end
points (two equal, or three on the top edge's line), which determine no homography: no library documents it;
those that return an image are findings.
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
    TORCHVISION_PIL,
    TV1,
    TV2,
    Case,
    ExpectedError,
    Gradient,
    Implementation,
    Operation,
    Recipe,
    Rule,
    Tolerance,
    batched,
    fills,
    keywords,
    per_host_image,
    pillow_image_op,
    stored_fill,
)
from conformance.references import perspective, warp
from conformance.spec.case_pieces import (
    HOST_COPY,
    HOST_SPEC,
    OPENCV_FIXED_WEIGHTS,
    WARP_MODES,
    WARP_NEAREST_EXACT,
    WARP_PIL_FILTERS,
    WARP_RECIPES,
    matrix_helper_recipes,
    warp_variants,
)
from conformance.spec.libraries import SUFFIXES

VALID = warp_variants()
INVALID = {
    "points-not-four": "three end points (torchvision: 'Please provide exactly four corners')",
    "points-degenerate": "end points that determine no homography: two equal, or three on one line",
}


def corners(height: int, width: int) -> list[list[int]]:
    return [[0, 0], [width, 0], [width, height], [0, height]]


def convex(points: list[list[int]], margin: float = 0.1) -> bool:
    """Every turn of the quad goes the same way, by more than `margin` of the product of its edges' lengths."""
    p = np.asarray(points, dtype=np.float64)
    for i in range(4):
        a, b = p[(i + 1) % 4] - p[i], p[(i + 2) % 4] - p[(i + 1) % 4]
        if a[0] * b[1] - a[1] * b[0] <= margin * max(np.hypot(*a) * np.hypot(*b), 1e-12):
            return False
    return True


@st.composite
def endpoints(draw: st.DrawFn, height: int, width: int) -> list[list[int]]:
    if draw(st.integers(0, 5), label="identity") == 0:
        return corners(height, width)
    dx, dy = int(0.3 * width), int(0.3 * height)
    offsets = [[draw(st.integers(-dx, dx)), draw(st.integers(-dy, dy))] for _ in range(4)]
    while True:
        points = [[x + ox, y + oy] for (x, y), (ox, oy) in zip(corners(height, width), offsets, strict=True)]
        if convex(points) or not any(any(o) for o in offsets):
            return points
        offsets = [[int(ox / 2), int(oy / 2)] for ox, oy in offsets]


@st.composite
def degenerate(draw: st.DrawFn, height: int, width: int) -> list[list[int]]:
    points = corners(height, width)
    if draw(st.booleans(), label="equal"):
        points[1] = list(points[0])  # top-right onto top-left
    else:
        points[2] = [draw(st.integers(0, width)), 0]  # bottom-right onto the top edge's line
    return points


@st.composite
def perspective_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    height, width = recipe.height, recipe.width
    ends = draw(degenerate(height, width) if mode == "points-degenerate" else endpoints(height, width), label="ends")
    if mode == "points-not-four":
        ends = ends[:3]
    return {
        "startpoints": corners(height, width),
        "endpoints": ends,
        "interpolation": mode if mode in WARP_MODES else "nearest",
        "fill": draw(fills(recipe.dtype), label="fill"),
    }


def inverse_of(params: dict[str, Any]) -> np.ndarray:
    return perspective.perspective_inverse(params["startpoints"], params["endpoints"])


def reference(image: np.ndarray, case: Case) -> np.ndarray:
    p = case.params
    return warp.warp(image, inverse_of(p), p["interpolation"], stored_fill(p["fill"], case.recipe.dtype))


FAR = 2048.0  # pixels: beyond it a float16 position is off by a pixel or more, and near the horizon overflows


def far_positions(inverse: np.ndarray, height: int, width: int) -> bool:
    """Whether some output pixel samples beyond FAR (or at infinity): near the warp's horizon the projective
    division blows up, which float16 cannot hold (torch's half-precision grid_sample gives NaN there)."""
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    w = inverse[2, 0] * xs + inverse[2, 1] * ys + inverse[2, 2]
    with np.errstate(divide="ignore", invalid="ignore"):
        u = (inverse[0, 0] * xs + inverse[0, 1] * ys + inverse[0, 2]) / w
        v = (inverse[1, 0] * xs + inverse[1, 1] * ys + inverse[1, 2]) / w
    return not bool((np.abs(u) <= FAR).all() and (np.abs(v) <= FAR).all())


# Of the magnitude of its terms: a half-precision evaluation cancels w to 0 only within its own rounding (two
# products, their sum and the grid's coordinates: 4 roundings of at most 2^-8 in bfloat16, 1/64) plus the error of
# the half-precision matrix row (at most 0.068 of that magnitude over 40,000 warps drawn from this domain): 0.083,
# which 1/8 bounds.
HORIZON = 1 / 8


def near_horizon(inverse: np.ndarray, height: int, width: int) -> bool:
    """Whether some output pixel's homogeneous coordinate w, as kornia's grid writes it (a x + b y + c over
    pixel centres x, y in [-1, 1]), is within HORIZON of |a x| + |b y| + |c|: there half-precision arithmetic
    can cancel w to exactly 0, an infinite sampling position (torch's cpu grid_sample turns it into NaN)."""
    half_w, half_h = (width - 1) / 2, (height - 1) / 2  # pixel centre k + 1/2 is (n + 1) * half + 1/2
    a, b = inverse[2, 0] * half_w, inverse[2, 1] * half_h
    c = inverse[2, 0] * (half_w + 0.5) + inverse[2, 1] * (half_h + 0.5) + inverse[2, 2]
    x, y = np.linspace(-1, 1, width)[None, :], np.linspace(-1, 1, height)[:, None]
    terms = np.abs(a * x) + np.abs(b * y) + abs(c)
    return bool((np.abs(a * x + b * y + c) < HORIZON * terms).any())


def features(case: Case) -> dict[str, Any]:
    """Facts the known issues scope to (see test_affine.py's): ties (nearest), samples between the image and the
    fill (bilinear), a fill passed, a one-pixel side, more than one image, an identity warp, a position beyond
    float16's reach, a pixel near the warp's horizon.  None for the error modes (no homography)."""
    p = case.params
    if len(p["endpoints"]) != 4 or perspective.collinear(p["endpoints"]):
        return {}
    height, width = case.recipe.height, case.recipe.width
    inverse = inverse_of(p)
    nearest = p["interpolation"] == "nearest"
    return {
        "tie_gap": warp.tie_gap(warp.tie_distance(inverse, height, width)) if nearest else "n/a",
        "border_samples": warp.border_samples(inverse, height, width),
        "fill_passed": "fill" not in p.get(OMIT, ()),
        "singleton_axis": min(height, width) == 1,
        "batched": math.prod(case.recipe.batch) > 1,
        "identity": p["endpoints"] == p["startpoints"],
        "far_positions": far_positions(inverse, height, width),
        "near_horizon": near_horizon(inverse, height, width),
    }


# -- the calls ---------------------------------------------------------------------------------------
TV_KEYWORDS = {"interpolation": ("interpolation", InterpolationMode), "fill": None}


def _tv(function):
    def call(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:  # touches no tensor attribute: PIL works
        return function(image, p["startpoints"], p["endpoints"], **keywords(p, **TV_KEYWORDS))

    return call


def _points(image: torch.Tensor, points: list[list[float]], batch: int) -> torch.Tensor:
    """(batch, n, 2) points, pixel indices (less half a pixel), filled on the image's device in its dtype."""
    rows = [torch.full((), float(v) - 0.5, dtype=image.dtype, device=image.device) for xy in points for v in xy]
    return torch.stack(rows).reshape(1, len(points), 2).expand(batch, -1, -1)


def _kornia(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    """get_perspective_transform(src, dst), the source -> destination homography in pixel indices, and
    warp_perspective with dsize the image's size; a fill through padding_mode="fill".  align_corners is left at its
    default.  Every tensor in the image's dtype, as warp_perspective requires of the matrix."""
    from kornia.geometry import transform as kt

    batch, height, width = image.shape[0], *image.shape[-2:]
    matrix = kt.get_perspective_transform(
        _points(image, p["startpoints"], batch), _points(image, p["endpoints"], batch)
    )
    fill = {}
    if "fill" in p:
        fill = {
            "padding_mode": "fill",
            "fill_value": torch.full((1,), float(p["fill"]), dtype=image.dtype, device=image.device),
        }
    return kt.warp_perspective(image, matrix, (height, width), **keywords(p, interpolation="mode"), **fill)


def _pillow(picture: Any, p: dict[str, Any]) -> Any:
    """Image.transform(PERSPECTIVE) with the output -> input coefficients solved in float64 (reference module)."""
    from PIL import Image

    bands = len(picture.getbands())
    color = (lambda v: float(v)) if picture.mode == "F" else (lambda v: int(v) if bands == 1 else (int(v),) * bands)
    coefficients = perspective.pillow_coefficients(p["startpoints"], p["endpoints"])
    return picture.transform(
        picture.size,
        Image.Transform.PERSPECTIVE,
        coefficients,
        **keywords(p, interpolation=("resample", WARP_PIL_FILTERS.get), fill=("fillcolor", color)),
    )


def _opencv(image: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    """getPerspectiveTransform (source -> destination, pixel indices: the points less half a pixel) and
    warpPerspective with the image's size; borderValue the fill (BORDER_CONSTANT is the default)."""
    import cv2

    height, width = image.shape[:2]
    src, dst = (np.float32(perspective.shifted(p[k], -0.5)) for k in ("startpoints", "endpoints"))
    flags = {"nearest": cv2.INTER_NEAREST, "bilinear": cv2.INTER_LINEAR}
    return cv2.warpPerspective(
        image,
        cv2.getPerspectiveTransform(src, dst),
        (width, height),
        **keywords(p, interpolation=("flags", flags.get), fill=("borderValue", lambda v: (v,) * 4)),
    )


# -- tolerances --------------------------------------------------------------------------------------
PILLOW_TRUNCATES = Tolerance(
    "pillow-truncates",
    atol=1,
    reason="Pillow's 8-bit bilinear filter truncates the interpolated value instead of rounding it: up to one level "
    "below (as in test_affine.py); measured 1",
)


def _half(name: str, ulp: float) -> Tolerance:
    return Tolerance(
        f"{name}-output-rounding",
        atol=ulp + 6e-5,
        reason=f"two roundings to {name} (the sample, the fill blend) of values below 2, an ulp at [1, 2) "
        f"({ulp:.3g}), plus float32 positions (6e-5, the float32 rule); "
        "measured 9.9e-4 (float16), 7.5e-3 (bfloat16); torchvision's and kornia's coarser "
        "half-precision positions are known issues (vision-half-precision-grid-perspective-*, "
        "kornia-half-precision-matrix-perspective-*)",
    )


TOLERANCES = [
    Rule(WARP_NEAREST_EXACT, mode="nearest"),
    Rule(WARP_NEAREST_EXACT, mode="points-*"),
    Rule(PILLOW_TRUNCATES, check="pil", dtype="uint8", mode="bilinear"),
    Rule(
        Tolerance(
            "uint8-rounding",
            atol=1,
            reason="one level from round(reference): the libraries compute in float32 and round; measured max 1",
        ),
        dtype="uint8",
    ),
    Rule(
        Tolerance(
            "uint16-float32-positions",
            atol=3,
            reason="one level from round(reference), plus the float32 positions' error (3e-5 pixels, as "
            "float32-coordinates says) times a slope of up to 65535 levels a pixel (0 beside 65535 in extremes "
            "content): 1.97 levels; measured max 1 over 150 cases, 2 in dev seed 9 (a 43x22 extremes image)",
        ),
        dtype="uint16",
    ),
    Rule(
        Tolerance(
            "float32-coordinates",
            atol=6e-5,
            reason="float32 positions: a projective position (x' / w) carries the rounding of the matrix entries, "
            "the products and the division: ~8 ulps of coordinates up to 64 (3.8e-6 each), 3e-5 pixels, times the "
            "local slope (up to 2 per pixel for out-of-range content): 6e-5; measured 1.6e-5 (kornia), 1.3e-5 "
            "(torchvision v2 and v1, OpenCV) over 150 cases per variant",
        ),
        dtype="float32",
    ),
    Rule(
        Tolerance(
            "float64-coordinates",
            atol=1e-11,
            reason="float64 positions: a few ulps of coordinates up to 64 (1.4e-14 each) through the matrix, the "
            "division and kornia's inverse of its normalised matrix, times a slope of 2; measured 2.1e-13 "
            "(torchvision, where its float32 coefficients happen to be exact), 6.2e-14 (kornia)",
        ),
        dtype="float64",
    ),
    Rule(_half("float16", 2**-10), dtype="float16"),
    Rule(_half("bfloat16", 2**-7), dtype="bfloat16"),
]


def _split(library: str, call: Any, default: str, **fields: Any) -> list[Implementation]:
    """The library's implementation for its default interpolation (which a case may leave out) and, suffixed with
    the other one, one that always passes it (test_affine.py's split).  Both get the error modes."""
    other = WARP_MODES[1 - WARP_MODES.index(default)]
    defaults = {"fill": 0}
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


TV_RAISES = {"points-not-four": ExpectedError("torchvision checks the count", ValueError, match="four corners")}
NO_POINTS = {
    "points-not-four": "it takes the 8 coefficients, which this module solves from the points",
    "points-degenerate": "it takes the 8 coefficients, which this module solves from the points",
}

PERSPECTIVE = Operation(
    name="perspective",
    description="perspective warp taking the image's corners to four end points, same size",
    reference=reference,
    params=perspective_params,
    dtypes=("uint8", "uint16", "float16", "bfloat16", "float32", "float64"),
    modes=WARP_MODES,
    invalid=INVALID,
    variants=[*VALID, ("float32", "points-not-four"), ("float32", "points-degenerate")],
    tolerances=TOLERANCES,
    recipes=WARP_RECIPES,
    # Documented defaults: torchvision's interpolation BILINEAR and fill None (zeros); kornia's mode "bilinear" and
    # padding "zeros"; Pillow's resample NEAREST, no fillcolor (black); OpenCV's flags INTER_LINEAR, borderValue 0.
    optional=lambda mode: ("interpolation", "fill") if mode in WARP_MODES else (),
    spec={"features": features},
    gradient=Gradient(modes=("bilinear",)),  # linear in the image, as affine's (test_affine.py)
    implementations=[
        *_split(TV2, _tv(F_v2.perspective), "bilinear", raises=TV_RAISES, spec={"pil_input": TORCHVISION_PIL}),
        *_split(TV1, _tv(F_v1.perspective), "bilinear", raises=TV_RAISES, spec={"pil_input": TORCHVISION_PIL}),
        *_split(
            KORNIA,
            batched(_kornia),
            "bilinear",
            dtypes=("float16", "bfloat16", "float32", "float64"),
            spec={"keeps_memory_format": False, "needs": ("kornia.geometry.transform.warp_perspective",)},
        ),
        *_split(
            PILLOW,
            pillow_image_op(_pillow),
            "nearest",
            dtypes=("uint8", "float32"),
            tolerances=[Rule(PILLOW_TRUNCATES, dtype="uint8", mode="bilinear")],
            not_applicable=NO_POINTS,
            host_only=HOST_COPY,
            spec=HOST_SPEC,
        ),
        *_split(
            OPENCV,
            per_host_image(_opencv),
            "bilinear",
            dtypes=("uint8", "uint16", "float32", "float64"),
            tolerances=OPENCV_FIXED_WEIGHTS,
            host_only=HOST_COPY,
            spec={**HOST_SPEC, "needs": ("cv2.warpPerspective",)},
        ),
    ],
)
globals().update(PERSPECTIVE.tests())


# -- kornia's get_perspective_transform ------------------------------------------------------------------
# The op's "image" only says where the helper's arguments live (test_affine_random.py's matrix helpers): every
# tensor is built on its device, in its dtype, one row per image of its batch.


@st.composite
def quad_pair(draw: st.DrawFn) -> dict[str, Any]:
    """A source box (corners within 64 pixels, sides 2-64) and its corners moved by up to 30% of the sides (two
    decimals), halved until convex: the source -> destination pair of one image."""
    grid = st.decimals(-64, 64, places=2).map(float)
    x0, y0 = draw(grid), draw(grid)
    w, h = (draw(st.decimals(2, 64, places=2).map(float)) for _ in range(2))
    src = [[x0, y0], [x0 + w, y0], [x0 + w, y0 + h], [x0, y0 + h]]
    offsets = [[draw(st.decimals("-0.3", "0.3", places=2).map(float)) * s for s in (w, h)] for _ in range(4)]
    while True:
        dst = [[round(x + ox, 4), round(y + oy, 4)] for (x, y), (ox, oy) in zip(src, offsets, strict=True)]
        if convex(dst) or not any(any(o) for o in offsets):
            return {"src": src, "dst": dst}
        offsets = [[ox / 2, oy / 2] for ox, oy in offsets]


def matrix_params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
    batch = recipe.batch[0]
    return st.lists(quad_pair(), min_size=batch, max_size=batch).map(
        lambda rows: {"src": [r["src"] for r in rows], "dst": [r["dst"] for r in rows]}
    )


def matrix_reference(image: np.ndarray, case: Case) -> np.ndarray:
    """The float64 homography of the points as the op holds them: rounded to its dtype (`_on`).  Rounding 16.78 to
    float32 moves a point by an ulp, and a small box far from the origin amplifies that a thousandfold in the
    matrix: the op's input, not its error (seed 5 of the dev campaign: 0.38 on an entry of 2,070 against exact
    points, 0.03 against the rounded ones)."""
    held = [np.asarray(case.params[k], dtype=case.recipe.dtype).astype(np.float64) for k in ("src", "dst")]
    return np.stack([perspective.homography(s.tolist(), d.tolist()) for s, d in zip(*held, strict=True)])


def _on(image: torch.Tensor, rows: list[Any]) -> torch.Tensor:
    """Rows of numbers as a tensor on the image's device and dtype, filled there (no host copy per call)."""
    flat = np.ravel(rows)
    values = torch.stack([torch.full((), float(v), dtype=image.dtype, device=image.device) for v in flat])
    return values.reshape(np.shape(rows))


def _get_perspective_transform(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
    from kornia.geometry import transform as kt

    return kt.get_perspective_transform(_on(image, p["src"]), _on(image, p["dst"]))


PERSPECTIVE_MATRIX = Operation(
    name="perspective_matrix",
    description="kornia.geometry.transform.get_perspective_transform; the image gives only device, dtype and batch",
    reference=matrix_reference,
    params=matrix_params,
    dtypes=("float32", "float64"),
    modes=("default",),
    tolerances=[
        Rule(
            Tolerance(
                "float32-matrix",
                atol=1e-4,
                rtol=1e-4,
                reason="float32: kornia solves in float32 for float32 points (two unit-square maps, a closed-form "
                "inverse and a product), held to the float64 solve of the same float32 points: a few ulps of the "
                "solve's products, relative to entries up to ~2e3, times the box's conditioning; over 3,000 draws "
                "of quad_pair the worst element used 0.30 of atol + rtol |entry| (1.22 against the exact points, "
                "whose float32 rounding the matrix amplifies); a half-precision solve is 5e-4 relative",
            ),
            dtype="float32",
        ),
        Rule(
            Tolerance(
                "float64-matrix",
                atol=1e-10,
                rtol=1e-10,
                reason="float64: a few ulps of entries up to ~1e3 through the same products; measured 2.0e-10 "
                "absolute on such an entry",
            ),
            dtype="float64",
        ),
    ],
    recipes=matrix_helper_recipes,
    spec={"keeps_memory_format": False, "needs": ("kornia.geometry.transform.get_perspective_transform",)},
    implementations=[Implementation(library=KORNIA, call=_get_perspective_transform)],
)
globals().update(PERSPECTIVE_MATRIX.tests())
