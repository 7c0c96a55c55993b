"""Real torchvision and kornia ops run on vcuda:1 without false placement findings,
and give the cpu's values (a virtual device runs the cpu kernels).  Resize, whose uint8 path
does differ by device, is covered by the suite in cases/."""

import kornia
import pytest
import torch
import torchvision.transforms.v2 as T
import torchvision.transforms.v2.functional as F

from conformance.devices.placement import PlacementLog, left_behind
from conformance.devices.virtual.state import NotEmulatable
from conformance.devices.virtual_target import virtual_targets

pytestmark = pytest.mark.usefixtures("virtual_device")  # skipped where this torch fails the probe

VCUDA1 = virtual_targets(2)[1]
IMAGE = torch.rand(2, 3, 17, 19, generator=torch.Generator().manual_seed(0))
MEAN, STD = [0.4, 0.5, 0.6], [0.2, 0.3, 0.25]


def uint8(x):
    return (x * 255).to(torch.uint8)


FUNCTIONS = {
    "tv.normalize": lambda x: F.normalize(x, MEAN, STD),
    "tv.to_dtype": lambda x: F.to_dtype(uint8(x), torch.float32, scale=True),
    "tv.adjust_hue": lambda x: F.adjust_hue(x, 0.1),
    "tv.gaussian_blur": lambda x: F.gaussian_blur(x, [5, 5], [1.5, 1.5]),
    "tv.affine": lambda x: F.affine(x, angle=10.0, translate=[2, 1], scale=1.1, shear=[5.0, 0.0]),
    "tv.perspective": lambda x: F.perspective(
        x, [[0, 0], [18, 0], [18, 16], [0, 16]], [[1, 1], [17, 0], [18, 15], [0, 16]]
    ),
    "tv.equalize": lambda x: F.equalize(uint8(x)),
    "kornia.normalize": lambda x: kornia.enhance.normalize(
        x, torch.tensor(MEAN, device=x.device), torch.tensor(STD, device=x.device)
    ),
    "kornia.gaussian_blur2d": lambda x: kornia.filters.gaussian_blur2d(x, (5, 5), (1.5, 1.5)),
    "kornia.jpeg_codec_differentiable": lambda x: kornia.enhance.jpeg_codec_differentiable(
        x[..., :16, :16], torch.tensor([50.0], device=x.device)
    ),
    "kornia.warp_affine": lambda x: kornia.geometry.transform.warp_affine(
        x, torch.eye(2, 3, device=x.device).expand(2, 2, 3), (17, 19)
    ),
}
MODULES = {
    "kornia.RandomPlanckianJitter-blackbody": lambda: kornia.augmentation.RandomPlanckianJitter("blackbody", p=1.0),
    "kornia.RandomPlanckianJitter-CIED": lambda: kornia.augmentation.RandomPlanckianJitter("CIED", p=1.0),
    "kornia.RandomJPEG": lambda: kornia.augmentation.RandomJPEG(jpeg_quality=(30.0, 60.0), p=1.0),
    "tv.Normalize": lambda: T.Normalize(MEAN, STD),
}


def assert_same_without_findings(output, expected, log):
    assert output.device == VCUDA1.device
    torch.testing.assert_close(output.cpu(), expected, rtol=0, atol=0)
    assert log.image_copies(smallest_image_plane=16 * 16) == [] and log.used == {}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_functions(name):
    op = FUNCTIONS[name]
    log = PlacementLog(VCUDA1.device)
    image = VCUDA1.put(IMAGE)
    log.taint(image)  # copies of image data are then told from constants
    with VCUDA1.active(log):
        output = op(image)
    assert_same_without_findings(output, op(IMAGE), log)


@pytest.mark.parametrize("name", MODULES)
def test_modules_follow_to_and_replay_their_params(name):
    build = MODULES[name]
    image = IMAGE[..., :16, :16]
    module = build()
    params = module.forward_parameters(image.shape) if hasattr(module, "forward_parameters") else None
    expected = module(image, params=params) if params is not None else module(image)
    moved = VCUDA1.put(build())
    problems, watched = left_behind(moved, VCUDA1.device)
    assert problems == [] and watched == {}
    log = PlacementLog(VCUDA1.device)
    moved_image = VCUDA1.put(image)
    log.taint(moved_image)
    on_target = None if params is None else {k: VCUDA1.put(v) if torch.is_tensor(v) else v for k, v in params.items()}
    with VCUDA1.active(log):
        output = moved(moved_image, params=on_target) if params is not None else moved(moved_image)
    assert_same_without_findings(output, expected, log)


def test_torchvision_jpeg_on_cuda_needs_nvjpeg_and_is_not_emulatable():
    with pytest.raises(NotEmulatable, match="image::encode_jpegs_cuda"), VCUDA1.active():
        F.jpeg(uint8(VCUDA1.put(IMAGE)), 75)
