"""dtype conversion with scaling: torchvision v2 `to_dtype` (and `ToDtype`), v2 and v1 `convert_image_dtype`.

Modes name the output dtype, drawn for the input dtypes that convert to it: uint8, uint16 (torchvision >= 0.20),
float16, bfloat16, float32 and float64 sources and targets (`variants`).  Reference (`convert` below), the
documented meaning: integer -> float is v / white; float -> integer maps [0, 1] onto 0..white; float -> float
keeps the value; integer -> integer shifts by the difference in bits ("When converting from a smaller to a larger
integer dtype the maximum values are not mapped exactly. If converted back and forth, this mismatch has no effect",
ConvertImageDtype's docs: 255 -> 65280, and back).  For float -> integer the reference rounds x * white half up
and saturates (as `save_image`, and the to_pil_image reference); torchvision documents its own binning instead,
equal-width bins (x * (white + 0.999), truncated), at most one level from that rounding: the tolerance
'equal-bins', rather than a reference copying the 0.999.

`to_dtype`'s `scale` keyword defaults to False (documented); a case may leave it out, and then the
reference is the plain cast (floats truncated toward 0, integers wrapped), so a changed default fails the
reference check.  `convert_image_dtype` has no such keyword: it always scales.  The float16 target is drawn with
scale=True only: a plain cast of a uint16 above 65519 to float16 overflows by IEEE rules, which is what a cast means.

PIL input: these ops convert tensors; to_dtype raises TypeError for a PIL image and ToDtype passes it through
unchanged (research, tv 0.29), so the `pil` item (TORCHVISION_PIL) does not apply.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torchvision.transforms as T_v1
import torchvision.transforms.functional as F_v1
import torchvision.transforms.v2 as T_v2
import torchvision.transforms.v2.functional as F_v2
from hypothesis import strategies as st

from conformance import (
    CONTENTS,
    OMIT,
    TV1,
    TV2,
    Case,
    Counterpart,
    Implementation,
    ModuleOp,
    Operation,
    Recipe,
    Returns,
    Rule,
    Tolerance,
    image_recipes,
    keywords,
    materialize,
    peak,
    to_float64,
    versions,
)

BITS = {"uint8": 8, "uint16": 16}
# (input dtype, mode): mode "to-<dtype>" converts to that dtype
VARIANTS = [
    ("uint8", "to-float32"),
    ("uint8", "to-float64"),
    ("float32", "to-uint8"),
    ("float32", "to-float64"),
    ("float64", "to-uint8"),
    ("float64", "to-float32"),
    # half precision: vision#6799 (1.0 -> integer wraps to 0)
    ("float16", "to-uint8"),
    ("bfloat16", "to-uint8"),
    ("float32", "to-float16"),
    ("float32", "to-bfloat16"),
    ("uint8", "to-bfloat16"),
]
# uint16 (vision#8524, torchvision 0.20: `_num_value_bits` and `_max_value` know uint16; 0.19 raises TypeError for
# integer <-> uint16 and scales uint16 <-> float by 1, read from the 0.19.1 wheel)
UINT16_VARIANTS = [
    ("uint8", "to-uint16"),
    ("uint16", "to-uint8"),
    ("uint16", "to-float32"),
    ("uint16", "to-float16"),
    ("float32", "to-uint16"),
]
UINT16_NARROWED = "torchvision < 0.20: no uint16 sources or targets (uint16 scaling came with vision#8524 in 0.20)"
UINT16_OK = versions.satisfies("torchvision", ">=0.20")
SCALE_DEFAULT = {"scale": False}  # to_dtype / ToDtype: "scale (bool, optional) ... Default: False"


def dtype_recipes(dtype: str) -> st.SearchStrategy[Recipe]:
    """to_dtype documents float images in [0, 1]: out-of-range floats are not drawn."""
    return image_recipes(dtype, max_side=48, contents=[c for c in CONTENTS if c != "out_of_range"])


def conversion(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.just({"dtype": mode.removeprefix("to-"), "scale": True})


def scale_optional(mode: str) -> tuple[str, ...]:
    """A plain cast to float16 overflows for uint16 sources (IEEE), so that target always scales."""
    return () if mode == "to-float16" else ("scale",)


def convert(image: np.ndarray, source: str, target: str, scale: bool) -> np.ndarray:
    """A dtype conversion's ideal value (the harness rounds and saturates integer outputs)."""
    if source == target:
        return image.copy()
    if not scale:  # a cast: floats truncate toward 0, integers wrap
        if target in BITS:
            return np.trunc(image) if source not in BITS else np.mod(image, peak(target) + 1)
        return image.copy()
    if source in BITS and target in BITS:  # a shift by the difference in bits (ConvertImageDtype's note)
        return np.floor(image * 2.0 ** (BITS[target] - BITS[source]))
    if target in BITS:  # [0, 1] onto 0..white, rounded half up
        return np.floor(np.clip(image * peak(target) + 0.5, 0, peak(target)))
    if source in BITS:
        return image / peak(source)
    return image.copy()


def reference(image: np.ndarray, case: Case) -> np.ndarray:
    return convert(image, case.recipe.dtype, case.params["dtype"], case.params["scale"])


def features(case: Case, always_scales: bool = False) -> dict[str, Any]:
    """Which cases reach the known wraps: a pixel at white, a uint16 pixel float16 rounds to inf (>= 65520), and
    whether the call scaled (to_dtype's case may leave `scale` out: a plain cast; convert_image_dtype always scales)."""
    pixels = to_float64(materialize(case.recipe))
    return {
        "has_white": bool((pixels == peak(case.recipe.dtype)).any()),
        "overflows_float16": bool((pixels >= 65520).any()),
        "scaled": always_scales or "scale" not in case.params.get(OMIT, ()),
    }


def always_scales(case: Case) -> dict[str, Any]:
    return features(case, always_scales=True)


def _dtype(params: dict[str, Any]) -> torch.dtype:
    return getattr(torch, params["dtype"])


def _to_dtype(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    return F_v2.to_dtype(image, _dtype(params), **keywords(params, scale=None))


def _build(params: dict[str, Any]) -> torch.nn.Module:
    return T_v2.ToDtype(_dtype(params), **keywords(params, scale=None))


def _exact(dtype: str, mode: str, reason: str) -> Rule:
    return Rule(Tolerance("exact", reason=reason), dtype=dtype, mode=mode)


TOLERANCES = [
    Rule(
        Tolerance(
            "float32-division",
            atol=1.2e-7,
            rtol=0,
            reason="k / 255 (or k * (1/255)) rounded to float32: within one ulp (1.2e-7 at 1.0) of k / 255; "
            "measured max 7.43e-8 (v2), 2.97e-8 (v1) over 2000 cases",
        ),
        dtype="uint8",
        mode="to-float32",
    ),
    Rule(
        Tolerance(
            "float32-division",
            atol=1.2e-7,
            rtol=0,
            reason="k / 65535 (or k * (1/65535)) rounded to float32: within one ulp (1.2e-7 at 1.0); measured max "
            "3.0e-8 (v2, v1) over 300 cases",
        ),
        dtype="uint16",
        mode="to-float32",
    ),
    Rule(
        Tolerance(
            "float64-division",
            atol=2.3e-16,
            rtol=0,
            reason="k * (1/255) in float64: within one ulp (2.2e-16 at 1.0) of k / 255; measured max 1.11e-16",
        ),
        dtype="uint8",
        mode="to-float64",
    ),
    _exact("uint16", "to-uint8", "v >> 8 (v / 256 truncated): the documented shift, exact"),
    _exact("uint8", "to-uint16", "v << 8 (v * 256): the documented shift, exact"),
    Rule(
        Tolerance(
            "equal-bins",
            atol=1,
            reason="float -> uint8 maps [0, 1] onto 256 equal bins (x * 255.999, truncated), at most one level "
            "from rounding x * 255 (torchvision documents its binning, the reference rounds); the product rounded "
            "in float16 (half an ulp: 1/16 level) or bfloat16 (to a whole level) stays within it; measured max 1 "
            "(float32, float64: 2000 cases; float16, bfloat16: 300 cases, 1.0 aside: a known issue)",
        ),
        mode="to-uint8",
    ),
    Rule(
        Tolerance(
            "equal-bins",
            atol=1,
            reason="float32 -> uint16: 65536 equal bins (x * 65535.999, truncated), at most one level from rounding "
            "x * 65535; measured max 1 over 300 cases (1.0 aside: a known issue)",
        ),
        mode="to-uint16",
    ),
    Rule(
        Tolerance(
            "float32-rounding",
            atol=0,
            rtol=6e-8,
            reason="a float64 value rounded to the nearest float32: half an ulp, 2^-24 relative; measured max "
            "2.98e-8 absolute",
        ),
        dtype="float64",
        mode="to-float32",
    ),
    Rule(
        Tolerance(
            "float16-rounding",
            atol=3e-8,
            rtol=4.9e-4,
            reason="a float32 value rounded to the nearest float16: half an ulp, 2^-11 relative, 2^-25 absolute "
            "among subnormals; measured max 2.44e-4 over 300 cases",
        ),
        dtype="float32",
        mode="to-float16",
    ),
    Rule(
        Tolerance(
            "float16-two-roundings",
            atol=3e-8,
            rtol=9.8e-4,
            reason="k rounded to float16 (2^-11 relative above 2048), then k * (1/65535) rounded to float16 (2^-11 "
            "relative, 2^-25 absolute among subnormals); measured max 2.59e-4 over 300 cases (inf aside: a known "
            "issue)",
        ),
        dtype="uint16",
        mode="to-float16",
    ),
    Rule(
        Tolerance(
            "bfloat16-rounding",
            atol=0,
            rtol=3.92e-3,
            reason="one rounding to bfloat16: half an ulp, 2^-8 relative (k itself is exact in bfloat16 up to "
            "256; 1/255 in float32 adds 2^-24); measured max 1.95e-3 (uint8 and float32 sources) over 300 cases",
        ),
        mode="to-bfloat16",
    ),
    _exact("float32", "to-float64", "float32 -> float64 widens: every float32 is a float64"),
]

TO_DTYPE = Operation(
    name="to_dtype",
    description="convert an image's dtype, scaling its values to the new dtype's range",
    reference=reference,
    params=conversion,
    dtypes=("uint8", "uint16", "float16", "bfloat16", "float32", "float64"),
    modes=("to-uint8", "to-uint16", "to-float16", "to-bfloat16", "to-float32", "to-float64"),
    variants=VARIANTS + (UINT16_VARIANTS if UINT16_OK else []),
    optional=scale_optional,
    tolerances=TOLERANCES,
    recipes=dtype_recipes,
    spec={
        "returns": Returns(dtype=lambda case: case.params["dtype"]),
        "features": features,
        **({} if UINT16_OK else {"narrowed": UINT16_NARROWED}),
    },
    implementations=[
        Implementation(
            library=TV2,
            name="to_dtype_v2",
            call=_to_dtype,
            defaults=SCALE_DEFAULT,
            description="torchvision.transforms.v2.functional.to_dtype(image, dtype, scale)",
            spec={
                "needs": ("torchvision.transforms.v2.functional.to_dtype",),
                "timing": lambda recipe, mode: {"dtype": mode.removeprefix("to-"), "scale": True},
            },
        ),
        Implementation(
            library=TV2,
            name="to_dtype_v2_module",
            module=ModuleOp(build=_build, unmoved="works"),
            counterpart=Counterpart(name="torchvision.transforms.v2.functional.to_dtype", call=_to_dtype),
            defaults=SCALE_DEFAULT,
            description="torchvision.transforms.v2.ToDtype(dtype, scale)",
            spec={"needs": ("torchvision.transforms.v2.ToDtype",)},
        ),
        # the deprecated v2 convert_image_dtype is `to_dtype_image(image, dtype, scale=True)` (one line): the other
        # dtypes are to_dtype_v2's scale=True cases, so it keeps the uint8/float32/float64 conversions only
        Implementation(
            library=TV2,
            name="convert_image_dtype_v2",
            dtypes=("uint8", "float32", "float64"),
            modes=("to-uint8", "to-float32", "to-float64"),
            call=lambda image, p: F_v2.convert_image_dtype(image, _dtype(p)),
            counterpart=Counterpart(
                name="torchvision.transforms.v2.ConvertImageDtype",
                module=ModuleOp(build=lambda p: T_v2.ConvertImageDtype(_dtype(p))),
            ),
            spec={"needs": ("torchvision.transforms.v2.functional.convert_image_dtype",), "features": always_scales},
        ),
        # v1 documents any integer dtype ("from a smaller to a larger integer dtype"); its uint16 -> uint8 raises
        # NotImplementedError (torch has no uint16 floor division on the cpu): a known issue (vision#8524)
        Implementation(
            library=TV1,
            name="convert_image_dtype_v1",
            call=lambda image, p: F_v1.convert_image_dtype(image, _dtype(p)),
            counterpart=Counterpart(
                name="torchvision.transforms.ConvertImageDtype",
                module=ModuleOp(build=lambda p: T_v1.ConvertImageDtype(_dtype(p))),
            ),
            spec={"needs": ("torchvision.transforms.functional.convert_image_dtype",), "features": always_scales},
        ),
    ],
)

globals().update(TO_DTYPE.tests())
