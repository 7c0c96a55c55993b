"""kornia 0.9.0: PadTo.inverse() returns another shape than PadTo's input when PadTo cropped it.

PadTo pads an image to a target size and, by default (`crop_if_exceeds=True`), crops a side longer than the target.
Its `inverse()` slices the padded output back to the input's size, which a cropped side no longer has, so the
"inverse" of a 32x64 image padded to 40x40 is 32x40: no error, no warning.  RandomCrop's inverse pads back to its
input's size; code that maps a prediction back through the augmentation's inverse gets a smaller tensor.

Needs torch and kornia.  Exit status 1 when the shape differs from the input's, 0 otherwise.
"""

import sys

import kornia
import kornia.augmentation as K
import torch

image = torch.rand(1, 3, 32, 64)
pad = K.PadTo((40, 40))
padded = pad(image)
back = pad.inverse(padded)
print(f"torch {torch.__version__}, kornia {kornia.__version__}")
print(f"input {tuple(image.shape)} -> PadTo((40, 40)) {tuple(padded.shape)} -> inverse() {tuple(back.shape)}")
kept = K.PadTo((40, 40), crop_if_exceeds=False)
print(f"with crop_if_exceeds=False: inverse() {tuple(kept.inverse(kept(image)).shape)}")
sys.exit(1 if back.shape != image.shape else 0)
