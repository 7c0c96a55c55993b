"""The `ambient` relation: under torch.autocast, inference_mode and deterministic algorithms the op gives the plain
call's dtype and values.

The plant is kornia's adjust_brightness_accumulative (the suite's adjust_brightness_kornia) ending with a colour
matrix applied by a matmul: the identity in float32, so every plain item passes it, but autocast computes a matmul
in its lower precision and returns that dtype to a caller who gave float32.  The relation's items fail it, and pass
the real library.
"""

from __future__ import annotations

import torch
from case_modules import control_then_plant, library_plant

from conformance.checks.ambient import MODES, deterministic, half_precision
from conformance.devices.targets import CPU

COLOUR_MATRIX_BY_MATMUL = library_plant(
    "kornia.enhance.adjust",
    "adjust_brightness_accumulative",
    """
def adjust_brightness_accumulative(image, factor, clip_output=True):
    # the plant: a colour matrix (the identity) applied by a matmul, which autocast runs in its lower dtype
    found = _real(image, factor, clip_output)
    identity = torch.eye(found.shape[-1], dtype=found.dtype, device=found.device)
    return found @ identity
""",
    rebind="kornia.enhance.adjust_brightness_accumulative",
)


def test_a_dtype_that_changes_under_autocast_fails_the_stock_suite_and_the_real_library_passes(pytester, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_RELATIONS", "all")
    failed = control_then_plant(
        pytester,
        "colour-matrix-by-matmul",
        COLOUR_MATRIX_BY_MATMUL,
        "test_color.py",
        "adjust_brightness_kornia and ambient",
        "under autocast(torch.float16): returns torch.float16, the plain call torch.float32",
        examples=5,
        check="ambient",
    )
    assert any("[cpu-float32" in line for line in failed)  # the cpu's bfloat16 autocast too


def test_each_mode_is_left_as_it_was_found():
    before = (torch.is_autocast_enabled("cpu"), torch.is_inference_mode_enabled())
    deterministic_before = torch.are_deterministic_algorithms_enabled()
    for mode in MODES:
        with mode.enter(CPU):
            if mode.name == "deterministic":
                assert torch.are_deterministic_algorithms_enabled()
                assert torch.is_deterministic_algorithms_warn_only_enabled()
        assert (torch.is_autocast_enabled("cpu"), torch.is_inference_mode_enabled()) == before
    assert torch.are_deterministic_algorithms_enabled() == deterministic_before
    with deterministic():
        pass
    assert not torch.is_deterministic_algorithms_warn_only_enabled()


def test_autocast_is_the_targets_own_and_its_default_tolerance_the_lower_dtypes():
    with CPU.autocast():
        assert torch.get_autocast_dtype("cpu") == torch.bfloat16
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16
    assert half_precision(torch.bfloat16).atol == 1.6e-2
    assert half_precision(torch.float16).atol == 2e-3
