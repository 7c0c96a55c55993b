"""JPEG through libjpeg's codecs: decode and encode through torchvision.io, TorchCodec and OpenCV (one operation
each, so the libraries are compared on the same bytes and images), and torchvision v2 `jpeg`.
cases/test_jpeg_kornia.py has kornia's differentiable codec and RandomJPEG.

Reference: Pillow (libjpeg) encoding and decoding at the same quality (conformance.spec.jpeg, shared with kornia's
module).  Codecs that wrap libjpeg must agree with it almost exactly.  Every lossy op also gets a "fidelity"
check: its PSNR against the original may be at most a margin below Pillow's.
On CUDA torchvision and TorchCodec use nvJPEG, which a virtual device cannot emulate (those items
skip); OpenCV is a host library (cpu items only).
Error modes (values just outside each documented domain) are shared by the libraries: a quality of 0, above 100
or negative, a channel count the codec does not take, an image with no pixels, a dtype it does not take.  Each
library raises, documents accepting (OpenCV: quality 0, float images), or returns a result anyway: a finding with
a known issue.
Numbers: docs/tolerances.md, measured with benchmarks/calibrate.py.
"""

from __future__ import annotations

from functools import cache, partial
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import strategies as st
from PIL import Image

from conformance import (
    OPENCV,
    TORCHCODEC,
    TORCHVISION_PIL,
    TVIO,
    Accepted,
    Case,
    Counterpart,
    Implementation,
    ModuleOp,
    Operation,
    OpSpec,
    Recipe,
    Returns,
    Rule,
    Tolerance,
    keywords,
    versions,
)
from conformance.spec.jpeg import (
    EMPTY,
    QUALITY_MODES,
    exception_class,
    jpeg_recipes,
    jpeg_reference,
    jpeg_timing,
    one_image_timing,
    pillow_decode,
    pillow_encode,
    pillow_round_trip,
    quality,
    raising,
)

CODEC_CHANNELS = {"channels-2": "2 channels (documented: 1 or 3)", "channels-4": "4 channels (documented: 1 or 3)"}
FLOAT_IMAGE = {"float-image": "a float32 image (documented: uint8)"}
pytestmark = pytest.mark.filterwarnings("ignore:The image decoding and encoding capabilities:DeprecationWarning")


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


def _v2_jpeg_class(params: dict[str, Any]) -> torch.nn.Module:
    """v2's JPEG class given one quality (not a range): deterministic."""
    import torchvision.transforms.v2 as T

    return T.JPEG(params["quality"])


V2_SIGNATURE = ("torchvision.transforms.v2.functional.jpeg",)
V2_VARIANTS = [("uint8", m) for m in ("gray", "rgb", *QUALITY_MODES, *CODEC_CHANNELS, *EMPTY)] + [
    ("float32", "float-image")
]
JPEG_V2 = OpSpec(
    name="jpeg_v2",
    description="torchvision.transforms.v2.functional.jpeg",
    call=_v2_jpeg,
    counterpart=Counterpart(name="torchvision.transforms.v2.JPEG", module=ModuleOp(build=_v2_jpeg_class)),
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
    "timing": one_image_timing,
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
SEGFAULTS = "segfaults the process: a finding, docs/findings.md#torchvisions-encodejpeg-segfaults-on-an-empty-image"
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
    spec=CODEC_SPEC | {"returns": Returns(dtype=lambda case: "uint8", host=ENCODE_HOST)},
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
            raises=raising({"channels-2": CODEC_CHANNELS["channels-2"]}, exception_class("cv2.error", Exception))
            | raising(EMPTY, exception_class("cv2.error", Exception), match="empty"),
            host_only=HOST_LIBRARY,
            spec={"needs": ("cv2.imencode",)},
            description="cv2.imencode (decoded by Pillow)",
        ),
    ],
)
DECODE_JPEG, DECODE_JPEG_TORCHCODEC, DECODE_JPEG_OPENCV = DECODE_OPERATION.specs()
ENCODE_JPEG, ENCODE_JPEG_TORCHCODEC, ENCODE_JPEG_OPENCV = ENCODE_OPERATION.specs()


test_jpeg_v2 = JPEG_V2.test()
test_jpeg_v2_pil = JPEG_V2_PIL.test()
globals().update(ENCODE_OPERATION.tests())
globals().update(DECODE_OPERATION.tests())
