"""Hypothesis strategies for image recipes.

Every choice is ordered so that shrinking moves toward small, simple images:
1 pixel before 300, no batch dims before some, contiguous before strided,
constant content before noise, seed 0 before others.

Strategies are built once per set of arguments and reused: hypothesis validates
a strategy object the first time it is drawn from, and re-validating freshly built
ones on every example was most of the drawing time (see docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from hypothesis import strategies as st

from conformance.spec.recipes import BATCH_LAYOUTS, CONTENTS, FLOAT_DTYPES, LAYOUTS, Recipe


@cache
def sides(max_side: int = 300) -> st.SearchStrategy[int]:
    """Image side lengths: mostly small (fast, shrinkable), sometimes up to max_side."""
    small = st.integers(1, min(24, max_side))
    if max_side <= 24:
        return small
    return st.one_of(small, st.integers(1, max_side))


def image_recipes(
    dtype: str,
    *,
    channels: Sequence[int] = (3, 1, 4),
    max_side: int = 300,
    max_batch_dims: int = 2,
    min_batch_dims: int = 0,
    max_batch: int = 3,
    layouts: Sequence[str] = LAYOUTS,
    contents: Sequence[str] | None = None,
    side_multiple: int = 1,
) -> st.SearchStrategy[Recipe]:
    """Recipes for one dtype; float dtypes may also get out-of-range content.  `side_multiple`
    narrows sides to multiples of it (an old library release that needs, e.g., 16)."""
    if contents is None:
        contents = [c for c in CONTENTS if c != "out_of_range" or dtype in FLOAT_DTYPES]
    return _image_recipes(
        dtype,
        tuple(channels),
        max_side,
        max_batch_dims,
        min_batch_dims,
        max_batch,
        tuple(layouts),
        tuple(contents),
        side_multiple,
    )


def empty_recipes(dtype: str, *, channels: Sequence[int] = (3, 1), max_side: int = 8) -> st.SearchStrategy[Recipe]:
    """Images with no pixels (a side of 0, the other up to max_side), with or without a batch dimension: the
    invalid input "an empty image", for an op's error mode."""
    return _empty_recipes(dtype, tuple(channels), max_side)


@cache
def _empty_recipes(dtype: str, channels: tuple[int, ...], max_side: int) -> st.SearchStrategy[Recipe]:
    other = st.integers(1, max_side)
    zero_height = st.tuples(st.just(0), other)
    sides = st.one_of(zero_height, zero_height.map(lambda hw: (hw[1], 0)))

    @st.composite
    def recipes(draw: st.DrawFn) -> Recipe:
        batch = draw(st.lists(st.integers(1, 2), max_size=1).map(tuple))
        height, width = draw(sides)
        return Recipe(
            height,
            width,
            draw(st.sampled_from(channels)),
            batch,
            dtype,
            content="constant",
            seed=draw(st.integers(0, 9)),
        )

    return recipes()


@cache
def _image_recipes(
    dtype: str,
    channels: tuple[int, ...],
    max_side: int,
    max_batch_dims: int,
    min_batch_dims: int,
    max_batch: int,
    layouts: tuple[str, ...],
    contents: tuple[str, ...],
    side_multiple: int = 1,
) -> st.SearchStrategy[Recipe]:
    batches = st.lists(st.integers(1, max_batch), min_size=min_batch_dims, max_size=max_batch_dims).map(tuple)
    side = (
        sides(max_side)
        if side_multiple == 1
        else st.integers(1, max(1, max_side // side_multiple)).map(lambda n: n * side_multiple)
    )
    channel_counts = st.sampled_from(list(channels))
    batch_layouts = st.sampled_from(list(layouts))
    single_layouts = [name for name in layouts if name not in BATCH_LAYOUTS] or ["contiguous"]
    image_layouts = st.sampled_from(single_layouts)  # one image (or a batch of one) has no batch to lay out
    content_names = st.sampled_from(list(contents))
    seeds = st.integers(0, 2**32 - 1)

    @st.composite
    def recipes(draw: st.DrawFn) -> Recipe:
        batch = draw(batches)  # drawn first, in this order: it keeps the same cases for the same seed
        return Recipe(
            height=draw(side),
            width=draw(side),
            channels=draw(channel_counts),
            batch=batch,
            dtype=dtype,
            layout=draw(batch_layouts if batch and batch[0] > 1 else image_layouts),
            content=draw(content_names),
            seed=draw(seeds),
        )

    return recipes()
