"""The plugin's options, read into the run: each malformed value a one-line usage error."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.recipes import Case, RecipeError
from conformance.session import ConformanceRun, default_run_name, unique_run_dir

TARGETS_ENV = "CONFORMANCE_TARGETS"
VIRTUAL_ENV = "CONFORMANCE_VIRTUAL_DEVICES"


def load_replay(value: str | None) -> Case | None:
    if value is None:
        return None
    text = value
    if not value.lstrip().startswith("{"):
        path = Path(value)
        if not path.is_file():
            raise pytest.UsageError(f"--replay: {value!r} is neither a JSON case nor an existing .json file")
        text = path.read_text(encoding="utf-8")
    try:
        return Case.from_json(text)
    except RecipeError as exc:
        raise pytest.UsageError(f"--replay: {exc}") from None


def configure_timeout(config: pytest.Config) -> None:
    from conformance.calls import set_case_timeout

    value = config.getoption("case_timeout")
    if value is None:
        text = os.environ.get("CONFORMANCE_CASE_TIMEOUT", "60")
        try:
            value = float(text)
        except ValueError:
            raise pytest.UsageError(f"CONFORMANCE_CASE_TIMEOUT: expected seconds, got {text!r}") from None
    if not value >= 0:
        raise pytest.UsageError(f"--case-timeout must be 0 (none) or a positive number of seconds, got {value}")
    set_case_timeout(value)


def virtual_count(config: pytest.Config) -> int | None:
    text = config.getoption("virtual_devices") or os.environ.get(VIRTUAL_ENV)
    if text is None or text == "":
        return None
    if not text.strip().isdigit() or not 0 <= int(text) <= 16:
        raise pytest.UsageError(f"--virtual-devices: expected a whole number from 0 to 16, got {text!r}")
    return int(text)


def default_issue_files(config: pytest.Config) -> list[Path]:
    """known_issues.toml files the collected case modules will use, found up front so a
    broken one is a usage error before any test runs (folders: itself and one level down)."""
    found: set[Path] = set()
    for arg in config.args:
        path = Path(arg.split("::")[0])
        folders = [path.parent] if path.is_file() else [path, *(p for p in path.glob("*/") if p.is_dir())]
        found.update(f / "known_issues.toml" for f in folders if (f / "known_issues.toml").is_file())
    return sorted(found)


def run_dir(config: pytest.Config) -> Path:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and "conformance_run_dir" in workerinput:
        return Path(workerinput["conformance_run_dir"])
    reports = Path(config.getoption("reports_dir") or os.environ.get("CONFORMANCE_REPORTS") or config.rootpath / "reports")
    problem = unwritable(reports)  # the user's to fix: said once, before any item runs (nothing is created here)
    if problem:
        raise pytest.UsageError(f"--reports-dir: cannot write runs into {str(reports)!r}: {problem}")
    return unique_run_dir(reports, config.getoption("run_name") or default_run_name())


def unwritable(folder: Path) -> str | None:
    """Why runs cannot be written into `folder` (created later, with its parents), or None."""
    existing = folder
    while not existing.exists():
        if existing.is_symlink():
            return f"{existing} is a broken symlink"
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a folder"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable"
    return None


def configure_outputs(config: pytest.Config, run: ConformanceRun) -> None:
    """--baseline: its cases, its outputs to compare with, this run's outputs recorded beside the outcomes;
    --record-outputs: outputs recorded into the given folder."""
    from conformance.checks.baseline import BaselineOutputs
    from conformance.outputs import OutputRecorder, OutputsError, outputs_folder, plans

    baseline, record = config.getoption("baseline"), config.getoption("record_outputs")
    if baseline is not None:
        if run.replay is not None or config.getoption("cases_from") is not None:
            raise pytest.UsageError("--baseline checks the baseline's cases: it cannot be combined with "
                                    "--replay or --cases-from")
        try:
            loaded = BaselineOutputs(outputs_folder(Path(baseline)))
            run.use_saved_cases(Path(baseline), plans(loaded.index))
        except OutputsError as exc:
            raise pytest.UsageError(f"--baseline: {exc}") from None
        run.shared.baseline = loaded
        run.options = run.options | {"baseline"}
    folder = Path(record) if record is not None else (run.run_dir / "outputs" if baseline is not None else None)
    if folder is not None:
        if folder.exists() and not folder.is_dir():
            raise pytest.UsageError(f"--record-outputs: {str(folder)!r} exists and is not a folder")
        run.recorder = OutputRecorder(folder, run.worker)
