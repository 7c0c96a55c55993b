"""What a failing run prints (issue 13, items 6 and 9): the finding, not the harness.

A failure shows its message (check, metric, case, rerun line) without the harness's own source
frames; a worker that dies records the case it was checking and a line that reruns it.
"""

import json
from pathlib import Path

import pytest

from conformance.store.reader import read_outcomes

PLANTED = Path(__file__).with_name("planted_ops.py").read_text()
QUICK = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=10", "--targets=cpu"]

ABORTING = """
import os
from planted_ops import *

def aborting_resize(image, params):
    if image.shape[-1] >= 5:
        os.abort()  # a segfault's stand-in: the worker process dies in the op
    return good_resize(image, params)

test_aborting = make_spec("aborting", aborting_resize, dtypes=("uint8",)).test()
"""


@pytest.fixture
def project(pytester):
    pytester.makepyfile(planted_ops=PLANTED)
    return pytester


def test_a_failure_shows_its_message_without_the_harness_source(project):
    project.makepyfile(
        test_cases="from planted_ops import *\n"
        "test_shifted = make_spec('shifted', shifted_resize, dtypes=('uint8',)).test()\n"
    )
    result = project.runpytest_inprocess(*QUICK, "-k", "reference")
    assert result.ret == 1
    out = result.stdout.str()
    assert "shifted on cpu [uint8, bilinear]: reference failed (values)" in out
    assert "Rerun: python -m conformance run" in out
    # none of the harness's frames: its source, its locals, its file names
    assert "def check(self" not in out and "conformance/engine/session.py" not in out and "state.settled" not in out
    section = out.split("= FAILURES =")[1].split("short test summary")[0]
    assert len(section.splitlines()) < 40, section


def test_a_worker_that_dies_records_the_case_and_a_rerun_line(project):
    project.makepyfile(test_cases=ABORTING)
    result = project.runpytest_subprocess(*QUICK, "-n", "2", "-k", "reference")
    assert result.ret == 1
    records, _ = read_outcomes(project.path / "reports" / "latest")
    crashes = [r for r in records if r.get("crash")]
    assert crashes, records
    crash = crashes[0]
    assert crash.get("case_json"), crash
    case = json.loads(crash["case_json"])
    assert case["op"] == "aborting" and case["recipe"]["width"] >= 5
    assert crash["repro"].startswith("python -m conformance run ") and "--replay" in crash["repro"]
    assert "Rerun: " in crash["message"]
