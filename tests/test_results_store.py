"""The store at scale: streamed summaries, a short terminal table, duplicate merges refused,
interrupted items shown as such, and retention of old runs."""

import json
import os
import shutil
import time
import tracemalloc
from pathlib import Path

import pytest

from conformance.checks.registry import CheckOutcome
from conformance.cli import main as cli
from conformance.report.build import build_report
from conformance.report.table import format_table
from conformance.spec.tolerances import Metrics, Tolerance
from conformance.store.aggregate import SUMMARY_SCHEMA, summarize, write_summary, write_summary_file
from conformance.store.reader import LoadedIssues
from conformance.store.records import RecordWriter
from conformance.store.summary_model import Summary
from conformance.store.summary_reader import read_summary

NODE = "cases/test_resize.py::test_resize[{target}-uint8-bilinear-{check}]"
ENVIRONMENT = {"machine": "test", "packages": {}, "targets": [], "cuda": {}, "tf32": {}}
PASSED = CheckOutcome(
    "reference",
    True,
    against="reference",
    metrics=Metrics(0.5, 0.1, 0.0, 0, 3, None, None, None, 40.0),
    tolerance=Tolerance("uint8", "a rounding step", atol=1),
)


def base(target="cpu"):
    return {
        "test": "test_resize",
        "op": "resize",
        "target": target,
        "virtual": target.startswith("vcuda"),
        "dtype": "uint8",
        "mode": "bilinear",
        "worker": "main",
        "pid": 1,
    }


def write_store(run: Path, passing: int, *, complete=True, unfinished=None, ended=True):
    """A run with one reference item of `passing` examples; `unfinished`: a check whose item began and never
    ended; `ended=False`: the reference item itself never ended (a run stopped inside it)."""
    writer = RecordWriter(run, "main", lambda: ENVIRONMENT)
    nodeid = NODE.format(target="cpu", check="reference")
    writer.item_started(base(), nodeid, "reference", [])
    for n in range(passing):
        case = json.dumps({"op": "resize", "recipe": {"seed": n, "height": 8, "width": 8}, "params": {}})
        writer.example("explore", n, case, "pass", PASSED, "", None, None, None)
    if ended:
        writer.item_ended(base(), nodeid, "reference")
    if unfinished:
        writer.item_started(base(), NODE.format(target="cpu", check=unfinished), unfinished, [])
    writer.store.examples.flush()
    writer.store._file.flush()
    if complete:
        writer.close()
        (run / "summary.json").write_text(json.dumps({"complete": True}))
    return run


def _peak(function, *args):
    tracemalloc.start()
    try:
        function(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("command", ["summary", "report"])
def test_summary_and_report_memory_does_not_grow_with_passing_examples(command, tmp_path):
    small = write_store(tmp_path / "small", 1_000)
    large = write_store(tmp_path / "large", 10_000)
    run = (lambda r: write_summary(r, complete=True)) if command == "summary" else build_report
    run(small)  # imports and template compilation, outside the measurement
    small_peak, large_peak = _peak(run, small), _peak(run, large)
    assert large_peak < 2 * small_peak + 2**20, (small_peak, large_peak)  # was ~10x: the whole store in a list
    summary = read_summary(large) if command == "summary" else None
    if summary:
        assert summary["totals"] == {"pass": 10_000} and summary["groups"][0]["worst"]["max_abs"] == 0.5


def _summary(groups):
    records = []
    for target, check, verdict in groups:
        nodeid = NODE.format(target=target, check=check)
        tally = {"counts": {verdict: 1}, "worst": {"max_abs": 0.5, "atol": 1, "tolerance": "uint8"}}
        records.append(base(target) | {"kind": "item_end", "nodeid": nodeid, "check": check, "tally": tally})
    return Summary.from_json(summarize(records, {}))


def test_the_terminal_table_lists_only_what_needs_a_look_and_a_matrix():
    checks = [("cpu", c, "pass") for c in ("reference", "placement", "error")]
    clean = format_table(_summary([*checks, ("vcuda:0", "reference", "pass")]))
    assert clean[0].startswith("all 2 test item variants passed") and "op" in clean[2]
    assert "cpu" in clean[2] and "vcuda:0*" in clean[2] and clean[3].split() == ["resize", ".", "."]
    assert clean[-1].startswith("legend: F fail") and "* virtual" in clean[-1]
    failing = format_table(_summary([*checks, ("vcuda:0", "reference", "fail"), ("vcuda:1", "reference", "pass")]))
    rows = [line for line in failing if line.startswith("resize ")]
    assert len(rows) == 2 and "vcuda:0 (virtual)" in rows[0] and "fail" in rows[0]  # the row, then the matrix
    assert rows[1].split() == ["resize", ".", "F", "."]
    assert "2 more variants passed or were skipped" in "\n".join(failing)
    everything = format_table(_summary(checks), full=True)
    assert everything[1].split()[:2] == ["resize", "cpu"] and "pass" in everything[1]


def test_merging_a_run_with_itself_or_its_copy_is_a_usage_error(tmp_path, capsys):
    run = write_store(tmp_path / "a", 5)
    shutil.copytree(run, tmp_path / "copy")
    for inputs in ([run, run], [run, tmp_path / "copy"]):
        assert cli(["merge", *map(str, inputs), "-o", str(tmp_path / "out")]) == 4
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and str(inputs[1]) in err and "twice" in err
        assert not (tmp_path / "out").exists()


def test_the_item_running_when_a_run_stopped_is_interrupted_not_passed(tmp_path, capsys):
    run = write_store(tmp_path / "cut", 4, complete=False, unfinished="placement")
    assert cli(["summary", str(run)]) == 0
    out = capsys.readouterr().out
    summary = read_summary(run)
    verdicts = {g["check"]: g["verdict"] for g in summary["groups"]}
    assert verdicts == {"reference": "pass", "placement": "interrupted"}  # begun, never finished
    assert summary["interrupted"] == [NODE.format(target="cpu", check="placement")]
    assert summary["totals"]["interrupted"] == 1 and "interrupted" in out
    html = build_report(run).read_text()
    assert 'id="interrupted-items"' in html and ">interrupted<" in html
    cut = write_store(tmp_path / "mid-item", 4, complete=False, ended=False)  # stopped inside the item's examples
    assert write_summary(cut, complete=False)["groups"][0]["verdict"] == "interrupted"
    finished = write_store(tmp_path / "between-items", 4, complete=False)  # stopped after it ended
    assert "interrupted" not in write_summary(finished, complete=False)


def _run_folder(reports: Path, name: str, age_days: float, now: float) -> Path:
    run = reports / name
    (run / "outcomes").mkdir(parents=True)
    (run / "summary.json").write_text("{}")
    os.utime(run / "summary.json", (now - age_days * 86400, now - age_days * 86400))
    return run


def test_prune_keeps_the_newest_and_latest_and_never_follows_links(tmp_path, capsys):
    now = time.time()
    reports = tmp_path / "reports"
    runs = [_run_folder(reports, f"run{i}", age_days=10 - i, now=now) for i in range(5)]  # run4 newest
    (reports / "latest").symlink_to("run0")  # the oldest, but latest: kept
    outside = _run_folder(tmp_path, "elsewhere", age_days=99, now=now)
    (reports / "linked").symlink_to(outside)
    (reports / "notes").mkdir()  # not a run folder
    (reports / "notes" / "keep.txt").write_text("x")
    assert cli(["prune", str(reports), "--keep", "2", "--dry-run"]) == 0
    assert "would remove" in capsys.readouterr().out and all(r.exists() for r in runs)
    assert cli(["prune", str(reports), "--keep", "2"]) == 0
    out = capsys.readouterr().out
    assert [r.name for r in runs if r.exists()] == ["run0", "run3", "run4"]
    assert f"removed: {runs[1]}" in out and f"removed: {runs[2]}" in out
    assert outside.exists() and (reports / "linked").is_symlink() and (reports / "notes" / "keep.txt").exists()
    assert cli(["prune", str(reports), "--older-than", "6.5"]) == 0  # run3 is 7 days old
    assert [r.name for r in runs if r.exists()] == ["run0", "run4"]
    assert cli(["prune", str(reports)]) == 4 and "--keep" in capsys.readouterr().err
    for bad in ("nan", "inf", "-1"):  # NaN compared as "not older", so nothing went and nothing was said
        assert cli(["prune", str(reports), "--older-than", bad]) == 4 and "--older-than" in capsys.readouterr().err
    assert cli(["prune", str(reports / "latest"), "--keep", "0"]) == 4 and runs[0].exists()


def test_a_green_run_of_the_whole_suite_fits_on_one_screen():
    """14 families on 5 targets, 690 known-issue items of 102 entries, warnings on 24 ops x 2 targets: the
    section says it in a few lines, the warnings aggregated per op, check and cause (the largest first)."""
    from conformance.report.table import format_section

    groups = []
    for family in range(14):
        for op in range(10):
            for target in ("cpu", "cpu:default", "cpu:avx2", "vcuda:0", "vcuda:1"):
                for check in ("error", "reference", "constant_upload"):
                    verdict = (
                        "known_issue"
                        if op == 0 and check == "reference"
                        else (
                            "warning"
                            if check == "constant_upload" and target.startswith("vcuda") and op < 2
                            else "pass"
                        )
                    )
                    groups.append(
                        {
                            "machine": "",
                            "family": f"family{family}",
                            "test": f"test_op{family}_{op}",
                            "op": f"op{family}_{op}",
                            "target": target,
                            "virtual": target.startswith("vcuda"),
                            "dtype": "uint8",
                            "mode": "m",
                            "check": check,
                            "verdict": verdict,
                            "examples": 100,
                            "counts": {verdict: 100},
                            "worst": None,
                            "known_issues": [f"issue-{family}"] if verdict == "known_issue" else [],
                            "causes": {"upload": 100} if verdict == "warning" else {},
                            "warnings": {f"uploads on every call: a constant at x.py:{op}": 100}
                            if verdict == "warning"
                            else {},
                        }
                    )
    summary = {
        "groups": groups,
        "totals": {"pass": 99_000, "known_issue": 7_000, "warning": 2_800},
        "unused_known_issues": ["gpu-only-1", "gpu-only-2"],
        "unreproduced_known_issues": ["rare-1"],
        "environment": {"targets": [{"name": t} for t in ("cpu", "cpu:default", "cpu:avx2", "vcuda:0", "vcuda:1")]},
    }
    lines = format_section(Summary.from_json(summary))
    assert len(lines) <= 35, "\n".join(lines)
    assert lines[0].startswith("no new failure: 2,100 items")
    assert lines[1].split() == ["family", "cpu", "cpu:default", "cpu:avx2", "vcuda:0*", "vcuda:1*"]
    assert "known issues: 14 entries reproduced in 70 items" in "\n".join(lines)
    warned = [line for line in lines if "constant_upload (upload)" in line]
    assert len(warned) == 8 and "on vcuda:0, vcuda:1" in warned[0] and "... and 20 more" in "\n".join(lines)
    failing = [dict(groups[0], verdict="fail", counts={"fail": 1, "pass": 99}), *groups[1:]]
    assert format_section(Summary.from_json(dict(summary, groups=failing)))[0].startswith("1 item failed")


def test_known_issue_entries_are_read_from_their_own_records_and_from_older_item_records():
    """A journal names each entry by id once and holds it whole where it applied; one written before those records
    embedded every entry in an item record: both give the same ids, entries and unused list."""
    entry = {"id": "a", "link": "https://example.org/a", "reason": "why", "strict": False, "envelope": {}}
    item = {"kind": "item", "nodeid": NODE.format(target="cpu", check="reference"), "known_issues_applied": ["a"]}
    older = [item | {"known_issues_loaded": {"a": entry, "b": entry | {"id": "b"}}}]
    newer = [{"kind": "known_issues", "loaded": ["a", "b"]}, {"kind": "known_issue", "entry": entry}, item]
    for records in (older, newer):
        found = LoadedIssues()
        for record in records:
            found.add(record)
        assert found.ids == {"a", "b"} and found.entries["a"] == entry
        assert summarize(records, ENVIRONMENT)["unused_known_issues"] == ["b"]


def test_summary_json_names_each_variant_once_and_reads_back_as_the_groups(tmp_path):
    """On disk a variant's fields are written once, its checks under it (a group per item repeated them: three
    fifths of the stock suite's summary.json); every reader gets the flat groups, also from a file written flat."""
    variant = {"machine": "", "family": "resize", "test": "test_resize", "op": "resize", "target": "cpu"}
    variant |= {"virtual": False, "dtype": "uint8", "mode": "bilinear"}
    worst = {"max_abs": 3.0, "atol": 1, "tolerance": "uint8", "mismatch_fraction": 0.1}
    groups = [
        variant | {"check": "error", "verdict": "pass", "examples": 5, "counts": {"pass": 5}, "worst": None},
        variant | {"check": "reference", "verdict": "known_issue", "examples": 5, "counts": {"known_issue": 2}},
    ]
    groups[0]["known_issues"] = []
    groups[1] |= {"counts": {"known_issue": 2, "pass": 3}, "worst": worst, "known_issues": ["k"]}
    summary = summarize([], ENVIRONMENT) | {"groups": groups, "schema": SUMMARY_SCHEMA}
    write_summary_file(tmp_path, summary)
    written = json.loads((tmp_path / "summary.json").read_text())
    assert "groups" not in written and [sorted(v["checks"]) for v in written["variants"]] == [["error", "reference"]]
    assert written["variants"][0]["checks"]["error"] == {"verdict": "pass", "counts": {"pass": 5}}
    assert read_summary(tmp_path) == summary
    flat = tmp_path / "flat"
    flat.mkdir()
    (flat / "summary.json").write_text(json.dumps(summary | {"schema": "conformance.summary/2"}))
    assert read_summary(flat)["groups"] == groups
