"""When virtual targets are offered: only where the private torch APIs they need work, and
never beside a real CUDA device; otherwise the reason is said, and asking for them is an error."""

import pytest
import torch
import torch.utils._python_dispatch

from conformance.devices import discovery as targets
from conformance.devices.discovery import discover, select, virtual_unavailable_reason
from conformance.devices.targets import CPU, Target, TargetSelectionError
from conformance.devices.virtual import probe

ONE_GPU = [CPU, Target("cuda:0", "cuda", "NVIDIA H100")]


def names(found):
    return [t.name for t in found]


@pytest.fixture(autouse=True)
def fresh_probe():
    """The probe's answer is cached per process: ask it again under each test's patches."""
    probe.unavailable_reason.cache_clear()
    yield
    probe.unavailable_reason.cache_clear()


def test_this_torch_passes_the_probe_and_offers_virtual_targets(virtual_device):
    assert probe.unavailable_reason() is None and virtual_unavailable_reason() is None
    assert names(discover())[-2:] == ["vcuda:0", "vcuda:1"]


@pytest.mark.parametrize(
    "owner, name",
    [
        (torch._C, "_set_only_lift_cpu_tensors"),
        (torch._C, "_ensureCUDADeviceGuardSet"),
        (torch._C, "_dispatch_has_kernel_for_dispatch_key"),
        (torch.utils._python_dispatch, "is_traceable_wrapper_subclass"),
        (torch.cuda, "_exchange_device"),
    ],
)
def test_a_missing_private_api_turns_virtual_targets_off_naming_it(monkeypatch, owner, name):
    monkeypatch.delattr(owner, name, raising=False)  # raising=False: an old torch may lack it already
    qualified = f"{owner.__name__}.{name}"
    reason = virtual_unavailable_reason()
    assert reason is not None and qualified in reason and torch.__version__ in reason
    assert not any(t.virtual for t in discover())
    with pytest.raises(TargetSelectionError, match=qualified):
        select("vcuda:0", discover())
    with pytest.raises(TargetSelectionError, match=qualified):
        discover(2)  # --virtual-devices 2
    assert names(select("all", discover())) == names(discover(0))  # 'all' just goes without them


def test_a_private_api_that_is_there_but_behaves_differently_is_caught_by_the_self_test(virtual_device, monkeypatch):
    """Module.to() must swap a wrapper subclass in whole; with `.data =` the device is kept
    but the data is lost.  Simulated by torch not recognising the wrapper."""
    monkeypatch.setattr(torch.nn.modules.module, "is_traceable_wrapper_subclass", lambda tensor: False)
    probe.unavailable_reason.cache_clear()  # the virtual_device fixture has asked it already
    reason = virtual_unavailable_reason()
    assert reason is not None and "Module.to" in reason
    assert not any(t.virtual for t in discover())


def test_no_virtual_targets_beside_a_real_cuda_device(monkeypatch):
    monkeypatch.setattr(targets, "_real_targets", lambda: list(ONE_GPU))
    reason = virtual_unavailable_reason()
    assert reason is not None and "cuda:0" in reason and "CUDA_VISIBLE_DEVICES= python -m conformance run" in reason
    assert names(discover()) == names(discover(0)) and "cuda:0" in names(discover())
    assert not any(t.virtual for t in discover())
    for request in ("vcuda", "vcuda:1", "cpu,vcuda:0"):
        with pytest.raises(
            TargetSelectionError, match="CUDA_VISIBLE_DEVICES= python -m conformance run --targets vcuda"
        ):
            select(request, discover())
    with pytest.raises(TargetSelectionError, match="real CUDA device"):
        discover(2)
    assert names(select("gpu", discover())) == ["cuda:0"]


def test_an_unknown_target_is_still_named_as_unknown_when_virtual_targets_are_available(virtual_device):
    with pytest.raises(TargetSelectionError, match="unknown target 'vcuda:7'"):
        select("vcuda:7", discover())


USAGE = """
def test_nothing():
    pass
"""


@pytest.mark.parametrize("args", [["--targets", "vcuda:0"], ["--virtual-devices", "2"]])
def test_asking_for_virtual_targets_beside_a_real_gpu_is_a_usage_error(pytester, monkeypatch, args):
    monkeypatch.setattr(targets, "_real_targets", lambda: list(ONE_GPU))
    monkeypatch.setattr(targets, "isa_targets", list)
    pytester.makepyfile(USAGE)
    result = pytester.runpytest_inprocess(*args, "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*real CUDA device*CUDA_VISIBLE_DEVICES= python -m conformance run --targets vcuda*"])
