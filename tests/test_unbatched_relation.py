"""The `unbatched` relation: an unbatched image and the same image as a batch of one give the same output.

The plant is torchvision's v2 RandomInvert with an unbatched path of its own (a thousandth darker).  The device
sweep draws batches only (one to three images), so before the relation the stock suite's RandomInvert items never
reached that path and passed the plant; the relation runs each batch of one unbatched and fails it, and passes the
real library.
"""

from __future__ import annotations

from case_modules import control_then_plant

UNBATCHED_PATH_OF_ITS_OWN = """
import torchvision.transforms.v2 as T

_real = T.RandomInvert.transform

def transform(self, inpt, params):
    # the plant: an unbatched image comes back a thousandth darker; a batch keeps the library's values
    found = _real(self, inpt, params)
    return found * 0.999 if found.ndim == 3 else found

T.RandomInvert.transform = transform
"""


def test_an_unbatched_path_that_differs_fails_the_stock_suite_and_the_real_library_passes(pytester, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_RELATIONS", "all")
    control_then_plant(
        pytester,
        "unbatched-path-of-its-own",
        UNBATCHED_PATH_OF_ITS_OWN,
        "test_sweep.py",
        "sweep_torchvision_RandomInvert",
        "the image as a batch of one, against it unbatched",
        examples=10,
        sweep="torchvision.transforms.v2",
        check="unbatched",
    )


def test_an_image_documented_with_a_batch_dimension_is_not_given_unbatched():
    """kornia's normalize documents `data` as (B, C, *): a (C, H, W) image is a batch of C there, not the same image
    (a dev run's false alarm, 2.34 apart where H == C)."""
    import kornia.enhance
    import torch

    from conformance.checks.unbatched import batch_required
    from conformance.devices.entry import Entry, recording

    image = torch.rand(1, 3, 3, 6)
    for call, required in [
        (lambda: kornia.enhance.normalize(image, torch.zeros(3), torch.ones(3)), True),
        (lambda: kornia.enhance.adjust_brightness(image, 0.1), False),  # documented (*, H, W)
    ]:
        entries: list[Entry] = []
        with recording(entries):
            call()
        assert batch_required(entries[0], image) is required
        assert not batch_required(entries[0], image.clone())  # only the image the op was given
