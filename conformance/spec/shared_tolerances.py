"""Tolerances that several case modules hold their ops to, each written once with its reason.

A case module is a spec of its own and never imports another; where two declare implementations of one
computation (torchvision's and kornia's Gaussian blur in cases/test_blur.py and cases/test_blur_kornia.py; the exact
geometry of cases/test_geometry.py and cases/test_geometry_random.py), the rule and the measurement behind it are
here, so the two cannot drift apart.  docs/tolerances.md lists them.
"""

from __future__ import annotations

from collections.abc import Iterable

from conformance.spec.tolerances import Rule, Tolerance

# Gaussian blur (the functionals' outputs and kornia's gaussian_blur2d)
GAUSSIAN_FLOAT32 = Tolerance(
    "float32-accumulation",
    atol=1e-5,
    rtol=1e-6,
    reason="float32 kernel (exp, normalisation) and up to 121 products summed in float32 on values up to 1.5: the "
    "summation bound is 120 x 6e-8 x 1.5 = 1.1e-5; measured max 7.5e-7 (torchvision), 8.3e-6 (OpenCV)",
)
GAUSSIAN_FLOAT64 = Tolerance(
    "float64-accumulation",
    atol=2e-14,
    reason="the float32 bound in float64: 120 x 1.1e-16 x 1.5 = 2e-14; measured max 1.55e-15 (v1; 300 cases)",
)

# where the exact geometry's measured maximum comes from: docs/tolerances.md for the dtypes drawn first, a deep sweep
# for the others
_MEASURED = {"uint8": "docs/tolerances.md", "float32": "docs/tolerances.md"}
_MEASURED_NEW = "benchmarks/calibrate.py -n 300 per variant, cpu and vcuda:0"


def exact_copies(dtypes: Iterable[str]) -> list[Rule]:
    """Bound 0 for each dtype: an op whose every output pixel is a copy of one input pixel or the fill value."""
    return [
        Rule(
            Tolerance(
                "exact",
                reason=f"every output pixel is a copy of one {dtype} input pixel or the fill value, which {dtype} "
                f"holds: bound 0; measured max 0 outside the known issues ({_MEASURED.get(dtype, _MEASURED_NEW)})",
            ),
            dtype=dtype,
        )
        for dtype in dtypes
    ]
