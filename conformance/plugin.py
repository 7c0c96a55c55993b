"""The pytest plugin: hook glue only.  This module holds the session's hooks (options, configuration,
the run's start, header and end); conformance.plugin_collection the collection's, conformance.plugin_items
each item's.

Loaded into every pytest session of the environment through the `pytest11` entry point (and by
the repo's conftest.py), so it stays inert, like hypothesis' own plugin, until a session asks
for conformance (`--conformance`, any conformance option or CONFORMANCE_* variable: the run is
set up at configure time) or collects a conformance spec (set up then).  Inert means: no torch
import, no hypothesis profile loaded, no xdist scheduler or thread variables changed, nothing
in the header, no reports folder.  Only functions built by `OpSpec.test()` are touched.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import shutil
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.engine import config as run_config
from conformance.engine import interrupts, options, profiles, run_folders
from conformance.launch import announce_run_dir
from conformance.spec.handed import SWEEP_ENV
from conformance.store.disk import DiskFull
from conformance.suite.stock import sweeps

pytest_plugins = ("conformance.plugin_collection", "conformance.plugin_items")  # registered with this module
profiles.register()  # named profiles for --hypothesis-profile; registering loads nothing


@dataclass
class PluginState:
    run: Any = None  # session.ConformanceRun, once conformance is asked for or specs are collected
    run_dir: Path | None = None  # the xdist controller's run folder (it collects nothing itself)
    lazily: bool = False  # set up at collection: its header is printed after collection
    previous_handlers: dict[int, Any] = field(default_factory=dict)  # restored at unconfigure
    ended: Any = None  # report.terminal.RunEnd: what the run's end wrote (its summary, the report)
    narrowed: dict[str, str] = field(default_factory=dict)
    collection_checked: bool = False  # the xdist controller checked a worker's collection
    previous_sweep: str | None = None  # CONFORMANCE_SWEEP before this session set it (restored at unconfigure)
    session: pytest.Session | None = None  # set at the session's end, whose exit status a late stop changes
    summarised_complete: bool = False  # summary.json was written marked complete
    nothing_collected: bool = False  # a usage error: no run folder is left behind


STATE = pytest.StashKey[PluginState]()


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    profiles.check_chosen(config)  # before hypothesis' plugin turns a bogus name into an INTERNALERROR
    state = config.stash[STATE] = PluginState()
    # read by cases/test_sweep.py at collection, and by the ISA workers that import it again
    swept = config.getoption("sweep", None) or "default"
    state.previous_sweep = os.environ.get(SWEEP_ENV)
    os.environ[SWEEP_ENV] = "" if swept == "none" else swept
    controller = isinstance(getattr(config.option, "numprocesses", None), int) and not hasattr(config, "workerinput")
    if run_config.asked_for(config) and not _only_informs(config):
        _start(config, state)
        if not run_config.log_capture_wanted(config):
            config.pluginmanager.set_blocked("logging-plugin")  # registered by pytest's logging plugin, later
        if controller and config.pluginmanager.hasplugin("xdist"):
            from conformance.engine import distribute

            distribute.configure(config, state.run.run_dir, state.run.cfg)
    elif controller and config.pluginmanager.hasplugin("xdist"):
        # Nothing asked for yet: if the workers collect specs, they share one run folder (named, not created).
        from conformance.engine import distribute

        state.run_dir = run_folders.run_dir(config, validate=False)
        distribute.configure(config, state.run_dir, None)


def _only_informs(config: pytest.Config) -> bool:
    """pytest says something and ends (--help, --markers): no run, so no run folder (one was left, empty)."""
    return bool(getattr(config.option, "help", False) or getattr(config.option, "markers", False))


def _start(config: pytest.Config, state: PluginState) -> Any:
    """Set the run up: configuration, targets, case sources, known issues, records (imports torch)."""
    from conformance.spec.extensions import ExtensionError

    try:  # an installed package's extension that does not load: one line naming it, not a traceback
        from conformance.devices import environment as env_info
        from conformance.engine import distribute
        from conformance.engine.case_sources import CaseSourceError
        from conformance.engine.session import ConformanceRun
        from conformance.spec import sweep, sweep_import, sweep_tables
    except ExtensionError as exc:
        raise pytest.UsageError(f"an installed extension of conformance: {exc}") from None

    _handle_stops(state, worker=hasattr(config, "workerinput"))
    # the sweep's modules, said and recorded where it runs: the stock sweep module is collected, or --sweep names
    # them (for a case module of one's own); not under --no-stock alone
    asked = config.getoption("sweep", None) or sweeps(config.args, config.invocation_params.dir)
    swept = os.environ.get(SWEEP_ENV, "") if asked else ""
    try:  # a sweep module that does not import: one line now, not a traceback at collection or session start
        modules = sweep.parse(swept)
        sweep_import.check_importable(modules, probe=not hasattr(config, "workerinput"))  # the controller probed
    except sweep_tables.SweepModuleError as exc:
        raise pytest.UsageError(str(exc)) from None
    cfg = run_config.build(config)
    profile = run_config.profile_name(config)
    collected: dict[str, Any] = {}

    def environment() -> dict[str, Any]:
        if not collected:
            collected.update(
                env_info.collect(list(cfg.targets)), hypothesis_profile=profile, sweep=env_info.sweep_coverage(swept)
            )
        return collected

    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        distribute.share_torch_threads(int(workerinput.get("workercount", 1)))
        distribute.end_without_finalizing()
    handed = distribute.handed_to_worker(workerinput)
    for target in cfg.targets:  # what the controller's targets started, which this worker reaches
        target.setup_worker(handed.get(target.name))
    try:
        state.run = ConformanceRun(cfg, environment)
    except CaseSourceError as exc:
        raise pytest.UsageError(str(exc)) from None
    state.run.narrowed = state.narrowed
    if workerinput is None:
        announce_run_dir(state.run.run_dir)  # to `python -m conformance run`, which finishes it if pytest dies
    return state.run


def _handle_stops(state: PluginState, worker: bool) -> None:
    """CI cancellations and timeouts send SIGTERM: end like Ctrl-C (summary and report marked incomplete), in
    the controller and in each xdist worker (a signal to the process group reaches them all; a worker ends its
    item as interrupted instead of dying of it).  Both are remembered as well as raised: see
    conformance.engine.interrupts for where one gets lost.  Installed before the run's imports (seconds of
    torch): a stop during them is an interrupted session too."""
    interrupts.clear()
    if threading.current_thread() is not threading.main_thread() or state.previous_handlers:
        return
    state.previous_handlers[signal.SIGTERM] = signal.signal(signal.SIGTERM, interrupts.on_signal)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not one a debugger or host set
        state.previous_handlers[signal.SIGINT] = signal.signal(signal.SIGINT, interrupts.on_signal)
    if worker:
        interrupts.unblock()  # the controller starts its workers with the stops blocked (distribute.XdistHooks)


def run_of(config: pytest.Config) -> Any:
    """The session's ConformanceRun, set up on first use when no option asked for it at configure time."""
    state = config.stash[STATE]
    if state.run is None:
        state.lazily = True
        _start(config, state)
    return state.run


def _header(config: pytest.Config, run: Any) -> list[str]:
    from conformance.devices.discovery import virtual_unavailable_reason
    from conformance.launch import WORKERS_ENV
    from conformance.report.terminal import header, sweep_lines

    return header(
        run.environment,
        run.run_dir,
        getattr(config.option, "numprocesses", None),
        os.environ.get(WORKERS_ENV),
        virtual_unavailable_reason(),
    ) + sweep_lines(run.environment.get("sweep", {}))


def pytest_report_header(config: pytest.Config) -> list[str]:
    run = config.stash[STATE].run
    return _header(config, run) if run is not None else []


def pytest_report_collectionfinish(config: pytest.Config, start_path: Path, items: list[pytest.Item]) -> list[str]:
    state = config.stash[STATE]
    return _header(config, state.run) if state.run is not None and state.lazily else []


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """In an xdist worker of a run (after pytest's faulthandler plugin enabled it): a worker that dies mid-item
    is recorded by the controller, with its item and case and a rerun line that shows the stack in one process;
    faulthandler's dump of every thread said it again in some 80 lines a crash."""
    state = session.config.stash.get(STATE, None)
    if state is not None and state.run is not None and hasattr(session.config, "workerinput"):
        faulthandler.disable()


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> Any:
    """Around every other plugin's end of session (xdist's teardown of its workers among them), so that a stop
    landing in any of it is remembered, not raised (`interrupts.closing`); then the run folder's end."""
    state = session.config.stash.get(STATE, None)
    if state is not None and state.run is not None:
        interrupts.closing()
    try:
        return (yield)
    finally:
        _finish(session, exitstatus)


def _finish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(STATE, None)
    if state is None:
        return
    state.session = session
    interrupted = exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR)
    if interrupts.requested() is not None and not interrupted:  # a stop that landed while the session ended
        interrupted, session.exitstatus = True, pytest.ExitCode.INTERRUPTED
    run_dir = state.run.run_dir if state.run is not None else state.run_dir
    controller = not hasattr(session.config, "workerinput")
    if controller and interrupts.requested() is not None and state.run is not None:
        # stopped before any item wrote a record (at collection): the folder is kept, with a summary marked
        # incomplete, so `reports/latest` is this run and not the one before it
        (state.run.run_dir / "outcomes").mkdir(parents=True, exist_ok=True)
    if state.run is not None:
        state.run.close()
    if controller and state.nothing_collected and run_dir is not None:
        shutil.rmtree(run_dir, ignore_errors=True)
        with contextlib.suppress(OSError):  # the reports folder, where this run created it
            run_dir.parent.rmdir()
        return
    if not controller or run_dir is None or not (run_dir / "outcomes").is_dir():
        return
    # the report is imported at the run's end only: it imports torch, which an inert session never does
    from conformance.report.terminal import checked_nothing, finish_run_folder

    try:
        state.ended = finish_run_folder(run_dir, interrupted)
    except DiskFull as exc:  # one line, where the summary would have been said
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        (reporter.write_line if reporter is not None else print)(f"conformance: {exc}")
        return
    state.summarised_complete = not interrupted
    if session.exitstatus == pytest.ExitCode.OK and not session.config.option.collectonly:
        summary = state.ended.summary
        if summary is not None and checked_nothing(summary):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _late_stop(config: pytest.Config, state: PluginState) -> None:
    """A stop that no summary says: one during the session's start (its end never ran), or one after summary.json
    was written marked complete (the terminal's summary, the ISA workers' teardown).  The run was interrupted
    all the same: its summary says so, the exit code is 2, and one line tells where the summary is."""
    stop = interrupts.requested()
    if stop is None or state.run is None or (state.session is not None and not state.summarised_complete):
        return
    from conformance.report.terminal import finish_run_folder

    run_dir = state.run.run_dir
    if state.session is not None:
        state.session.exitstatus = pytest.ExitCode.INTERRUPTED
    when = "before the items ran" if state.session is None else "while the run ended"
    line = f"conformance: {stop} {when}: {run_dir / 'summary.json'} marked incomplete"
    try:
        (run_dir / "outcomes").mkdir(parents=True, exist_ok=True)
        finish_run_folder(run_dir, interrupted=True)
    except OSError as exc:  # the folder went meanwhile: say so in the same one line
        line = f"conformance: {stop} {when}; its summary could not be written ({exc})"
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(line)
    else:  # stopped before pytest's terminal was set up
        sys.stderr.write(line + "\n")


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is not None:
        if not hasattr(config, "workerinput"):
            _late_stop(config, state)
        for signum, handler in state.previous_handlers.items():
            signal.signal(signum, handler)
        if state.previous_sweep is None:
            os.environ.pop(SWEEP_ENV, None)
        else:
            os.environ[SWEEP_ENV] = state.previous_sweep


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(STATE, None)
    if state is None or hasattr(config, "workerinput"):
        return
    run_dir = state.run.run_dir if state.run is not None else state.run_dir
    if run_dir is None or state.nothing_collected:
        return
    from conformance.report.terminal import write_section

    write_section(terminalreporter, config, run_dir, state.narrowed, state.ended)
