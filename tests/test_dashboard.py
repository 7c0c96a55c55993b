"""The dashboard and the cross-library heatmaps, driven in headless Chromium: what a reader does first
(read the headline, filter to new failures, open a cell, search, share a link), from real runs."""

import os
import re
import shutil
from pathlib import Path

import pytest
from report_pages import chromium, images_loaded, inline_data, page_data
from synthetic_runs import write_operation_run, write_run

from conformance.report.build import build_report
from conformance.report.check_columns import CHECK_COLUMNS

PLANTED = Path(__file__).with_name("planted_ops.py").read_text()
DOCS_IMAGES = Path(__file__).parents[1] / "docs" / "images"
HOSTILE = "<script>alert('x')</script>\"'../../etc/passwd"
RUN = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=15", "--targets=cpu,vcuda:1"]
CASES = """
from planted_ops import *
test_good = make_spec("good", good_resize).test()
test_shifted = make_spec("shifted", shifted_resize, dtypes=("uint8",)).test()
test_float_resize = make_spec("float_resize", float_resize, dtypes=("float32",)).test()
"""


@pytest.fixture
def browser():
    opened = chromium()
    yield opened
    opened.quit()


def real_run(pytester, cases: str) -> Path:
    pytester.makepyfile(planted_ops=PLANTED, test_cases=cases)
    pytester.runpytest_inprocess(*RUN)
    return (pytester.path / "reports" / "latest").resolve()


def shown_rows(browser):
    from selenium.webdriver.common.by import By

    return [r for r in browser.find_elements(By.CSS_SELECTOR, "#matrix tr.variant") if r.is_displayed()]


def opened(browser):
    """The drill-down once its family's file (index_files/) has been loaded and drawn."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    drill = browser.find_element(By.ID, "drill")
    WebDriverWait(browser, 10).until(lambda _: drill.get_attribute("data-ready"))
    return drill


def keep_screenshot(browser, name: str, tmp_path: Path) -> Path:
    """The picture for docs/images/ (rewritten there when CONFORMANCE_UPDATE_SCREENSHOTS=1)."""
    path = tmp_path / name
    browser.save_screenshot(str(path))
    if os.environ.get("CONFORMANCE_UPDATE_SCREENSHOTS") == "1":
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_IMAGES / name)
    return path


def test_a_planted_regression_leads_the_first_screen_and_the_reader_can_filter_drill_search_and_share(
    pytester, browser, tmp_path
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    run = real_run(pytester, CASES)
    assert "- failure: shifted \\[uint8, bilinear\\] on cpu: reference fail" in (run / "summary.md").read_text()
    browser.get((run / "index.html").as_uri())
    headline = browser.find_element(By.ID, "headline")
    assert headline.text.startswith("2 new failures;")  # shifted's reference item on cpu and on vcuda:1
    first_screen = browser.execute_script("return window.innerHeight")
    new = browser.find_elements(By.CSS_SELECTOR, "#new-list li")
    assert [li.text.split(": ", 1)[1].removesuffix(" open") for li in new] == [
        "shifted [uint8, bilinear] on cpu: reference fail",
        "shifted [uint8, bilinear] on vcuda:1: reference fail",
    ]
    assert all(li.rect["y"] + li.rect["height"] < first_screen for li in new)  # no scrolling to find them
    assert [r.find_element(By.CSS_SELECTOR, "td.name").text for r in shown_rows(browser)] == [
        "float_resize",
        "good",
        "good",
        "shifted",
    ]  # the family with a new failure is open
    keep_screenshot(browser, "dashboard-first-screen.png", tmp_path)

    Select(browser.find_element(By.ID, "f-verdict")).select_by_value("new")
    rows = shown_rows(browser)
    assert [r.find_element(By.CSS_SELECTOR, "td.name").text for r in rows] == ["shifted"]
    failing = rows[0].find_elements(By.CSS_SELECTOR, "td.cell.v-fail:not(.dim)")
    assert len(failing) == 2
    failing[1].click()  # vcuda:1
    drill = opened(browser)
    assert browser.find_element(By.ID, "drill-title").text == "shifted [uint8, bilinear] on vcuda:1: fail"
    headings = [h.text for h in drill.find_elements(By.CSS_SELECTOR, "#drill-checks th")]
    assert headings == [c.heading for c in CHECK_COLUMNS]  # the page draws the run's columns, none of its own
    checks = [r.text.split(" ")[0] for r in drill.find_elements(By.CSS_SELECTOR, "#drill-checks tr")[1:]]
    assert checks[0] == "reference" and {"error", "invariants", "placement", "cross_device"} <= set(checks)
    assert images_loaded(browser, drill.find_elements(By.CSS_SELECTOR, "section.case img"))
    assert drill.find_element(By.CSS_SELECTOR, "code.repro").text.startswith("python -m conformance run")
    browser.execute_script("arguments[0].scrollIntoView()", drill)
    keep_screenshot(browser, "dashboard-drill-down.png", tmp_path)

    shared = browser.current_url
    assert "verdict=new" in shared and "cell=" in shared
    browser.get("about:blank")
    browser.get(shared)  # the link opens the same view
    assert opened(browser).find_element(By.ID, "drill-title").text == "shifted [uint8, bilinear] on vcuda:1: fail"
    assert Select(browser.find_element(By.ID, "f-verdict")).first_selected_option.get_attribute("value") == "new"
    assert [r.find_element(By.CSS_SELECTOR, "td.name").text for r in shown_rows(browser)] == ["shifted"]

    browser.find_element(By.ID, "f-clear").click()
    browser.find_element(By.ID, "f-q").send_keys("float_re")
    assert {r.find_element(By.CSS_SELECTOR, "td.name").text for r in shown_rows(browser)} == {"float_resize"}
    assert "q=float_re" in browser.current_url


KNOWN = """
[[issue]]
id = "nudged-corner"
op = "nudged"
checks = ["reference"]
max_abs = 3
link = "https://example.org/nudged"
reason = "planted: the first pixel 2 levels up"
"""
NUDGED = """
import torch
from planted_ops import *

def nudged_resize(image, params):
    out = good_resize(image, params)
    out[..., 0, 0] = (out[..., 0, 0].to(torch.int32) + 2).clamp(0, 255).to(out.dtype)
    return out

test_nudged = make_spec("nudged", nudged_resize, dtypes=("uint8",)).test()
"""


def test_each_cell_shows_how_much_of_it_passes_and_a_failure_stays_red(pytester, browser):
    """A family whose only divergence is a documented one shows the share that passes, tinted as passing, with its
    known-issue cases apart (the bar, the title); a family with an unexpected failure is red whatever its share."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    pytester.makepyfile(
        planted_ops=PLANTED,
        test_warps=NUDGED,
        test_broken='from planted_ops import *\ntest_shifted = make_spec("shifted", shifted_resize).test()\n',
    )
    (pytester.path / "known_issues.toml").write_text(KNOWN)
    pytester.runpytest_inprocess(*RUN)
    browser.get((pytester.path / "reports" / "latest" / "index.html").resolve().as_uri())
    families = {tr.get_attribute("data-family"): tr for tr in browser.find_elements(By.CSS_SELECTOR, "tr.family")}
    assert set(families) == {"warps", "broken"}
    red = (224, 85, 79)

    def colour(cell) -> tuple[int, ...]:
        return tuple(int(x) for x in re.findall(r"\d+", cell.value_of_css_property("background-color"))[:3])

    for cell in families["warps"].find_elements(By.CSS_SELECTOR, "td.cell"):  # cpu, vcuda:1
        share, title = int(cell.text.removesuffix("%")), cell.get_attribute("title")
        assert 50 <= share < 100 and title.startswith(f"{share}% pass (")  # reference's uint8 cases only
        assert " a known issue (documented divergence)" in title and "unexpectedly" not in title
        r, g, _ = colour(cell)
        assert "v-known_issue" in cell.get_attribute("class") and g > r  # green, not a known issue's amber
        assert "#e8891a" in cell.get_attribute("style") or "232, 137, 26" in cell.get_attribute("style")  # its bar
    for cell in families["broken"].find_elements(By.CSS_SELECTOR, "td.cell"):
        assert "v-fail" in cell.get_attribute("class") and colour(cell) == red
        assert cell.text.endswith("%") and " fail unexpectedly" in cell.get_attribute("title")
    finding = '#findings-list li[data-issue="nudged-corner"]'  # drawn once the first screen is painted
    WebDriverWait(browser, 10).until(lambda _: browser.find_elements(By.CSS_SELECTOR, finding))


def test_a_green_run_says_so_in_one_line_and_opens_on_its_families(pytester, browser):
    from selenium.webdriver.common.by import By

    run = real_run(pytester, 'from planted_ops import *\ntest_good = make_spec("good", good_resize).test()\n')
    browser.get((run / "index.html").as_uri())
    headline = browser.find_element(By.ID, "headline")
    assert headline.text.startswith("No new failures:") and headline.rect["height"] < 40  # one line
    assert not browser.find_element(By.ID, "new").is_displayed()
    families = browser.find_elements(By.CSS_SELECTOR, "#matrix tr.family")
    assert len(families) == 1 and shown_rows(browser) == []  # closed until clicked
    families[0].find_element(By.CSS_SELECTOR, "td.name").click()
    assert {r.find_element(By.CSS_SELECTOR, "td.name").text for r in shown_rows(browser)} == {"good"}


def test_hostile_strings_stay_text_in_the_browser(tmp_path, browser):
    from selenium.webdriver.common.by import By

    run = write_run(tmp_path / "run", outcomes=3, failures=1, op=HOSTILE, message=HOSTILE, target=HOSTILE)
    browser.get(build_report(run).as_uri() + "#q=%3Cscript%3E")
    names = {r.find_element(By.CSS_SELECTOR, "td.name").text for r in shown_rows(browser)}
    assert names == {HOSTILE}  # shown as text, found by the search
    assert not browser.find_elements(By.CSS_SELECTOR, "#matrix script, #new script")


def test_a_page_without_its_folder_says_where_a_cells_details_are(tmp_path, browser):
    """index.html copied alone (its index_files/ left behind) still draws the matrix; an opened cell says which
    file it needs instead of waiting for it."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    run = write_run(tmp_path / "run", outcomes=6, failures=1)
    index = build_report(run)
    cell = next(n["cell"] for n in inline_data(index)["new"])
    shutil.rmtree(run / "index_files")
    browser.get(index.as_uri() + "#cell=" + cell)
    drill = browser.find_element(By.ID, "drill")
    WebDriverWait(browser, 10).until(lambda _: drill.find_elements(By.CSS_SELECTOR, "p.damaged"))
    assert "index_files/f0.js beside this page, which could not be read" in drill.text
    assert browser.find_element(By.ID, "drill-title").text.endswith(": fail") and shown_rows(browser)


def test_the_cross_library_heatmaps_link_to_the_worst_cases(tmp_path, browser):
    from selenium.webdriver.common.by import By

    run = write_operation_run(tmp_path / "run", library=HOSTILE)
    index = build_report(run)
    assert page_data(index)["matrix"]["rows"]
    browser.get(index.as_uri())
    browser.find_element(By.CSS_SELECTOR, "#crosslib-link a").click()
    assert browser.current_url.endswith("/crosslib.html")
    headers = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "#heat-reference thead th")]
    assert headers == ["operation", "torchvision v2", HOSTILE]
    (row,) = browser.find_elements(By.CSS_SELECTOR, "#heat-reference tbody tr")
    cells = row.find_elements(By.CSS_SELECTOR, "th, td")
    assert [c.text for c in cells] == ["blur", "1", "3"]  # each library's worst target
    assert cells[1].get_attribute("title") == "blur_tv2 on vcuda:0 [uint8, default]: 1 against atol 1; pass"
    assert cells[2].get_attribute("title") == "blur_other on cpu [uint8, default]: 3 against atol 1; fail"
    assert "fail" in cells[2].get_attribute("class")  # the red border of a new failure
    pairs = browser.find_elements(By.CSS_SELECTOR, "#heat-pairs thead th")
    assert [h.text.replace("\n", " ") for h in pairs] == ["operation", f"torchvision v2 vs {HOSTILE}"]
    (pair,) = browser.find_elements(By.CSS_SELECTOR, "#heat-pairs tbody td")
    assert pair.text == "3" and pair.get_attribute("title").startswith("blur_other on cpu vs blur_tv2 on cpu")
    cells[2].find_element(By.TAG_NAME, "a").click()
    card = browser.find_element(By.CSS_SELECTOR, "section.card:target")
    assert images_loaded(browser, card.find_elements(By.TAG_NAME, "img"))
    assert "<script>" not in browser.page_source.split("<body>")[1].replace("&lt;script&gt;", "")


def test_timing_bars_are_drawn_to_scale(tmp_path, browser):
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
    browser.get(build_report(run).as_uri())
    bars = browser.find_elements(By.CSS_SELECTOR, "#timings ~ div figure.timing svg rect")
    widths = [float(b.get_attribute("width")) for b in bars if b.get_attribute("height") == "12"]
    assert len(widths) == 2 and widths[0] < widths[1]  # drawn, and the slower call has the longer bar
