"""The pytest plugin: options, target parametrization, the result store, the summary.

Loaded through the `pytest11` entry point (and by the repo's conftest.py).
Only functions built by `OpSpec.test()` are touched; other tests run as usual.
"""
from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import pytest
from hypothesis import settings

from conformance import distribute, options, overrides, profiles
from conformance.environment import header_lines
from conformance.known_issues import KnownIssuesError
from conformance.options import TARGETS_ENV, VIRTUAL_ENV
from conformance.results import (SavedCasesError, format_modules, format_table, read_outcomes, saved_cases,
                                 write_summary)
from conformance.checks import applicable
from conformance.spec import item_params_id
from conformance.session import ConformanceFailure, ConformanceRun, warn
from conformance.targets import TargetSelectionError, discover, select

profiles.register()  # before hypothesis' own plugin reads --hypothesis-profile

RUN_KEY = pytest.StashKey[ConformanceRun]()
SIGTERM_KEY = pytest.StashKey[object]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "cross-device conformance")
    group.addoption("--targets", default=None, metavar="LIST",
                    help=f"where ops run: comma list (cpu,cuda:1), 'all' (default) or 'gpu'; env {TARGETS_ENV}")
    group.addoption("--virtual-devices", default=None, metavar="N",
                    help="how many virtual vcuda:N targets exist (0 turns them off; default 2 when fewer "
                         f"than two real accelerators are visible); env {VIRTUAL_ENV}")
    group.addoption("--virtual-findings", choices=("fail", "warn"), default="fail",
                    help="failures on virtual targets fail the gate (default) or are reported as warnings (xfail)")
    group.addoption("--group-by", choices=("auto", "target", "variant"), default="auto",
                    help="how items are grouped for pytest-xdist (-n N; loadgroup is used unless --dist is given): "
                         "'target' keeps each worker on one device, 'variant' runs an op/dtype/mode on every "
                         "target in one worker so drawn cases, inputs and references are shared; auto: 'target' when "
                         "two or more real accelerators are selected, else 'variant'")
    group.addoption("--case-timeout", type=float, default=None, metavar="SECONDS",
                    help="per-call time limit for ops; a call past it is an error outcome and the run goes on "
                         "(default 60; 0 = none; env CONFORMANCE_CASE_TIMEOUT)")
    group.addoption("--replay", default=None, metavar="CASE",
                    help="run exactly one saved case: its JSON, or a path to a .json file")
    group.addoption("--cases-from", default=None, metavar="RUN",
                    help="check exactly the cases an earlier run checked (its run folder or an outcomes/*.jsonl "
                         "file), on this run's targets, instead of drawing new ones; items it has no cases for "
                         "are skipped")
    group.addoption("--baseline", default=None, metavar="DIR",
                    help="compare with a baseline made on another build (python -m conformance baseline): check "
                         "exactly its cases, add a 'baseline' check per target (a change beyond tolerance fails, a "
                         "bit-level change is a warning) and record this run's outputs for `compare`")
    group.addoption("--record-outputs", default=None, metavar="DIR",
                    help="record every checked output (digest and array) into DIR (what `baseline` does)")
    group.addoption("--reports-dir", default=None, metavar="DIR",
                    help="where runs are stored (default: <rootdir>/reports; env CONFORMANCE_REPORTS)")
    group.addoption("--run-name", default=None, metavar="NAME", help="name of this run's folder (default: a timestamp)")
    group.addoption("--max-examples", type=int, default=None, metavar="N",
                    help="override the hypothesis profile's max_examples for this session (quick smoke runs)")
    group.addoption("--tolerances", default=None, metavar="FILE",
                    help="tolerance overrides (TOML [[tolerance]] tables, see conformance/overrides.py), "
                         "tried before each op's own rules")
    group.addoption("--known-issues", action="append", default=[], metavar="FILE",
                    help="known-issues TOML file(s); default: known_issues.toml beside each case module")


def _interrupt_on_sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum} (SIGTERM)")


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("hypothesis_profile", None) is None:
        settings.load_profile(profiles.default_profile())
    max_examples = config.getoption("max_examples")
    if max_examples is not None:
        if max_examples < 1:
            raise pytest.UsageError(f"--max-examples must be at least 1, got {max_examples}")
        name = f"{profiles.current_profile()}+max_examples={max_examples}"
        settings.register_profile(name, parent=settings.default, max_examples=max_examples)
        settings.load_profile(name)
    options.configure_timeout(config)
    selection = config.getoption("targets")
    if selection is None:  # an empty --targets is an error, like "cpu,"; an empty variable means unset
        selection = os.environ.get(TARGETS_ENV) or "all"
    try:
        targets = select(selection, discover(options.virtual_count(config)))
    except TargetSelectionError as exc:
        raise pytest.UsageError(f"--targets: {exc}") from None
    issue_files = [Path(p) for p in config.getoption("known_issues")]
    for path in issue_files:
        if not path.is_file():
            raise pytest.UsageError(f"--known-issues: no such file {str(path)!r}")
    to_validate = issue_files or options.default_issue_files(config)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        distribute.share_torch_threads(int(workerinput.get("workercount", 1)))
    run = ConformanceRun(
        targets=targets,
        run_dir=options.run_dir(config),
        worker=workerinput["workerid"] if workerinput else "main",
        replay=options.load_replay(config.getoption("replay")),
        known_issue_files=issue_files,
    )
    try:
        run.known_issues(to_validate)
    except KnownIssuesError as exc:
        raise pytest.UsageError(str(exc)) from None
    run.group_by = distribute.group_by(config.getoption("group_by"), targets)
    tolerances = config.getoption("tolerances")
    try:
        overrides.install(overrides.load(Path(tolerances)) if tolerances is not None else [])
    except overrides.OverridesError as exc:
        raise pytest.UsageError(f"--tolerances: {exc}") from None
    cases_from = config.getoption("cases_from")
    if cases_from is not None:
        if run.replay is not None:
            raise pytest.UsageError("--cases-from and --replay cannot be combined: choose one source of cases")
        try:
            run.use_saved_cases(Path(cases_from), saved_cases(Path(cases_from)))
        except SavedCasesError as exc:
            raise pytest.UsageError(f"--cases-from: {exc}") from None
    options.configure_outputs(config, run)
    config.stash[RUN_KEY] = run
    if workerinput is None and threading.current_thread() is threading.main_thread():
        # CI cancellations and timeouts send SIGTERM: end like Ctrl-C (summary and report marked incomplete)
        config.stash[SIGTERM_KEY] = signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    if config.pluginmanager.hasplugin("xdist"):
        distribute.configure(config, run)


def pytest_report_header(config: pytest.Config) -> list[str]:
    run = config.stash[RUN_KEY]
    return header_lines(run.environment) + [
        f"conformance: hypothesis profile {profiles.current_profile()}; run folder {run.run_dir}"]


@pytest.fixture(scope="session")
def conformance_run(pytestconfig: pytest.Config) -> ConformanceRun:
    return pytestconfig.stash[RUN_KEY]


def _spec_of(obj):
    return getattr(getattr(obj, "function", obj), "conformance_spec", None)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    spec = _spec_of(metafunc.function)
    if spec is None:
        return
    run = metafunc.config.stash[RUN_KEY]
    unmet = spec.unmet_requirement()

    def marks(target: str) -> list[pytest.MarkDecorator]:
        if unmet:
            return [pytest.mark.skip(reason=unmet)]
        if run.targets[target].virtual and spec.needs_real_device:
            return [pytest.mark.skip(reason=f"not emulatable on a virtual device: {spec.needs_real_device}")]
        return []

    if spec.narrowed and not unmet:
        run.narrowed[spec.name] = spec.narrowed
    # One item per check; within a variant, targets vary slowest and checks fastest: a variant's items
    # run back to back in a worker, so its drawn cases, reference and each target's op run are
    # computed once and still cached for the next check and the next target.
    params = [
        pytest.param(target, dtype, mode, check.name, id=item_params_id(target, dtype, mode, check.name),
                     marks=marks(target))
        for dtype, mode in spec.variant_pairs()
        for target in run.targets
        for check in applicable(spec, run.targets[target], mode, run.options)
    ]
    metafunc.parametrize(("target", "dtype", "mode", "check"), params)


def pytest_collection_finish(session: pytest.Session) -> None:
    """A --replay case for an op no selected test runs, or a --baseline that shares no op with the
    selected specs, is a usage error (every item would be skipped, and a gate would pass on nothing)."""
    config, items = session.config, session.items
    run = config.stash.get(RUN_KEY, None)
    collected = {spec.name for item in items if (spec := _spec_of(item)) is not None}
    replay = getattr(run, "replay", None)
    if replay is not None and collected and replay.op not in collected:
        raise pytest.UsageError(f"--replay: the case is for op {replay.op!r}, which none of the selected tests runs "
                                f"({', '.join(sorted(collected))})")
    baseline = getattr(getattr(run, "shared", None), "baseline", None)
    if baseline is None:
        return
    recorded = {key.op for key in baseline.index}
    if collected and not collected & recorded:
        raise pytest.UsageError(f"--baseline {baseline.folder.parent}: it holds ops {', '.join(sorted(recorded))}, "
                                f"none of which this run collects ({', '.join(sorted(collected))}): a baseline from "
                                f"another op set")


def _is_conformance_failure(exc: BaseException) -> bool:
    """A divergence the harness found (hypothesis may group several), not an error of the test itself."""
    nested = getattr(exc, "exceptions", None)  # an exception group: builtin from 3.11, backported before
    if isinstance(nested, (list, tuple)) and nested:
        return all(_is_conformance_failure(e) for e in nested)
    return isinstance(exc, ConformanceFailure)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    spec = _spec_of(item)
    if spec is None:
        return (yield)
    run = item.config.stash[RUN_KEY]
    params = item.callspec.params  # type: ignore[attr-defined]
    run.begin_item(item, spec, params["target"], params["dtype"], params["mode"], params["check"])
    try:
        result = yield
    except BaseException as failure:
        warn(run.end_item(passed=False).warnings)
        if (run.targets[params["target"]].virtual and item.config.getoption("virtual_findings") == "warn"
                and _is_conformance_failure(failure)):
            first = str(failure).splitlines()[0]
            pytest.xfail(f"virtual-target finding, a warning under --virtual-findings=warn: {first}")
        raise
    ended = run.end_item(passed=True)
    warn(ended.warnings)
    if ended.fail:
        pytest.fail(ended.fail, pytrace=False)
    if ended.xfail:
        pytest.xfail(ended.xfail)
    if ended.skip:
        pytest.skip(ended.skip)
    return result


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Replay the cases another target drew for this op, dtype and mode; hypothesis draws otherwise.

    A planned case that fails hands over to hypothesis, which finds the failure again and
    shrinks it; if it cannot (a random profile draws other cases), the planned failure stands.
    """
    spec = _spec_of(pyfuncitem)
    if spec is None:
        return None
    run = pyfuncitem.config.stash[RUN_KEY]
    cases = run.plan()
    if cases is None and run.cases_from is not None:
        pytest.skip(f"--cases-from {run.cases_from} has no cases for this item")
    if cases is None:
        return None
    failure = run.run_plan(cases)
    if failure is None:
        return True
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    pyfuncitem.obj(**arguments)  # raises the shrunk failure when hypothesis finds it
    raise ConformanceFailure(f"{failure}\n(hypothesis did not draw this case again, so it is not shrunk)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    spec = _spec_of(item)
    if spec is not None and report.skipped and not hasattr(report, "wasxfail") and report.when in ("setup", "call"):
        params = item.callspec.params  # type: ignore[attr-defined]
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")  # pytest's prefix for a skip raised inside the test
        item.config.stash[RUN_KEY].record_skip(item, params["target"], params["dtype"], params["mode"],
                                               params["check"], reason)
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    run = session.config.stash.get(RUN_KEY, None)
    if run is None:
        return
    run.close()
    if hasattr(session.config, "workerinput") or not (run.run_dir / "outcomes").is_dir():
        return
    interrupted = exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR)
    outcomes = read_outcomes(run.run_dir)  # read once for the summary and the report
    write_summary(run.run_dir, complete=not interrupted, outcomes=outcomes)
    try:
        from conformance.report import build_report

        run.report_path = build_report(run.run_dir, outcomes=outcomes)
    except Exception as exc:  # noqa: BLE001 - the report must never turn a run's verdict into a crash
        run.report_error = f"{type(exc).__name__}: {exc}"
    latest = run.run_dir.parent / "latest"
    try:
        if latest.is_symlink() or not latest.exists():
            latest.unlink(missing_ok=True)
            latest.symlink_to(run.run_dir.name)
    except OSError:
        pass


def pytest_unconfigure(config: pytest.Config) -> None:
    previous = config.stash.get(SIGTERM_KEY, None)
    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    run = config.stash.get(RUN_KEY, None)
    if run is None or hasattr(config, "workerinput"):
        return
    summary_path = run.run_dir / "summary.json"
    if not summary_path.is_file():
        return
    summary = json.loads(summary_path.read_text())
    terminalreporter.section("conformance summary")
    for line in format_table(summary):
        terminalreporter.write_line(line)
    modules = format_modules(summary)
    if modules:
        terminalreporter.write_line("modules left on the cpu, called with a device input (unmoved):")
        for line in modules:
            terminalreporter.write_line(line)
    for op, why in sorted(getattr(run, "narrowed", {}).items()):
        terminalreporter.write_line(f"narrowed: {op}: {why}")
    totals = ", ".join(f"{count} {verdict.replace('_', ' ')}" for verdict, count in summary["totals"].items())
    terminalreporter.write_line(f"outcomes: {totals}")
    selected = bool(config.option.keyword or config.option.markexpr or any("::" in a for a in config.args))
    for issue_id in [] if selected else summary["unused_known_issues"]:  # a -k run leaves most entries out
        terminalreporter.write_line(f"warning: known issue {issue_id!r} applied to no test item")
    for issue_id in [] if selected else summary.get("unreproduced_known_issues", []):
        terminalreporter.write_line(f"warning: known issue {issue_id!r} matched no failure in this run "
                                    f"(fixed, or out of this run's draws?)")
    if summary["torn_lines"]:
        terminalreporter.write_line(f"warning: {summary['torn_lines']} torn record line(s) skipped")
    terminalreporter.write_line(f"results: {summary_path}")
    if getattr(run, "report_path", None):
        terminalreporter.write_line(f"report: {run.report_path}")
    if getattr(run, "report_error", None):
        terminalreporter.write_line(f"warning: the HTML report could not be built ({run.report_error}); "
                                    f"retry with: python -m conformance report {run.run_dir}")
