"""A warp's fill (affine, perspective, elastic): drawn in the image's range, and as an image of a dtype holds it."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from conformance.spec.recipes import peak


def fills(dtype: str) -> st.SearchStrategy[float]:
    """A fill inside the dtype's range: an integer level for integer images, three decimals in [0, 1] for floats."""
    return st.integers(0, int(peak(dtype))) if dtype in ("uint8", "uint16") else st.decimals(0, 1, places=3).map(float)


def stored_fill(fill: float, dtype: str) -> float:
    """The fill as a float image holds it (torchvision and kornia cast it to the image's dtype): rounded to
    nearest even; bfloat16 keeps float32's upper 16 bits."""
    if dtype in ("float32", "float16"):
        return float(np.dtype(dtype).type(fill))
    if dtype == "bfloat16":
        bits = int(np.float32(fill).view(np.uint32))
        return float(np.uint32((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).view(np.float32))
    return fill
