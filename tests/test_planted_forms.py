"""A module that forwards a parameter wrongly to its function, and a module that keeps state from its first call
into later ones, fail the stock suite's own items (the `module` and `history` checks), while the real library
passes the same items; so does a random module whose sampler keeps what it drew for its first input, which replayed
parameters never reach (the history check's own draws).

Each plant is a conftest that replaces one library method before the case modules import it, in a process of its
own.  The suite as it stood before these checks (one call of a freshly built op per case) passed both plants.
"""

import pytest
from case_modules import control_then_plant

WRONG_PARAMETER = """
import kornia.enhance

def forward(self, image):
    # the plant: the module hands its function the shift with the wrong sign (the function itself is right)
    return kornia.enhance.adjust_hue(image, -self.hue_factor)

kornia.enhance.AdjustHue.forward = forward
"""

STATE_FROM_THE_FIRST_CALL = """
import torch
import torchvision.transforms.v2 as T

_real = T.Normalize.transform

def transform(self, inpt, params):
    # the plant: the statistics become tensors on the first call and are kept, in that input's dtype: a later input
    # of another dtype is normalised with the first one's rounding of the mean and std (and promoted to its dtype).
    # The first call, and so every fresh instance, is the library's own (its checks and its result).
    found = _real(self, inpt, params)
    if not (isinstance(inpt, torch.Tensor) and inpt.is_floating_point()):
        return found
    if not hasattr(self, "_kept"):
        self._kept = tuple(torch.tensor(v, dtype=inpt.dtype).view(-1, 1, 1) for v in (self.mean, self.std))
        return found
    mean, std = self._kept
    return (inpt - mean.to(inpt.device)) / std.to(inpt.device)

T.Normalize.transform = transform
"""

DRAWS_FOR_ITS_FIRST_SIZE = """
import torch
import kornia.augmentation as K

_real = K.LongestMaxSize.forward_parameters

def forward_parameters(self, batch_shape):
    # the plant: the parameters are computed for the first input's size and kept, as kornia 0.6.9's LongestMaxSize
    # kept its first output size (kornia#2123).  Replayed parameters (every check before) never reach it.
    if not hasattr(self, "_first_size"):
        self._first_size = tuple(batch_shape[-2:])
    return _real(self, torch.Size((*batch_shape[:-2], *self._first_size)))

K.LongestMaxSize.forward_parameters = forward_parameters
"""

PLANTS = {
    "module-forwards-a-parameter-wrongly": (
        WRONG_PARAMETER,
        "test_color.py",
        "adjust_hue_kornia",
        "and the module kornia.enhance.AdjustHue, same params",
    ),
    "module-keeps-state-from-its-first-call": (
        STATE_FROM_THE_FIRST_CALL,
        "test_normalize.py",
        "normalize_v2_module",
        "a fresh instance",
    ),
}


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_planted_module_bug_fails_the_stock_suite_and_the_real_library_passes(pytester, plant):
    control_then_plant(pytester, plant, *PLANTS[plant], examples=20)


def test_a_module_that_draws_for_its_first_size_fails_the_stock_suite_and_the_real_library_passes(pytester):
    control_then_plant(
        pytester,
        "draws-for-its-first-size",
        DRAWS_FOR_ITS_FIRST_SIZE,
        "test_sweep.py",
        "sweep_kornia_LongestMaxSize",
        "on its own draw for this case, it draws",
        examples=5,
        sweep="kornia.augmentation",
        check="history",
    )
