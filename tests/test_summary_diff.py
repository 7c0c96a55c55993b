"""benchmarks/summary_diff.py: two runs compared item by item, checkout paths aside (what a refactor is held to)."""

import importlib.util
from pathlib import Path

from conformance.store.aggregate import SUMMARY_SCHEMA, write_summary_file
from conformance.store.summary_model import Summary

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("summary_diff", ROOT / "benchmarks" / "summary_diff.py")
assert _spec is not None and _spec.loader is not None
summary_diff = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(summary_diff)


def _group(check: str, verdict: str = "pass", cases: int = 3, where: str = "/home/a/repo", line: int = 12) -> dict:
    return {
        "machine": "",
        "family": "resize",
        "test": "test_resize",
        "op": "resize",
        "target": "vcuda:1",
        "virtual": True,
        "dtype": "uint8",
        "mode": "bilinear",
        "check": check,
        "verdict": verdict,
        "examples": cases,
        "counts": {verdict: cases},
        "worst": None,
        "known_issues": [],
        "warnings": {f"uploads a constant at {where}/cases/test_resize.py:{line} in op": cases}
        if check == "upload"
        else {},
    }


def _summary(*groups: dict) -> dict:
    totals: dict[str, int] = {}
    for group in groups:
        totals[group["verdict"]] = totals.get(group["verdict"], 0) + group["examples"]
    return {
        "schema": SUMMARY_SCHEMA,
        "complete": True,
        "torn_lines": 0,
        "environment": {},
        "totals": totals,
        "groups": list(groups),
        "unused_known_issues": [],
        "unreproduced_known_issues": [],
    }


def test_the_same_items_in_another_checkout_are_the_same():
    before = Summary.from_json(_summary(_group("reference"), _group("upload", "warning")))
    after = Summary.from_json(_summary(_group("reference"), _group("upload", "warning", where="/tmp/clone")))
    assert summary_diff.differences(before, after) == {}


def test_a_case_module_line_that_moved_is_no_difference_another_message_is():
    before = Summary.from_json(_summary(_group("upload", "warning")))
    moved = Summary.from_json(_summary(_group("upload", "warning", line=40)))
    assert summary_diff.differences(before, moved) == {}
    elsewhere = _group("upload", "warning")
    elsewhere["warnings"] = {"uploads a constant at /home/a/repo/cases/test_blur.py:12 in op": 3}  # another module
    assert set(summary_diff.differences(before, Summary.from_json(_summary(elsewhere)))) == {"warnings"}


def test_a_verdict_a_count_and_a_lost_item_are_each_named():
    before = Summary.from_json(_summary(_group("reference"), _group("placement"), _group("invariants")))
    after = Summary.from_json(_summary(_group("reference", "fail"), _group("placement", cases=4)))
    found = summary_diff.differences(before, after)
    assert {"verdict", "counts", "examples", "only before", "totals"} <= set(found), found
    assert (
        len(found["verdict"]) == 1
        and "'reference')" in found["verdict"][0]
        and "'pass' -> 'fail'" in found["verdict"][0]
    )
    assert len(found["only before"]) == 1 and "invariants" in found["only before"][0]


def test_its_exit_status_says_whether_two_run_folders_differ(tmp_path, capsys):
    runs = {name: tmp_path / name for name in ("a", "b", "c")}
    for name, folder in runs.items():
        folder.mkdir()
        verdict = "fail" if name == "c" else "pass"
        write_summary_file(folder, _summary(_group("reference", verdict)))
    assert summary_diff.main([str(runs["a"]), str(runs["b"])]) == 0
    assert "the same, item by item" in capsys.readouterr().out
    assert summary_diff.main([str(runs["a"]), str(runs["c"])]) == 1
    assert "verdict: 1 differ" in capsys.readouterr().out
    assert summary_diff.main([str(runs["a"]), str(tmp_path / "none")]) == 2
