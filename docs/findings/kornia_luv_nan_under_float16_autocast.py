"""kornia 0.9.0, torch 2.15.0: rgb_to_luv returns NaN at black pixels of a float32 image under float16 autocast.

kornia computes a float16 *input* in float32 (its docstring: "Half inputs use float32 arithmetic, so the default
epsilon remains representable"), but a float32 input under `torch.autocast(dtype=torch.float16)` takes the float32
branch, and autocast runs its RGB -> XYZ 3x3 transformation (_apply_linear_transformation) in float16: XYZ comes
back float16, `eps` (1e-12) is 0 there, and a black pixel divides 0 by 0 in u' = 4X / (X + 15Y + 3Z + eps).
Training code that converts colours inside its autocast block gets NaN in u* and v* wherever a pixel is black.

Needs torch and kornia. Prints the NaN count on the cpu (autocast float16, which torch offers on the cpu too) and,
with CUDA available, on cuda; exit status 1 when the NaN reproduces, 0 otherwise.
"""

import sys

import kornia
import torch

image = torch.zeros(1, 3, 2, 2)  # a black image, float32
image[..., 1, 1] = 0.5  # and one grey pixel

found = 0
devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
print(f"torch {torch.__version__}, kornia {kornia.__version__}")
for device in devices:
    plain = kornia.color.rgb_to_luv(image.to(device))
    with torch.autocast(device, dtype=torch.float16):
        mixed = kornia.color.rgb_to_luv(image.to(device))
    nan = int(mixed.isnan().sum())
    found += nan
    print(
        f"{device}: plain {plain.dtype}, {int(plain.isnan().sum())} NaN; under float16 autocast {mixed.dtype}, "
        f"{nan} NaN of {mixed.numel()} (black pixel L, u, v: {mixed[0, :, 0, 0].tolist()})"
    )
sys.exit(1 if found else 0)
