"""The harness's own tests: the same on a GPU machine as on a CPU-only one.

Virtual targets are not offered beside a real CUDA device (conformance.devices.targets), and many tests
here use them, so a visible GPU would change what these tests see.  CUDA reads
CUDA_VISIBLE_DEVICES when it first initialises (after this file runs: torch does not initialise
CUDA on import, and nothing asks for devices before the plugin's pytest_configure), so hiding the
GPUs here is enough; pytester subprocess runs inherit it.  CONFORMANCE_TESTS_USE_GPU=1 keeps them.

CI=true changes what a pytester run prints (pytest writes each failure's whole message again in its short
summary; hypothesis loads its own ci settings), and these tests read that text, so they run as on a
developer's machine wherever they run: CI and GITHUB_STEP_SUMMARY are removed here, and a test about CI
behaviour sets them itself (monkeypatch).

The relation checks (--relations: types, unbatched) add items to every op that reaches a library callable or draws
an unbatched image; the tests of other mechanics count the items of their planted ops, so every run here is made
without them (CONFORMANCE_RELATIONS=none), and a relation's own tests turn them on (monkeypatch).
"""

import os

import pytest

if os.environ.get("CONFORMANCE_TESTS_USE_GPU") != "1":
    os.environ["CUDA_VISIBLE_DEVICES"] = ""
for _ci_variable in ("CI", "GITHUB_STEP_SUMMARY"):
    os.environ.pop(_ci_variable, None)
os.environ["CONFORMANCE_RELATIONS"] = "none"

pytest_plugins = ["pytester"]


@pytest.fixture
def virtual_device():
    """For tests that run ops on virtual targets: skipped, with the probe's reason, on a torch
    where they are off (e.g. torch < 2.10 lacks torch._C._ensureCUDADeviceGuardSet)."""
    from conformance.devices.virtual import probe

    reason = probe.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)


def _import_everything_once() -> None:
    """Most pytester runs here are in-process (`runpytest_inprocess`): a subprocess pays about 4 s of
    imports (torch, dynamo, hypothesis) before its first item, and that start-up was two thirds of this
    suite's time.  pytester restores sys.modules after an in-process run, and torch cannot be imported
    twice in one process, so torch, the libraries under test and every harness module are imported once,
    here, before any run.  A run stays in a subprocess of its own where the process is the subject: xdist
    workers, a worker that aborts, a signal or kill, the plugin's inertness, and a planted conftest that
    patches a library (the patch would outlive the run)."""
    import contextlib
    import importlib
    import pkgutil

    import conformance

    for name in ("torch", "torchvision.transforms.v2", "kornia.augmentation", "PIL.Image", "cv2", "triton"):
        with contextlib.suppress(ImportError):  # an optional library (triton: CUDA builds only)
            importlib.import_module(name)
    for found in pkgutil.walk_packages(conformance.__path__, "conformance."):
        if found.name != "conformance.__main__":
            importlib.import_module(found.name)


_import_everything_once()
