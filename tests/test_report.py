"""The HTML report: built from the store, escaped, bounded, mergeable, and rendered by a real browser."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from report_pages import family_file, inline_data, page_data
from synthetic_runs import write_run

from conformance.report import check_columns
from conformance.report.build import build_report
from conformance.report.merge import merge_runs
from conformance.store.aggregate import write_summary_file
from conformance.store.summary_reader import read_summary

HOSTILE = "<script>alert('x')</script>\"'../../etc/passwd"


def test_the_report_leads_with_what_is_new_and_lists_each_known_issue_once(tmp_path):
    run = write_run(tmp_path / "run", outcomes=60, failures=2)
    index = build_report(run)
    data, html = page_data(index), index.read_text()
    assert data["headline"].startswith("2 new failures;") and data["tone"] == "red"
    assert [n["text"] for n in data["new"]] == [
        "resize [uint8, mode0] on vcuda:1: reference fail",
        "resize [uint8, mode1] on vcuda:1: reference fail",
    ]
    (finding,) = data["findings"]
    assert (finding["id"], finding["cases"], finding["reason"], finding["reproduced"]) == (
        "known-1",
        1,
        "a known divergence",
        True,
    )
    cells = {f"{row['id']}.{column}": cell for row in data["matrix"]["rows"] for column, cell in row["cells"].items()}
    assert all(item["cell"] in cells and cells[item["cell"]]["verdict"] == "fail" for item in data["new"])
    assert [cells[c]["counts"] for c in finding["cells"]] == [{"known_issue": 1}]  # a cell's counts, by verdict
    failing = [d for d in data["details"] if d["verdict"] == "fail"]
    assert len(failing) == 2 and all(d["heatmap"] and d["histogram"] and d["crops"] for d in failing)
    pictures = sum(p.read_text().count("data:image/png;base64,") for p in (run / "index_files").glob("*.js"))
    assert pictures >= 10 and "data:image/png" not in html and not (run / "report").exists()  # loaded when opened
    assert "Incomplete run" not in html
    summary_md = (run / "summary.md").read_text()
    assert "**2 new failures;" in summary_md and "resize \\[uint8, mode0\\] on vcuda:1: reference fail" in summary_md
    assert "| known\\-1 |" not in summary_md and "| known-1 | 1 | 1 |" in summary_md


def test_a_new_column_of_the_checks_table_is_one_entry(tmp_path, monkeypatch):
    """A column is a heading and the function that says what a check's cell holds (report/check_columns.py): one
    entry there reaches the page's table (the page script draws the run's columns as text, none of its own)."""
    examples = check_columns.CheckColumn("examples", lambda group: f"{group.examples} <b>")
    monkeypatch.setattr(check_columns, "CHECK_COLUMNS", (*check_columns.CHECK_COLUMNS, examples))
    run = write_run(tmp_path / "run", outcomes=10, failures=1)
    page = inline_data(build_report(run))
    assert page["check_columns"][-1] == "examples" and len(page["check_columns"]) == len(check_columns.CHECK_COLUMNS)
    part = family_file(run / "index_files" / page["files"]["resize"])
    rows = [row for checks in part["checks"].values() for row in checks]
    assert rows and all(len(row["cells"]) == len(page["check_columns"]) for row in rows)
    assert all(re.fullmatch(r"[1-9]\d* <b>", row["cells"][-1]) for row in rows)  # set as text: escaped in the file
    assert "<b>" not in (run / "index_files" / page["files"]["resize"]).read_text()


def test_the_page_holds_the_first_screen_and_a_file_per_family_what_its_cells_open_to(tmp_path):
    """index.html stays light whatever the run's size: each cell's checks and worst cases (with their pictures)
    are in its family's file in index_files/, which the page loads when a cell is opened; a rebuild leaves no
    older file behind and replaces a linked folder without following it."""
    run = write_run(tmp_path / "run", outcomes=60, failures=2)
    page = inline_data(build_report(run))
    assert "details" not in page and "data:image/png" not in (run / "index.html").read_text()
    assert all(set(cell) == {"verdict", "counts"} for row in page["matrix"]["rows"] for cell in row["cells"].values())
    assert page["folder"] == "index_files" and set(page["files"]) == {"resize"}
    part = family_file(run / "index_files" / page["files"]["resize"])
    cells = {f"{row['id']}.{column}" for row in page["matrix"]["rows"] for column in row["cells"]}
    assert set(part["checks"]) == cells and {d["cell"] for d in part["details"]} <= cells
    assert sum(1 for d in part["details"] if d["verdict"] == "fail" and d.get("heatmap")) == 2
    (run / "index_files" / "f7.js").write_text("from an older report")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "f0.js").write_text("keep")
    build_report(run)
    assert sorted(p.name for p in (run / "index_files").iterdir()) == ["f0.js"]
    shutil.rmtree(run / "index_files")
    (run / "index_files").symlink_to(outside)
    build_report(run)
    assert not (run / "index_files").is_symlink() and (outside / "f0.js").read_text() == "keep"


def test_a_green_run_says_so_in_one_line(tmp_path):
    run = write_run(tmp_path / "run", outcomes=30, failures=0)
    data = page_data(build_report(run))
    assert data["new"] == [] and data["tone"] == "green"
    assert data["headline"] == "No new failures: 1 case in 1 known issue; 32 checked outcomes"
    assert "**No new failures:" in (run / "summary.md").read_text()


def test_the_summary_is_appended_where_github_shows_it(tmp_path, monkeypatch):
    from conformance.report.terminal import finish_run_folder

    step_summary = tmp_path / "step_summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    run = write_run(tmp_path / "run", outcomes=10, failures=1, complete=False)
    ended = finish_run_folder(run, interrupted=False)
    assert ended.report_error is None and ended.report_path is not None
    assert ended.summary is not None and ended.summary.complete  # read back once, handed on
    text = step_summary.read_text()
    assert text.startswith("earlier step\n## conformance: run") and "**1 new failure;" in text


def test_hostile_strings_are_escaped_in_the_page_and_harmless_in_file_names(tmp_path):
    run = write_run(
        tmp_path / "run", outcomes=3, failures=1, op=HOSTILE, message=HOSTILE, params={"size": HOSTILE}, target=HOSTILE
    )
    index = build_report(run)
    html = index.read_text()
    assert "<script>alert" not in html and '</script>"' not in html
    assert "\\u003cscript\\u003ealert('x')\\u003c/script\\u003e" in html  # inside the data, inert
    data = page_data(index)
    assert {row["op"] for row in data["matrix"]["rows"]} == {HOSTILE}  # and read back unchanged
    outside_code = re.sub(r"(`+).+?\1", "", (run / "summary.md").read_text())  # a code span shows it as text
    assert "<script>" not in outside_code
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert all(run in p.parents for p in written)  # nothing escaped the run folder
    assert not any("<" in p.name or "'" in p.name or '"' in p.name for p in written)


def test_a_killed_run_without_a_summary_still_gets_a_report_marked_incomplete(tmp_path):
    run = write_run(tmp_path / "run", outcomes=10, failures=1, complete=False)
    with open(next((run / "outcomes").glob("*.jsonl")), "a") as stream:
        stream.write('{"kind": "outcome", "torn')  # killed mid-line
    done = subprocess.run([sys.executable, "-m", "conformance", "report", str(run)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    html = (run / "index.html").read_text()
    assert 'id="incomplete"' in html and "1 torn record line(s) were skipped" in html


def test_merge_puts_each_machine_in_its_own_columns(tmp_path):
    a = write_run(tmp_path / "a", outcomes=5, failures=1, target="cuda:0")
    b = write_run(tmp_path / "b", outcomes=6, failures=1, target="cuda:0")  # not a copy of a (that is refused)
    index = merge_runs([a, b], tmp_path / "merged", labels=["h100-runner", HOSTILE])
    summary = read_summary(tmp_path / "merged")
    assert summary["machines"] == ["h100-runner", HOSTILE]
    assert {g["machine"] for g in summary["groups"]} == {"h100-runner", HOSTILE}
    data = page_data(index)
    columns = {(c["machine"], c["target"]) for c in data["matrix"]["columns"]}
    assert {("h100-runner", "cuda:0"), (HOSTILE, "cuda:0")} <= columns and "<script>alert" not in index.read_text()
    assert sum(1 for d in data["details"] if d.get("heatmap")) == 2
    assert {n["text"].split(" on ")[1] for n in data["new"]} == {
        "h100-runner cuda:0: reference fail",
        f"{HOSTILE} cuda:0: reference fail",
    }
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "merge", str(a), "-o", str(tmp_path / "merged")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 4 and "exists and is not empty" in done.stderr


def test_a_refused_merge_leaves_nothing_and_the_same_command_works_once_the_input_is_mended(tmp_path):
    a = write_run(tmp_path / "a", outcomes=5, failures=1)
    b = write_run(tmp_path / "b", outcomes=6, failures=1)
    damaged = next((b / "examples").glob("*.parquet"))
    kept = damaged.read_bytes()
    damaged.write_bytes(b"PAR1 not parquet")
    command = [sys.executable, "-m", "conformance", "merge", str(a), str(b), "-o", str(tmp_path / "merged")]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 4 and "not a readable Parquet file" in done.stderr, done.stderr
    assert not (tmp_path / "merged").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]
    damaged.write_bytes(kept)
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "merged" / "index.html").is_file()


def test_report_size_follows_failures_not_passing_examples(tmp_path):
    small = write_run(tmp_path / "small", outcomes=100, failures=2)
    large = write_run(tmp_path / "large", outcomes=5000, failures=2)
    sizes = []
    for run in (small, large):
        build_report(run)
        sizes.append((run / "index.html").stat().st_size)
    assert sizes[1] <= sizes[0] * 1.05  # 50x the passing outcomes, about the same report


def test_module_behaviours_warnings_and_the_diverging_side_are_shown(tmp_path):
    from conformance.checks.registry import CheckOutcome
    from conformance.devices import environment
    from conformance.devices.targets import CPU
    from conformance.devices.virtual_target import virtual_targets
    from conformance.store.aggregate import write_summary
    from conformance.store.records import RecordWriter

    run = tmp_path / "run"
    env = environment.collect([CPU, *virtual_targets(2)])
    writer = RecordWriter(run, "main", lambda: env)
    base = {
        "test": "test_op",
        "op": HOSTILE,
        "target": "vcuda:1",
        "virtual": True,
        "dtype": "float32",
        "mode": "m",
        "worker": "main",
        "pid": 1,
    }
    case = json.dumps({"op": "x", "recipe": {}, "params": {}})
    for check, verdict, outcome in (
        (
            "unmoved",
            "fail",
            CheckOutcome(
                "unmoved",
                False,
                "promises to work when left on the cpu, but raises an unclear error",
                behaviour="raises an unclear error",
                against="promise",
                cause="raises an unclear error",
            ),
        ),
        (
            "constant_upload",
            "warning",
            CheckOutcome("constant_upload", False, f"uploads on every call: {HOSTILE}", cause="upload", warning=True),
        ),
        ("cross_device", "pass", CheckOutcome("cross_device", True, "the cpu's", diverges="cpu", against="cpu")),
    ):
        nodeid = f"cases/t.py::test_op[vcuda:1-float32-m-{check}]"
        writer.item_started(base, nodeid, check, [])
        writer.example("explore", 0, case, verdict, outcome, outcome.message, None, None, None)
        writer.item_ended(base, nodeid, check)
    writer.close()
    write_summary(run, complete=True)
    html = build_report(run).read_text()
    assert 'id="module-behaviours"' in html and "raises an unclear error (1)" in html
    assert 'id="warning-list"' in html and "uploads on every call: &lt;script&gt;" in html
    (row,) = page_data(run / "index.html")["matrix"]["rows"]
    (cross_device,) = [c["cells"] for c in row["cells"]["0"]["checks"] if c["cells"][0] == "cross_device"]
    assert cross_device[-1] == "differs from the cpu in 1 case(s), where the cpu is off the reference"  # notes
    assert "<script>alert" not in html


def test_the_report_never_writes_or_reads_outside_its_run_folder(tmp_path):
    run = write_run(tmp_path / "run", outcomes=20, failures=2)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "page.html").write_text("keep")
    (elsewhere / "old.png").write_text("keep")
    (run / "report").symlink_to(elsewhere, target_is_directory=True)  # an older report's picture folder, linked
    (run / "index.html").symlink_to(elsewhere / "page.html")
    build_report(run)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["old.png", "page.html"]
    assert (elsewhere / "page.html").read_text() == "keep"
    assert not (run / "report").exists() and not (run / "index.html").is_symlink()


def _rewrite_artifacts(run: Path, new: list[str]) -> list[str]:
    """Point the failures' artifacts (in the examples table) at `new`, in order."""
    import pyarrow as pa

    from conformance.store import examples

    table, _ = examples.read_table(run)
    details, used = [], []
    for detail in table.column("detail").to_pylist():
        if detail and '"artifact"' in detail:
            found = json.loads(detail)
            if found.get("artifact"):
                found["artifact"] = new[len(used)]
                used.append(found["artifact"])
            detail = json.dumps(found)
        details.append(detail)
    table = table.set_column(table.schema.get_field_index("detail"), "detail", pa.array(details, pa.string()))
    for path in examples.files(run):
        path.unlink()
    examples.write_parquet(table, run / "examples" / "main.parquet")
    return used


def test_hostile_or_damaged_artifacts_give_no_pictures_and_no_crash(tmp_path):
    run = write_run(tmp_path / "run", outcomes=20, failures=2)
    secret = tmp_path / "secret.npz"
    secret.write_bytes((run / sorted((run / "artifacts").iterdir())[0]).read_bytes())
    used = _rewrite_artifacts(run, [str(secret), "artifacts/../../secret.npz"])
    details = page_data(build_report(run))["details"]
    assert len(used) == 2 and sum(1 for d in details if "damaged" in d) == 2
    assert not any(d.get("heatmap") for d in details)


def test_a_truncated_artifact_or_summary_is_skipped_and_the_rest_reported(tmp_path):
    run = write_run(tmp_path / "run", outcomes=20, failures=2)
    first = sorted((run / "artifacts").iterdir())[0]
    first.write_bytes(first.read_bytes()[:100])
    (run / "summary.json").write_text('{"complete": tr')
    details = page_data(build_report(run))["details"]
    assert any("damaged" in d for d in details) and any(d.get("heatmap") for d in details)  # the other keeps its own
    result = subprocess.run([sys.executable, "-m", "conformance", "summary", str(run)], capture_output=True, text=True)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert json.loads((run / "summary.json").read_text())["complete"] is False


def test_what_changed_since_the_previous_comparable_run_is_new(tmp_path):
    from conformance.store.timings import Timing, write

    reports = tmp_path / "reports"
    before, now = write_run(reports / "20260101-000000", failures=0), write_run(reports / "20260102-000000", failures=0)
    summary = read_summary(before)
    for group in summary["groups"]:  # the known issue did not reproduce in the earlier run
        group["counts"].pop("known_issue", None)
    write_summary_file(before, summary)
    for run, seconds in ((before, 1e-4), (now, 5e-4)):
        timing = Timing("resize", "cpu", "uint8", "bilinear", "1x3x64x64", seconds, 1e-5, 0.1, seconds / 1e-5)
        write(run / "timings.json", [timing], {})
    data = page_data(build_report(now))
    assert data["compared_with"] == "20260101-000000"
    assert [(n["kind"], n["text"].split(" (")[0]) for n in data["new"]] == [
        ("known issue", "known issue known-1 reproduced, in 1 cases"),
        ("slower", "resize on cpu [uint8, bilinear, 1x3x64x64]: 5.00x slower against the calibration op"),
    ]
    assert data["headline"].startswith("No new failures:") and data["headline"].endswith("2 other changes below")
    summary["environment"]["hypothesis_profile"] = "dev"  # another profile draws other cases: not compared
    write_summary_file(before, summary)
    assert page_data(build_report(now))["new"] == []


def test_an_image_with_no_pixels_is_drawn_as_a_dot_not_a_report_that_cannot_be_built():
    """An empty input's output (an error mode that returned one) reached the picture writer, and every report of
    the family failed with "cannot write empty image"."""
    import numpy as np

    from conformance.report import pictures

    empty = np.zeros((2, 3, 0, 5))
    panel = pictures.embed(pictures.to_picture(empty, 255.0))
    heat = pictures.embed(pictures.heatmap(pictures.difference(empty[0], empty[0]), 0.0))
    assert panel["src"].startswith("data:image/png") and heat["width"] > 0
