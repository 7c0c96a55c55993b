"""Where `conformance run` finds the stock suite, and when it runs it beside a user's own case folders
(conformance.suite): in the checkout, from another directory, with --no-stock, with a node id."""

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.suite import stock as suite
from conformance.suite.stock import NO_STOCK, stock_cases, suite_arguments

REPO = Path(__file__).resolve().parent.parent


def test_the_stock_suite_is_the_checkouts_cases_folder():
    assert stock_cases() == REPO / "cases"


def test_in_the_checkout_nothing_named_is_the_stock_suite_by_testpaths(monkeypatch):
    monkeypatch.chdir(REPO)
    assert suite_arguments(["-k", "tone"]) == ["-o", "testpaths=cases", "-k", "tone"]
    assert suite_arguments(["cases/test_tone.py"]) == ["-o", "testpaths=cases", "cases/test_tone.py"]


def test_a_users_own_folder_runs_beside_the_stock_suite_unless_no_stock(monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    mine = tmp_path / "mycases"
    mine.mkdir()
    assert suite_arguments([str(mine)]) == ["-o", "testpaths=cases", str(mine), "cases"]
    assert suite_arguments([NO_STOCK, str(mine)]) == ["-o", "testpaths=cases", str(mine)]
    item = f"{mine}/test_a.py::test_a[cpu-float32-default-reference]"
    assert suite_arguments([item]) == ["-o", "testpaths=cases", item]  # a node id names one item: no suite added


def test_from_another_directory_the_suite_keeps_its_ids_and_the_reports_stay_here(monkeypatch, tmp_path):
    """Outside the checkout (as from an installed wheel) the rootdir is the folder above the stock suite, so ids
    read `cases/test_x.py::...`; runs and pytest's cache go to the current directory, never into the package."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CONFORMANCE_REPORTS", raising=False)
    stock = stock_cases()
    assert stock is not None
    where = [f"--rootdir={stock.parent}", "-o", f"cache_dir={tmp_path / '.pytest_cache'}"]
    assert suite_arguments(["-q"]) == [*where, f"--reports-dir={tmp_path / 'reports'}", "-q", str(stock)]
    item = "cases/test_tone.py::test_invert_v2[cpu-uint8-default-reference]"
    resolved = f"{stock / 'test_tone.py'}::test_invert_v2[cpu-uint8-default-reference]"
    assert suite_arguments([item, "--reports-dir=out"]) == [*where, resolved, "--reports-dir=out"]


def test_no_stock_without_a_folder_is_a_usage_error(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="none is named"):
        suite_arguments([NO_STOCK, "-k", "tone"])


def test_option_values_are_not_taken_for_paths():
    assert suite.named_paths(["-k", "tone", "-p", "no:cacheprovider", "cases", "--tb", "short"]) == ["cases"]


def test_a_run_that_collects_nothing_is_a_one_line_usage_error_with_no_run_folder(tmp_path):
    (tmp_path / "mine").mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "conformance", "run", NO_STOCK, "mine", "-n", "0", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 4, result.stdout[-1500:] + result.stderr[-1500:]
    said = [line for line in (result.stdout + result.stderr).splitlines() if "no items to run" in line]
    assert said == ["ERROR: no items to run: nothing collected from mine"], said
    assert not (tmp_path / "reports").exists()
