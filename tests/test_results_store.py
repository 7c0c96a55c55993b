"""The store at scale: streamed summaries, a short terminal table, duplicate merges refused,
interrupted items shown as such, and retention of old runs."""
import json
import os
import shutil
import time
import tracemalloc
from pathlib import Path

import pytest

from conformance.cli import main as cli
from conformance.report import build_report
from conformance.results import Store, format_table, summarize, write_summary

NODE = "cases/test_resize.py::test_resize[{target}-uint8-bilinear-{check}]"


def example(target="cpu", check="reference", verdict="pass", n=0, **extra):
    record = {"kind": "example", "nodeid": NODE.format(target=target, check=check), "test": "test_resize",
              "op": "resize", "target": target, "virtual": target.startswith("vcuda"), "dtype": "uint8",
              "mode": "bilinear", "worker": "main", "pid": 1, "phase": "explore", "example": n,
              "checks": [{"check": check, "verdict": verdict, "against": "reference",
                          "metrics": {"max_abs": 0.5, "mae": 0.1, "mismatch_fraction": 0.0},
                          "tolerance": {"name": "uint8", "atol": 1, "rtol": 0, "max_mismatch_fraction": 0.0}}]}
    return record | extra


def item(target="cpu", check="reference"):
    return {"kind": "item", "nodeid": NODE.format(target=target, check=check), "worker": "main",
            "known_issues_loaded": {}, "known_issues_applied": []}


def write_store(run: Path, passing: int, *, complete=True, tail=()):
    store = Store(run, "main", {"machine": "test", "packages": {}, "targets": [], "cuda": {}, "tf32": {}})
    store.append(item())
    for n in range(passing):
        case = json.dumps({"op": "resize", "recipe": {"seed": n, "height": 8, "width": 8}, "params": {}})
        store.append_example(example(n=n), case)
    for record in tail:
        store.append(record)
    store.close()
    if complete:
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
    summary = json.loads((large / "summary.json").read_text()) if command == "summary" else None
    if summary:
        assert summary["totals"] == {"pass": 10_000} and summary["groups"][0]["worst"]["max_abs"] == 0.5


def _summary(groups):
    records = [example(target=t, check=c, verdict=v) for t, c, v in groups]
    records = [r | {"kind": "outcome", **r["checks"][0]} for r in records]
    return summarize(records, {})


def test_the_terminal_table_lists_only_what_needs_a_look_and_a_matrix():
    checks = [("cpu", c, "pass") for c in ("reference", "placement", "error")]
    clean = format_table(_summary(checks + [("vcuda:0", "reference", "pass")]))
    assert clean[0].startswith("all 2 test item variants passed") and "op" in clean[2]
    assert "cpu" in clean[2] and "vcuda:0*" in clean[2] and clean[3].split() == ["resize", ".", "."]
    assert clean[-1].startswith("legend: F fail") and "* virtual" in clean[-1]
    failing = format_table(_summary(checks + [("vcuda:0", "reference", "fail"), ("vcuda:1", "reference", "pass")]))
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
    run = write_store(tmp_path / "cut", 4, complete=False, tail=[item(check="placement")])
    assert cli(["summary", str(run)]) == 0
    out = capsys.readouterr().out
    summary = json.loads((run / "summary.json").read_text())
    verdicts = {g["check"]: g["verdict"] for g in summary["groups"]}
    assert verdicts == {"reference": "pass", "placement": "interrupted"}  # begun, never finished
    assert summary["interrupted"] == [NODE.format(target="cpu", check="placement")]
    assert summary["totals"]["interrupted"] == 1 and "interrupted" in out
    html = build_report(run).read_text()
    assert 'id="interrupted-items"' in html and ">interrupted<" in html
    cut = write_store(tmp_path / "mid-item", 4, complete=False)  # stopped inside the item's examples
    assert write_summary(cut, complete=False)["groups"][0]["verdict"] == "interrupted"
    assert write_summary(cut, complete=True)["groups"][0]["verdict"] == "pass"
    ended = {"kind": "item_end", "nodeid": NODE.format(target="cpu", check="reference"), "worker": "main"}
    finished = write_store(tmp_path / "between-items", 4, complete=False, tail=[ended])  # stopped after it ended
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
    assert cli(["prune", str(reports / "latest"), "--keep", "0"]) == 4 and runs[0].exists()
