"""The `unbatched` relation: an unbatched image and the same image as a batch of one give the same output.

The plant is torchvision's v2 RandomInvert with an unbatched path of its own (a thousandth darker).  The device
sweep draws batches only (one to three images), so before the relation the stock suite's RandomInvert items never
reached that path and passed the plant; the relation runs each batch of one unbatched and fails it, and passes the
real library.
"""

from __future__ import annotations

import textwrap

from case_modules import copy_cases, failed_lines

UNBATCHED_PATH_OF_ITS_OWN = """
import torchvision.transforms.v2 as T

_real = T.RandomInvert.transform

def transform(self, inpt, params):
    # the plant: an unbatched image comes back a thousandth darker; a batch keeps the library's values
    found = _real(self, inpt, params)
    return found * 0.999 if found.ndim == 3 else found

T.RandomInvert.transform = transform
"""
RUN = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--targets=cpu,vcuda:1", "--max-examples=10"]
SELECTION = ["--sweep=torchvision.transforms.v2", "cases", "-k", "sweep_torchvision_RandomInvert"]


def test_an_unbatched_path_that_differs_fails_the_stock_suite_and_the_real_library_passes(pytester, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_RELATIONS", "all")
    copy_cases(pytester.path / "cases", "test_sweep.py")
    control = pytester.runpytest_subprocess(*RUN, *SELECTION)
    assert control.parseoutcomes().get("passed", 0) > 0 and not failed_lines(control), control.stdout.str()[-3000:]
    pytester.makeconftest(textwrap.dedent(UNBATCHED_PATH_OF_ITS_OWN))
    planted = pytester.runpytest_subprocess(*RUN, *SELECTION)
    failed = failed_lines(planted)
    assert failed and all("-unbatched]" in line for line in failed), planted.stdout.str()[-3000:]
    assert "the image as a batch of one, against it unbatched" in planted.stdout.str()


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
