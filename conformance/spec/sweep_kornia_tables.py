"""The device sweep's tables for kornia's own modules beside kornia.augmentation: kornia.color,
kornia.enhance, kornia.filters and kornia.geometry.transform (sweep_tables.py merges them with the rest).

Their classes are deterministic (no `p`, no drawn parameters): each runs in mode "default" only, built with
the arguments below (kornia's docstring examples where it gives one, else the reason is said next to the
value).  Arguments that are kornia objects (a colour map, a Bayer pattern) are made when the class is
first built, so reading these tables imports no kornia.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import torch


def _cfa(name: str) -> Callable[[], dict[str, Any]]:
    """`cfa=kornia.color.CFA.<name>`, made on first use."""
    return lambda: {"cfa": getattr(importlib.import_module("kornia.color").CFA, name)}


def _imagenet() -> dict[str, Any]:
    """ImageNet's statistics as tensors (one value a channel), fresh for each class."""
    return {"mean": torch.tensor([0.485, 0.456, 0.406]), "std": torch.tensor([0.229, 0.224, 0.225])}


def _colormap() -> dict[str, Any]:
    color = importlib.import_module("kornia.color")
    return {"colormap": color.ColorMap(base=color.ColorMapType.autumn)}  # the docstring's example


# Constructor arguments, by class: a dict, or a function making it on first use (kornia objects).
ARGUMENTS: dict[str, dict[str, Any] | Callable[[], dict[str, Any]]] = {
    "kornia.color.ApplyColorMap": _colormap,
    "kornia.color.BgrToRgba": {"alpha_val": 1.0},
    "kornia.color.RgbToRgba": {"alpha_val": 1.0},
    "kornia.color.RawToRgb": _cfa("RG"),
    "kornia.color.RawToRgb2x2Downscaled": _cfa("RG"),
    "kornia.color.RgbToRaw": _cfa("GB"),
    # 0.5, not the docstring's 1.0: a factor of 1 clips every pixel of a [0, 1] image to 1
    "kornia.enhance.AdjustBrightness": {"brightness_factor": 0.5},
    "kornia.enhance.AdjustBrightnessAccumulative": {"brightness_factor": 0.5},
    "kornia.enhance.AdjustContrast": {"contrast_factor": 0.5},
    "kornia.enhance.AdjustContrastWithMeanSubtraction": {"contrast_factor": 0.5},
    "kornia.enhance.AdjustGamma": {"gamma": 1.0, "gain": 2.0},
    "kornia.enhance.AdjustHue": {"hue_factor": 3.141516},
    "kornia.enhance.AdjustSaturation": {"saturation_factor": 2.0},
    "kornia.enhance.AdjustSaturationWithGraySubtraction": {"saturation_factor": 2.0},
    # the docstrings' tensor form (one value a channel), with ImageNet's statistics as kornia.augmentation's
    "kornia.enhance.Normalize": _imagenet,
    "kornia.enhance.Denormalize": _imagenet,
    "kornia.enhance.Rescale": {"factor": torch.tensor(2.0)},  # no example: a 0-d tensor is kept as a buffer
    "kornia.enhance.Threshold": {"thresh": 0.5},  # no example: the middle of a [0, 1] image
    "kornia.filters.BilateralBlur": {"kernel_size": (3, 3), "sigma_color": 0.1, "sigma_space": (1.5, 1.5)},
    "kornia.filters.BlurPool2D": {"kernel_size": 3, "stride": 2},
    "kornia.filters.BoxBlur": {"kernel_size": (3, 3)},
    "kornia.filters.EdgeAwareBlurPool2D": {"kernel_size": 3},  # no example: BlurPool2D's
    "kornia.filters.GaussianBlur2d": {"kernel_size": (3, 3), "sigma": (1.5, 1.5)},
    "kornia.filters.InRange": {"lower": (0.2, 0.3, 0.4), "upper": (0.8, 0.9, 1.0), "return_mask": True},
    "kornia.filters.Laplacian": {"kernel_size": 5},
    "kornia.filters.MaxBlurPool2D": {"kernel_size": 3, "stride": 2, "max_pool_size": 2},
    "kornia.filters.MedianBlur": {"kernel_size": (3, 3)},
    "kornia.filters.MotionBlur": {"kernel_size": 3, "angle": 35.0, "direction": 0.5},
    "kornia.filters.UnsharpMask": {"kernel_size": (3, 3), "sigma": (1.5, 1.5)},
    # the docstring's angle is 90 * torch.rand(1): a fixed angle of that range
    "kornia.geometry.transform.Affine": {"angle": torch.tensor([45.0])},
    "kornia.geometry.transform.CenterCrop2D": {"size": 8},  # no example: as kornia.augmentation.CenterCrop
    "kornia.geometry.transform.Rescale": {"factor": (2, 3)},
    "kornia.geometry.transform.Resize": {"size": (6, 8)},
    "kornia.geometry.transform.Rotate": {"angle": torch.tensor([90.0])},
    "kornia.geometry.transform.Scale": {"scale_factor": torch.tensor([[2.0, 2.0]])},
    "kornia.geometry.transform.Shear": {"shear": torch.tensor([[0.5, 0.0]])},
    "kornia.geometry.transform.Translate": {"translation": torch.tensor([[1.0, 0.0]])},
}

TWO_INPUTS = "takes a second input (an image, a matrix, a quality): the sweep passes one image"
# Why a class of these modules is not swept, by name (sweep_tables.SKIPS matches names, first match wins).
SKIPS: tuple[tuple[Callable[[str], bool], str], ...] = (
    (lambda n: n == "SpatialGradient3d", "3-D (volumes): the sweep draws images"),
    (
        lambda n: (
            n in ("AddWeighted", "GuidedBlur", "JointBilateralBlur", "Yuv420ToRgb", "Yuv422ToRgb")
            or n in ("HomographyWarper", "JPEGCodecDifferentiable")
        ),
        TWO_INPUTS,
    ),
    (
        lambda n: n in ("RgbToYuv420", "RgbToYuv422", "Canny", "OtsuThreshold", "ScalePyramid"),
        "returns a tuple (planes, edges and magnitudes, a pyramid), not an image",
    ),
    (
        lambda n: n in ("Homography", "Similarity", "ImageRegistrator"),
        "an image-registration model: no image in (forward returns its matrix; register() takes two)",
    ),
    (lambda n: n == "ZCAWhitening", "must be fitted to data first (fit()): no image in, image out"),
    (lambda n: n == "StableDiffusionDissolving", "loads pretrained weights (a download: the sweep never downloads)"),
)

# Input channels, by class, where it is not 3 (a channel count image_recipes draws; sides are multiples of 32,
# so the even sides a Bayer pattern needs come with them).
CHANNELS: dict[str, int] = {
    "kornia.color.ApplyColorMap": 1,  # a grayscale image in [0, 1] (its forward's note)
    "kornia.color.GrayscaleToRgb": 1,
    "kornia.color.RawToRgb": 1,  # a Bayer raw image, one channel
    "kornia.color.RawToRgb2x2Downscaled": 1,
    "kornia.color.RgbaToRgb": 4,
    "kornia.color.RgbaToBgr": 4,
}

# Classes built with per-sample tensors of one row: kornia's Affine requires as many rows as samples, so it is
# swept with batches of one (why, by class).  Rotate, Scale, Shear and Translate broadcast one row to a batch.
BATCH_OF_ONE: dict[str, str] = {
    "kornia.geometry.transform.Affine": "its angle has one row, and Affine raises for a batch of another size "
    "(center, angle and scale must have the same batch size)"
}

# Modules whose ops are named by the whole module (sweep_kornia_geometry_transform_Resize), not the package: their
# class names repeat kornia.augmentation's (Resize, Normalize, Denormalize) and each other's (Rescale).
NAMED_BY_MODULE = frozenset({"kornia.color", "kornia.enhance", "kornia.filters", "kornia.geometry.transform"})
