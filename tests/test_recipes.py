"""Recipes describe images exactly, round-trip through JSON, and shrink toward simple images."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from hypothesis import find, given, settings

from conformance.checks.basic import memory_formats
from conformance.spec.recipes import LAYOUTS, Case, Recipe, RecipeError, materialize, peak, to_float64
from conformance.spec.strategies import image_recipes


def test_layouts_are_what_they_say():
    base = {"height": 5, "width": 7, "channels": 3, "batch": (2,), "dtype": "float32", "content": "noise", "seed": 3}
    contiguous = materialize(Recipe(layout="contiguous", **base))
    channels_last = materialize(Recipe(layout="channels_last", **base))
    strided = materialize(Recipe(layout="strided", **base))
    assert memory_formats(contiguous) == {"contiguous"}
    assert channels_last.is_contiguous(memory_format=torch.channels_last)
    assert memory_formats(strided) == set() and strided.stride()[-1] == 2
    assert torch.equal(contiguous, channels_last) and torch.equal(contiguous, strided)


def test_pixels_are_deterministic_and_in_range():
    recipe = Recipe(height=9, width=4, dtype="uint8", content="noise", seed=7)
    assert torch.equal(materialize(recipe), materialize(recipe))
    assert not torch.equal(materialize(recipe), materialize(Recipe(height=9, width=4, dtype="uint8", seed=8)))
    extremes = to_float64(materialize(Recipe(height=8, width=8, dtype="uint8", content="extremes")))
    assert set(np.unique(extremes)) <= {0.0, 255.0}
    wild = to_float64(materialize(Recipe(height=8, width=8, dtype="float32", content="out_of_range", seed=1)))
    assert wild.min() < 0 and wild.max() > 1


@pytest.mark.parametrize("dtype", ["uint8", "float32", "float64", "float16", "bfloat16"])
def test_materialize_keeps_shape_and_dtype(dtype):
    recipe = Recipe(height=1, width=13, channels=4, batch=(2, 1), dtype=dtype, layout="strided")
    tensor = materialize(recipe)
    assert tensor.shape == (2, 1, 4, 1, 13) and tensor.dtype == recipe.torch_dtype


def test_case_json_round_trip():
    case = Case("resize", Recipe(height=3, width=2, batch=(2,), layout="channels_last"), {"size": [4, 5]})
    again = Case.from_json(case.to_json())
    assert again == Case("resize", case.recipe, {"size": [4, 5]}) and again.key == case.key


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "not valid JSON"),
        ('{"op": "resize"}', '"op", "recipe"'),
        ('{"op": "r", "recipe": {"height": -1, "width": 1}}', "non-negative"),
        ('{"op": "r", "recipe": {"height": 1, "width": 1, "channels": 0}}', "positive"),
        ('{"op": "r", "recipe": {"height": 2, "width": 2, "batch": [1], "layout": "batch_strided"}}', "2 or more"),
        ('{"op": "r", "recipe": {"height": 1, "width": 1, "dtype": "int7"}}', "unknown dtype"),
        ('{"op": "r", "recipe": {"height": 1, "width": 1, "colour": 1}}', "unknown recipe fields"),
        ('{"op": "r", "recipe": {"height": 1, "width": 1}, "params": []}', "params"),
    ],
)
def test_bad_cases_are_clear_errors(text, message):
    with pytest.raises(RecipeError, match=message):
        Case.from_json(text)


@settings(max_examples=50, deadline=None)
@given(recipe=image_recipes("float16"))
def test_drawn_recipes_are_valid(recipe):
    assert Recipe.from_dict(json.loads(json.dumps(recipe.to_dict()))) == recipe
    assert materialize(recipe).shape == recipe.shape


def test_uint8_recipes_never_ask_for_out_of_range_content():
    assert "out_of_range" not in {find(image_recipes("uint8"), lambda r: True).content}
    with pytest.raises(RecipeError):
        Recipe(height=1, width=1, dtype="uint8", content="out_of_range")


def test_shrinking_moves_toward_small_simple_images():
    wide = find(image_recipes("float32"), lambda r: r.width >= 40, settings=settings(database=None))
    assert (wide.height, wide.width, wide.batch, wide.seed) == (1, 40, (), 0)
    assert (wide.layout, wide.content, wide.channels) == ("contiguous", "constant", 3)
    strided = find(image_recipes("float32"), lambda r: r.layout == "strided", settings=settings(database=None))
    assert (strided.height, strided.width, strided.content) == (1, 1, "constant")


def test_recipe_strategy_covers_the_promised_space():
    seen = {"layout": set(), "content": set(), "channels": set(), "batch_dims": set(), "strip": False}

    @settings(max_examples=300, deadline=None, database=None)
    @given(recipe=image_recipes("float32"))
    def collect(recipe):
        seen["layout"].add(recipe.layout)
        seen["content"].add(recipe.content)
        seen["channels"].add(recipe.channels)
        seen["batch_dims"].add(len(recipe.batch))
        seen["strip"] |= recipe.height == 1 and recipe.width > 1

    collect()
    assert seen["layout"] == {"contiguous", "channels_last", "strided", "batch_strided", "batch_transposed", "view"}
    assert seen["channels"] == {1, 3, 4} and seen["batch_dims"] == {0, 1, 2} and seen["strip"]
    assert len(seen["content"]) == 6


def test_a_recipe_larger_than_the_machine_is_refused_before_anything_is_allocated(monkeypatch):
    """Where the kernel overcommits (the lent GPU VM), allocating it succeeded and filling it got the
    process killed; refused, it is a MemoryError, which a run records as a resource outcome."""
    from conformance.spec import recipes

    monkeypatch.setattr(recipes, "_physical_memory", lambda: 2**20)  # a machine of 1 MiB
    big = Recipe(
        height=256, width=256, channels=3, batch=(), dtype="uint8", layout="contiguous", content="noise", seed=0
    )
    with pytest.raises(
        MemoryError, match=r"the recipe's \[3, 256, 256\] float64 pixels need 1.5 MiB, more than this machine's 1.0 MiB"
    ):
        recipes.synthesize_unit(big)
    small = Recipe(height=8, width=8, channels=3, batch=(), dtype="uint8", layout="contiguous", content="noise", seed=0)
    assert recipes.synthesize_unit(small).shape == (3, 8, 8)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_layout_holds_the_same_values_in_its_own_memory_arrangement(layout):
    """The batch layouts are what pipelines hand over: a sliced batch, a channel-major batch seen transposed, a
    window into a larger tensor; each holds the recipe's values, in memory that is not one dense block."""
    recipe = Recipe(3, 4, channels=2, batch=(2, 3), dtype="uint16", layout=layout, seed=5)
    dense = materialize(dataclasses.replace(recipe, layout="contiguous"))
    tensor = materialize(recipe)
    assert tensor.dtype == torch.uint16 and torch.equal(tensor, dense)
    assert tensor.is_contiguous() == (layout == "contiguous")
    if layout == "batch_strided":
        assert tensor.stride(0) == 2 * tensor[0].numel()
    if layout == "batch_transposed":
        assert tensor.stride(-3) > tensor.stride(0)  # the channels are outermost in memory
    if layout == "view":
        assert tensor.storage_offset() > 0


def test_an_empty_recipe_has_no_pixels_and_integer_white_is_the_dtypes_largest_value():
    assert materialize(Recipe(0, 5, channels=3, batch=(2,))).shape == (2, 3, 0, 5)
    assert Recipe(4, 0).empty and not Recipe(1, 1).empty
    assert int(materialize(Recipe(2, 2, dtype="uint16", content="extremes", seed=1)).to(torch.int32).max()) == 65535
    assert (peak("uint8"), peak("uint16"), peak("float16")) == (255.0, 65535.0, 1.0)


def test_the_shape_adapters_pass_an_image_with_no_pixels_to_the_library():
    """reshape(-1, ...) cannot resolve a tensor of 0 elements: the adapter raised, and a library's refusal (or not)
    of an empty image was never seen."""
    from conformance.spec.adapters import batched, per_host_image

    empty = torch.zeros(2, 3, 0, 5)
    seen = []
    assert batched(lambda x, p: seen.append(x.shape) or x)(empty, {}).shape == empty.shape
    assert per_host_image(lambda a, p: seen.append(a.shape) or a)(empty, {}).shape == empty.shape
    assert seen == [(2, 3, 0, 5), (0, 5, 3), (0, 5, 3)]
