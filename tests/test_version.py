"""One version in three places: CHANGELOG.md's newest entry, pyproject.toml, and the installed metadata that a run
folder records and `conformance.__version__` reads (a version bumped in one place only would label runs with a version
the changelog does not know)."""

import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def changelog_version() -> str:
    """The first `## [X.Y.Z] - date` heading: Keep a Changelog lists the newest first."""
    found = re.search(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert found, "CHANGELOG.md has no '## [X.Y.Z] - YYYY-MM-DD' heading"
    return found[1]


def pyproject_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_pyproject_version_is_the_changelogs_newest():
    assert pyproject_version() == changelog_version()


def test_the_changelog_has_no_unreleased_entry_on_top():
    text = (ROOT / "CHANGELOG.md").read_text()
    first = re.search(r"^## .*$", text, re.M)
    assert first and "unreleased" not in first[0].lower(), first[0] if first else "no entry"


def test_installed_metadata_follows_pyproject():
    try:
        installed = importlib.metadata.version("conformance")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("conformance is not installed (no metadata to compare)")
    assert installed == pyproject_version(), "reinstall: pip install -e . --no-deps"


def test_the_packages_version_attribute_is_the_installed_one():
    import conformance

    try:
        installed = importlib.metadata.version("conformance")
    except importlib.metadata.PackageNotFoundError:
        assert conformance.__version__ == "unknown"
        return
    assert conformance.__version__ == installed == pyproject_version()


def test_a_run_records_the_version_that_wrote_it():
    from conformance.devices.environment import collect
    from conformance.devices.targets import CPU
    from conformance.spec.versions import harness_version

    env = collect([CPU])
    assert env["conformance"] == harness_version()
    try:
        assert env["conformance"] == importlib.metadata.version("conformance")
    except importlib.metadata.PackageNotFoundError:
        assert env["conformance"] == "unknown"


def test_the_reports_environment_table_shows_the_version(tmp_path):
    import json

    from synthetic_runs import write_run

    from conformance.report.build import build_report
    from conformance.spec.versions import harness_version

    run = write_run(tmp_path / "run", outcomes=4, failures=0)
    assert json.loads((run / "summary.json").read_text())["environment"]["conformance"] == harness_version()
    assert f"<tr><td>conformance</td><td>{harness_version()}</td></tr>" in build_report(run).read_text()
