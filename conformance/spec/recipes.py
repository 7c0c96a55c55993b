"""Image recipes: small JSON-able descriptions of test images, and their pixels.

Hypothesis draws and shrinks recipes, never pixels one by one, so a failing
case is a few readable fields and saving a case is saving JSON.  Pixels are
synthesised deterministically from the recipe with numpy.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

DTYPES: dict[str, torch.dtype] = {
    "uint8": torch.uint8,
    "uint16": torch.uint16,
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}
FLOAT_DTYPES = ("float32", "float64", "float16", "bfloat16")
# An integer image's largest value is its white (torchvision's convention for every integer dtype it converts)
INTEGER_PEAKS = {"uint8": 255, "uint16": 65535}


def peak(dtype: str) -> float:
    """The value of white in a dtype's images: the integer type's largest value, 1 for floats.  Differences,
    PSNR and pictures are scaled by it."""
    return float(INTEGER_PEAKS.get(dtype, 1))


# Order matters: hypothesis shrinks a sampled_from toward its first element,
# so the simplest layout and content come first.
# The batch layouts are what pipelines hand over without a `torch.stack`: every other sample of a larger batch
# (`batch_strided`), a batch stored channel-major and transposed (`batch_transposed`: a batch dimension with a
# stride smaller than the channels'), and a window of a larger tensor in every dimension (`view`: an offset
# into its storage, every stride the larger tensor's).  The first two need a first batch dimension of 2 or more (of
# one sample, either is a contiguous tensor).
LAYOUTS = ("contiguous", "channels_last", "strided", "batch_strided", "batch_transposed", "view")
BATCH_LAYOUTS = ("batch_strided", "batch_transposed")
CONTENTS = ("constant", "gradient", "checkerboard", "extremes", "noise", "out_of_range")


class RecipeError(ValueError):
    """A recipe or case that cannot describe an image (bad field, bad JSON)."""


@dataclass(frozen=True)
class Recipe:
    """What an input image is: shape, dtype, memory layout, content and seed."""

    height: int
    width: int
    channels: int = 3
    batch: tuple[int, ...] = ()
    dtype: str = "float32"
    layout: str = "contiguous"
    content: str = "noise"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise RecipeError(f"unknown dtype {self.dtype!r}; expected one of {sorted(DTYPES)}")
        if self.layout not in LAYOUTS:
            raise RecipeError(f"unknown layout {self.layout!r}; expected one of {list(LAYOUTS)}")
        if self.content not in CONTENTS:
            raise RecipeError(f"unknown content {self.content!r}; expected one of {list(CONTENTS)}")
        if self.content == "out_of_range" and self.dtype in INTEGER_PEAKS:
            raise RecipeError("out_of_range content needs a float dtype")
        if self.layout in BATCH_LAYOUTS and (not self.batch or self.batch[0] < 2):
            raise RecipeError(f"the {self.layout} layout needs a first batch dimension of 2 or more")
        sizes = (self.channels, *self.batch)
        if any(not isinstance(n, int) or n < 1 for n in sizes):
            raise RecipeError(f"channel and batch sizes must be positive integers, got {sizes}")
        if any(not isinstance(n, int) or n < 0 for n in (self.height, self.width)):  # 0: an empty image
            raise RecipeError(f"sides must be non-negative integers, got {(self.height, self.width)}")

    @property
    def shape(self) -> tuple[int, ...]:
        return (*self.batch, self.channels, self.height, self.width)

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    @property
    def empty(self) -> bool:
        """No pixels: a side of 0 (an invalid input for most ops, drawn in their error modes)."""
        return self.height == 0 or self.width == 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "height": self.height,
            "width": self.width,
            "channels": self.channels,
            "batch": list(self.batch),
            "dtype": self.dtype,
            "layout": self.layout,
            "content": self.content,
            "seed": self.seed,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Recipe:
        if not isinstance(data, dict):
            raise RecipeError(f"a recipe is a JSON object, got {type(data).__name__}")
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise RecipeError(f"unknown recipe fields {sorted(unknown)}; known: {sorted(known)}")
        values = dict(data)
        values["batch"] = tuple(values.get("batch", ()))
        try:
            return cls(**values)
        except TypeError as exc:
            raise RecipeError(str(exc)) from None


@dataclass(frozen=True)
class Case:
    """One example: which op, which input recipe, which op parameters."""

    op: str
    recipe: Recipe
    params: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "recipe": self.recipe.to_dict(), "params": self.params}

    @functools.cached_property
    def json(self) -> str:
        """The case as compact JSON, computed once (a case is written with every record of it)."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    def to_json(self) -> str:
        return self.json

    @functools.cached_property
    def recipe_key(self) -> str:
        """Identity of the input image alone (the same for every op drawing this recipe)."""
        return json.dumps(self.recipe.to_dict(), sort_keys=True, separators=(",", ":"))

    def relabelled(self, op: str) -> Case:
        """The same case under another op's name (an operation's implementations check one drawn case), its
        JSON derived from this one's: "op" is its first key."""
        if op == self.op:
            return self
        found = Case(op, self.recipe, self.params)
        prefix = '{"op":' + json.dumps(self.op)
        if self.json.startswith(prefix):
            found.__dict__["json"] = '{"op":' + json.dumps(op) + self.json[len(prefix) :]
        found.__dict__["recipe_key"] = self.recipe_key
        return found

    @property
    def key(self) -> str:
        """Stable identity used to share the reference and cpu output across targets."""
        return self.json

    @classmethod
    def from_json(cls, text: str) -> Case:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RecipeError(f"case is not valid JSON: {exc}") from None
        if not isinstance(data, dict) or not {"op", "recipe"} <= set(data):
            raise RecipeError('a case is a JSON object with "op", "recipe" and "params"')
        params = data.get("params", {})
        if not isinstance(params, dict):
            raise RecipeError('"params" must be a JSON object')
        return cls(op=str(data["op"]), recipe=Recipe.from_dict(data["recipe"]), params=params)


@functools.cache
def _physical_memory() -> int:
    """This machine's memory in bytes (0 where the platform does not say)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        return 0


def _check_fits(recipe: Recipe) -> None:
    """Refuse a recipe whose float64 pixels exceed the machine's memory before allocating them: where the
    kernel overcommits (a VM with vm.overcommit_memory=1, as the lent GPU machine), the allocation succeeds and
    filling it gets the process killed, taking the run with it.  Refused, it is the resource outcome that a
    failed allocation gives (conformance.engine.cases)."""
    needed, total = math.prod(recipe.shape) * 8, _physical_memory()
    if total and needed > total:
        raise MemoryError(
            f"the recipe's {list(recipe.shape)} float64 pixels need {_size(needed)}, more than this "
            f"machine's {_size(total)} of memory"
        )


def _size(nbytes: int) -> str:
    return f"{nbytes / 2**30:,.0f} GiB" if nbytes >= 2**30 else f"{nbytes / 2**20:,.1f} MiB"


# The range each content's values are drawn from, in units of the dtype's white (the rest: 0..1, the valid range)
CONTENT_RANGES = {"out_of_range": (-0.5, 1.5)}


def value_span(recipe: Recipe) -> float:
    """The width of the range the recipe's values are drawn from, in the dtype's units: a bound on any difference
    between two values of the image, or blends of them (a known issue's `scale_by` feature)."""
    low, high = CONTENT_RANGES.get(recipe.content, (0.0, 1.0))
    return (high - low) * peak(recipe.dtype)


def synthesize_unit(recipe: Recipe) -> np.ndarray:
    """Pixels in float64 'unit' scale (0..1 is the valid range) with the recipe's shape."""
    _check_fits(recipe)
    rng = np.random.default_rng(recipe.seed)
    shape = recipe.shape
    if recipe.empty:
        return np.zeros(shape)
    lead = (*recipe.batch, recipe.channels, 1, 1)
    if recipe.content == "constant":
        return np.broadcast_to(rng.random(lead), shape).copy()
    if recipe.content == "gradient":
        ys = np.linspace(0.0, 1.0, recipe.height).reshape(-1, 1)
        xs = np.linspace(0.0, 1.0, recipe.width).reshape(1, -1)
        angle = rng.uniform(0, 2 * np.pi, lead)
        ramp = np.cos(angle) * xs + np.sin(angle) * ys
        ramp = ramp - ramp.min(axis=(-2, -1), keepdims=True)
        span = ramp.max(axis=(-2, -1), keepdims=True)
        return np.where(span > 0, ramp / np.where(span > 0, span, 1), 0.5)
    if recipe.content == "checkerboard":
        cell = int(rng.integers(1, 9))
        yy, xx = np.indices((recipe.height, recipe.width))
        board = ((yy // cell + xx // cell) % 2).astype(np.float64)
        low, high = rng.random(lead), rng.random(lead)
        return low + (high - low) * board
    if recipe.content == "extremes":
        return rng.integers(0, 2, shape).astype(np.float64)
    if recipe.content == "noise":
        return rng.random(shape)
    return rng.uniform(*CONTENT_RANGES["out_of_range"], shape)


def apply_layout(tensor: torch.Tensor, layout: str) -> torch.Tensor:
    """The same values in the layout's memory arrangement (made where `tensor` is: on its device)."""
    if layout == "channels_last":
        # Store channels innermost (..., H, W, C) and view it as (..., C, H, W).
        return tensor.movedim(-3, -1).contiguous().movedim(-1, -3)
    if layout == "strided":
        # A view that skips every other column of a wider buffer.
        wide = tensor.new_zeros((*tensor.shape[:-1], tensor.shape[-1] * 2))
        view = wide[..., ::2]
        view.copy_(tensor)
        return view
    if layout == "batch_strided":
        # Every other sample of a batch twice as long (in the first batch dimension).
        double = tensor.new_zeros((2 * tensor.shape[0], *tensor.shape[1:]))
        view = double[::2]
        view.copy_(tensor)
        return view
    if layout == "batch_transposed":
        # Stored with the channels outermost, then the batch: (C, B..., H, W) seen as (B..., C, H, W).
        return tensor.movedim(-3, 0).contiguous().movedim(0, -3)
    if layout == "view":
        # A window into a larger tensor: one more element before and after in every dimension.
        larger = tensor.new_zeros(tuple(n + 2 for n in tensor.shape))
        view = larger[tuple(slice(1, n + 1) for n in tensor.shape)]
        view.copy_(tensor)
        return view
    return tensor.contiguous()


def materialize(recipe: Recipe, put: Callable[[torch.Tensor], torch.Tensor] | None = None) -> torch.Tensor:
    """The tensor a recipe describes, in its dtype and memory layout.

    `put` moves the contiguous pixels to a target first; the layout is made
    there, because copying a strided view to another device densifies it.
    """
    unit = synthesize_unit(recipe)
    if recipe.dtype in INTEGER_PEAKS:
        white = INTEGER_PEAKS[recipe.dtype]
        tensor = torch.from_numpy(np.rint(np.clip(unit, 0, 1) * white).astype(np.dtype(recipe.dtype)))
    else:
        tensor = torch.from_numpy(unit).to(recipe.torch_dtype)
    if put is not None:
        tensor = put(tensor)
    return apply_layout(tensor, recipe.layout)


def to_float64(tensor: torch.Tensor) -> np.ndarray:
    """A host float64 copy: the only form in which values are ever subtracted."""
    return tensor.detach().to(device="cpu", dtype=torch.float64).numpy()
