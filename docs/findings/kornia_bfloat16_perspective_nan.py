"""kornia 0.9.0, torch 2.15.0: a bfloat16 perspective warp on kornia's device path has an infinite sampling
position near the warp's horizon, which torch's cpu grid_sample turns into NaN and CUDA's into the padding.

kornia warps a float16/bfloat16 image in float32 on the cpu only (imgwarp._runs_in_float32,
core.utils._torch_grid_sample); on a CUDA device it builds the grid and samples it in the image's dtype. This
script runs that device path on the cpu, as the conformance harness's virtual device does, by turning those two
cpu-only upcasts off, and shows each step. Needs torch, kornia and numpy. Prints the NaN count; exit status 1
when the NaN reproduces, 0 otherwise. With CUDA available it also runs the real device path (no patching).

The case (the harness's minimal one): a 7 x 4 image, its corners moved to END (torchvision's convention, pixel k
covers [k, k + 1); kornia gets every point less half a pixel).
"""

import sys

import numpy as np
import torch
import torch.nn.functional as F
from kornia.core.utils import _inverse_3x3_closed_form
from kornia.geometry.conversions import normalize_homography
from kornia.geometry.transform import get_perspective_transform, imgwarp, warp_perspective

H, W = 7, 4
START = [[0, 0], [W, 0], [W, H], [0, H]]
END = [[1, -2], [3, 2], [4, 5], [-1, 9]]


def points(pts, like):
    return torch.tensor([[[x - 0.5, y - 0.5] for x, y in pts]], dtype=like.dtype, device=like.device)


def matrix(like):
    return get_perspective_transform(points(START, like), points(END, like))


def warp(image):
    return warp_perspective(image, matrix(image), (H, W))  # padding "zeros", align_corners=True


def denominator(dtype):
    """imgwarp.warp_perspective's eager path up to `denom` (its lines after `if _runs_in_float32`), in `dtype`."""
    m = matrix(torch.zeros((), dtype=dtype))
    m = _inverse_3x3_closed_form(normalize_homography(m / imgwarp._unit_projective_scale(m), (H, W), (H, W)))
    gx0 = torch.linspace(-1, 1, W, dtype=dtype)[None, :]
    gy0 = torch.linspace(-1, 1, H, dtype=dtype)[:, None]
    return m[0, 2, 0] * gx0 + m[0, 2, 1] * gy0 + m[0, 2, 2], m[0]


torch.manual_seed(0)
image = torch.rand(1, 4, H, W).to(torch.bfloat16)  # any finite image: the NaN is one pixel, every channel
print(f"torch {torch.__version__}, kornia {sys.modules['kornia'].__version__}")
cpu = warp(image)
print(f"kornia on the cpu (warps in float32): {int(cpu.isnan().sum())} NaN")

grids = []


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    grids.append(grid)
    return F.grid_sample(input, grid, mode=mode, padding_mode=padding_mode, align_corners=align_corners)


patched = imgwarp._runs_in_float32, imgwarp._torch_grid_sample
imgwarp._runs_in_float32 = lambda src, other: False  # the device branch: the grid in bfloat16 ...
imgwarp._torch_grid_sample = grid_sample  # ... and sampled so by torch's cpu kernel
try:
    device_path = warp(image)
finally:
    imgwarp._runs_in_float32, imgwarp._torch_grid_sample = patched
nans = int(device_path.isnan().sum())
print(f"kornia's device path in bfloat16, on the cpu: {nans} NaN of {device_path.numel()} values")
if nans:
    y, x = (int(i) for i in torch.nonzero(device_path[0, 0].isnan())[0])
    grid = grids[-1]
    print(f"  pixel (y={y}, x={x}): grid position {grid[0, y, x].tolist()} (normalised)")
    d16, m16 = denominator(torch.bfloat16)
    d64, m64 = denominator(torch.float64)
    a = m16[2, 0] * torch.linspace(-1, 1, W, dtype=torch.bfloat16)[x]
    b = m16[2, 1] * torch.linspace(-1, 1, H, dtype=torch.bfloat16)[y]
    print(
        f"  its denominator in bfloat16: {float(a)} + {float(b)} = {float(a + b)} (exactly "
        f"{float(a) + float(b)}), + {float(m16[2, 2])} = {float(d16[y, x])}; in float64 {float(d64[y, x]):.6f}"
    )
    source = m64.numpy() @ np.array([2 * x / (W - 1) - 1, 2 * y / (H - 1) - 1, 1.0])
    pixels = ((source[:2] / source[2] + 1) * np.array([W - 1, H - 1]) / 2).round(1)
    print(f"  its true source, pixel indices (x, y): {pixels.tolist()}: outside the {W} x {H} image, the padding")
    one = torch.ones(1, 1, H, W)
    cell = grid[:, y : y + 1, x : x + 1]
    for name, dtype in (("bfloat16", torch.bfloat16), ("float32", torch.float32)):
        value = F.grid_sample(one.to(dtype), cell.to(dtype), align_corners=True).item()
        print(f"  torch grid_sample (cpu, vectorised kernel), {name}, at that position: {value}")
    fallback = torch._grid_sampler_2d_cpu_fallback(one, cell.float(), 0, 0, True).item()
    print(f"  torch._grid_sampler_2d_cpu_fallback (scalar cpu kernel, CUDA's position rule): {fallback}")
if torch.cuda.is_available():
    real = warp(image.cuda()).cpu()
    print(f"kornia on {torch.cuda.get_device_name()} (bfloat16 grid, CUDA grid_sample): {int(real.isnan().sum())} NaN")
sys.exit(1 if nans else 0)
