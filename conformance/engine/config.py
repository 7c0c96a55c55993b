"""The run configuration: read once from pytest's options, validated, then frozen.

Everything a run decides up front (targets, run folder, case sources asked for, known-issue
files, tolerance overrides, timeouts, hypothesis settings for spec tests) is here, so no
module keeps configuration in globals and a malformed value is a usage error before any
item runs.  Building it imports torch and discovers devices, so the plugin builds it only
when conformance is asked for (`asked_for`) or when specs are collected.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.engine import distribute, options, profiles, run_folders, shards
from conformance.engine.options import TARGETS_ENV, VIRTUAL_ENV

# Options whose presence means the user asked for a conformance run (and their defaults).
_OPTION_DEFAULTS: dict[str, Any] = {
    "targets": None,
    "virtual_devices": None,
    "virtual_findings": "fail",
    "fail_on_warning": False,
    "group_by": "auto",
    "case_timeout": None,
    "replay": None,
    "cases_from": None,
    "baseline": None,
    "record_outputs": None,
    "reports_dir": None,
    "run_name": None,
    "max_examples": None,
    "tolerances": None,
    "known_issues": [],
    "sweep": None,
    "shard": None,
    "relations": None,
}
_ENV = (TARGETS_ENV, VIRTUAL_ENV, "CONFORMANCE_REPORTS", "CONFORMANCE_CASE_TIMEOUT")


def asked_for(config: pytest.Config) -> bool:
    """Whether this session asked for conformance before collecting anything: `--conformance`
    (what `python -m conformance run` passes), any conformance option, or a CONFORMANCE_* variable."""
    if config.getoption("conformance", False):
        return True
    if any(config.getoption(name, default) != default for name, default in _OPTION_DEFAULTS.items()):
        return True
    return any(os.environ.get(name) for name in _ENV)


@dataclass(frozen=True)
class RunConfig:
    """One run's decisions; the same in every xdist worker (the run folder comes from the controller)."""

    targets: tuple[Any, ...]
    run_dir: Path
    worker: str
    replay: Any  # recipes.Case | None
    known_issue_files: tuple[Path, ...]  # --known-issues; empty: known_issues.toml beside each case module
    group_by: str
    case_timeout_s: float
    overrides: tuple[Any, ...]  # overrides.Override
    cases_from: Path | None
    baseline: Path | None
    record_outputs: Path | None
    virtual_findings: str
    fail_on_warning: bool
    shard: shards.Shard | None  # --shard: which part of the collection this run runs
    relations: frozenset[str]  # --relations: the relation checks this run makes items of
    hypothesis_settings: Any = field(compare=False)  # the settings every spec test runs with

    @property
    def target_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.targets)


def build(config: pytest.Config) -> RunConfig:
    """Read and validate every conformance option; each defect is a one-line pytest.UsageError.  (Its imports
    are here, not at the top: they import torch, which the plugin must not do in sessions that do not ask for
    conformance.)"""
    from conformance.checks.registry import relation_checks, value_checks
    from conformance.devices.discovery import discover, select
    from conformance.devices.targets import TargetSelectionError
    from conformance.spec import overrides
    from conformance.spec.issue_files import load
    from conformance.spec.known_issues import KnownIssuesError

    timeout = options.case_timeout(config)
    selection = config.getoption("targets")
    if selection is None:  # an empty --targets is an error, like "cpu,"; an empty variable means unset
        selection = os.environ.get(TARGETS_ENV) or "default"
    try:
        targets = select(selection, discover(options.virtual_count(config)))
    except TargetSelectionError as exc:
        raise pytest.UsageError(f"--targets: {exc}") from None
    issue_files = tuple(Path(p) for p in config.getoption("known_issues"))
    for path in issue_files:
        if not path.is_file():
            raise pytest.UsageError(f"--known-issues: no such file {str(path)!r}")
    for path in issue_files or options.default_issue_files(config):
        try:
            load(path, value_checks=value_checks())
        except KnownIssuesError as exc:
            raise pytest.UsageError(str(exc)) from None
    tolerances = config.getoption("tolerances")
    try:
        installed = tuple(overrides.load(Path(tolerances))) if tolerances is not None else ()
    except overrides.OverridesError as exc:
        raise pytest.UsageError(f"--tolerances: {exc}") from None
    replay = load_replay(config.getoption("replay"))
    cases_from, baseline = config.getoption("cases_from"), config.getoption("baseline")
    if cases_from is not None and replay is not None:
        raise pytest.UsageError("--cases-from and --replay cannot be combined: choose one source of cases")
    if baseline is not None and (replay is not None or cases_from is not None):
        raise pytest.UsageError(
            "--baseline checks the baseline's cases: it cannot be combined with --replay or --cases-from"
        )
    record = config.getoption("record_outputs")
    if record is not None and Path(record).exists() and not Path(record).is_dir():
        raise pytest.UsageError(f"--record-outputs: {record!r} exists and is not a folder")
    workerinput = getattr(config, "workerinput", None)
    return RunConfig(
        targets=tuple(targets),
        run_dir=run_folders.run_dir(config),
        worker=workerinput["workerid"] if workerinput else "main",
        replay=replay,
        known_issue_files=issue_files,
        group_by=distribute.group_by(config.getoption("group_by"), targets),
        case_timeout_s=timeout,
        overrides=installed,
        cases_from=Path(cases_from) if cases_from is not None else None,
        baseline=Path(baseline) if baseline is not None else None,
        record_outputs=Path(record) if record is not None else None,
        virtual_findings=config.getoption("virtual_findings"),
        fail_on_warning=config.getoption("fail_on_warning"),
        shard=shards.parse(config.getoption("shard")),
        relations=options.relations(config, relation_checks()),
        hypothesis_settings=spec_settings(config),
    )


def load_replay(value: str | None):
    """The --replay case (a recipes.Case) or None."""
    from conformance.spec.recipes import Case, RecipeError

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


def spec_settings(config: pytest.Config) -> Any:
    """The hypothesis settings spec tests run with: the profile the user chose with
    --hypothesis-profile, else ours (ci under $CI, dev otherwise), and --max-examples on top.
    Applied to each spec test, never loaded globally: other tests keep their own profile."""
    from hypothesis import HealthCheck, settings

    chosen = config.getoption("hypothesis_profile", None)
    base = settings.get_profile(chosen) if chosen else settings.get_profile(profiles.default_profile())
    # a spec test's `conformance_run` is its item's, the same for each example on purpose (plugin_items.ItemRun),
    # and a spec test is a plain function, never a method run by differing executors: with both checks off,
    # hypothesis' plugin also skips looking through each item's fixtures
    wanted = [HealthCheck.function_scoped_fixture, HealthCheck.differing_executors]
    missing = [check for check in wanted if check not in base.suppress_health_check]
    if missing:
        base = settings(base, suppress_health_check=[*base.suppress_health_check, *missing])
    max_examples = config.getoption("max_examples")
    if max_examples is not None:
        if max_examples < 1:
            raise pytest.UsageError(f"--max-examples must be at least 1, got {max_examples}")
        base = settings(base, max_examples=max_examples)
    return base


def profile_name(config: pytest.Config) -> str:
    """The name recorded with the run for the settings of `spec_settings`."""
    chosen = config.getoption("hypothesis_profile", None) or profiles.default_profile()
    max_examples = config.getoption("max_examples")
    return f"{chosen}+max_examples={max_examples}" if max_examples is not None else chosen


LOG_OPTIONS = ("log_level", "log_cli_level", "log_file", "log_file_level")  # each None unless set


def log_capture_wanted(config: Any) -> bool:
    """Whether the user asked for pytest's logging (a --log-* option or a log_* ini setting).  Unless they did,
    a conformance run goes without it: it attaches its handlers to every non-propagating logger at each phase of
    every item, and with torch's 57 such loggers that was 0.3 ms an item (2 s of the ci suite's 7,362 items),
    for records no check reads.  An op's warnings still reach stderr, which pytest captures and shows."""
    return any(config.getoption(name, None) for name in LOG_OPTIONS) or any(
        config.getini(name) for name in ("log_cli", *LOG_OPTIONS)
    )
