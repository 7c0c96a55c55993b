"""Target selection: every spelling resolves against what exists, or fails naming what does."""

import pytest
import torch

from conformance.devices.discovery import discover, select
from conformance.devices.targets import CPU, Target, TargetSelectionError
from conformance.devices.virtual_target import virtual_targets

GPU_BOX = [CPU, Target("cuda:0", "cuda", "H100"), Target("cuda:1", "cuda", "H100"), Target("mps", "mps")]


def names(targets):
    return [t.name for t in targets]


def test_discover_lists_cpu_first_and_every_visible_cuda_device():
    found = discover()
    assert found[0] == CPU
    assert names(found).count("cpu") == 1
    assert sum(t.kind == "cuda" for t in found) == (torch.cuda.device_count() if torch.cuda.is_available() else 0)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("all", ["cpu", "cuda:0", "cuda:1", "mps"]),
        ("gpu", ["cuda:0", "cuda:1", "mps"]),
        ("cuda", ["cuda:0", "cuda:1"]),
        ("cuda:1,cpu", ["cpu", "cuda:1"]),
        (" cpu , cpu ", ["cpu"]),
    ],
)
def test_selection_spellings(text, expected):
    assert names(select(text, GPU_BOX)) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "cuda:3",
            "unknown target 'cuda:3' (available: cpu, cuda:0, cuda:1, mps; "
            "or 'default', 'all', 'gpu', 'vcuda', 'isa', 'compile')",
        ),
        ("cpu,", "empty entry"),
        ("", "empty entry"),
    ],
)
def test_bad_selections_name_what_exists(text, message):
    with pytest.raises(TargetSelectionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        select(text, GPU_BOX)


def test_gpu_on_a_cpu_only_machine_is_an_error_not_an_empty_run():
    with pytest.raises(TargetSelectionError, match="no real accelerator is visible"):
        select("gpu", [CPU])
    with pytest.raises(TargetSelectionError, match="virtual ones are selected by 'vcuda'"):
        select("gpu", [CPU, *virtual_targets(2)])


def test_virtual_targets_come_by_default_when_fewer_than_two_real_accelerators_exist(virtual_device):
    real = [t for t in discover(0) if not t.virtual and not t.compiled]
    expected = 2 if sum(t.is_accelerator for t in real) < 2 else 0
    found = [t for t in discover() if not t.compiled]
    assert names(found) == names(real) + [f"vcuda:{i}" for i in range(expected)]
    assert all(t.virtual and t.kind == "vcuda" and "virtual" in t.description for t in found[len(real) :])
    assert names([t for t in discover(3) if not t.compiled])[-3:] == ["vcuda:0", "vcuda:1", "vcuda:2"]
    compiled = [t for t in discover() if t.compiled]  # one per real device, never a virtual or ISA one
    everything = names(discover())
    assert everything[len(everything) - expected :] == [f"vcuda:{i}" for i in range(expected)]  # virtual ones last
    assert names(compiled) == [f"{t.name}+compile" for t in real if t.kind != "cpu" or t.name == "cpu"]


def test_virtual_targets_report_a_cuda_device_and_are_selected_by_vcuda_or_all():
    box = [CPU, *virtual_targets(2)]
    assert box[2].device == torch.device("cuda:1") and box[2].to_dict()["virtual"] is True
    assert names(select("vcuda", box)) == ["vcuda:0", "vcuda:1"]
    assert names(select("all", box)) == ["cpu", "vcuda:0", "vcuda:1"]
    assert names(select("cpu,vcuda:1", box)) == ["cpu", "vcuda:1"]
