"""A random module's sampled parameters as data: named leaves, and one sample's share of a batch's.

kornia returns a dict of tensors per augmentation and, for a container, a list of `ParamItem(name, data)`
whose data is such a dict or a nested list.  Which leaves hold one row per sample is not written anywhere,
and guessing from the leading size is wrong when a shared leaf happens to have as many rows as the batch
(ColorJiggle's `order` has 4).  `per_sample` therefore asks the sampler itself: the same seed with a batch
PROBE_EXTRA larger, and a leaf is per sample when its leading size grew with the batch.  Augmentations that draw
only for the samples they apply to (older kornia) are sliced by the sample's rank among the applied ones, and
a leaf that numbers the rows (sample or patch positions) is renumbered (alone, a sample's rows come first).  A
leaf numbers the rows when it does in the draw and in the larger probe: a random index can do so by chance in a
small batch (RandomChannelDropout's `channel_idx` was [[0], [1]] for two samples), hardly over eight more.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch

PROBABILITY = "batch_prob"  # kornia: which samples an augmentation applies to (> 0.5)
INPUT_SHAPE = "forward_input_shape"  # kornia: the input's shape, read by geometric inverses and crops
PROBE_EXTRA = 8  # how many samples more the probe draws than the batch has


def probe_size(batch: int) -> int:
    """The batch size to draw the probe for (see the module's docstring)."""
    return batch + PROBE_EXTRA


def kornia_parameters(module: torch.nn.Module, image: torch.Tensor, params: dict[str, Any]) -> Any:
    """A kornia augmentation's (or container's) parameters for the image's shape, as `ModuleOp(sample=...)` takes
    them: drawn once per case on the cpu and replayed on every target with `module(image, params=...)`."""
    return module.forward_parameters(image.shape)  # type: ignore[operator]


class NotSliceable(ValueError):
    """The parameters' structure changed with the batch size: no sample's share can be named."""


def _children(value: Any) -> Iterator[tuple[str, Any]] | None:
    if isinstance(value, dict):
        return ((str(k), v) for k, v in value.items())
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):  # a NamedTuple such as kornia's ParamItem
        return zip(getattr(type(value), "_fields"), value, strict=True)  # noqa: B009 - a NamedTuple's field names
    if isinstance(value, (list, tuple)):
        return ((str(i), v) for i, v in enumerate(value))
    return None


def named_leaves(value: Any, prefix: str = "") -> dict[str, Any]:
    """Every leaf by its path ("ColorJiggle_0.data.brightness_factor", "angle"), for comparing two samples."""
    children = _children(value)
    if children is None:
        return {prefix: value}
    found: dict[str, Any] = {}
    for name, child in children:
        found.update(named_leaves(child, f"{prefix}.{name}" if prefix else name))
    return found


def _integers(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(type(v) is int for v in value)


def _rebuild(value: Any, parts: list[Any]) -> Any:
    if isinstance(value, dict):
        return dict(zip(value, parts, strict=True))
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return type(value)(*parts)
    return type(value)(parts)


def per_sample(sampled: Any, probe: Any, index: int, batch: int) -> Any:
    """Sample `index`'s share of parameters drawn for `batch` samples; `probe`: the same sampler, same seed, for
    `probe_size(batch)` samples (a leaf whose leading size grew is per sample; the rest is shared)."""
    return _slice(sampled, probe, index, batch, None)


Applied = tuple[torch.Tensor, int] | None  # which samples a kornia augmentation applies to, and how many in the probe


def _slice(value: Any, probe: Any, index: int, batch: int, applied: Applied) -> Any:
    if _integers(value) and _integers(probe):  # a list of positions (PatchSequential's patch indices)
        sliced = _leaf(torch.tensor(value), torch.tensor(probe), index, batch, None)
        return sliced.tolist() if isinstance(sliced, torch.Tensor) else value
    found = _children(value)
    if found is None:
        return _leaf(value, probe, index, batch, applied)
    children, probed = list(found), dict(_children(probe) or ())
    names = [name for name, _ in children]
    if type(probe) is not type(value) or list(probed) != names:
        raise NotSliceable(f"the parameters' structure changes with the batch size ({names} against {list(probed)})")
    if isinstance(value, dict) and isinstance(value.get(PROBABILITY), torch.Tensor):
        applied = (value[PROBABILITY].reshape(-1) > 0.5, int((probed[PROBABILITY].reshape(-1) > 0.5).sum()))
    return _rebuild(value, [_slice(child, probed[name], index, batch, applied) for name, child in children])


def _grows(before: int, after: int, batch: int) -> int:
    """Rows per sample when `before` rows for `batch` samples became `after` for the probe's (0: not per sample)."""
    per = before // batch if before % batch == 0 else 0
    return per if per and after == per * probe_size(batch) else 0


def _leaf(value: Any, probe: Any, index: int, batch: int, applied: Applied) -> Any:
    if not isinstance(value, torch.Tensor) or not isinstance(probe, torch.Tensor) or value.dim() == 0:
        return value
    if probe.dim() == 1 and value.dim() == 1 and value.numel() == probe.numel() > 1 and not value.is_floating_point():
        per = _grows(int(value[0]), int(probe[0]), batch)
        if per and bool((value[1:] == probe[1:]).all()):  # the input's shape (kornia's forward_input_shape)
            shape = value.clone()
            shape[0] = per
            return shape
    if probe.dim() == 0:
        return value
    per = _grows(value.shape[0], probe.shape[0], batch)
    if per:  # a row per sample, or a block of rows per sample (PatchSequential: one per patch)
        if _numbers_rows(value) and _numbers_rows(probe):  # positions in the batch (RandomChannelDropout's batch_idx)
            return value[:per]  # alone, the sample's rows are the first
        return value[index * per : (index + 1) * per]
    if applied is not None:  # drawn for the applied samples only (kornia before 0.9): a row per applied sample
        mask, in_probe = applied
        if value.shape[0] == int(mask.sum()) and probe.shape[0] == in_probe:
            if not bool(mask[index]):
                return value[:0]
            return value[:1] if _numbers_rows(value) else value[int(mask[:index].sum()) :][:1]
    if probe.shape[0] == value.shape[0]:
        return value  # shared by the batch
    raise NotSliceable(f"a leaf of {value.shape[0]} rows in a batch of {batch} grows with the batch")


def _numbers_rows(value: torch.Tensor) -> bool:
    """Whether an integer leaf holds each row's position in the batch (0, 1, ...)."""
    if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
        return False
    rows = torch.arange(value.shape[0], device=value.device).view(-1, *([1] * (value.dim() - 1)))
    return bool((value == rows).all())
