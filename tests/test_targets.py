"""Target selection: every spelling resolves against what exists, or fails naming what does."""
import pytest
import torch

from conformance.targets import CPU, Target, TargetSelectionError, discover, select

GPU_BOX = [CPU, Target("cuda:0", "cuda", "H100"), Target("cuda:1", "cuda", "H100"), Target("mps", "mps")]


def names(targets):
    return [t.name for t in targets]


def test_discover_lists_cpu_first_and_every_visible_cuda_device():
    found = discover()
    assert found[0] == CPU
    assert names(found).count("cpu") == 1
    assert sum(t.kind == "cuda" for t in found) == (torch.cuda.device_count() if torch.cuda.is_available() else 0)


@pytest.mark.parametrize("text, expected", [
    ("all", ["cpu", "cuda:0", "cuda:1", "mps"]),
    ("gpu", ["cuda:0", "cuda:1", "mps"]),
    ("cuda", ["cuda:0", "cuda:1"]),
    ("cuda:1,cpu", ["cpu", "cuda:1"]),
    (" cpu , cpu ", ["cpu"]),
])
def test_selection_spellings(text, expected):
    assert names(select(text, GPU_BOX)) == expected


@pytest.mark.parametrize("text, message", [
    ("cuda:3", "unknown target 'cuda:3' (available: cpu, cuda:0, cuda:1, mps; or 'all', 'gpu')"),
    ("cpu,", "empty entry"),
    ("", "empty entry"),
])
def test_bad_selections_name_what_exists(text, message):
    with pytest.raises(TargetSelectionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        select(text, GPU_BOX)


def test_gpu_on_a_cpu_only_machine_is_an_error_not_an_empty_run():
    with pytest.raises(TargetSelectionError, match="no accelerator is visible"):
        select("gpu", [CPU])
