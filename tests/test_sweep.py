"""The device sweep: transforms discovered in a module, checked without a reference; each planted device bug
fails on the device for the right reason, the cpu and a correct transform pass."""

import re

import pytest

PLANTED = '''
import torch
from kornia.augmentation import IntensityAugmentationBase2D


class GoodFlip(torch.nn.Module):
    def forward(self, x):
        return x.flip(-1)


class NoiseOnCpu(torch.nn.Module):
    """Adds noise made without device=: on the cpu, whatever the input's device."""

    def forward(self, x):
        return x + 0.01 * torch.randn(x.shape)


class NotABuffer(torch.nn.Module):
    """Keeps its gains as a plain tensor attribute: Module.to() leaves it on the cpu."""

    def __init__(self):
        super().__init__()
        self.gain = torch.tensor([0.5, 1.0, 1.5]).view(3, 1, 1)

    def forward(self, x):
        return x * self.gain.to(x.device)


class MutatesInput(torch.nn.Module):
    def forward(self, x):
        return x.mul_(0.5)


class CpuGenerator(torch.nn.Module):
    """Draws its per-pixel mask with the global cpu generator whatever the device, then uploads it."""

    def forward(self, x):
        return torch.where(torch.rand(x.shape).to(x.device) < 0.5, x, 1 - x)


class _Gain(IntensityAugmentationBase2D):
    """A kornia augmentation with one gain per sample (kornia's interface: parameters drawn apart, replayable)."""

    def generate_parameters(self, batch_shape):
        return {"gain": torch.rand(batch_shape[0]) + 0.5}


class BatchBleeds(_Gain):
    """Subtracts a tenth of the batch's mean image: each sample's output depends on the others."""

    def apply_transform(self, input, params, flags, transform=None):
        return input - 0.1 * input.mean(0, keepdim=True)


class GoodGain(_Gain):
    def apply_transform(self, input, params, flags, transform=None):
        return input * params["gain"].to(input).view(-1, 1, 1, 1)


class FirstSampleGain(_Gain):
    """Applies the first sample's gain to the whole batch."""

    def apply_transform(self, input, params, flags, transform=None):
        return input * params["gain"][0].to(input)


class Compose(torch.nn.Module):
    def forward(self, x):
        return x


class DeviceBranch(torch.nn.Module):
    """Brightens on a GPU only: a transform without a reference whose devices disagree."""

    def forward(self, x):
        return x + 0.25 if x.is_cuda else x
'''
CASES = """
import os
from conformance.spec import sweep
from conformance.spec.handed import SWEEP_ENV
globals().update(sweep.tests(sweep.parse(os.environ.get(SWEEP_ENV, ""))))
"""
RUN = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--targets=cpu,vcuda:1", "--sweep=planted_transforms"]


@pytest.fixture
def project(pytester):
    pytester.makepyfile(planted_transforms=PLANTED, test_sweep_cases=CASES)
    pytester.syspathinsert()
    return pytester


def _failed(result) -> set[str]:
    return {line.split(" ", 2)[1].split("::")[1] for line in result.stdout.lines if line.startswith("FAILED ")}


def test_each_planted_device_bug_fails_on_the_device_for_its_reason(project):
    result = project.runpytest_inprocess(*RUN)
    failed = _failed(result)
    assert "test_sweep_planted_transforms_NoiseOnCpu[vcuda:1-float32-default-placement]" in failed
    assert "test_sweep_planted_transforms_NotABuffer[vcuda:1-float32-default-placement]" in failed
    assert "test_sweep_planted_transforms_CpuGenerator[vcuda:1-float32-default-placement]" in failed
    assert {
        f"test_sweep_planted_transforms_MutatesInput[{t}-float32-default-invariants]" for t in ("cpu", "vcuda:1")
    } <= failed
    for planted in ("BatchBleeds", "FirstSampleGain"):  # wrong on every device: the batch check fails on each
        assert {f"test_sweep_planted_transforms_{planted}[{t}-float32-default-batch]" for t in ("cpu", "vcuda:1")} <= {
            f for f in failed if planted in f
        }, failed
    assert "test_sweep_planted_transforms_FirstSampleGain[cpu-float32-p1-batch]" in failed
    # a transform without a reference that diverges between devices fails cross_device, saying which side is off
    # (it raised a LookupError for a reference tolerance before: AugMix on an H200)
    assert "test_sweep_planted_transforms_DeviceBranch[vcuda:1-float32-default-cross_device]" in failed
    assert not [f for f in failed if "Good" in f], failed
    on_cpu = {f.split("[")[0].rsplit("_", 1)[-1] for f in failed if "[cpu-" in f}
    assert on_cpu == {"MutatesInput", "BatchBleeds", "FirstSampleGain"}, failed
    assert not [f for f in failed if "-batch]" in f and "Bleeds" not in f and "FirstSample" not in f], failed
    out = result.stdout.str()
    assert "NotABuffer.gain (a plain tensor attribute on cpu" in out
    assert "image-sized data made on the host inside the call and uploaded" in out  # CpuGenerator's mask
    assert "Expected all tensors to be on the same device" in out  # NoiseOnCpu mixes devices
    assert "input mutated" in out
    assert re.search(r"sample (\d) of \d alone vs sample \1 in the batch", out)
    assert "no tolerance rule" not in out
    assert "sweep of planted_transforms: 11 classes found, 9 swept, 2 skipped (1 a container with no members" in out


def test_without_a_sweep_the_module_defines_no_tests(project):
    result = project.runpytest_inprocess(*RUN[:-1], "--sweep=none", "--collect-only", "-q")
    assert "no tests collected" in result.stdout.str() or "0 tests collected" in result.stdout.str()


def test_discovery_skips_with_reasons_and_parses_the_option():
    from conformance.spec import sweep

    assert sweep.parse("default, mypkg.t ,default") == [*sweep.DEFAULT_MODULES, "mypkg.t"]
    assert sweep.parse("") == []
    found = {d.name: d for d in sweep.discover("kornia.augmentation")}
    assert found["AugmentationSequential"].reason == ""  # swept with members of its own library
    assert found["VideoSequential"].reason.startswith("a container of video frames")
    assert found["RandomAffine3D"].reason.startswith("3-D")
    assert found["RandomGamma"].reason == "" and found["RandomGamma"].op == "sweep_kornia_RandomGamma"
