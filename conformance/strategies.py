"""Hypothesis strategies for image recipes.

Every choice is ordered so that shrinking moves toward small, simple images:
1 pixel before 300, no batch dims before some, contiguous before strided,
constant content before noise, seed 0 before others.
"""
from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st

from conformance.recipes import CONTENTS, FLOAT_DTYPES, LAYOUTS, Recipe


def sides(max_side: int = 300) -> st.SearchStrategy[int]:
    """Image side lengths: mostly small (fast, shrinkable), sometimes up to max_side."""
    small = st.integers(1, min(24, max_side))
    if max_side <= 24:
        return small
    return st.one_of(small, st.integers(1, max_side))


@st.composite
def image_recipes(
    draw: st.DrawFn,
    dtype: str,
    *,
    channels: Sequence[int] = (3, 1, 4),
    max_side: int = 300,
    max_batch_dims: int = 2,
    min_batch_dims: int = 0,
    max_batch: int = 3,
    layouts: Sequence[str] = LAYOUTS,
    contents: Sequence[str] | None = None,
) -> Recipe:
    """Recipes for one dtype; float dtypes may also get out-of-range content."""
    if contents is None:
        contents = [c for c in CONTENTS if c != "out_of_range" or dtype in FLOAT_DTYPES]
    batch = draw(st.lists(st.integers(1, max_batch), min_size=min_batch_dims, max_size=max_batch_dims).map(tuple))
    return Recipe(
        height=draw(sides(max_side)),
        width=draw(sides(max_side)),
        channels=draw(st.sampled_from(list(channels))),
        batch=batch,
        dtype=dtype,
        layout=draw(st.sampled_from(list(layouts))),
        content=draw(st.sampled_from(list(contents))),
        seed=draw(st.integers(0, 2**32 - 1)),
    )
