"""The function form of each deterministic class the device sweep builds, for the `module` check (a module's
output must be its library's function's, on every target).

`FUNCTIONS[qualified](image, arguments)` calls the library's function with the image and the constructor
arguments the sweep built the class with (sweep_tables.ARGUMENTS, or {} for its defaults), renamed where
the function's keywords differ.  What the class leaves at its defaults the function gets at its own documented
defaults: never read from the class, so a class whose defaults differ from its function's shows.

Left out: classes that draw random parameters (kornia.augmentation's and torchvision's Random* at their
default p), and classes without a function of the same parameters (kornia.augmentation.PadTo,
kornia.enhance.Rescale, kornia.geometry.transform.Affine: `affine` takes a matrix).  Functions are imported
on first call.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import torch

Function = Callable[[torch.Tensor, dict[str, Any]], Any]


def _function(qualified: str) -> Callable[..., Any]:
    module_name, name = qualified.rsplit(".", 1)
    function: Callable[..., Any] = getattr(importlib.import_module(module_name), name)
    return function


def _call(qualified: str, **renamed: str) -> Function:
    """`qualified(image, **arguments)`, each argument renamed (class keyword="function keyword") where given."""

    def call(image: torch.Tensor, arguments: dict[str, Any]) -> Any:
        return _function(qualified)(image, **{renamed.get(key, key): value for key, value in arguments.items()})

    call.__qualname__ = qualified  # how the module check names it
    return call


def _pair(size: int | tuple[int, int]) -> tuple[int, int]:
    return (size, size) if isinstance(size, int) else (size[0], size[1])


def _resize_side(side: str) -> Function:
    """kornia.augmentation's LongestMaxSize / SmallestMaxSize: `resize(image, max_size, side=...)`."""
    return lambda image, arguments: _function("kornia.geometry.transform.resize")(
        image, arguments["max_size"], side=side
    )


def _normalize(name: str) -> Function:
    """kornia.augmentation's Normalize / Denormalize take sequences; kornia.enhance's functions take tensors."""
    return lambda image, arguments: _function(f"kornia.enhance.{name}")(
        image, torch.as_tensor(arguments["mean"]), torch.as_tensor(arguments["std"])
    )


def _listed(value: int | tuple[int, ...] | list[int]) -> list[int]:
    """torchvision's functions take sizes and paddings as lists."""
    return [value] if isinstance(value, int) else list(value)


TV = "torchvision.transforms.v2.functional"

_COLOR = {
    name: f"kornia.color.{function}"
    for name, function in {
        "BgrToGrayscale": "bgr_to_grayscale",
        "BgrToRgb": "bgr_to_rgb",
        "BgrToRgba": "bgr_to_rgba",
        "GrayscaleToRgb": "grayscale_to_rgb",
        "HlsToRgb": "hls_to_rgb",
        "HsvToRgb": "hsv_to_rgb",
        "LabToRgb": "lab_to_rgb",
        "LinearRgbToRgb": "linear_rgb_to_rgb",
        "LuvToRgb": "luv_to_rgb",
        "NormalsToRgb255": "normals_to_rgb255",
        "RawToRgb": "raw_to_rgb",
        "RawToRgb2x2Downscaled": "raw_to_rgb_2x2_downscaled",
        "Rgb255ToNormals": "rgb255_to_normals",
        "Rgb255ToRgb": "rgb255_to_rgb",
        "RgbToBgr": "rgb_to_bgr",
        "RgbToGrayscale": "rgb_to_grayscale",
        "RgbToHls": "rgb_to_hls",
        "RgbToHsv": "rgb_to_hsv",
        "RgbToLab": "rgb_to_lab",
        "RgbToLinearRgb": "rgb_to_linear_rgb",
        "RgbToLuv": "rgb_to_luv",
        "RgbToRaw": "rgb_to_raw",
        "RgbToRgb255": "rgb_to_rgb255",
        "RgbToRgba": "rgb_to_rgba",
        "RgbToXyz": "rgb_to_xyz",
        "RgbToYcbcr": "rgb_to_ycbcr",
        "RgbToYuv": "rgb_to_yuv",
        "RgbaToBgr": "rgba_to_bgr",
        "RgbaToRgb": "rgba_to_rgb",
        "Sepia": "sepia",
        "XyzToRgb": "xyz_to_rgb",
        "YcbcrToRgb": "ycbcr_to_rgb",
        "YuvToRgb": "yuv_to_rgb",
    }.items()
}

# class -> function, for classes whose arguments keep their names
_SAME_NAMES = {
    **{f"kornia.color.{name}": function for name, function in _COLOR.items()},
    "kornia.enhance.AdjustGamma": "kornia.enhance.adjust_gamma",
    "kornia.enhance.AdjustLog": "kornia.enhance.adjust_log",
    "kornia.enhance.AdjustSigmoid": "kornia.enhance.adjust_sigmoid",
    "kornia.enhance.Denormalize": "kornia.enhance.denormalize",
    "kornia.enhance.Normalize": "kornia.enhance.normalize",
    "kornia.enhance.IntegralImage": "kornia.enhance.integral_image",
    "kornia.enhance.IntegralTensor": "kornia.enhance.integral_tensor",
    "kornia.enhance.Invert": "kornia.enhance.invert",
    "kornia.enhance.Threshold": "kornia.enhance.threshold",
    "kornia.filters.BilateralBlur": "kornia.filters.bilateral_blur",
    "kornia.filters.BlurPool2D": "kornia.filters.blur_pool2d",
    "kornia.filters.BoxBlur": "kornia.filters.box_blur",
    "kornia.filters.EdgeAwareBlurPool2D": "kornia.filters.edge_aware_blur_pool2d",
    "kornia.filters.GaussianBlur2d": "kornia.filters.gaussian_blur2d",
    "kornia.filters.InRange": "kornia.filters.in_range",
    "kornia.filters.Laplacian": "kornia.filters.laplacian",
    "kornia.filters.MaxBlurPool2D": "kornia.filters.max_blur_pool2d",
    "kornia.filters.MedianBlur": "kornia.filters.median_blur",
    "kornia.filters.MotionBlur": "kornia.filters.motion_blur",
    "kornia.filters.Sobel": "kornia.filters.sobel",
    "kornia.filters.SpatialGradient": "kornia.filters.spatial_gradient",
    "kornia.filters.UnsharpMask": "kornia.filters.unsharp_mask",
    "kornia.geometry.transform.Hflip": "kornia.geometry.transform.hflip",
    "kornia.geometry.transform.Vflip": "kornia.geometry.transform.vflip",
    "kornia.geometry.transform.Rot180": "kornia.geometry.transform.rot180",
    "kornia.geometry.transform.PyrDown": "kornia.geometry.transform.pyrdown",
    "kornia.geometry.transform.PyrUp": "kornia.geometry.transform.pyrup",
    "kornia.geometry.transform.Rescale": "kornia.geometry.transform.rescale",
    "kornia.geometry.transform.Resize": "kornia.geometry.transform.resize",
    "kornia.geometry.transform.Rotate": "kornia.geometry.transform.rotate",
    "kornia.geometry.transform.Scale": "kornia.geometry.transform.scale",
    "kornia.geometry.transform.Shear": "kornia.geometry.transform.shear",
    "kornia.geometry.transform.Translate": "kornia.geometry.transform.translate",
    "kornia.augmentation.Resize": "kornia.geometry.transform.resize",
    "torchvision.transforms.v2.Grayscale": f"{TV}.rgb_to_grayscale",
    "torchvision.transforms.v2.RGB": f"{TV}.grayscale_to_rgb",
    "torchvision.transforms.v2.Normalize": f"{TV}.normalize",
}

FUNCTIONS: dict[str, Function] = {
    **{name: _call(function) for name, function in _SAME_NAMES.items()},
    "kornia.enhance.AdjustBrightness": _call("kornia.enhance.adjust_brightness", brightness_factor="factor"),
    "kornia.enhance.AdjustBrightnessAccumulative": _call(
        "kornia.enhance.adjust_brightness_accumulative", brightness_factor="factor"
    ),
    "kornia.enhance.AdjustContrast": _call("kornia.enhance.adjust_contrast", contrast_factor="factor"),
    "kornia.enhance.AdjustContrastWithMeanSubtraction": _call(
        "kornia.enhance.adjust_contrast_with_mean_subtraction", contrast_factor="factor"
    ),
    "kornia.enhance.AdjustHue": _call("kornia.enhance.adjust_hue", hue_factor="factor"),
    "kornia.enhance.AdjustSaturation": _call("kornia.enhance.adjust_saturation", saturation_factor="factor"),
    "kornia.enhance.AdjustSaturationWithGraySubtraction": _call(
        "kornia.enhance.adjust_saturation_with_gray_subtraction", saturation_factor="factor"
    ),
    # the colour map's table made on the image's device, as a caller of the function makes it
    "kornia.color.ApplyColorMap": lambda image, arguments: _function("kornia.color.apply_colormap")(
        image,
        _function("kornia.color.ColorMap")(
            base=arguments["colormap"].name, num_colors=arguments["colormap"].colors.shape[-1], device=image.device
        ),
    ),
    "kornia.geometry.transform.CenterCrop2D": lambda image, arguments: _function(
        "kornia.geometry.transform.center_crop"
    )(image, _pair(arguments["size"])),
    "kornia.augmentation.CenterCrop": lambda image, arguments: _function("kornia.geometry.transform.center_crop")(
        image, _pair(arguments["size"])
    ),
    "kornia.augmentation.LongestMaxSize": _resize_side("long"),
    "kornia.augmentation.SmallestMaxSize": _resize_side("short"),
    "kornia.augmentation.Normalize": _normalize("normalize"),
    "kornia.augmentation.Denormalize": _normalize("denormalize"),
    "torchvision.transforms.v2.CenterCrop": lambda image, arguments: _function(f"{TV}.center_crop")(
        image, _listed(arguments["size"])
    ),
    "torchvision.transforms.v2.Resize": lambda image, arguments: _function(f"{TV}.resize")(
        image, _listed(arguments["size"])
    ),
    "torchvision.transforms.v2.Pad": lambda image, arguments: _function(f"{TV}.pad")(
        image, _listed(arguments["padding"])
    ),
}
