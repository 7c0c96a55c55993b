"""dtype conversion with scaling: torchvision v2 `to_dtype` (and `ToDtype`), v2 and v1 `convert_image_dtype`.

Modes name the output dtype (uint8 <-> float32 and float64, float32 <-> float64), drawn for every input
dtype that converts to it.  Reference (conformance.references.tone.convert), the documented meaning:
uint8 -> float is v / 255; float -> uint8 maps [0, 1] onto 0..255; float -> float keeps the value.
For float -> uint8 the reference rounds x * 255 half up and saturates (as `save_image`, and the
to_pil_image reference); torchvision documents its own binning instead, 256 equal-width bins
(x * 255.999, truncated), at most one level from that rounding: the tolerance 'uint8-equal-bins'
(precedent: test_pil's to_dtype spec), rather than a reference copying the 255.999.

`to_dtype`'s `scale` keyword defaults to False (documented); a case may leave it out, and then the
reference is the plain cast (floats truncated toward 0), so a changed default fails the reference
check.  `convert_image_dtype` has no such keyword: it always scales.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torchvision.transforms.functional as F_v1
import torchvision.transforms.v2 as T_v2
import torchvision.transforms.v2.functional as F_v2
from hypothesis import strategies as st

from conformance import (
    CONTENTS,
    TV1,
    TV2,
    Case,
    Implementation,
    ModuleOp,
    Operation,
    Recipe,
    Rule,
    Tolerance,
    image_recipes,
    keywords,
)
from conformance.references import tone

# (input dtype, mode): mode "to-<dtype>" converts to that dtype
VARIANTS = [
    ("uint8", "to-float32"),
    ("uint8", "to-float64"),
    ("float32", "to-uint8"),
    ("float32", "to-float64"),
    ("float64", "to-uint8"),
    ("float64", "to-float32"),
]
SCALE_DEFAULT = {"scale": False}  # to_dtype / ToDtype: "scale (bool, optional) ... Default: False"


def dtype_recipes(dtype: str) -> st.SearchStrategy[Recipe]:
    """to_dtype documents float images in [0, 1]: out-of-range floats are not drawn."""
    return image_recipes(dtype, max_side=48, contents=[c for c in CONTENTS if c != "out_of_range"])


def conversion(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.just({"dtype": mode.removeprefix("to-"), "scale": True})


def reference(image: np.ndarray, case: Case) -> np.ndarray:
    return tone.convert(image, case.recipe.dtype, case.params["dtype"], case.params["scale"])


def _dtype(params: dict[str, Any]) -> torch.dtype:
    return getattr(torch, params["dtype"])


def _to_dtype(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    return F_v2.to_dtype(image, _dtype(params), **keywords(params, scale=None))


def _build(params: dict[str, Any]) -> torch.nn.Module:
    return T_v2.ToDtype(_dtype(params), **keywords(params, scale=None))


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
            "float64-division",
            atol=2.3e-16,
            rtol=0,
            reason="k * (1/255) in float64: within one ulp (2.2e-16 at 1.0) of k / 255; measured max 1.11e-16",
        ),
        dtype="uint8",
        mode="to-float64",
    ),
    Rule(
        Tolerance(
            "uint8-equal-bins",
            atol=1,
            reason="float -> uint8 maps [0, 1] onto 256 equal bins (x * 255.999, truncated), at most one level "
            "from rounding x * 255 (torchvision documents its binning, the reference rounds); measured max 1",
        ),
        mode="to-uint8",
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
        Tolerance("exact", reason="float32 -> float64 widens: every float32 is a float64"),
        dtype="float32",
        mode="to-float64",
    ),
]

TO_DTYPE = Operation(
    name="to_dtype",
    description="convert an image's dtype, scaling its values to the new dtype's range",
    reference=reference,
    params=conversion,
    dtypes=("uint8", "float32", "float64"),
    modes=("to-uint8", "to-float32", "to-float64"),
    variants=VARIANTS,
    optional=("scale",),
    tolerances=TOLERANCES,
    recipes=dtype_recipes,
    spec={"output_dtype": lambda case: case.params["dtype"]},
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
            defaults=SCALE_DEFAULT,
            description="torchvision.transforms.v2.ToDtype(dtype, scale)",
            spec={"needs": ("torchvision.transforms.v2.ToDtype",)},
        ),
        Implementation(
            library=TV2,
            name="convert_image_dtype_v2",
            call=lambda image, p: F_v2.convert_image_dtype(image, _dtype(p)),
            spec={"needs": ("torchvision.transforms.v2.functional.convert_image_dtype",)},
        ),
        Implementation(
            library=TV1,
            name="convert_image_dtype_v1",
            call=lambda image, p: F_v1.convert_image_dtype(image, _dtype(p)),
            spec={"needs": ("torchvision.transforms.functional.convert_image_dtype",)},
        ),
    ],
)

globals().update(TO_DTYPE.tests())
