"""Each planted bug is caught by the check that owns it; the correct op passes every check."""

import numpy as np
import pytest
from planted_ops import (
    crashing_resize,
    float_resize,
    good_resize,
    make_spec,
    mutating_resize,
    shifted_resize,
    sprinkled_resize,
)

from conformance.devices.targets import CPU
from conformance.devices.virtual_target import virtual_targets
from conformance.engine.cases import CaseCache, check_case
from conformance.spec.recipes import Case, Recipe


def run(call, dtype="uint8", layout="contiguous", size=(11, 30)):
    spec = make_spec("planted", call)
    recipe = Recipe(height=17, width=23, channels=3, batch=(2,), dtype=dtype, layout=layout, content="noise", seed=1)
    result = check_case(spec, Case("planted", recipe, {"size": list(size)}), CPU, CaseCache(), "bilinear")
    return {o.check: o for o in result.outcomes}, result


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "strided"])
def test_correct_op_passes_every_check(dtype, layout):
    outcomes, result = run(good_resize, dtype, layout)
    assert set(outcomes) == {"error", "placement", "invariants", "reference"}
    assert not result.failures, [o.message for o in result.failures]


def test_pixel_shift_fails_the_reference_check():
    outcomes, _ = run(shifted_resize)
    assert outcomes["invariants"].passed
    reference = outcomes["reference"]
    assert not reference.passed and reference.metrics.max_abs > 1
    assert "vs reference" in reference.message and "worst at" in reference.message and "'uint8'" in reference.message


def test_plus_two_in_one_percent_of_pixels_fails_the_reference_check():
    outcomes, _ = run(sprinkled_resize)
    reference = outcomes["reference"]
    assert not reference.passed
    assert 2 <= reference.metrics.max_abs <= 3  # +2 on top of at most one rounding step
    assert reference.metrics.mismatch_fraction == pytest.approx(0.01, abs=0.003)
    assert "differ by more than atol=1" in reference.message


def test_float_output_for_uint8_input_fails_the_dtype_invariant():
    outcomes, _ = run(float_resize)
    assert not outcomes["invariants"].passed
    assert "dtype: returned torch.float32, expected torch.uint8" in outcomes["invariants"].message
    assert outcomes["reference"].passed  # the values are fine: only the right check fires


def test_input_mutation_fails_the_invariants_check():
    outcomes, _ = run(mutating_resize, "float32")
    assert (
        "input mutated: " in outcomes["invariants"].message
        and "first at [0, 0, 0, 0]" in outcomes["invariants"].message
    )
    assert outcomes["reference"].passed


def test_a_crash_is_an_error_outcome_with_its_traceback():
    outcomes, _ = run(crashing_resize)
    assert set(outcomes) == {"error"}
    assert outcomes["error"].message.startswith("RuntimeError: planted crash (raised at ")
    assert "planted_ops.py" in outcomes["error"].traceback


def test_uint8_outputs_are_compared_without_wraparound():
    """An output one level below the reference near 0 must read as 1, never 255."""

    def one_below(image, params):
        out = good_resize(image, params)
        return out - (out > 0).to(out.dtype)

    outcomes, _ = run(one_below, size=(17, 23))  # same size: output == input - 1 where > 0
    assert outcomes["reference"].passed and outcomes["reference"].metrics.max_abs == 1


VCUDA1 = virtual_targets(2)[1]


def branching_resize(image, params):
    """A device-dependent Python branch: +3 on CUDA."""
    out = good_resize(image, params)
    return out + 3 if image.is_cuda else out


def crashes_on_cpu_only(image, params):
    if not image.is_cuda:
        raise ValueError("cpu path broken")
    return good_resize(image, params)


def run_on(target, call, dtype="float32"):
    spec = make_spec("planted", call)
    recipe = Recipe(height=9, width=8, channels=3, dtype=dtype, content="noise", seed=2)
    result = check_case(spec, Case("planted", recipe, {"size": [5, 6]}), target, CaseCache(), "bilinear")
    return {o.check: o for o in result.outcomes}


def test_accelerators_are_compared_with_the_cpu_output():
    clean = run_on(VCUDA1, good_resize)
    assert clean["cross_device"].passed and clean["cross_device"].metrics.max_abs == 0
    assert "cross_device" not in run_on(CPU, good_resize)  # the cpu is the baseline, not compared to itself


def test_a_device_dependent_branch_fails_the_cross_device_check():
    outcomes = run_on(VCUDA1, branching_resize)
    cross = outcomes["cross_device"]
    assert not cross.passed and cross.metrics.max_abs == pytest.approx(3)
    assert "vs cpu" in cross.message and "got" in cross.message


def test_an_op_that_only_fails_on_the_cpu_is_the_cpus_failure_not_the_accelerators():
    cross = run_on(VCUDA1, crashes_on_cpu_only)["cross_device"]
    assert cross.passed and cross.diverges == "cpu"  # vcuda:1 matches the reference: the cpu diverges
    assert cross.message.startswith("cpu raised ValueError: cpu path broken")
    assert "the divergence is the cpu's" in cross.message
    assert not run_on(CPU, crashes_on_cpu_only)["error"].passed  # the cpu's cell carries it


def test_a_cross_device_failure_says_which_side_is_off_the_reference():
    cross = run_on(VCUDA1, branching_resize)["cross_device"]
    assert not cross.passed and cross.diverges == "vcuda:1"
    assert "this target is off the reference, the cpu is not" in cross.message

    def off_everywhere(image, params):  # +3 on the cpu, +6 on cuda: both off, and apart
        return good_resize(image, params) + (6 if image.is_cuda else 3)

    assert run_on(VCUDA1, off_everywhere)["cross_device"].diverges == "both"


def test_the_baseline_cache_counts_cached_outputs_against_its_byte_budget():
    from conformance.devices.runs import OpRun

    cache = CaseCache(max_bytes=3 * 8 * 1000)
    for n in range(10):
        cache.put(("op", str(n), "cpu"), OpRun(output=np.zeros(1000)))  # 8,000 bytes each
    assert len(cache._entries) == 3 and cache._bytes == 24_000 and cache.refused == 7
    cache.put(("op", "2", "cpu"), OpRun(output=np.zeros(10)))  # replacing an entry frees its bytes
    assert cache._bytes == 16_080


def test_a_group_larger_than_the_cache_still_hits_what_it_holds_on_every_pass():
    """Items read a group's cases in the same order each time: a cache that evicted its oldest entry
    would miss on every pass once the group outgrew it."""
    from conformance.devices.runs import OpRun

    cache = CaseCache(max_bytes=4 * 8 * 1000)
    cache.begin_group(("m", "op", "float32", "bilinear"))
    computed: list[int] = []

    def run(n: int) -> OpRun:
        computed.append(n)
        return OpRun(output=np.zeros(1000))

    for _ in range(3):  # three items, each over the same ten cases
        for n in range(10):
            cache._get(("op", str(n), "cpu"), lambda n=n: run(n))
    assert len(computed) == 10 + 2 * 6  # the first four are held after the first pass
    cache.begin_group(("m", "op", "float64", "bilinear"))
    assert not cache._entries and cache._bytes == 0
