"""One sample's share of a batch's sampled parameters (conformance.spec.sampled), found by probing the sampler
with more samples: per-sample rows, shared leaves, the input's shape, positions, blocks per sample, and
parameters drawn only for the applied samples."""

from typing import NamedTuple

import pytest
import torch

from conformance.spec.sampled import NotSliceable, named_leaves, per_sample, probe_size


class Item(NamedTuple):  # the shape of kornia's ParamItem
    name: str
    data: dict


def _params(batch: int) -> dict:
    return {
        "angle": torch.arange(batch, dtype=torch.float32) * 10 + 1,
        "order": torch.tensor([3, 1, 0, 2]),  # shared, whatever the batch
        "batch_idx": torch.arange(batch).view(-1, 1),  # positions in the batch
        "batch_prob": torch.ones(batch),
        "forward_input_shape": torch.tensor([batch, 3, 8, 8]),
    }


def test_a_dict_is_sliced_per_sample_and_shared_leaves_stay():
    one = per_sample(_params(3), _params(probe_size(3)), 2, 3)
    assert one["angle"].tolist() == [21.0]
    assert one["order"].tolist() == [3, 1, 0, 2]  # 4 rows, like a batch of 4 would have: the probe tells
    assert one["batch_idx"].tolist() == [[0]]
    assert one["forward_input_shape"].tolist() == [1, 3, 8, 8]


def test_a_container_list_of_named_items_keeps_its_types():
    batch, probe = (
        [Item("a", _params(2)), Item("b", {"gain": torch.tensor([0.5, 0.75])})],
        [Item("a", _params(probe_size(2))), Item("b", {"gain": torch.linspace(0.5, 0.9, probe_size(2))})],
    )
    one = per_sample(batch, probe, 1, 2)
    assert isinstance(one[1], Item) and one[1].name == "b" and one[1].data["gain"].tolist() == [0.75]
    assert set(named_leaves(one)) >= {"0.name", "0.data.angle", "1.data.gain"}


def test_blocks_of_rows_per_sample_and_patch_indices():
    batch = {"gain": torch.arange(8.0), "indices": list(range(8)), "forward_input_shape": torch.tensor([8, 3, 4, 4])}
    rows = 4 * probe_size(2)  # four patches a sample
    probe = {
        "gain": torch.arange(float(rows)),
        "indices": list(range(rows)),
        "forward_input_shape": torch.tensor([rows, 3, 4, 4]),
    }
    one = per_sample(batch, probe, 1, 2)
    assert one["gain"].tolist() == [4.0, 5.0, 6.0, 7.0]
    assert one["indices"] == [0, 1, 2, 3]
    assert one["forward_input_shape"].tolist() == [4, 3, 4, 4]


def test_parameters_drawn_for_the_applied_samples_only():
    batch = {"batch_prob": torch.tensor([1.0, 0.0, 1.0]), "angle": torch.tensor([5.0, 7.0])}
    probe = {"batch_prob": torch.tensor([1.0, 1.0, 0.0, 1.0] + [0.0] * 7), "angle": torch.tensor([5.0, 6.0, 7.0])}
    assert per_sample(batch, probe, 2, 3)["angle"].tolist() == [7.0]
    assert per_sample(batch, probe, 1, 3)["angle"].numel() == 0
    probe = {
        "batch_prob": torch.tensor([1.0, 0.0, 0.0, 1.0] + [0.0] * 7),
        "angle": torch.tensor([5.0, 6.0]),
    }  # as many applied
    assert per_sample(batch, probe, 2, 3)["angle"].tolist() == [7.0]


def test_a_structure_that_changes_with_the_batch_cannot_be_sliced():
    with pytest.raises(NotSliceable):
        per_sample([Item("a", {})], [Item("a", {}), Item("b", {})], 0, 2)


def test_a_random_index_that_happens_to_number_the_rows_is_still_sliced_by_position():
    """RandomChannelDropout drew channel_idx [[0], [1]] for two samples (seed 97): it looks like batch_idx.  The
    batch check's probe has eight samples more, where a random channel index hardly numbers every row."""
    drawn = {"batch_idx": torch.tensor([[0], [1]]), "channel_idx": torch.tensor([[0], [1]])}
    probe = {"batch_idx": torch.arange(10).view(-1, 1), "channel_idx": torch.tensor([[0], [1], [2], [0], [2]] * 2)}
    one = per_sample(drawn, probe, 1, 2)
    assert one["batch_idx"].tolist() == [[0]]  # renumbered: alone, the sample is row 0
    assert one["channel_idx"].tolist() == [[1]]  # the second sample's channel, not the first's


def test_the_batch_check_passes_random_channel_dropout_on_the_draw_that_fooled_a_probe_one_larger():
    """Seed 97, two samples: RandomChannelDropout's channel_idx [[0], [1]] (and [[0], [1], [2]] for three) looked
    like row numbers, so the second sample ran alone with the first one's channel and the check failed."""
    from conformance.devices.targets import CPU
    from conformance.engine.cases import CaseCache
    from conformance.spec import sweep
    from conformance.spec.recipes import Case, Recipe

    found = next(f for f in sweep.discover("kornia.augmentation") if f.name == "RandomChannelDropout")
    spec = sweep.spec_of(found)
    recipe = Recipe(height=32, width=32, channels=3, batch=(2,), dtype="float32", content="constant", seed=97)
    cache = CaseCache()
    outcome = cache.outcome(cache.context(spec, Case(spec.name, recipe, {"p": 1.0}), CPU, "p1"), "batch")
    assert outcome is not None and outcome.passed, outcome


def test_replayed_parameters_go_to_the_device_outside_the_watched_call():
    """On a real GPU, kornia's cpu-drawn noise replayed on the device was logged as the transform's own
    image-sized host data (20 sweep items on an H200).  The meta device stands in for a real one: the placement
    log sees a copy to it, which a virtual device's copy never shows."""
    from conformance import OpSpec, Rule, Tolerance
    from conformance.devices.calls import run_op
    from conformance.devices.targets import Target
    from conformance.spec.opspec import ModuleOp
    from conformance.spec.recipes import Case, Recipe, materialize

    spec = OpSpec(
        name="add_noise",
        module=ModuleOp(
            build=lambda params: torch.nn.Identity(),
            forward=lambda module, image, params, sampled: image + sampled["noise"],
            sample=lambda module, image, params: {"noise": torch.rand(image.shape)},
        ),
        reference=None,
        dtypes=("float32",),
        modes=("default",),
        params=lambda recipe, mode: None,
        tolerances=[Rule(Tolerance("any", reason="test"))],
    )
    recipe = Recipe(
        batch=(1,), channels=3, height=16, width=16, dtype="float32", layout="contiguous", content="noise", seed=0
    )
    meta = Target("meta", "meta")
    sampled = {"noise": torch.rand(1, 3, 16, 16)}
    run = run_op(spec, meta.put(materialize(recipe)), Case("add_noise", recipe, {}), meta, sampled)
    assert run.error is None, run.error
    assert run.output.device.type == "meta"
    assert run.log is not None and run.log.transfers == [], run.log.transfers
