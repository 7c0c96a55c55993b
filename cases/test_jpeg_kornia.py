"""kornia's side of the JPEG family: the differentiable codec `kornia.enhance.jpeg_codec_differentiable` and
`kornia.augmentation.RandomJPEG` with replayed qualities, on float images in [0, 1], (B, 3, H, W).
cases/test_jpeg.py has the libjpeg codecs (torchvision, TorchCodec, OpenCV).

Reference: Pillow (libjpeg) at the same quality, on the image quantised to 8 bits (conformance.spec.jpeg, shared
with cases/test_jpeg.py).  kornia's codec is an approximation (float DCT, smooth rounding, no entropy coding): it is
held to a PSNR floor against Pillow, its "fidelity" check (PSNR against the original) to a wider margin below
Pillow's, and its backward pass to central differences of its own forward.
Error modes (values just outside each documented domain), drawn as for the libjpeg codecs: a quality of 0, above 100
or negative, a channel count other than 3, an image with no pixels, an integer image.  kornia raises, documents
accepting (quality 0), or returns a result anyway: a finding with a known issue.  Invalid constructor arguments of
kornia's augmentations are checked through a function that builds the module and calls it (`*_arguments` ops): a
module that cannot be built has no parameters to sample and replay.
Numbers: docs/tolerances.md, measured with benchmarks/calibrate.py.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from conformance import (
    Accepted,
    Case,
    Counterpart,
    Gradient,
    ModuleOp,
    OpSpec,
    Recipe,
    Rule,
    Tolerance,
    kornia_parameters,
    versions,
)
from conformance.spec.case_pieces import P_OUT_OF_RANGE
from conformance.spec.jpeg import (
    EMPTY,
    QUALITY_MODES,
    exception_class,
    jpeg_recipes,
    jpeg_timing,
    pillow_round_trip,
    quality,
    raising,
)

RGB_CHANNELS = {"channels-1": "1 channel (documented: 3)", "channels-4": "4 channels (documented: 3)"}
INTEGER_IMAGE = {"integer-input": "a uint8 image (documented: floating point in [0, 1])"}


def kornia_reference(image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor] | None = None) -> np.ndarray:
    """Pillow at the same quality, on the image quantised to 8 bits; back to [0, 1]."""
    qualities = (
        sampled["jpeg_quality"].double().numpy()
        if sampled is not None
        else np.full(image.shape[0], case.params["quality"])
    )
    pixels = np.clip(image, 0, 1) * 255
    return np.stack([pillow_round_trip(one, round(q)) for one, q in zip(pixels, qualities, strict=False)]) / 255


APPROXIMATION = [
    Rule(
        Tolerance(
            "differentiable-approximation",
            min_psnr=10.0,
            atol=1.0,
            reason="kornia approximates JPEG (float DCT, smooth rounding, no entropy coding); measured PSNR against "
            "Pillow at the same quality: min 10.8 and 11.1 dB (codec, 10,000 cases in [0, 1] at two seeds), 10.6 and "
            "10.2 dB (RandomJPEG, 10,000 and 4,000 cases with out-of-range content, which it documents clamping); at "
            "qualities 1-4 two very lossy codecs can agree less (a known issue); the floor still rejects an inverted "
            "or channel-swapped image (tests/test_catalog.py)",
        )
    )
]


def _kornia_dtype(dtype: str, rounding: str, measured: str) -> Rule:
    """The float32 floor for another dtype: its own rounding is far below the approximation's error."""
    return Rule(
        Tolerance(
            f"differentiable-approximation-{dtype}",
            min_psnr=10.0,
            atol=1.0,
            reason=f"the float32 floor (10 dB against Pillow): {rounding}, far below the approximation's own error; "
            f"measured {measured} (300 cases each, calibrate.py, cpu and vcuda:0)",
        ),
        dtype=dtype,
    )


KORNIA_TOLERANCES = [
    _kornia_dtype(
        "float16",
        "kornia computes float16 in float32 and rounds the output once (documented), 2^-12 = 2.4e-4 on [0, 1]",
        "PSNR min 15.1 dB, max |d| 0.61 (codec: the same worst case as bfloat16 and float64), 15.7 dB, 0.60 "
        "(RandomJPEG)",
    ),
    _kornia_dtype(
        "bfloat16",
        "computed in float32, the output rounded once to bfloat16 (documented), 2^-9 = 2.0e-3 on [0, 1]",
        "PSNR min 15.1 dB, max |d| 0.61 (codec)",
    ),
    _kornia_dtype("float64", "float64 throughout", "PSNR min 15.1 dB, max |d| 0.61 (codec)"),
    *APPROXIMATION,
]
KORNIA_FIDELITY = (
    5.0,
    "the approximation loses more than libjpeg: p99 gap 1.7 dB (codec) and 1.8 dB (RandomJPEG) over "
    "10,000 cases each; images 1-5 pixels across lose more, a known issue",
)


def _qualities(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    dtype = image.dtype if image.is_floating_point() else torch.float32  # an integer image is what is invalid
    return torch.full((image.shape[0],), float(params["quality"]), device=image.device, dtype=dtype)


def _kornia_codec(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    import kornia

    return kornia.enhance.jpeg_codec_differentiable(image, _qualities(image, params))


def _kornia_codec_class(params: dict[str, Any]) -> torch.nn.Module:
    """Its module: default quantization tables (as the function's), the quality given to each call."""
    import kornia

    return kornia.enhance.JPEGCodecDifferentiable()


KORNIA_CODEC_CLASS = Counterpart(
    name="kornia.enhance.JPEGCodecDifferentiable",
    module=ModuleOp(build=_kornia_codec_class, forward=lambda codec, image, p, s: codec(image, _qualities(image, p))),
)


# kornia's codec first shipped (0.7.2) requiring sides divisible by 16; 0.7.3 pads any size.
KORNIA_SIDES = 16 if versions.below("kornia", "0.7.3") else 1
KORNIA_NARROWED = (
    (
        f"kornia {versions.version_of('kornia')} < 0.7.3: its JPEG codec needs sides divisible by 16, so "
        f"only such sides are drawn"
    )
    if KORNIA_SIDES > 1
    else ""
)


def narrowness(case: Case) -> dict[str, Any]:
    """The image's shorter side: kornia's approximation strays from libjpeg on images 1-5 pixels across."""
    return {"min_side": min(case.recipe.height, case.recipe.width)}


SHAPE_ERROR = exception_class("kornia.core.exceptions.ShapeError", ValueError)
# kornia's own; it subclasses Exception only
BASE_ERROR = exception_class("kornia.core.exceptions.BaseError", Exception)
KORNIA_INPUT_ERRORS = raising(RGB_CHANNELS, SHAPE_ERROR, match="expected 3") | raising(EMPTY, ValueError, match="empty")


def _kornia_spec(name: str, description: str, in_range: bool, dtypes: tuple[str, ...], **how: Any) -> OpSpec:
    """`in_range`: the op documents inputs in [0, 1] (the codec); RandomJPEG documents clamping them.  Valid inputs
    in every dtype; the invalid ones (error modes, and what the op documents accepting) in float32 or uint8."""
    invalid = [*how.get("error_modes", {}), *how.get("accepted_modes", {})]
    return OpSpec(
        features=narrowness,
        name=name,
        description=description,
        reference=kornia_reference,
        dtypes=(*dtypes, "uint8"),
        modes=("rgb", *invalid),
        variants=[(d, "rgb") for d in dtypes] + [("uint8" if m in INTEGER_IMAGE else "float32", m) for m in invalid],
        params=quality,
        tolerances=KORNIA_TOLERANCES,
        fidelity=KORNIA_FIDELITY,
        keeps_memory_format=False,
        mode_recipes=lambda dtype, mode: jpeg_recipes(
            dtype, mode, batch_dims=(1, 1), side_multiple=KORNIA_SIDES, in_range=in_range, empty_channels=(3,)
        ),
        narrowed=KORNIA_NARROWED,
        timing=jpeg_timing,
        **how,
    )


JPEG_KORNIA = _kornia_spec(
    "jpeg_kornia_differentiable",
    "kornia.enhance.jpeg_codec_differentiable",
    True,
    ("float32", "float16", "bfloat16", "float64"),  # documented: "float16 and bfloat16 inputs are computed in float32"
    call=_kornia_codec,
    counterpart=KORNIA_CODEC_CLASS,
    needs=("kornia.enhance.jpeg_codec_differentiable",),
    error_modes=KORNIA_INPUT_ERRORS
    | raising({m: QUALITY_MODES[m] for m in ("quality-101", "quality-negative")}, BASE_ERROR, match="out of range")
    | raising(INTEGER_IMAGE, TypeError, match="floating-point"),
    accepted_modes={
        "quality-0": Accepted(
            documentation="kornia/enhance/jpeg.py, jpeg_codec_differentiable: 'jpeg_quality: JPEG quality in the "
            "range [0, 100] ... A quality of exactly 0 is treated as 1, matching libjpeg'",
            meaning=lambda params: params | {"quality": 1},
        )
    },
    gradient=Gradient(
        dtypes=("float32",),
        estimate="forward",
        why="the reference is libjpeg's integer codec, a staircase in its input; kornia's codec replaces each "
        "rounding with a differentiable approximation, so its backward is held to central differences of its "
        "own forward in float64",
        step=1e-7,  # its rounding approximation jumps at half-integers: a small step crosses few of them
        tolerances=[
            Rule(
                Tolerance(
                    "gradient-float32-codec",
                    atol=2e-2,
                    reason="a float32 codec (colour conversion, two DCTs, the cubic rounding approximation, whose "
                    "slope changes fastest near the half-integers) against its float64 forward: measured up to "
                    "2.7e-3 of the gradient's norm in the ci profile's cases, and 1.24e-2 on a constant image at "
                    "quality 99 (where the float64 backward matches the estimate to 1e-5 at every step from 1e-6 "
                    "to 1e-8: float32 precision, not a wrong term); a wrong or missing term gives 0.1 and more",
                ),
                check="gradient",
            ),
            Rule(
                Tolerance(
                    "gradient-device-codec",
                    atol=1e-2,
                    reason="the same float32 codec backward on two devices: the rounding approximation's steep "
                    "slope near half-integers amplifies the devices' rounding differences; measured up to 1.74e-3 of "
                    "the largest element on an H200 (2026-11-26); a wrong or missing term gives 0.1 and more",
                ),
                check="gradient_device",
            ),
        ],
    ),
)
RANDOM_JPEG_KORNIA = _kornia_spec(
    "random_jpeg_kornia",
    "kornia.augmentation.RandomJPEG(p=1) with replayed qualities",
    False,
    ("float32", "float16"),  # it takes every floating dtype; the codec variants cover bfloat16 and float64
    error_modes=KORNIA_INPUT_ERRORS | raising(INTEGER_IMAGE, TypeError, match="Expected input of"),
    module=ModuleOp(
        build=lambda params: _random_jpeg(params["quality"]),
        sample=kornia_parameters,
        bounds=lambda params: {"jpeg_quality": _quality_range(params["quality"])},
        unmoved="works",
    ),  # a parameter-free augmentation
    needs=("kornia.augmentation.RandomJPEG",),
)


def _quality_range(quality: int) -> tuple[float, float]:
    return float(max(1, quality - 10)), float(quality)


def _random_jpeg(quality: int) -> torch.nn.Module:
    import kornia

    return kornia.augmentation.RandomJPEG(jpeg_quality=_quality_range(quality), p=1.0)


# Invalid constructor arguments: a function that builds the augmentation and calls it, as a user does (the module
# op above cannot be built with them, so it has nothing to sample and replay).  kornia documents p as "probability
# of applying the transformation" and checks nothing: p outside [0, 1] is a known issue.
P_MODES = {"p-out-of-range": "a probability outside [0, 1] (-1/64 or 1 + 1/64)"}


@st.composite
def jpeg_arguments(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """RandomJPEG's quality range just outside its bounds (1, 100), or a probability outside [0, 1]."""
    q = float(draw(st.integers(11, 100), label="quality"))
    ranges = {"quality-0": (0.0, q), "quality-101": (q, 101.0), "quality-negative": (-1.0, q)}
    return {"jpeg_quality": ranges.get(mode, (q - 10, q)), "p": draw(P_OUT_OF_RANGE.get(mode, st.just(1.0)), label="p")}


def _random_jpeg_called(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    import kornia

    return kornia.augmentation.RandomJPEG(jpeg_quality=params["jpeg_quality"], p=params["p"])(image)


RANDOM_JPEG_ARGUMENTS = OpSpec(
    name="random_jpeg_kornia_arguments",
    description="kornia.augmentation.RandomJPEG built with invalid arguments, then called",
    call=_random_jpeg_called,
    reference=None,
    dtypes=("float32",),
    modes=(*QUALITY_MODES, *P_MODES),
    params=jpeg_arguments,
    tolerances=KORNIA_TOLERANCES,
    mode_recipes=lambda dtype, mode: jpeg_recipes(dtype, "rgb", batch_dims=(1, 1), side_multiple=KORNIA_SIDES),
    error_modes=raising(QUALITY_MODES, ValueError, match="out of bounds") | raising(P_MODES, Exception),
    keeps_memory_format=False,
    needs=("kornia.augmentation.RandomJPEG",),
)

test_jpeg_kornia_differentiable = JPEG_KORNIA.test()
test_random_jpeg_kornia = RANDOM_JPEG_KORNIA.test()
test_random_jpeg_kornia_arguments = RANDOM_JPEG_ARGUMENTS.test()
