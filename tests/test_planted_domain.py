"""The stock suite reaches the whole documented domain: a bug planted in a library where the suite used to draw no
case (half precision, one channel, a value outside the documented range, a non-contiguous batch, a PIL image, a
parameter helper's default) fails the suite's own items, while the real library passes the same items.

Each plant is a conftest that replaces one library function before the case modules import it, in a process of its
own (the patch must not outlive the run).  The suite as it stood before each domain was drawn passed every plant.
"""

import pytest
from case_modules import control_then_plant

HALF_PRECISION_OVERFLOW = """
import torch
import torchvision.transforms.v2.functional as F

_real = F.adjust_brightness

def adjust_brightness(inpt, brightness_factor):
    # the plant: a float16 path works in 1/65536 units, past float16's largest value (65504) for a pixel near white:
    # inf there, where float32 is untouched
    if isinstance(inpt, torch.Tensor) and inpt.dtype == torch.float16:
        return torch.minimum(inpt * 256 * 256 * brightness_factor, torch.tensor(65536.0).half()) / 65536
    return _real(inpt, brightness_factor)

F.adjust_brightness = adjust_brightness
"""

ONE_CHANNEL = """
import torch
import torchvision.transforms.v2.functional as F

_real = F.rgb_to_grayscale

def rgb_to_grayscale(inpt, num_output_channels=1):
    # the plant: right for RGB; from one channel, three channels out put the gray in the first only
    if isinstance(inpt, torch.Tensor) and inpt.shape[-3] == 1 and num_output_channels == 3:
        return torch.cat([inpt, torch.zeros_like(inpt), torch.zeros_like(inpt)], dim=-3)
    return _real(inpt, num_output_channels=num_output_channels)

F.rgb_to_grayscale = rgb_to_grayscale
"""

ACCEPTS_OUT_OF_RANGE = """
import torchvision.transforms.v2.functional as F

_real = F.adjust_contrast

def adjust_contrast(inpt, contrast_factor):
    # the plant: a negative factor is no longer refused; its magnitude is used and an image comes back
    return _real(inpt, abs(contrast_factor))

F.adjust_contrast = adjust_contrast
"""

NON_CONTIGUOUS_BATCH = """
import torch
import torchvision.transforms.v2.functional as F

_real = F.horizontal_flip

def packed(image):
    # the plant's kernel walks the batch as if its samples were packed one after another in memory: right for a
    # contiguous, channels-last or width-strided batch, wrong where the batch dimensions are not contiguous
    if not isinstance(image, torch.Tensor) or image.ndim < 4:
        return image
    sizes, strides = image.shape[-3:], image.stride()[-3:]
    step = max(size * stride for size, stride in zip(sizes, strides))
    lead = []
    for size in reversed(image.shape[:-3]):
        lead.insert(0, step)
        step *= size
    return image.as_strided(image.shape, (*lead, *strides), image.storage_offset())

def horizontal_flip(inpt):
    return _real(packed(inpt))

F.horizontal_flip = horizontal_flip
"""

PIL_PATH = """
import torchvision.transforms._functional_pil as F_pil

def hflip(img):
    # the plant: the PIL path flips top to bottom; the tensor path is untouched
    return img.transpose(1)  # Image.Transpose.FLIP_TOP_BOTTOM

F_pil.hflip = hflip
"""

HELPER_DEFAULT_ON_THE_CPU = """
import torch
import kornia.geometry.transform as kt
import kornia.geometry.transform.imgwarp as imgwarp

_real = imgwarp.get_shear_matrix2d

def get_shear_matrix2d(center, sx=None, sy=None):
    # the plant (kornia <= 0.8.2 did this): the shears left out are made on the cpu, whatever center's device
    sx = torch.zeros(center.shape[0]) if sx is None else sx
    sy = torch.zeros(center.shape[0]) if sy is None else sy
    return _real(center, sx, sy)

imgwarp.get_shear_matrix2d = get_shear_matrix2d
kt.get_shear_matrix2d = get_shear_matrix2d
"""

# plant: (case module, -k selection of stock items, what the run must say)
PLANTS = {
    "half-precision-overflow": (
        HALF_PRECISION_OVERFLOW,
        "test_color.py",
        "adjust_brightness_tv2 and cpu-float16 and (reference or invariants)",
        "non-finite output",
    ),
    "right-for-three-channels-wrong-for-one": (
        ONE_CHANNEL,
        "test_color.py",
        "rgb_to_grayscale_tv2 and cpu-uint8-three and reference",
        "vs reference",
    ),
    "accepts-a-value-outside-its-range": (
        ACCEPTS_OUT_OF_RANGE,
        "test_color.py",
        "adjust_contrast_tv2 and cpu- and error",
        "returned a result for an invalid input",
    ),
    "wrong-only-for-a-non-contiguous-batch": (
        NON_CONTIGUOUS_BATCH,
        "test_geometry.py",
        "hflip_tv2 and cpu-float32 and (reference or error)",
        "hflip_tv2",
    ),
    "pil-path-differs-from-the-tensor-path": (PIL_PATH, "test_geometry.py", "hflip_tv1 and pil", "as a PIL"),
    "parameter-helper-default-on-the-cpu": (
        HELPER_DEFAULT_ON_THE_CPU,
        "test_affine_random.py",
        "shear_matrix and vcuda",
        "vcuda:1",
    ),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_bug_planted_outside_the_old_slice_fails_the_stock_suite_and_the_real_library_passes(pytester, plant):
    control_then_plant(pytester, plant, *PLANTS[plant], examples=40)
