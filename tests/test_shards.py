"""--shard K/N splits a run by variant group, the same on every machine, and `merge` joins the shards into one
column whose summary equals the unsharded run's, item by item and in totals (issue 39, item 5)."""

import random
import runpy
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from synthetic_runs import write_run

from conformance.engine import shards
from conformance.engine.ordering import variant_group
from conformance.report.merge import merge_runs
from conformance.report.merge_columns import MergeError
from conformance.store.summary_reader import read_summary

REPO = Path(__file__).resolve().parents[1]
# One operation (normalize: four implementations sharing drawn cases), derandomised, on a real and a virtual target.
SELECTION = [
    "cases/test_normalize.py",
    "-q",
    "-p",
    "no:cacheprovider",
    "--hypothesis-profile=ci",
    "--max-examples=4",
    "--targets=cpu,vcuda:1",
]


def run(reports: Path, name: str, *extra: str) -> dict:
    command = [sys.executable, "-m", "pytest", *SELECTION, "--reports-dir", str(reports), "--run-name", name, *extra]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert (reports / name / "summary.json").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    return read_summary(reports / name)


def items(summary: dict) -> dict[tuple, tuple]:
    """Each item's verdict and counts, keyed by what names the item (its test, op, target, dtype, mode, check)."""
    return {
        (g["test"], g["op"], g["target"], g["dtype"], g["mode"], g["check"]): (g["verdict"], g["counts"])
        for g in summary["groups"]
    }


def units() -> dict[str, str]:
    """Test -> whose drawn cases its items check: its operation's, or its own (an implementation with recipes of
    its own), as the engine groups them (conformance.engine.ordering.variant_group)."""
    found = runpy.run_path(str(REPO / SELECTION[0]))
    specs = {name: test.conformance_spec for name, test in found.items() if hasattr(test, "conformance_spec")}
    assert len({variant_group("m", name, "", "", spec)[1] for name, spec in specs.items()}) < len(specs)  # some share
    return {name: variant_group("m", name, "", "", spec)[1] for name, spec in specs.items()}


def merge(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "conformance", "merge", *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )


@pytest.mark.usefixtures("virtual_device")
def test_three_shards_merged_equal_the_unsharded_run(tmp_path):
    whole = run(tmp_path, "whole", "-n", "0")
    parts = [
        run(tmp_path, "s1", "--shard=1/3", "-n", "0"),
        run(tmp_path, "s2", "--shard", "2/3", "-n", "2"),  # under pytest-xdist, each worker takes the same part
        run(tmp_path, "s3", "--shard=3/3", "-n", "0"),
    ]
    # disjoint, and together every item
    keys = [set(items(part)) for part in parts]
    assert all(keys) and sum(map(len, keys)) == len(set().union(*keys)) == len(items(whole))
    assert set().union(*keys) == set(items(whole))
    # a variant group (the implementations that check one draw, a dtype and a mode: every target) is in one shard
    unit = units()
    variants = [{(unit[test], dtype, mode) for test, _, _, dtype, mode, _ in found} for found in keys]
    assert sum(map(len, variants)) == len(set().union(*variants))
    records = [shards.read_record(tmp_path / name) for name in ("s1", "s2", "s3")]
    assert [r.index for r in records] == [1, 2, 3] and len({r.plan for r in records}) == 1
    assert [r.items for r in records] == [len(k) for k in keys] and {r.of_items for r in records} == {len(items(whole))}

    done = merge(*(str(tmp_path / name) for name in ("s3", "s1", "s2")), "-o", str(tmp_path / "merged"))
    assert done.returncode == 0, done.stderr
    assert "3 of 3 shards merged into one column" in done.stdout
    merged = read_summary(tmp_path / "merged")
    assert items(merged) == items(whole)
    assert merged["totals"] == whole["totals"] and merged["complete"] is True
    assert len(merged["machines"]) == 1 and {g["machine"] for g in merged["groups"]} == set(merged["machines"])
    assert [p["shard"] for p in merged["shards"][merged["machines"][0]]["parts"]] == [1, 2, 3]
    assert (tmp_path / "merged" / "index.html").is_file()

    # a missing shard is an error naming it; allowed, the merged summary says so and is marked incomplete
    done = merge(str(tmp_path / "s1"), str(tmp_path / "s3"), "-o", str(tmp_path / "partial"))
    assert done.returncode == 4 and "shard(s) 2/3 of the run sharded in" in done.stderr
    assert not (tmp_path / "partial").exists()
    done = merge(str(tmp_path / "s1"), str(tmp_path / "s3"), "-o", str(tmp_path / "partial"), "--allow-missing-shards")
    assert done.returncode == 0 and "shard(s) 2/3 missing" in done.stdout
    partial = read_summary(tmp_path / "partial")
    assert partial["complete"] is False and next(iter(partial["shards"].values()))["missing"] == [2]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("x", "--shard: expected K/N (part K of N, e.g. 2/3), got 'x'"),
        ("1/3/4", "--shard: expected K/N"),
        ("-1/3", "--shard: expected K/N"),
        ("0/3", "--shard 0/3: K, the shard to run, must be from 1 to 3"),
        ("4/3", "--shard 4/3: K, the shard to run, must be from 1 to 3"),
        ("1/0", "--shard 1/0: N, the number of shards, must be at least 1"),
        ("0/0", "--shard 0/0: N, the number of shards, must be at least 1"),
    ],
)
def test_bad_shards_are_one_line_usage_errors(pytester, value, message):
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--shard={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str() and "Traceback" not in result.stderr.str()


PLANTED = Path(__file__).with_name("planted_ops.py").read_text()
TWO_OPS = """
from planted_ops import *

test_good = make_spec("good", good_resize, dtypes=("uint8",)).test()
test_other = make_spec("other", good_resize, dtypes=("uint8",)).test()
"""
RULE_FOR_OTHER = """
[[tolerance]]
name = "ours"
op = "other"
check = "reference"
dtype = "uint8"
atol = 2
reason = "a rule about the op of the other shard"
"""


def test_a_shard_says_its_part_and_is_judged_on_the_whole_collection(pytester):
    pytester.makepyfile(planted_ops=PLANTED, test_cases=TWO_OPS)
    (pytester.path / "tolerances.toml").write_text(RULE_FOR_OTHER)
    quick = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=3", "--targets=cpu"]
    ran = []
    for k in (1, 2):
        result = pytester.runpytest_inprocess(*quick, "--tolerances=tolerances.toml", f"--shard={k}/2")
        result.assert_outcomes(passed=4, deselected=4)  # not a usage error: the rule's op is in the other shard
        assert f"conformance: shard {k}/2: 1 of 2 variant groups (4 of 8 items)" in result.stdout.str()
        summary = read_summary(pytester.path / "reports" / "latest")
        ran.append({g["op"] for g in summary["groups"]})
    assert ran == [{"good"}, {"other"}]


def fake_items() -> list[SimpleNamespace]:
    """Items of two modules: an operation's two implementations share a group per (dtype, mode); another op
    draws its own; one target more (an ISA level) adds items but no (test, check) pair."""
    member = SimpleNamespace(shares_cases=True, operation=SimpleNamespace(name="blur"))
    v2, kornia, alone = (
        SimpleNamespace(name=n, member=m) for n, m in (("blur_v2", member), ("blur_kornia", member), ("flip", None))
    )
    found = []
    for module, test, spec in (("a", "test_blur_v2", v2), ("a", "test_blur_kornia", kornia), ("b", "test_flip", alone)):
        for dtype in ("uint8", "float32", "float16"):
            for mode in ("m1", "m2"):
                for target in ("cpu", "vcuda:1", "cpu:avx2"):
                    for check in (
                        ("reference", "invariants") if target == "cpu:avx2" else ("reference", "invariants", "error")
                    ):
                        params = {"target": target, "dtype": dtype, "mode": mode, "check": check}
                        nodeid = f"/somewhere/{module}/test_{module}.py::{test}[{target}-{dtype}-{mode}-{check}]"
                        found.append(
                            SimpleNamespace(
                                nodeid=nodeid, originalname=test, callspec=SimpleNamespace(params=params), spec=spec
                            )
                        )
    return found


def variant(item: SimpleNamespace) -> tuple[str, str]:
    return item.callspec.params["dtype"], item.callspec.params["mode"]


def test_the_split_keeps_groups_whole_and_is_the_same_in_any_order_and_folder():
    found = fake_items()
    parts = [shards.split(found, shards.Shard(k, 3), lambda i: i.spec) for k in (1, 2, 3)]
    assert sum(len(kept) for kept, _, _ in parts) == len(found)
    assert all(len(kept) + len(dropped) == len(found) for kept, dropped, _ in parts)
    groups = [
        {(i.nodeid.split("::")[0], i.spec.member is not None or i.originalname, *variant(i)) for i in kept}
        for kept, _, _ in parts
    ]
    assert sum(map(len, groups)) == len(set().union(*groups)) == 12  # 6 of the operation, 6 of flip
    assert [r.groups for _, _, r in parts] == [4, 4, 4] and {r.of_groups for _, _, r in parts} == {12}
    # another collection order, and the modules in another folder: the same parts, the same plan
    shuffled = list(found)
    random.Random(7).shuffle(shuffled)
    for item in shuffled:
        item.nodeid = item.nodeid.replace("/somewhere/", "/elsewhere/deeper/")
    again = [shards.split(shuffled, shards.Shard(k, 3), lambda i: i.spec) for k in (1, 2, 3)]
    assert [{i.nodeid for i in kept} for kept, _, _ in again] == [{i.nodeid for i in kept} for kept, _, _ in parts]
    assert {r.plan for _, _, r in again} == {r.plan for _, _, r in parts}
    # without the ISA target (a runner with another cpu capability): fewer items, the same split
    fewer = [i for i in found if i.callspec.params["target"] != "cpu:avx2"]
    other = [shards.split(fewer, shards.Shard(k, 3), lambda i: i.spec) for k in (1, 2, 3)]
    assert [{i.nodeid for i in kept} for kept, _, _ in other] == [
        {i.nodeid for i in kept if "avx2" not in i.nodeid} for kept, _, _ in parts
    ]
    assert {r.plan for _, _, r in other} == {r.plan for _, _, r in parts}


def sharded(run_dir: Path, index: int, op: str, outcomes: int, plan: str = "p1") -> Path:
    """A synthetic run recorded as shard `index` of 2 (`outcomes` tells runs apart: a byte-for-byte copy is refused
    before any shard is looked at)."""
    write_run(run_dir, outcomes=outcomes, failures=1, op=op)
    shards.write_record(run_dir, shards.ShardRecord(index, 2, plan, 1, 2, 5, 10, (op,)))
    return run_dir


def test_merge_refuses_shards_that_would_count_an_item_twice(tmp_path):
    one, two = sharded(tmp_path / "one", 1, "resize", 6), sharded(tmp_path / "two", 2, "flip", 7)
    index = merge_runs([one, two], tmp_path / "merged")
    summary = read_summary(tmp_path / "merged")
    assert len(summary["machines"]) == 1 and len({g["op"] for g in summary["groups"]}) == 2 and index.is_file()
    again = sharded(tmp_path / "again", 1, "flip", 8)  # shard 1 of the same run, twice
    with pytest.raises(MergeError, match="are both shard 1/2 of one run"):
        merge_runs([one, again, two], tmp_path / "twice")
    overlapping = sharded(
        tmp_path / "overlapping", 2, "resize", 9
    )  # the same items as `one`: cut from another collection
    with pytest.raises(MergeError, match="these shards were not cut from one collection"):
        merge_runs([one, overlapping], tmp_path / "overlap")
    assert not (tmp_path / "twice").exists() and not (tmp_path / "overlap").exists()
    other_plan = sharded(tmp_path / "other-plan", 2, "flip", 10, plan="p2")  # another split: not a part of `one`'s run
    with pytest.raises(MergeError, match="shard\\(s\\) 2/2 of the run"):
        merge_runs([one, other_plan], tmp_path / "plans")
    shutil.rmtree(tmp_path / "merged")
    merge_runs([one, two, tmp_path / "other-plan"], tmp_path / "merged", allow_missing_shards=True)
    summary = read_summary(tmp_path / "merged")
    assert len(summary["machines"]) == 2 and summary["complete"] is False
