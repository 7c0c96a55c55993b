"""JPEG: decode and encode through torchvision.io, TorchCodec and OpenCV (one operation each, so the
libraries are compared on the same bytes and images), torchvision v2 `jpeg`, kornia
`jpeg_codec_differentiable` and `RandomJPEG`.

Reference: Pillow (libjpeg) encoding and decoding at the same quality.  Codecs that wrap
libjpeg must agree with it almost exactly; kornia's differentiable codec is an
approximation held to a PSNR floor against it.  Every lossy op also gets a "fidelity"
check: its PSNR against the original may be at most a margin below Pillow's.
On CUDA torchvision and TorchCodec use nvJPEG, which a virtual device cannot emulate (those items
skip); OpenCV is a host library (cpu items only).
Numbers: docs/tolerances.md, measured with benchmarks/calibrate.py.
"""

from __future__ import annotations

import io
from functools import cache, partial
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import strategies as st
from PIL import Image

from conformance import (
    CONTENTS,
    OPENCV,
    TORCHCODEC,
    TVIO,
    Case,
    Gradient,
    Implementation,
    ModuleOp,
    Operation,
    OpSpec,
    Recipe,
    Rule,
    Tolerance,
    image_recipes,
    keywords,
    kornia_parameters,
    versions,
)

CHANNELS = {"gray": 1, "rgb": 3}
pytestmark = pytest.mark.filterwarnings("ignore:The image decoding and encoding capabilities:DeprecationWarning")


def pillow_encode(image: np.ndarray, quality: int) -> bytes:
    """C x H x W values in 0..255 -> JPEG bytes from Pillow."""
    pixels = np.clip(np.rint(image), 0, 255).astype(np.uint8).transpose(1, 2, 0)
    buffer = io.BytesIO()
    Image.fromarray(pixels[..., 0] if pixels.shape[2] == 1 else pixels).save(buffer, "JPEG", quality=int(quality))
    return buffer.getvalue()


def pillow_decode(data: bytes) -> np.ndarray:
    array = np.asarray(Image.open(io.BytesIO(data)))
    return (array[..., None] if array.ndim == 2 else array).transpose(2, 0, 1).astype(np.float64)


def pillow_round_trip(image: np.ndarray, quality: int) -> np.ndarray:
    """Any leading batch dims, values in 0..255."""
    flat = image.reshape(-1, *image.shape[-3:])
    out = [pillow_decode(pillow_encode(one, quality)) for one in flat]
    return np.stack(out).reshape(image.shape)


def jpeg_reference(image: np.ndarray, case: Case) -> np.ndarray:
    return pillow_round_trip(image, case.params["quality"])


@st.composite
def quality(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    return {"quality": draw(st.integers(1, 100), label="quality")}


def jpeg_timing(recipe: Recipe, mode: str) -> dict[str, Any] | None:
    """Quality 75 (Pillow's default) on colour images."""
    return {"quality": 75} if recipe.channels == CHANNELS[mode] else None


def jpeg_recipes(
    dtype: str, mode: str, batch_dims: tuple[int, int] = (0, 1), side_multiple: int = 1, in_range: bool = False
) -> st.SearchStrategy[Recipe]:
    """Odd sizes come naturally: sides are drawn from 1 to 64.  `in_range`: no out-of-range content,
    for an op documented on [0, 1] inputs only."""
    contents = [c for c in CONTENTS if c != "out_of_range"] if in_range else None
    return image_recipes(
        dtype,
        channels=(CHANNELS[mode],),
        max_side=64,
        min_batch_dims=batch_dims[0],
        max_batch_dims=batch_dims[1],
        side_multiple=side_multiple,
        contents=contents,
    )


@cache
def torchvision_codecs() -> str | None:
    """torchvision's JPEG codecs are a compiled extension, which an older torchvision imported over a newer
    torch cannot load (its Python functions exist and fail when called)."""
    import torchvision.io

    try:
        torchvision.io.encode_jpeg(torch.zeros(1, 8, 8, dtype=torch.uint8))
    except Exception as exc:  # noqa: BLE001 - any failure means the codecs are not there to test
        return (
            f"torchvision {versions.version_of('torchvision')}'s image codecs do not load with torch "
            f"{versions.version_of('torch')}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
        )
    return None


LIBJPEG = [
    Rule(
        Tolerance(
            "same-libjpeg",
            atol=1,
            max_mismatch_fraction=0.01,
            reason="torchvision and Pillow both wrap libjpeg(-turbo) with the standard quality tables and 4:2:0 "
            "chroma; measured identical (max |d| 0) on 1,500 cases; 1 level in 1% of pixels is left for "
            "builds whose IDCT rounds differently",
        )
    )
]
FIDELITY = (0.5, "a libjpeg codec at the same quality loses what Pillow loses")
NVJPEG = "torchvision runs JPEG on CUDA tensors with nvjpeg"


def _torchvision_spec(name: str, description: str, call, **extra: Any) -> OpSpec:
    return OpSpec(
        name=name,
        description=description,
        call=call,
        reference=jpeg_reference,
        dtypes=("uint8",),
        modes=tuple(CHANNELS),
        params=quality,
        tolerances=LIBJPEG,
        fidelity=FIDELITY,
        keeps_memory_format=False,
        needs_real_device=NVJPEG,
        precondition=torchvision_codecs,
        timing=jpeg_timing,
        **({"mode_recipes": jpeg_recipes} | extra),
    )


def _v2_jpeg(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    import torchvision.transforms.v2.functional as F

    return F.jpeg(image, params["quality"])


JPEG_V2 = _torchvision_spec(
    "jpeg_v2",
    "torchvision.transforms.v2.functional.jpeg",
    _v2_jpeg,
    mode_recipes=partial(jpeg_recipes, batch_dims=(0, 2)),
    needs=("torchvision.transforms.v2.functional.jpeg",),
)


# -- decode and encode, through torchvision.io, TorchCodec and OpenCV ----------------------------
@cache
def torchcodec_codecs() -> str | None:
    """TorchCodec's image codecs are compiled against one torch; another torch may fail to load them."""
    try:
        from torchcodec.encoders import JpegEncoder

        JpegEncoder(torch.zeros(1, 8, 8, dtype=torch.uint8)).to_tensor()
    except Exception as exc:  # noqa: BLE001 - any failure means the codecs are not there to test
        return (
            f"torchcodec {versions.version_of('torchcodec')}'s image codecs do not load with torch "
            f"{versions.version_of('torch')}: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
        )
    return None


@st.composite
def decode_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """The quality Pillow encodes at, and the read mode (UNCHANGED keeps the JPEG's channels)."""
    return {"quality": draw(st.integers(1, 100), label="quality"), "read_mode": "UNCHANGED"}


def decode_reference(image: np.ndarray, case: Case) -> np.ndarray:
    """Pillow's decode of Pillow's bytes; read mode RGB gives a grey JPEG three equal channels."""
    decoded = pillow_round_trip(image, case.params["quality"])
    return (
        np.repeat(decoded, 3, axis=-3) if case.params.get("read_mode") == "RGB" and decoded.shape[-3] == 1 else decoded
    )


def _pillow_bytes(image: torch.Tensor, params: dict[str, Any]) -> bytes:
    return pillow_encode(image.cpu().double().numpy(), params["quality"])


def _decode_with_torchvision(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """Pillow encodes, torchvision decodes on the image's device: isolates the decoder."""
    import torchvision.io

    encoded = torch.frombuffer(bytearray(_pillow_bytes(image, params)), dtype=torch.uint8)
    read = keywords(params, read_mode=("mode", lambda m: getattr(torchvision.io.ImageReadMode, m)))
    return torchvision.io.decode_jpeg(encoded, device=image.device, **read)


def _decode_with_torchcodec(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    from torchcodec.decoders import decode_jpeg

    encoded = torch.frombuffer(bytearray(_pillow_bytes(image, params)), dtype=torch.uint8)
    return decode_jpeg(encoded, device=str(image.device), **keywords(params, read_mode="mode"))


def _decode_with_opencv(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """OpenCV returns blue-green-red: its documented channel order, mapped back to RGB here.  Its
    default read flag (IMREAD_COLOR) gives three channels: "RGB" in the operation's terms."""
    import cv2

    flag = cv2.IMREAD_UNCHANGED if params.get("read_mode", "RGB") == "UNCHANGED" else cv2.IMREAD_COLOR
    decoded = cv2.imdecode(np.frombuffer(_pillow_bytes(image, params), np.uint8), flag)
    decoded = decoded[..., None] if decoded.ndim == 2 else decoded[..., ::-1]
    return torch.from_numpy(np.ascontiguousarray(decoded.transpose(2, 0, 1)))


def _encoded_then_pillow(data: bytes) -> torch.Tensor:
    return torch.from_numpy(pillow_decode(data).astype(np.uint8))


def _encode_with_torchvision(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """torchvision encodes, Pillow decodes: isolates the encoder."""
    import torchvision.io

    return _encoded_then_pillow(
        bytes(torchvision.io.encode_jpeg(image, **keywords(params, quality=None)).cpu().numpy())
    )


def _encode_with_torchcodec(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    from torchcodec.encoders import JpegEncoder

    return _encoded_then_pillow(bytes(JpegEncoder(image).to_tensor(**keywords(params, quality=None)).cpu().numpy()))


def _encode_with_opencv(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """OpenCV encodes blue-green-red: the RGB image is handed over in that order."""
    import cv2

    pixels = image.cpu().numpy().transpose(1, 2, 0)
    pixels = pixels[..., 0] if pixels.shape[2] == 1 else np.ascontiguousarray(pixels[..., ::-1])
    options = [cv2.IMWRITE_JPEG_QUALITY, params["quality"]] if "quality" in params else []
    ok, data = cv2.imencode(".jpg", pixels, options)
    if not ok:
        raise RuntimeError("cv2.imencode returned False")
    return _encoded_then_pillow(data.tobytes())


TORCHCODEC_CUDA = "TorchCodec runs JPEG on CUDA devices with nvJPEG"
CODEC_SPEC = {
    "fidelity": FIDELITY,
    "keeps_memory_format": False,
    "timing": jpeg_timing,
    "timing_batched": False,
    "mode_recipes": partial(jpeg_recipes, batch_dims=(0, 0)),
}
DECODE_HOST = "the image is encoded by Pillow on the host"
ENCODE_HOST = "the encoded bytes are decoded on the host"
HOST_LIBRARY = "OpenCV's codecs work on host memory"
TORCHVISION_CODECS = {"needs_real_device": NVJPEG, "precondition": torchvision_codecs}
TORCHCODEC_CODECS = {"needs_real_device": TORCHCODEC_CUDA, "precondition": torchcodec_codecs}

DECODE_OPERATION = Operation(
    name="decode_jpeg",
    description="decode Pillow's JPEG bytes of the case's image",
    reference=decode_reference,
    params=decode_params,
    dtypes=("uint8",),
    modes=tuple(CHANNELS),
    tolerances=LIBJPEG,
    optional=lambda mode: ("read_mode",) if mode == "rgb" else (),  # a grey JPEG read as RGB has another shape
    spec=CODEC_SPEC | {"host_transfers": DECODE_HOST},
    implementations=[
        Implementation(
            library=TVIO,
            name="decode_jpeg_tv",
            call=_decode_with_torchvision,
            defaults={"read_mode": "UNCHANGED"},
            spec=TORCHVISION_CODECS,
            description="torchvision.io.decode_jpeg of Pillow's bytes",
        ),
        Implementation(
            library=TORCHCODEC,
            call=_decode_with_torchcodec,
            defaults={"read_mode": "RGB"},
            spec=TORCHCODEC_CODECS | {"needs": ("torchcodec.decoders.decode_jpeg",)},
            description="torchcodec.decoders.decode_jpeg of Pillow's bytes",
        ),
        Implementation(
            library=OPENCV,
            call=_decode_with_opencv,
            defaults={"read_mode": "RGB"},
            host_only=HOST_LIBRARY,
            spec={"needs": ("cv2.imdecode",)},
            description="cv2.imdecode of Pillow's bytes",
        ),
    ],
)
ENCODE_OPERATION = Operation(
    name="encode_jpeg",
    description="encode the case's image at a quality (decoded by Pillow)",
    reference=jpeg_reference,
    params=quality,
    dtypes=("uint8",),
    modes=tuple(CHANNELS),
    tolerances=LIBJPEG,
    optional=("quality",),
    spec=CODEC_SPEC | {"host_output": ENCODE_HOST},
    implementations=[
        # torchvision and TorchCodec document quality=75; OpenCV documents IMWRITE_JPEG_QUALITY=95
        Implementation(
            library=TVIO,
            name="encode_jpeg_tv",
            call=_encode_with_torchvision,
            defaults={"quality": 75},
            spec=TORCHVISION_CODECS,
            description="torchvision.io.encode_jpeg (decoded by Pillow)",
        ),
        Implementation(
            library=TORCHCODEC,
            call=_encode_with_torchcodec,
            defaults={"quality": 75},
            spec=TORCHCODEC_CODECS | {"needs": ("torchcodec.encoders.JpegEncoder",)},
            description="torchcodec.encoders.JpegEncoder (decoded by Pillow)",
        ),
        Implementation(
            library=OPENCV,
            call=_encode_with_opencv,
            defaults={"quality": 95},
            host_only=HOST_LIBRARY,
            spec={"needs": ("cv2.imencode",)},
            description="cv2.imencode (decoded by Pillow)",
        ),
    ],
)
DECODE_JPEG, DECODE_JPEG_TORCHCODEC, DECODE_JPEG_OPENCV = DECODE_OPERATION.specs()
ENCODE_JPEG, ENCODE_JPEG_TORCHCODEC, ENCODE_JPEG_OPENCV = ENCODE_OPERATION.specs()


# -- kornia: float images in [0, 1], (B, 3, H, W) -------------------------------------------------
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
KORNIA_FIDELITY = (
    5.0,
    "the approximation loses more than libjpeg: p99 gap 1.7 dB (codec) and 1.8 dB (RandomJPEG) over "
    "10,000 cases each; images 1-5 pixels across lose more, a known issue",
)


def _kornia_codec(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    import kornia

    quality = torch.full((image.shape[0],), float(params["quality"]), device=image.device, dtype=image.dtype)
    return kornia.enhance.jpeg_codec_differentiable(image, quality)


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


def _kornia_spec(name: str, description: str, in_range: bool, **how: Any) -> OpSpec:
    """`in_range`: the op documents inputs in [0, 1] (the codec); RandomJPEG documents clamping them."""
    return OpSpec(
        features=narrowness,
        name=name,
        description=description,
        reference=kornia_reference,
        dtypes=("float32",),
        modes=("rgb",),
        params=quality,
        tolerances=APPROXIMATION,
        fidelity=KORNIA_FIDELITY,
        keeps_memory_format=False,
        mode_recipes=lambda dtype, mode: jpeg_recipes(
            dtype, mode, batch_dims=(1, 1), side_multiple=KORNIA_SIDES, in_range=in_range
        ),
        narrowed=KORNIA_NARROWED,
        timing=jpeg_timing,
        **how,
    )


JPEG_KORNIA = _kornia_spec(
    "jpeg_kornia_differentiable",
    "kornia.enhance.jpeg_codec_differentiable",
    True,
    call=_kornia_codec,
    needs=("kornia.enhance.jpeg_codec_differentiable",),
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


test_jpeg_v2 = JPEG_V2.test()
globals().update(ENCODE_OPERATION.tests())
globals().update(DECODE_OPERATION.tests())
test_jpeg_kornia_differentiable = JPEG_KORNIA.test()
test_random_jpeg_kornia = RANDOM_JPEG_KORNIA.test()
