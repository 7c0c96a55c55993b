"""The HTML report: built from the store, escaped, bounded, mergeable, and rendered by a real browser."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from synthetic_runs import write_operation_run, write_run

from conformance.report.build import build_report
from conformance.report.merge import merge_runs

HOSTILE = "<script>alert('x')</script>\"'../../etc/passwd"


def test_a_report_shows_the_matrix_failures_first_with_pictures(tmp_path):
    run = write_run(tmp_path / "run", outcomes=60, failures=2)
    index = build_report(run)
    html = index.read_text()
    assert html.index("fail") < html.index("known issue") < html.index(">pass<")
    assert 'vcuda:1 <span class="virtual">(virtual)</span>' in html
    assert "Known issue <b>known-1</b>: a known divergence" in html
    assert html.count('alt="difference"') == 2  # one heatmap per failing check
    assert 'alt="histogram"' in html and ' crop"' in html
    assert html.count('src="data:image/png;base64,') >= 10 and not (run / "report").exists()  # one file to share
    assert "Incomplete run" not in html


def test_hostile_strings_are_escaped_in_the_page_and_harmless_in_file_names(tmp_path):
    run = write_run(
        tmp_path / "run", outcomes=3, failures=1, op=HOSTILE, message=HOSTILE, params={"size": HOSTILE}, target=HOSTILE
    )
    html = build_report(run).read_text()
    assert "<script>alert" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&#34;&#39;../../etc/passwd" in html
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
    summary = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert summary["machines"] == ["h100-runner", HOSTILE]
    assert {g["machine"] for g in summary["groups"]} == {"h100-runner", HOSTILE}
    html = index.read_text()
    assert "h100-runner<br>cuda:0" in html and "<script>alert" not in html
    assert html.count('alt="difference"') == 2
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "merge", str(a), "-o", str(tmp_path / "merged")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 4 and "exists and is not empty" in done.stderr


def test_report_size_follows_failures_not_passing_examples(tmp_path):
    small = write_run(tmp_path / "small", outcomes=100, failures=2)
    large = write_run(tmp_path / "large", outcomes=5000, failures=2)
    sizes = []
    for run in (small, large):
        build_report(run)
        sizes.append((run / "index.html").stat().st_size)
    assert sizes[1] <= sizes[0] * 1.05  # 50x the passing outcomes, about the same report


def _chromium():
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (browser and driver):
        message = "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
        if os.environ.get("CONFORMANCE_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)  # no download


def test_the_report_renders_in_headless_chromium(tmp_path):
    from selenium.webdriver.common.by import By

    from conformance.store.timings import Timing, write

    run = write_run(tmp_path / "run", outcomes=30, failures=2)
    write(
        run / "timings.json",
        [
            Timing("resize", "cpu", "uint8", "bilinear", shape, seconds, 1e-5, 0.1, seconds / 1e-5)
            for shape, seconds in (("1x3x16x16", 5e-5), ("1x3x1080x1920", 9e-3))
        ],
        {},
    )
    index = build_report(run)
    browser = _chromium()
    try:
        browser.get(index.as_uri())
        rows = browser.find_elements(By.CSS_SELECTOR, "#matrix tr.row")
        verdicts = [row.get_attribute("data-verdict") for row in rows]
        assert verdicts[0] == "fail" and {"fail", "known_issue", "skipped", "pass"} <= set(verdicts)
        images = browser.find_elements(By.CSS_SELECTOR, "section.detail img")
        assert images and all(
            browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", i) for i in images
        )
        browser.find_element(By.ID, "failures-only").click()
        shown = [r.get_attribute("data-verdict") for r in rows if r.is_displayed()]
        assert shown and set(shown) <= {"fail", "error"}
        browser.find_element(By.ID, "failures-only").click()
        assert all(r.is_displayed() for r in rows)
        bars = browser.find_elements(By.CSS_SELECTOR, "#timings ~ div figure.timing svg rect")
        widths = [float(b.get_attribute("width")) for b in bars if b.get_attribute("height") == "12"]
        assert len(widths) == 2 and widths[0] < widths[1]  # drawn, and the slower call has the longer bar
    finally:
        browser.quit()


def test_the_cross_library_page_opens_from_the_report_in_headless_chromium(tmp_path):
    from selenium.webdriver.common.by import By

    run = write_operation_run(tmp_path / "run", library=HOSTILE)
    index = build_report(run)
    browser = _chromium()
    try:
        browser.get(index.as_uri())
        browser.find_element(By.CSS_SELECTOR, "#crosslib-link a").click()
        assert browser.current_url.endswith("/crosslib.html")
        rows = browser.find_elements(By.CSS_SELECTOR, "#crosslib tr.row")
        assert [r.get_attribute("data-verdict") for r in rows] == ["fail"]
        headers = [h.text.replace("\n", " ") for h in browser.find_elements(By.CSS_SELECTOR, "#crosslib thead th")]
        assert headers[1:] == ["torchvision v2 cpu", "torchvision v2 vcuda:0 (virtual)", f"{HOSTILE} cpu"]
        cells = [(c.get_attribute("data-op"), c.text) for c in rows[0].find_elements(By.CSS_SELECTOR, "span.impl")]
        assert [op for op, _ in cells] == ["blur_tv2", "blur_tv2", "blur_other"]  # cpu, vcuda:0, the host library
        assert "vs reference: 3 / 1" in cells[2][1] and "vs torchvision v2: 3" in cells[2][1]
        assert "(1 not compared)" in cells[2][1]
        assert f"vs {HOSTILE}: 3" in cells[0][1] and HOSTILE not in cells[1][1]  # each pair shows in both its cells
        browser.find_element(By.LINK_TEXT, "blur_other").click()
        images = browser.find_elements(By.CSS_SELECTOR, "section.card img")
        assert len(images) == 9  # input, reference, output, heatmap; and the same with the peer's output
        scales = browser.find_elements(By.CSS_SELECTOR, "section.card span.scale")
        assert [s.text.replace("\n", " ") for s in scales] == ["0 3 levels", "0 3 levels"]  # drawn by the page
        assert all(
            browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth", i) for i in images
        )
        assert "<script>" not in browser.page_source.split("<body>")[1].split("</body>")[0].replace(
            "&lt;script&gt;", ""
        )
    finally:
        browser.quit()


def test_module_behaviours_warnings_and_the_diverging_side_are_shown(tmp_path):
    from conformance.checks.registry import CheckOutcome
    from conformance.devices import environment
    from conformance.devices.targets import CPU, virtual_targets
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
        writer.item_started(base, nodeid, check, {}, [])
        writer.example("explore", 0, case, verdict, outcome, outcome.message, None, None, None)
        writer.item_ended(base, nodeid, check)
    writer.close()
    write_summary(run, complete=True)
    html = build_report(run).read_text()
    assert 'id="module-behaviours"' in html and "raises an unclear error (1)" in html
    assert 'id="warning-list"' in html and "uploads on every call: &lt;script&gt;" in html
    assert "differs from the cpu in 1 case(s), where the cpu is the side off the reference" in html
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
    html = build_report(run).read_text()
    assert len(used) == 2 and html.count("Pictures unavailable") == 2
    assert 'alt="difference"' not in html


def test_a_truncated_artifact_or_summary_is_skipped_and_the_rest_reported(tmp_path):
    run = write_run(tmp_path / "run", outcomes=20, failures=2)
    first = sorted((run / "artifacts").iterdir())[0]
    first.write_bytes(first.read_bytes()[:100])
    (run / "summary.json").write_text('{"complete": tr')
    html = build_report(run).read_text()
    assert "Pictures unavailable" in html and html.count('alt="difference"') >= 1  # the other keeps its pictures
    result = subprocess.run([sys.executable, "-m", "conformance", "summary", str(run)], capture_output=True, text=True)
    assert result.returncode == 0 and "Traceback" not in result.stderr
    assert json.loads((run / "summary.json").read_text())["complete"] is False
