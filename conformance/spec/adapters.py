"""Shape adapters shared by implementations: each library takes images in its own form.

A case's input is a tensor of shape (..., C, H, W) on the target.  kornia takes (B, C, H, W)
batches; Pillow and OpenCV take one host image at a time, height x width x channels.  These
wrappers give each library its form and put the result back in the case's shape, so an
implementation's call is only its parameter mapping.  They copy pixels, so an implementation
using them for a host library declares `host_only` (the copy is by design there).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

HostImage = np.ndarray  # H x W x C


def batched(function: Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]) -> Callable[..., torch.Tensor]:
    """For (B, C, H, W) libraries: leading dims folded into one batch (one added for a single image)
    and restored on the output."""

    def call(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        lead = image.shape[:-3]
        output = function(image.reshape(math.prod(lead), *image.shape[-3:]), params)  # not -1: 0 pixels resolve nothing
        return output.reshape(*lead, *output.shape[-3:])

    call.__qualname__ = getattr(function, "__qualname__", "batched")
    return call


def per_host_image(
    function: Callable[[HostImage, dict[str, Any]], HostImage], *, channelwise: bool = False
) -> Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]:
    """For host libraries (Pillow, OpenCV): each image of the batch as an H x W x C numpy array of the
    input's dtype; the function returns an H' x W' x C' array (or H' x W' for one channel).
    `channelwise`: the function gets one channel at a time (H x W x 1), for libraries that take
    only some channel counts and an op that treats channels alike."""

    def call(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        host = image.detach().cpu()
        lead, (channels, height, width) = host.shape[:-3], host.shape[-3:]
        images = host.reshape(math.prod(lead), channels, height, width).permute(0, 2, 3, 1).numpy()
        outputs = []
        for one in images:
            if channelwise:
                planes = [_hwc(function(np.ascontiguousarray(one[..., c : c + 1]), params)) for c in range(channels)]
                outputs.append(np.concatenate(planes, axis=2))
            else:
                outputs.append(_hwc(function(np.ascontiguousarray(one), params)))
        stacked = torch.from_numpy(np.ascontiguousarray(np.stack(outputs)).transpose(0, 3, 1, 2).copy())
        return stacked.reshape(*lead, *stacked.shape[1:])

    call.__qualname__ = getattr(function, "__qualname__", "per_host_image")
    return call


def _hwc(array: np.ndarray) -> np.ndarray:
    array = np.asarray(array)
    return array[..., None] if array.ndim == 2 else array


PIL_MODES = {1: "L", 3: "RGB", 4: "RGBA"}


def to_pil(image: HostImage) -> Any:
    """An H x W x C uint8 array (C in 1, 3, 4) or H x W x 1 float32 array as a Pillow image."""
    from PIL import Image

    if image.dtype == np.float32 and image.shape[2] == 1:
        return Image.fromarray(image[..., 0])  # mode "F"
    if image.dtype != np.uint8 or image.shape[2] not in PIL_MODES:
        raise TypeError(f"no Pillow mode holds {image.shape[2]} channel(s) of {image.dtype}")
    return Image.fromarray(image[..., 0] if image.shape[2] == 1 else image)  # the mode follows the channels


def from_pil(picture: Any) -> HostImage:
    """A Pillow image as H x W x C (a copy: Pillow's array view is read-only)."""
    return _hwc(np.array(picture))


def _pillow_holds(image: HostImage) -> bool:
    return (image.dtype == np.uint8 and image.shape[2] in PIL_MODES) or (
        image.dtype == np.float32 and image.shape[2] == 1
    )


def pillow_image_op(
    function: Callable[[Any, dict[str, Any]], Any],
) -> Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]:
    """For Pillow: function(Pillow image, params) -> Pillow image, on each image of the batch.  An image
    no Pillow mode holds (2 channels, or float with several) goes through one channel at a time ('L'
    or 'F'): right for ops that treat channels alike."""

    def on_array(image: HostImage, params: dict[str, Any]) -> HostImage:
        if _pillow_holds(image):
            return from_pil(function(to_pil(image), params))
        planes = [
            from_pil(function(to_pil(np.ascontiguousarray(image[..., c : c + 1])), params))
            for c in range(image.shape[2])
        ]
        return np.concatenate(planes, axis=2)

    on_array.__qualname__ = getattr(function, "__qualname__", "pillow_image_op")
    return per_host_image(on_array)
