"""Cases are drawn once per op, dtype and mode and run on every target; workers keep a variant together."""

import json
from collections import defaultdict
from pathlib import Path

from conformance.store.reader import read_outcomes

PLANTED = Path(__file__).with_name("planted_ops.py").read_text()
CASES = '''
from planted_ops import *

def wide_inputs_break_on_cuda_1(image, params):
    """Right everywhere except on cuda:1, for inputs wider than 10 pixels."""
    out = good_resize(image, params)
    return out + 1 if image.device.type == "cuda" and image.device.index == 1 and image.shape[-1] > 10 else out

def one_case_breaks_on_cuda_1(image, params):
    """Right everywhere except on cuda:1, for the images whose first pixel is $PLANTED_VALUE (one recipe seed)."""
    import os

    out = good_resize(image, params)
    wanted = os.environ.get("PLANTED_VALUE")
    on_one = image.device.type == "cuda" and image.device.index == 1
    first = float(image.reshape(-1)[0]) if image.numel() else None
    return out + 1 if on_one and wanted and first is not None and abs(first - float(wanted)) < 1e-6 else out

test_good = make_spec("good", good_resize).test()
test_device_bug = make_spec("device_bug", wide_inputs_break_on_cuda_1, dtypes=("float32",)).test()
test_one_case = make_spec("one_case", one_case_breaks_on_cuda_1, dtypes=("float32",)).test()
'''


def _project(pytester):
    pytester.makepyfile(planted_ops=PLANTED, test_cases=CASES)
    return pytester


def _records(pytester):
    rows, _ = read_outcomes(pytester.path / "reports" / "latest")
    return [r for r in rows if r.get("kind") == "outcome"]


def _cases_by_item(records, phases=("explore",), check="placement"):
    cases = defaultdict(list)
    for record in records:
        if record.get("phase") in phases and record.get("check") == check:
            cases[record["nodeid"]].append(json.dumps(record["case"], sort_keys=True))
    return cases


def test_every_target_runs_the_cases_hypothesis_drew_once_even_in_a_random_profile(pytester):
    result = _project(pytester).runpytest_inprocess(
        "-p",
        "no:cacheprovider",
        "--hypothesis-profile=dev",
        "--max-examples=12",
        "--targets=cpu,vcuda:0,vcuda:1",
        "-k",
        "good",
        "--hypothesis-seed=7",
    )
    result.assert_outcomes(passed=32)  # per dtype: 4 checks on the cpu, 6 on each vcuda target
    cases = _cases_by_item(_records(pytester))
    for dtype in ("uint8", "float32"):
        drawn = [
            cases[f"test_cases.py::test_good[{t}-{dtype}-bilinear-placement]"] for t in ("cpu", "vcuda:0", "vcuda:1")
        ]
        assert len(drawn[0]) >= 10 and drawn[0] == drawn[1] == drawn[2]
        assert len(set(drawn[0])) == len(drawn[0])  # a case hypothesis happens to draw twice is checked once


def test_a_planned_case_that_fails_on_one_target_is_found_again_and_shrunk(pytester):
    result = _project(pytester).runpytest_inprocess(
        "-p",
        "no:cacheprovider",
        "--hypothesis-profile=ci",
        "--max-examples=30",
        "--targets=cpu,vcuda:1",
        "-k",
        "device_bug",
    )
    result.assert_outcomes(passed=8, failed=2)  # vcuda:1's reference and cross_device items
    out = result.stdout.str()
    assert "device_bug on vcuda:1 (virtual) [float32, bilinear]: reference failed" in out
    assert "device_bug on vcuda:1 (virtual) [float32, bilinear]: cross_device failed (values, target diverges)" in out
    shrunk = next(line for line in result.stdout.lines if " case: {" in line)
    assert json.loads(shrunk.split("case: ", 1)[1])["recipe"]["width"] == 11  # the smallest failing width
    records = _records(pytester)
    counted = _cases_by_item(records, ("explore", "final"), check="reference")
    cpu, device = (
        counted["test_cases.py::test_device_bug[cpu-float32-bilinear-reference]"],
        counted["test_cases.py::test_device_bug[vcuda:1-float32-bilinear-reference]"],
    )
    # the cpu's cases up to the first one wider than 10 pixels, then hypothesis' minimal example;
    # its rerun of the cases before it is not counted again
    first_wide = next(i for i, case in enumerate(cpu) if json.loads(case)["recipe"]["width"] > 10)
    assert device[:-1] == cpu[: first_wide + 1] and json.loads(device[-1])["recipe"]["width"] == 11


# The dev profile draws each item with a seed of its own; here the seeds are fixed per target, so that the cpu draws
# the same cases in both runs, and vcuda:1's own hypothesis run draws others.
SEED_PER_TARGET = """
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    item.obj._hypothesis_internal_use_seed = 1 if "[cpu-" in item.nodeid else 2
"""


def test_a_planned_case_that_another_draw_would_not_reach_is_still_shrunk(pytester, monkeypatch):
    """The failing case is one the cpu's draw happened to make, which vcuda:1's own hypothesis run (another seed, as
    in the dev profile) does not draw: it is handed to hypothesis as its starting example and shrunk to the smallest
    image of its recipe seed (the first pixel of a noise image is its seed's, whatever the size)."""
    import numpy as np

    from conformance.spec.recipes import Recipe, materialize

    project = _project(pytester)
    project.makeconftest(SEED_PER_TARGET)
    args = ["-p", "no:cacheprovider", "--hypothesis-profile=dev", "--max-examples=30", "--targets=cpu,vcuda:1"]
    project.runpytest_inprocess(*args, "-k", "one_case").assert_outcomes(passed=10)  # nothing planted yet
    drawn = _cases_by_item(_records(project), check="reference")
    cases = [json.loads(c) for c in drawn["test_cases.py::test_one_case[cpu-float32-bilinear-reference]"]]
    big = [c for c in cases if c["recipe"]["width"] * c["recipe"]["height"] > 4]
    recipe = Recipe.from_dict(big[len(big) // 2]["recipe"])
    monkeypatch.setenv("PLANTED_VALUE", repr(float(np.float32(materialize(recipe).reshape(-1)[0]))))
    result = project.runpytest_inprocess(*args, "-k", "one_case")
    result.assert_outcomes(passed=8, failed=2)
    assert "not shrunk" not in result.stdout.str()
    shrunk = [json.loads(line.split("case: ", 1)[1]) for line in result.stdout.lines if " case: {" in line]
    assert shrunk and all(c["recipe"]["seed"] == recipe.seed for c in shrunk)
    assert all(c["recipe"]["width"] * c["recipe"]["height"] < recipe.width * recipe.height for c in shrunk), shrunk


def test_workers_keep_a_variant_together_by_default_or_a_target_together_when_asked(pytester):
    project = _project(pytester)
    common = [
        "-p",
        "no:cacheprovider",
        "--hypothesis-profile=ci",
        "--max-examples=3",
        "--targets=cpu,vcuda:1",
        "-k",
        "good",
        "-n",
        "2",
    ]
    project.runpytest_subprocess(*common).assert_outcomes(passed=20)  # no --dist: the plugin's grouping applies
    worker_of = {r["nodeid"]: r["worker"] for r in _records(project)}
    for dtype in ("uint8", "float32"):
        assert len({worker for nodeid, worker in worker_of.items() if f"-{dtype}-" in nodeid}) == 1
    project.runpytest_subprocess(*common, "--group-by=target").assert_outcomes(passed=20)
    targets_by_worker = defaultdict(set)
    for record in _records(project):
        targets_by_worker[record["worker"]].add(record["target"])
    assert sorted(map(len, targets_by_worker.values())) == [1, 1]


def test_cases_from_an_earlier_run_are_checked_again_exactly_and_nothing_is_drawn(pytester):
    project = _project(pytester)
    quick = ["-p", "no:cacheprovider", "--max-examples=8", "--targets=cpu,vcuda:1", "-k", "good"]
    project.runpytest_inprocess(*quick, "--hypothesis-profile=ci", "--run-name=first").assert_outcomes(passed=20)
    first = _cases_by_item(read_outcomes(project.path / "reports" / "first")[0])
    # a random profile would draw other cases: the saved ones are run instead, on every target
    again = project.runpytest_inprocess(
        *quick, "--hypothesis-profile=dev", "--run-name=again", "--cases-from=reports/first", "-k", "good or device_bug"
    )
    again.assert_outcomes(passed=20, skipped=10)  # device_bug (every check, both targets) has no saved cases
    skips = [
        r["message"] for r in read_outcomes(project.path / "reports" / "again")[0] if r.get("verdict") == "skipped"
    ]
    assert skips == ["--cases-from reports/first has no cases for this item"] * 10
    assert _cases_by_item(read_outcomes(project.path / "reports" / "again")[0]) == first


def test_a_bad_cases_source_is_a_one_line_usage_error(pytester):
    project = _project(pytester)
    outcomes = project.path / "old" / "outcomes"
    outcomes.mkdir(parents=True)
    (outcomes / "main.jsonl").write_text('{"kind": "case", "id": 0, "case": {}}\n')  # an older store's
    (project.path / "run" / "examples").mkdir(parents=True)
    (project.path / "run" / "examples" / "main.parquet").write_text("not parquet")
    (project.path / "empty").mkdir()
    for args, message in [
        (["--cases-from=nowhere"], "no such run folder: 'nowhere'"),
        (["--cases-from=empty"], "holds no examples/ table (not a run folder, or a run that checked nothing)"),
        (["--cases-from=old"], "written by an older conformance (store format 1"),
        (["--cases-from=run"], "main.parquet: not a readable Parquet file"),
        (["--cases-from=run", "--replay", '{"op": "good", "recipe": {"height": 2, "width": 2}}'], "cannot be combined"),
    ]:
        result = project.runpytest_inprocess("-p", "no:cacheprovider", *args)
        assert result.ret == 4, args
        assert message in result.stderr.str() and "Traceback" not in result.stderr.str(), args


def test_the_harness_own_numbers_never_feed_the_drawn_cases(tmp_path):
    """Hypothesis mixes literals of local modules into its draws; the harness's modules are local in a source
    checkout and not when installed, so the ci profile's cases would depend on the install and on harness edits."""
    from hypothesis.internal.conjecture import providers

    import conformance.engine.session as harness_module
    from conformance.engine.case_sources import keep_harness_constants_out

    keep_harness_constants_out()
    assert not providers.is_local_module_file(harness_module.__file__)
    users = tmp_path / "my_ops.py"
    users.write_text("SIZE = 17\n")
    assert providers.is_local_module_file(str(users))  # a user's own module still feeds it
