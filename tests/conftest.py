"""The harness's own tests: the same on a GPU machine as on a CPU-only one.

Virtual targets are not offered beside a real CUDA device (conformance.targets), and many tests
here use them, so a visible GPU would change what these tests see.  CUDA reads
CUDA_VISIBLE_DEVICES when it first initialises (after this file runs: torch does not initialise
CUDA on import, and nothing asks for devices before the plugin's pytest_configure), so hiding the
GPUs here is enough; pytester subprocess runs inherit it.  CONFORMANCE_TESTS_USE_GPU=1 keeps them.
"""
import os

import pytest

if os.environ.get("CONFORMANCE_TESTS_USE_GPU") != "1":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""

pytest_plugins = ["pytester"]


@pytest.fixture
def virtual_device():
    """For tests that run ops on virtual targets: skipped, with the probe's reason, on a torch
    where they are off (e.g. torch < 2.10 lacks torch._C._ensureCUDADeviceGuardSet)."""
    from conformance.virtual import probe

    reason = probe.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
