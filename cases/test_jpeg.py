"""JPEG: decode and encode through torchvision.io, TorchCodec and OpenCV (one operation each, so the
libraries are compared on the same bytes and images), torchvision v2 `jpeg`, kornia
`jpeg_codec_differentiable` and `RandomJPEG`.

Reference: Pillow (libjpeg) encoding and decoding at the same quality.  Codecs that wrap
libjpeg must agree with it almost exactly; kornia's differentiable codec is an
approximation held to a PSNR floor against it.  Every lossy op also gets a "fidelity"
check: its PSNR against the original may be at most a margin below Pillow's.
On CUDA torchvision and TorchCodec use nvJPEG, which a virtual device cannot emulate (those items
skip); OpenCV is a host library (cpu items only).
Error modes (values just outside each documented domain) are shared by the libraries: a quality of 0, above 100
or negative, a channel count the codec does not take, an image with no pixels, a dtype it does not take.  Each
library raises, documents accepting (OpenCV: quality 0, float images; kornia: quality 0), or returns a result
anyway: a finding with a known issue.  Invalid constructor arguments of kornia's augmentations are checked through
a function that builds the module and calls it (`*_arguments` ops): a module that cannot be built has no
parameters to sample and replay.
Numbers: docs/tolerances.md, measured with benchmarks/calibrate.py.
"""

from __future__ import annotations

import dataclasses
import importlib
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
    TORCHVISION_PIL,
    TVIO,
    Accepted,
    Case,
    ExpectedError,
    Gradient,
    Implementation,
    ModuleOp,
    Operation,
    OpSpec,
    Recipe,
    Rule,
    Tolerance,
    empty_recipes,
    image_recipes,
    keywords,
    kornia_parameters,
    versions,
)

CHANNELS = {"gray": 1, "rgb": 3, "channels-1": 1, "channels-2": 2, "channels-4": 4}  # every other mode: 3
# Invalid inputs, each just outside a documented domain; the modes are shared by the libraries that take them.
QUALITY_MODES = {
    "quality-0": "quality 0 (documented: 1 to 100)",
    "quality-101": "a quality above 100",
    "quality-negative": "a negative quality",
}
CODEC_CHANNELS = {"channels-2": "2 channels (documented: 1 or 3)", "channels-4": "4 channels (documented: 1 or 3)"}
RGB_CHANNELS = {"channels-1": "1 channel (documented: 3)", "channels-4": "4 channels (documented: 3)"}
EMPTY = {"empty-image": "an image with a side of 0 (no pixels to encode)"}
FLOAT_IMAGE = {"float-image": "a float32 image (documented: uint8)"}
INTEGER_IMAGE = {"integer-input": "a uint8 image (documented: floating point in [0, 1])"}
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


QUALITIES = {"quality-0": st.just(0), "quality-101": st.integers(101, 255), "quality-negative": st.integers(-100, -1)}


@st.composite
def quality(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    return {"quality": draw(QUALITIES.get(mode, st.integers(1, 100)), label="quality")}


def jpeg_timing(recipe: Recipe, mode: str) -> dict[str, Any] | None:
    """Quality 75 (Pillow's default) on colour images."""
    return {"quality": 75} if recipe.channels == CHANNELS.get(mode) else None


def _batch_within(recipe: Recipe, batch_dims: tuple[int, int]) -> Recipe:
    batch = recipe.batch[: batch_dims[1]]
    return dataclasses.replace(recipe, batch=batch + (1,) * (batch_dims[0] - len(batch)))


@cache
def jpeg_recipes(
    dtype: str,
    mode: str,
    batch_dims: tuple[int, int] = (0, 1),
    side_multiple: int = 1,
    in_range: bool = False,
    empty_channels: tuple[int, ...] = (3, 1),
) -> st.SearchStrategy[Recipe]:
    """Odd sizes come naturally: sides are drawn from 1 to 64.  `in_range`: no out-of-range content,
    for an op documented on [0, 1] inputs only.  A mode's channel count is CHANNELS' (3 if not named);
    "empty-image" draws images with a side of 0 and as many batch dims as the op takes."""
    if mode == "empty-image":
        return empty_recipes(dtype, channels=empty_channels).map(partial(_batch_within, batch_dims=batch_dims))
    contents = [c for c in CONTENTS if c != "out_of_range"] if in_range else None
    return image_recipes(
        dtype,
        channels=(CHANNELS.get(mode, 3),),
        max_side=64,
        min_batch_dims=batch_dims[0],
        max_batch_dims=batch_dims[1],
        side_multiple=side_multiple,
        contents=contents,
    )


def _class(dotted: str, fallback: type[BaseException]) -> type[BaseException]:
    """An exception class of an optional library (its fallback where that library is absent)."""
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return fallback


def raising(modes: dict[str, str], raised: Any, match: str | None = None) -> dict[str, ExpectedError]:
    """What a library raises for each of these error modes (`match`: a regex its message must match)."""
    return {mode: ExpectedError(why, raised, match=match) for mode, why in modes.items()}


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


def _v2_jpeg(image: Any, params: dict[str, Any]) -> Any:
    """A tensor, or for the `pil` check a PIL image (v2 dispatches on the type)."""
    import torchvision.transforms.v2.functional as F

    return F.jpeg(image, params["quality"])


V2_SIGNATURE = ("torchvision.transforms.v2.functional.jpeg",)
V2_VARIANTS = [("uint8", m) for m in ("gray", "rgb", *QUALITY_MODES, *CODEC_CHANNELS, *EMPTY)] + [
    ("float32", "float-image")
]
JPEG_V2 = OpSpec(
    name="jpeg_v2",
    description="torchvision.transforms.v2.functional.jpeg",
    call=_v2_jpeg,
    reference=jpeg_reference,
    dtypes=("uint8", "float32"),
    modes=("gray", "rgb", *QUALITY_MODES, *CODEC_CHANNELS, *EMPTY, *FLOAT_IMAGE),
    variants=V2_VARIANTS,
    params=quality,
    tolerances=LIBJPEG,
    fidelity=FIDELITY,
    keeps_memory_format=False,
    needs_real_device=NVJPEG,
    precondition=torchvision_codecs,
    timing=jpeg_timing,
    mode_recipes=partial(jpeg_recipes, batch_dims=(0, 2)),
    needs=V2_SIGNATURE,
    pil_input=TORCHVISION_PIL,  # a PIL image is saved by Pillow at the quality: the same libjpeg
    # its class documents "quality ... from 1 to 100", "[..., 3 or 1, H, W]" and uint8; the functional leaves the
    # checks to encode_jpeg, which an empty image does not reach: flattening it to (-1, C, 0, W) raises first
    error_modes=raising(QUALITY_MODES, ValueError, match="between 1 and 100")
    | raising(CODEC_CHANNELS, RuntimeError, match="number of channels")
    | raising(EMPTY, RuntimeError, match="reshape")
    | raising(FLOAT_IMAGE, RuntimeError, match="dtype should be uint8"),
)


def _v2_jpeg_of_pil(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """The functional handed the image as a PIL image (the way a Pillow-decoding pipeline calls it)."""
    planes = image.permute(1, 2, 0).numpy()
    picture = Image.fromarray(planes[..., 0] if planes.shape[2] == 1 else planes)
    out = np.array(_v2_jpeg(picture, params))  # a copy: torch wants a writable array
    return torch.from_numpy(np.ascontiguousarray((out[..., None] if out.ndim == 2 else out).transpose(2, 0, 1)))


# The tensor path raises for a quality outside 1..100 (encode_jpeg checks it); the PIL path hands it to Pillow.
JPEG_V2_PIL = OpSpec(
    name="jpeg_v2_pil",
    description="torchvision.transforms.v2.functional.jpeg of a PIL image, at an invalid quality",
    call=_v2_jpeg_of_pil,
    reference=None,  # error modes only: the valid PIL path is the `pil` check of jpeg_v2
    dtypes=("uint8",),
    modes=tuple(QUALITY_MODES),
    params=quality,
    tolerances=LIBJPEG,
    mode_recipes=partial(jpeg_recipes, batch_dims=(0, 0)),
    error_modes=raising(QUALITY_MODES, Exception),  # torchvision documents 1 to 100 and no other meaning
    host_only="a PIL image lives on the host",
    host_transfers="the image is handed over as a PIL image",
    keeps_memory_format=False,
    needs=V2_SIGNATURE,
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


TRUNCATED = {"truncated": "JPEG bytes cut off halfway"}


@st.composite
def decode_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """The quality Pillow encodes at, the read mode (UNCHANGED keeps the JPEG's channels), and whether the bytes
    come as a strided view (every other byte of a larger buffer: still a one-dimensional uint8 tensor, which is
    what the decoders document); "truncated" cuts the bytes off halfway."""
    if mode in TRUNCATED:
        return {"quality": draw(st.integers(1, 100), label="quality"), "read_mode": "UNCHANGED", "truncated": True}
    return {
        "quality": draw(st.integers(1, 100), label="quality"),
        "read_mode": "UNCHANGED",
        "strided_bytes": draw(st.booleans(), label="strided_bytes"),
    }


def decode_reference(image: np.ndarray, case: Case) -> np.ndarray:
    """Pillow's decode of Pillow's bytes; read mode RGB gives a grey JPEG three equal channels."""
    decoded = pillow_round_trip(image, case.params["quality"])
    return (
        np.repeat(decoded, 3, axis=-3) if case.params.get("read_mode") == "RGB" and decoded.shape[-3] == 1 else decoded
    )


def _pillow_bytes(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """Pillow's JPEG bytes of the image as a 1-D uint8 tensor on the host, laid out and cut as the params say."""
    data = pillow_encode(image.cpu().double().numpy(), params["quality"])
    data = data[: len(data) // 2] if params.get("truncated") else data
    encoded = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    return torch.stack([encoded, encoded], dim=1)[:, 0] if params.get("strided_bytes") else encoded


def _decode_with_torchvision(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """Pillow encodes, torchvision decodes on the image's device: isolates the decoder."""
    import torchvision.io

    read = keywords(params, read_mode=("mode", lambda m: getattr(torchvision.io.ImageReadMode, m)))
    return torchvision.io.decode_jpeg(_pillow_bytes(image, params), device=image.device, **read)


def _decode_with_torchcodec(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    from torchcodec.decoders import decode_jpeg

    return decode_jpeg(_pillow_bytes(image, params), device=str(image.device), **keywords(params, read_mode="mode"))


def _decode_with_opencv(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """OpenCV returns blue-green-red: its documented channel order, mapped back to RGB here.  Its
    default read flag (IMREAD_COLOR) gives three channels: "RGB" in the operation's terms.  It documents
    returning an empty matrix (None) for bytes it cannot decode: raised here, as the other libraries do."""
    import cv2

    flag = cv2.IMREAD_UNCHANGED if params.get("read_mode", "RGB") == "UNCHANGED" else cv2.IMREAD_COLOR
    decoded = cv2.imdecode(_pillow_bytes(image, params).numpy(), flag)
    if decoded is None:
        raise RuntimeError("cv2.imdecode returned no image")
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
    """OpenCV encodes blue-green-red (and alpha last): the RGB(A) image is handed over in that order."""
    import cv2

    pixels = image.cpu().numpy().transpose(1, 2, 0)
    order = [2, 1, 0, *range(3, pixels.shape[2])] if pixels.shape[2] >= 3 else list(range(pixels.shape[2]))
    pixels = pixels[..., 0] if pixels.shape[2] == 1 else np.ascontiguousarray(pixels[..., order])
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
    modes=("gray", "rgb"),
    invalid=TRUNCATED,
    variants=[("uint8", "gray"), ("uint8", "rgb"), ("uint8", "truncated")],
    tolerances=LIBJPEG,
    optional=lambda mode: ("read_mode",) if mode == "rgb" else (),  # a grey JPEG read as RGB has another shape
    spec=CODEC_SPEC | {"host_transfers": DECODE_HOST},
    implementations=[
        Implementation(
            library=TVIO,
            name="decode_jpeg_tv",
            call=_decode_with_torchvision,
            defaults={"read_mode": "UNCHANGED"},
            raises=raising(TRUNCATED, RuntimeError, match="truncated|JPEG"),
            spec=TORCHVISION_CODECS,
            description="torchvision.io.decode_jpeg of Pillow's bytes",
        ),
        Implementation(
            library=TORCHCODEC,
            call=_decode_with_torchcodec,
            defaults={"read_mode": "RGB"},
            raises=raising(TRUNCATED, RuntimeError, match="truncated|JPEG"),
            spec=TORCHCODEC_CODECS | {"needs": ("torchcodec.decoders.decode_jpeg",)},
            description="torchcodec.decoders.decode_jpeg of Pillow's bytes",
        ),
        Implementation(
            library=OPENCV,
            call=_decode_with_opencv,
            defaults={"read_mode": "RGB"},
            # "If the buffer is too short or contains invalid data, the function returns an empty matrix"
            raises=raising(TRUNCATED, RuntimeError, match="returned no image"),
            host_only=HOST_LIBRARY,
            spec={"needs": ("cv2.imdecode",)},
            description="cv2.imdecode of Pillow's bytes",
        ),
    ],
)
# torchvision.io.encode_jpeg ends the process with SIGSEGV on an image with a side of 0: never drawn for it
SEGFAULTS = "segfaults the process: a finding, docs/findings.md#torchvisions-encode_jpeg-segfaults-on-an-empty-image"
# OpenCV's words (imgcodecs.hpp, IMWRITE_JPEG_QUALITY): "For JPEG, it can be a quality from 0 to 100 (the higher is
# the better). Default value is 95."  libjpeg, which it calls, gives quality 0 quality 1's tables (jcparam.c,
# jpeg_quality_scaling: "if (quality <= 0) quality = 1").  Quality 101 or -1 it clamps with a logged warning only.
OPENCV_QUALITY_0 = Accepted(
    documentation="OpenCV imgcodecs.hpp, IMWRITE_JPEG_QUALITY: 'For JPEG, it can be a quality from 0 to 100'; "
    "libjpeg's jcparam.c jpeg_quality_scaling: 'if (quality <= 0) quality = 1'",
    meaning=lambda params: params | {"quality": 1},
)
OPENCV_FLOAT = Accepted(
    documentation="cv2.imwrite.__doc__ (imencode's): 'If the image format is not supported, the image will be "
    "converted to 8-bit unsigned (CV_8U) and saved that way' (rounded and saturated, as the reference does)",
    meaning=lambda params: params,
)
ENCODE_INVALID = QUALITY_MODES | CODEC_CHANNELS | EMPTY | FLOAT_IMAGE
ENCODE_OPERATION = Operation(
    name="encode_jpeg",
    description="encode the case's image at a quality (decoded by Pillow)",
    reference=jpeg_reference,
    params=quality,
    dtypes=("uint8",),
    modes=("gray", "rgb"),
    invalid=ENCODE_INVALID,
    variants=[("uint8", m) for m in ("gray", "rgb", *QUALITY_MODES, *CODEC_CHANNELS, *EMPTY)]
    + [("float32", "float-image")],
    tolerances=LIBJPEG,
    optional=lambda mode: () if mode in QUALITY_MODES else ("quality",),
    spec=CODEC_SPEC | {"host_output": ENCODE_HOST, "output_dtype": lambda case: "uint8"},
    implementations=[
        # torchvision and TorchCodec document quality=75; OpenCV documents IMWRITE_JPEG_QUALITY=95
        Implementation(
            library=TVIO,
            name="encode_jpeg_tv",
            call=_encode_with_torchvision,
            defaults={"quality": 75},
            raises=raising(QUALITY_MODES, ValueError, match="between 1 and 100")
            | raising(CODEC_CHANNELS, RuntimeError, match="number of channels")
            | raising(FLOAT_IMAGE, RuntimeError, match="dtype should be uint8"),
            not_applicable={"empty-image": SEGFAULTS},
            spec=TORCHVISION_CODECS,
            description="torchvision.io.encode_jpeg (decoded by Pillow)",
        ),
        Implementation(
            library=TORCHCODEC,
            call=_encode_with_torchcodec,
            defaults={"quality": 75},
            raises=raising(QUALITY_MODES, ValueError, match="between 1 and 100")
            | raising(CODEC_CHANNELS, RuntimeError, match="number of channels")
            | raising(EMPTY, RuntimeError, match="Empty JPEG image")
            | raising(FLOAT_IMAGE, RuntimeError, match="dtype should be uint8"),
            spec=TORCHCODEC_CODECS | {"needs": ("torchcodec.encoders.JpegEncoder",)},
            description="torchcodec.encoders.JpegEncoder (decoded by Pillow)",
        ),
        Implementation(
            library=OPENCV,
            call=_encode_with_opencv,
            defaults={"quality": 95},
            accepts={"quality-0": OPENCV_QUALITY_0, "float-image": OPENCV_FLOAT},
            # imencode takes 1, 3 or 4 channels (a 4th is dropped: undocumented for JPEG, a known issue);
            # quality 101 and negative ones are clamped, also undocumented (a known issue)
            raises=raising({"channels-2": CODEC_CHANNELS["channels-2"]}, _class("cv2.error", Exception))
            | raising(EMPTY, _class("cv2.error", Exception), match="empty"),
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


def _kornia_codec(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    import kornia

    dtype = image.dtype if image.is_floating_point() else torch.float32  # an integer image is what is invalid
    quality = torch.full((image.shape[0],), float(params["quality"]), device=image.device, dtype=dtype)
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


SHAPE_ERROR = _class("kornia.core.exceptions.ShapeError", ValueError)
BASE_ERROR = _class("kornia.core.exceptions.BaseError", Exception)  # kornia's own; it subclasses Exception only
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
PROBABILITIES = {"p-out-of-range": st.sampled_from((-1 / 64, 1 + 1 / 64))}


@st.composite
def jpeg_arguments(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """RandomJPEG's quality range just outside its bounds (1, 100), or a probability outside [0, 1]."""
    q = float(draw(st.integers(11, 100), label="quality"))
    ranges = {"quality-0": (0.0, q), "quality-101": (q, 101.0), "quality-negative": (-1.0, q)}
    return {"jpeg_quality": ranges.get(mode, (q - 10, q)), "p": draw(PROBABILITIES.get(mode, st.just(1.0)), label="p")}


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

test_jpeg_v2 = JPEG_V2.test()
test_jpeg_v2_pil = JPEG_V2_PIL.test()
globals().update(ENCODE_OPERATION.tests())
globals().update(DECODE_OPERATION.tests())
test_jpeg_kornia_differentiable = JPEG_KORNIA.test()
test_random_jpeg_kornia = RANDOM_JPEG_KORNIA.test()
test_random_jpeg_kornia_arguments = RANDOM_JPEG_ARGUMENTS.test()
