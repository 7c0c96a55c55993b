"""Read the report's pages back in the harness's tests: the dashboard's embedded data, and a headless Chromium
from Debian's packages to drive them (never a downloaded browser)."""

import json
import os
import shutil
from pathlib import Path

import pytest


def page_data(index: Path) -> dict:
    """The JSON the dashboard draws, as the page embeds it."""
    html = index.read_text()
    start = html.index('<script type="application/json" id="data">') + len('<script type="application/json" id="data">')
    return json.loads(html[start : html.index("</script>", start)])


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
