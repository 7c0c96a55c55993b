"""CPU instruction-set paths as targets: a kernel that differs on a lower ISA is found, on its side."""
from pathlib import Path

import pytest

from conformance.isa import lower_levels
from conformance.targets import IsaTarget, TargetSelectionError, discover, select

HERE = Path(__file__).parent
pytestmark = pytest.mark.skipif(not lower_levels(), reason="this cpu runs torch's lowest instruction-set level")

ISA_BUG = '''
import os
from planted_ops import *

def isa_dependent(image, params):
    """Right on the machine's best path; +0.01 where ATEN_CPU_CAPABILITY=default (a planted ISA-path bug)."""
    out = good_resize(image, params)
    return out + 0.01 if os.environ.get("ATEN_CPU_CAPABILITY") == "default" else out

test_isa = make_spec("isa_dependent", isa_dependent, dtypes=("float32",)).test()
'''


def test_lower_levels_are_targets_selected_by_isa():
    targets = discover(0)
    isa = [t for t in targets if isinstance(t, IsaTarget)]
    assert [t.name for t in isa] == [f"cpu:{level}" for level in lower_levels()]
    assert select("isa", targets) == isa
    assert "cpu:default" in [t.name for t in select("all", targets)]
    with pytest.raises(TargetSelectionError, match="'isa'"):
        select("cpu:nonsense", targets)


def test_a_bug_on_the_default_isa_path_fails_on_that_target_only(pytester):
    pytester.makepyfile(planted_ops=(HERE / "planted_ops.py").read_text(), test_cases=ISA_BUG)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=10",
                                           "--targets=cpu,cpu:default")
    failed = {line.split(" ", 2)[1] for line in result.stdout.lines if line.startswith("FAILED ")}
    assert failed == {"test_cases.py::test_isa[cpu:default-float32-bilinear-reference]",
                      "test_cases.py::test_isa[cpu:default-float32-bilinear-cross_device]"}
    assert "this target is off the reference, the cpu is not" in result.stdout.str()
    # only what a worker process can show is checked there
    ids = [line for line in result.stdout.lines if "cpu:default" in line and "::" in line]
    assert not any("placement" in line or "invariants" in line for line in ids)


def test_the_worker_really_runs_with_the_lower_level(tmp_path):
    from conformance.isa import worker

    answer = worker("default").call({"source": "", "op": "", "case": "{}", "timeout": 0, "sampled": None}, 0)
    assert answer.unavailable is None  # the handshake saw DEFAULT
    assert answer.error and "could not run the case" in answer.error  # a bad request is an error, not a crash
