"""The pytest plugin: hook glue only.

Loaded into every pytest session of the environment through the `pytest11` entry point (and by
the repo's conftest.py), so it stays inert, like hypothesis' own plugin, until a session asks
for conformance (`--conformance`, any conformance option or CONFORMANCE_* variable: the run is
set up at configure time) or collects a conformance spec (set up then).  Inert means: no torch
import, no hypothesis profile loaded, no xdist scheduler or thread variables changed, nothing
in the header, no reports folder.  Only functions built by `OpSpec.test()` are touched.
"""
from __future__ import annotations

import json
import os
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.engine import config as run_config
from conformance.engine import options
from conformance.engine import profiles
from conformance.spec.item_ids import item_params_id, parse_item_id

profiles.register()  # named profiles for --hypothesis-profile; registering loads nothing


@dataclass
class PluginState:
    run: Any = None  # session.ConformanceRun, once conformance is asked for or specs are collected
    run_dir: Path | None = None  # the xdist controller's run folder (it collects nothing itself)
    lazily: bool = False  # set up at collection: its header is printed after collection
    previous_sigterm: Any = None
    report_path: Path | None = None
    report_error: str | None = None
    narrowed: dict[str, str] = field(default_factory=dict)
    collection_checked: bool = False  # the xdist controller checked a worker's collection


STATE = pytest.StashKey[PluginState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


def _interrupt_on_sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum} (SIGTERM)")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    profiles.check_chosen(config)  # before hypothesis' plugin turns a bogus name into an INTERNALERROR
    state = config.stash[STATE] = PluginState()
    controller = isinstance(getattr(config.option, "numprocesses", None), int) and not hasattr(config, "workerinput")
    if run_config.asked_for(config):
        _start(config, state)
        if controller and config.pluginmanager.hasplugin("xdist"):
            from conformance.engine import distribute

            distribute.configure(config, state.run.run_dir, state.run.cfg)
    elif controller and config.pluginmanager.hasplugin("xdist"):
        # Nothing asked for yet: if the workers collect specs, they share one run folder (named, not created).
        from conformance.engine import distribute

        state.run_dir = options.run_dir(config, validate=False)
        distribute.configure(config, state.run_dir, None)


def _start(config: pytest.Config, state: PluginState) -> Any:
    """Set the run up: configuration, targets, case sources, known issues, records (imports torch)."""
    from conformance.devices import environment as env_info
    from conformance.devices.isa_feed import use_shared
    from conformance.engine import distribute
    from conformance.engine.case_sources import CaseSourceError
    from conformance.engine.session import ConformanceRun

    cfg = run_config.build(config)
    profile = run_config.profile_name(config)
    collected: dict[str, Any] = {}

    def environment() -> dict[str, Any]:
        if not collected:
            collected.update(env_info.collect(list(cfg.targets)), hypothesis_profile=profile)
        return collected

    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        distribute.share_torch_threads(int(workerinput.get("workercount", 1)))
        if "conformance_isa" in workerinput:  # the controller's ISA workers, one per level for all
            use_shared(json.loads(workerinput["conformance_isa"]))
    try:
        state.run = ConformanceRun(cfg, environment)
    except CaseSourceError as exc:
        raise pytest.UsageError(str(exc)) from None
    state.run.narrowed = state.narrowed
    if workerinput is None and threading.current_thread() is threading.main_thread():
        # CI cancellations and timeouts send SIGTERM: end like Ctrl-C (summary and report marked incomplete)
        state.previous_sigterm = signal.signal(signal.SIGTERM, _interrupt_on_sigterm)
    return state.run


def _run(config: pytest.Config) -> Any:
    state = config.stash[STATE]
    if state.run is None:
        state.lazily = True
        _start(config, state)
    return state.run


def pytest_report_header(config: pytest.Config) -> list[str]:
    run = config.stash[STATE].run
    return _header(config, run) if run is not None else []


def pytest_report_collectionfinish(config: pytest.Config, start_path: Path, items: list[pytest.Item]) -> list[str]:
    state = config.stash[STATE]
    return _header(config, state.run) if state.run is not None and state.lazily else []


def _header(config: pytest.Config, run: Any) -> list[str]:
    from conformance.devices.environment import header_lines
    from conformance.devices.targets import virtual_unavailable_reason

    reason = virtual_unavailable_reason()
    workers = getattr(config.option, "numprocesses", None)
    chosen = os.environ.get("CONFORMANCE_WORKERS_CHOSEN")
    if workers:
        processes = f"{workers} pytest-xdist workers" + (
            " (chosen by `python -m conformance run`: one per core of this machine; -n 0 runs in one process)"
            if chosen and str(chosen) == str(workers) else "")
    else:
        processes = "one process (-n N for pytest-xdist workers)"
    return header_lines(run.environment) + ([f"conformance: virtual targets off: {reason}"] if reason else []) + [
        f"conformance: hypothesis profile {run.environment['hypothesis_profile']}; {processes}; run folder "
        f"{run.run_dir}"]


@pytest.fixture(scope="session")
def conformance_run(pytestconfig: pytest.Config) -> Any:
    return _run(pytestconfig)


def _spec_of(obj: Any) -> Any:
    return getattr(getattr(obj, "function", obj), "conformance_spec", None)


def _item_info(item: pytest.Item) -> Any:
    """The engine's view of a conformance item (conformance.engine.ledger.ItemInfo), or None for another test."""
    from conformance.engine.ledger import ItemInfo

    spec = _spec_of(item)
    if spec is None or getattr(item, "callspec", None) is None:
        return None
    params = item.callspec.params  # type: ignore[attr-defined]
    return ItemInfo(item.nodeid, item.originalname, Path(str(item.path)), spec, params["target"],  # type: ignore[attr-defined]
                    params["dtype"], params["mode"], params["check"])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    spec = _spec_of(metafunc.function)
    if spec is None:
        return
    from hypothesis import settings

    from conformance.checks.registry import applicable

    run = _run(metafunc.config)
    if not getattr(metafunc.function, "_conformance_settings", False):  # the profile applies to spec tests only
        settings(run.cfg.hypothesis_settings)(metafunc.function)
        metafunc.function._conformance_settings = True
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
        for target in run.targets if spec.runs_on(run.targets[target])
        for check in applicable(spec, run.targets[target], mode, run.options)
    ]
    metafunc.parametrize(("target", "dtype", "mode", "check"), params)


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """The items of one operation's implementations run together, variant by variant, so each
    library checks the cases the first one drew while its inputs and outputs are still cached."""
    from conformance.engine.ordering import operation_order

    slots = [n for n, item in enumerate(items) if _spec_of(item) is not None]
    if slots:
        ordered = operation_order([items[n] for n in slots], _spec_of)
        for slot, item in zip(slots, ordered):
            items[slot] = item


def pytest_collection_finish(session: pytest.Session) -> None:
    """A --replay case for an op no selected test runs, a --baseline that shares no op with the selected specs,
    or a --tolerances rule for no collected op is a usage error (every item would be skipped, and a gate would
    pass on nothing).  An xdist worker leaves it to the controller, which sees every worker's collection."""
    run = session.config.stash[STATE].run
    if run is None or hasattr(session.config, "workerinput"):
        return
    problem = _collection_problem(session.config, run, {spec.name for item in session.items
                                                        if (spec := _spec_of(item)) is not None})
    if problem:
        raise pytest.UsageError(problem)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's: unknown where it is not installed
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """On the xdist controller: the checks of `pytest_collection_finish`, on the ids a worker collected (a
    usage error is an exit with pytest's usage-error code: raising inside xdist's loop is an internal error)."""
    state = node.config.stash.get(STATE, None)
    if state is None or state.run is None or state.collection_checked:
        return
    state.collection_checked = True
    collected = {parsed.test.removeprefix("test_") for nodeid in ids if (parsed := parse_item_id(nodeid)) is not None}
    problem = _collection_problem(node.config, state.run, collected)
    if problem:
        pytest.exit(problem, returncode=pytest.ExitCode.USAGE_ERROR)


def _collection_problem(config: pytest.Config, run: Any, collected: set[str]) -> str | None:
    if run.replay is not None and collected and run.replay.op not in collected:
        return (f"--replay: the case is for op {run.replay.op!r}, which none of the selected tests runs "
                f"({', '.join(sorted(collected))})")
    problem = _check_tolerance_rules(config, run, collected)
    if problem:
        return problem
    baseline = run.cache.baseline
    if baseline is None:
        return None
    recorded = {key.op for key in baseline.index}
    if collected and not collected & recorded:
        return (f"--baseline {baseline.folder.parent}: it holds ops {', '.join(sorted(recorded))}, none of which "
                f"this run collects ({', '.join(sorted(collected))}): a baseline from another op set")
    return None


def _check_tolerance_rules(config: pytest.Config, run: Any, collected: set[str]) -> str | None:
    """A --tolerances rule whose op pattern matches no collected op is a typo, not a policy: a usage
    error (on a -k/-m/node-id selection, which may leave its op out, a warning)."""
    import fnmatch
    import warnings

    unmatched = [f"{rule.tolerance.name!r} (op {pattern!r})" for pattern, rule in run.cfg.overrides
                 if collected and not any(fnmatch.fnmatchcase(op, pattern) for op in collected)]
    if not unmatched:
        return None
    message = (f"--tolerances: rule {', '.join(unmatched)} matches none of the collected ops "
               f"({', '.join(sorted(collected))})")
    if config.option.keyword or config.option.markexpr or any("::" in a for a in config.args):
        warnings.warn(pytest.PytestWarning(message))
        return None
    return message


def _is_conformance_failure(exc: BaseException) -> bool:
    """A divergence the harness found (hypothesis may group several), not an error of the test itself."""
    from conformance.engine.judgement import ConformanceFailure

    nested = getattr(exc, "exceptions", None)  # an exception group: builtin from 3.11, backported before
    if isinstance(nested, (list, tuple)) and nested:
        return all(_is_conformance_failure(e) for e in nested)
    return isinstance(exc, ConformanceFailure)


def _finding_text(exc: BaseException) -> str:
    """A conformance failure as its message and hypothesis' notes (the drawn case); for several
    distinct failures of one item, each in turn."""
    nested = getattr(exc, "exceptions", None)
    if isinstance(nested, (list, tuple)) and nested:
        parts = [f"{len(nested)} distinct failures:"] + [_finding_text(e) for e in nested]
        return "\n\n".join(parts + list(getattr(exc, "__notes__", [])))
    return "\n".join([f"{type(exc).__name__}: {exc}", *getattr(exc, "__notes__", [])])


XFAIL = pytest.StashKey[str]()  # an item whose failures were all known issues: reported as xfailed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    spec = _spec_of(item)
    if spec is None:
        return (yield)
    from conformance.spec.known_issues import KnownIssuesError

    run = _run(item.config)
    params = item.callspec.params  # type: ignore[attr-defined]
    if not run.knows_items:  # once: the session's items in run order
        run.learn_items(info for i in item.session.items if (info := _item_info(i)) is not None)
    try:
        skip = run.begin_item(_item_info(item))
    except KnownIssuesError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
    if skip is not None:
        pytest.skip(skip)
    try:
        result = yield
    except BaseException as failure:
        run.end_item(passed=False, interrupted=isinstance(failure, KeyboardInterrupt))
        if (run.targets[params["target"]].virtual and run.cfg.virtual_findings == "warn"
                and _is_conformance_failure(failure)):
            first = str(failure).splitlines()[0]
            pytest.xfail(f"virtual-target finding, a warning under --virtual-findings=warn: {first}")
        raise
    ended = run.end_item(passed=True)
    if ended.fail:
        pytest.fail(ended.fail, pytrace=False)
    if ended.warnings and run.cfg.fail_on_warning:
        pytest.fail("; ".join(ended.warnings) + " (a warning: it fails the gate under --fail-on-warning)",
                    pytrace=False)
    if ended.skip:
        pytest.skip(ended.skip)
    if ended.xfail:
        # not pytest.xfail(): raising it makes pytest format the whole traceback for a report that never shows
        # it (20 ms an item); the report is marked in pytest_runtest_makereport instead
        item.stash[XFAIL] = ended.xfail
    return result


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Check the cases another target drew for this op, dtype and mode (or saved ones); hypothesis
    draws otherwise.  A planned case that fails hands over to hypothesis, which finds the failure
    again and shrinks it; if it cannot (a random profile draws other cases), the planned failure stands.
    """
    spec = _spec_of(pyfuncitem)
    if spec is None:
        return None
    from conformance.engine.judgement import ConformanceFailure

    run = _run(pyfuncitem.config)
    cases = run.plan()
    if cases is None and run.sources.saved_from is not None:
        option = "--cases-from" if run.cfg.cases_from is not None else "--baseline"
        pytest.skip(f"{option} {run.sources.saved_from} has no cases for this item")
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
    if spec is not None and report.when == "call" and report.passed and XFAIL in item.stash:
        report.outcome = "skipped"
        report.wasxfail = item.stash[XFAIL]
    if (spec is not None and report.failed and call.excinfo is not None
            and _is_conformance_failure(call.excinfo.value)):
        report.longrepr = _finding_text(call.excinfo.value)  # the finding, without the harness's frames
    if spec is not None and report.skipped and not hasattr(report, "wasxfail") and report.when in ("setup", "call"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")  # pytest's prefix for a skip raised inside the test
        _run(item.config).record_skip(_item_info(item), reason)
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(STATE, None)
    if state is None:
        return
    if state.run is not None:
        state.run.close()
    run_dir = state.run.run_dir if state.run is not None else state.run_dir
    if hasattr(session.config, "workerinput") or run_dir is None or not (run_dir / "outcomes").is_dir():
        return
    from conformance.report.terminal import finish_run_folder

    interrupted = exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR)
    state.report_path, state.report_error = finish_run_folder(run_dir, interrupted)


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is not None and state.previous_sigterm is not None:
        signal.signal(signal.SIGTERM, state.previous_sigterm)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or hasattr(config, "workerinput"):
        return
    run_dir = state.run.run_dir if state.run is not None else state.run_dir
    if run_dir is None:
        return
    from conformance.report.terminal import write_section

    write_section(terminalreporter, config, run_dir, state.narrowed, state.report_path, state.report_error)
