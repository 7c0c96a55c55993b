"""An op's odd behaviour is a finding or a skip in a few lines of its own, never the harness's traceback (issue 46,
item 7): an output on the meta device, which holds no data."""

import pytest

from conformance.store.reader import read_outcomes

QUICK = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--sweep=none", "--max-examples=3"]
META = """
import numpy as np
import torch
from conformance import OpSpec, Rule, Tolerance

test_meta = OpSpec(
    name="meta_flip", call=lambda image, params: torch.flip(image, dims=[-1]).to("meta"),
    reference=lambda image, case: np.flip(image, axis=-1), dtypes=("float32",),
    tolerances=[Rule(Tolerance("float", atol=1e-6, reason="a flip is exact"))],
).test()
"""


@pytest.mark.usefixtures("virtual_device")
def test_an_output_on_the_meta_device_is_an_invariants_finding_in_a_few_lines(pytester):
    pytester.makepyfile(test_meta=META)
    result = pytester.runpytest_inprocess(*QUICK, "--targets=cpu,vcuda:1")
    out = result.stdout.str()
    # invariants and placement fail on each target; the value checks have nothing to compare and skip
    result.assert_outcomes(failed=4, passed=3, skipped=3)
    assert "NotImplementedError" not in out and "conformance/" not in out, out
    said = "invariants: returned a tensor on the meta device, which holds no data: expected its values on"
    assert out.count(said) == 2, out
    assert len(out.splitlines()) < 150, out
    rows, _ = read_outcomes(pytester.path / "reports" / "latest")
    causes = {(r["target"], r["check"], r.get("cause")) for r in rows if r.get("verdict") == "fail"}
    assert ("vcuda:1", "invariants", "no data") in causes and ("cpu", "invariants", "no data") in causes


OUT_OF_MEMORY = """
import numpy as np
import torch
from conformance import OpSpec, Rule, Tolerance

def out_of_memory(image, params):
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (planted)")

test_oom = OpSpec(
    name="oom", call=out_of_memory, reference=lambda image, case: image, dtypes=("float32",),
    tolerances=[Rule(Tolerance("float", atol=1e-6, reason="exact"))], {extra}
).test()
"""


def test_an_item_whose_every_case_ran_out_of_memory_checked_nothing_and_fails(pytester):
    pytester.makepyfile(test_oom=OUT_OF_MEMORY.format(extra=""))
    result = pytester.runpytest_inprocess(*QUICK, "--targets=cpu")
    result.assert_outcomes(failed=4)  # each check's item: none passes on nothing
    out = result.stdout.str()
    assert result.ret == 1 and "each of its 3 cases ran out of memory on cpu" in out, out
    assert "the reference check checked nothing" in out


def test_a_run_that_checked_nothing_at_all_does_not_pass(pytester):
    pytester.makepyfile(test_oom=OUT_OF_MEMORY.format(extra='precondition=lambda: "not on this machine",'))
    result = pytester.runpytest_inprocess(*QUICK, "--targets=cpu")
    result.assert_outcomes(skipped=4)
    assert result.ret == 1 and "conformance: nothing was checked" in result.stdout.str(), result.stdout.str()
