"""Read the report's pages back in the harness's tests: the dashboard's embedded data, and a headless Chromium
from Debian's packages to drive them (never a downloaded browser)."""

import json
import os
import shutil
from pathlib import Path

import pytest


def inline_data(index: Path) -> dict:
    """The JSON the page embeds: its first screen (each cell without its checks, no worst cases)."""
    html = index.read_text()
    start = html.index('<script type="application/json" id="data">') + len('<script type="application/json" id="data">')
    return json.loads(html[start : html.index("</script>", start)])


def family_file(path: Path) -> dict:
    """One of index_files/: a call `conformanceDetails("<file>", <JSON>);` with what a family's cells open to."""
    text = path.read_text()
    head = f'conformanceDetails("{path.name}",'
    assert text.startswith(head) and text.endswith(");\n"), text[:200]
    return json.loads(text[len(head) : -len(");\n")])


def report_text(index: Path) -> str:
    """index.html and the family files beside it (index_files/) that its cells open to, as one text."""
    return index.read_text() + "".join(p.read_text() for p in sorted((index.parent / "index_files").glob("*.js")))


def page_data(index: Path) -> dict:
    """The JSON the dashboard draws: the page's own, with what its cells open to put back as the page does when
    a cell is opened (each family's file in index_files/): each cell's `checks`, and the worst cases (`details`)."""
    data = inline_data(index)
    rows = {row["id"]: row for row in data["matrix"]["rows"]}
    data["details"] = []
    for name in dict.fromkeys(data["files"].values()):
        part = family_file(index.parent / data["folder"] / name)
        for place, checks in part["checks"].items():
            row, column = place.split(".")
            rows[row]["cells"][column]["checks"] = checks
        data["details"] += part["details"]
    return data


def chromium(width: int = 1400, height: int = 1000):
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
    options.add_argument(f"--window-size={width},{height}")
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)  # no download


def images_loaded(browser, images) -> bool:
    return bool(images) and all(
        browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", i) for i in images
    )
