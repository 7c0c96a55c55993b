"""The pytest plugin's item hooks (conformance.plugin registers this module): one item per check of each op,
target, dtype and mode; each item's life, from the engine's decisions (`ItemEnd`, a skip reason) to pytest's
outcomes; and the report of a finding without the harness's frames.  What the collection as a whole comes to
(its order, its shard, its checks) is conformance.plugin_collection's."""

from __future__ import annotations

import contextlib
import inspect
import unittest
from pathlib import Path
from typing import Any

import pytest

from conformance.engine import interrupts
from conformance.plugin import STATE, run_of
from conformance.plugin_collection import spec_of as _spec_of
from conformance.spec.item_ids import item_params_id
from conformance.store.printable import printable, shortened
from conformance.suite.stock import command_path
from conformance.watchdog import watch

ITEM_STATE = pytest.StashKey[Any]()  # the running item's own state (engine.ledger.ItemState), from its start to its end


class ItemRun:
    """What a spec test's body is handed as `conformance_run`: the run, as this one item.  The item's state is
    the item's (begun in pytest_runtest_call, kept in its stash until its end), never the session's: nothing
    reads a "current item"."""

    __slots__ = ("item", "run")

    def __init__(self, run: Any, item: pytest.Item) -> None:
        self.run = run  # conformance.engine.session.ConformanceRun
        self.item = item

    def __repr__(self) -> str:  # hypothesis prints the test's arguments with a falsifying example
        return f"ItemRun({self.run!r}, {self.item.nodeid!r})"

    def case_strategy(self, spec: Any, dtype: str, mode: str) -> Any:
        return self.run.case_strategy(spec, dtype, mode)

    def check(self, spec: Any, case: Any) -> None:
        self.run.check(self.item.stash[ITEM_STATE], spec, case)


@pytest.fixture
def conformance_run(request: pytest.FixtureRequest) -> ItemRun:
    """Per item (hypothesis' function-scoped-fixture health check is off for spec tests, conformance.engine.config
    spec_settings): the same for each of the item's examples, which is what an item's state is."""
    return ItemRun(run_of(request.config), request.node)


def _item_info(item: pytest.Item) -> Any:
    """The engine's view of a conformance item (conformance.engine.ledger.ItemInfo), or None for another test."""
    from conformance.engine.ledger import ItemInfo  # here: the engine imports torch, an inert session does not

    spec = _spec_of(item)
    if spec is None or getattr(item, "callspec", None) is None:
        return None
    params = item.callspec.params  # type: ignore[attr-defined]
    if not isinstance(params.get("target"), str):  # no selected target runs the op: pytest's empty-set skip
        return None
    test = getattr(item, "originalname", item.name)  # a pytest.Function's name without its parameters
    named, _, within = item.nodeid.partition("::")
    shown = command_path(named, item.path, item.config.invocation_params.dir)
    return ItemInfo(
        item.nodeid,
        test,
        Path(str(item.path)),
        spec,
        params["target"],
        params["dtype"],
        params["mode"],
        params["check"],
        command_id=f"{shown}::{within}" if shown != named else "",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    spec = _spec_of(metafunc.function)
    if spec is None:
        return
    from hypothesis import settings

    from conformance.checks.registry import applicable

    run = run_of(metafunc.config)
    if not getattr(metafunc.function, "_conformance_settings", False):  # the profile applies to spec tests only
        chosen = run.cfg.hypothesis_settings
        if spec.max_examples is not None and spec.max_examples < chosen.max_examples:
            chosen = settings(chosen, max_examples=spec.max_examples)
        settings(chosen)(metafunc.function)
        metafunc.function._conformance_settings = True
    unmet = spec.unmet_requirement()

    def marks(target: str, check: Any = None) -> list[pytest.MarkDecorator]:
        if unmet:
            return [pytest.mark.skip(reason=unmet)]
        missing = check.unmet(spec) if check is not None and check.unmet is not None else None
        if missing:
            return [pytest.mark.skip(reason=missing)]
        lacking = run.targets[target].lacks(spec.needs_real_device)
        return [pytest.mark.skip(reason=lacking)] if lacking else []

    if spec.narrowed and not unmet:
        run.narrowed[spec.name] = spec.narrowed
    # One item per check; within a variant, targets vary slowest and checks fastest: a variant's items
    # run back to back in a worker, so its drawn cases, reference and each target's op run are
    # computed once and still cached for the next check and the next target.
    params = []
    for dtype, mode in spec.variant_pairs():
        for target in run.targets:
            checks = applicable(spec, run.targets[target], mode, run.options, dtype)
            if run.targets[target].has_items(spec):
                params += [
                    pytest.param(
                        target,
                        dtype,
                        mode,
                        c.name,
                        id=item_params_id(target, dtype, mode, c.name),
                        marks=marks(target, c),
                    )
                    for c in checks
                ]
            elif checks and (reason := run.targets[target].none_run_reason(spec)):  # one item a variant says why
                why = pytest.mark.skip(reason=reason)
                first = checks[0].name
                params.append(
                    pytest.param(target, dtype, mode, first, id=item_params_id(target, dtype, mode, first), marks=[why])
                )
    metafunc.parametrize(("target", "dtype", "mode", "check"), params)


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Before the items run, in the process that runs them: its watchdog, which ends the process when an op
    overruns --case-timeout in native code (conformance.watchdog).  Started here, not at configuration: pytest
    captures stderr while it collects, and the watchdog's one line must reach the terminal."""
    run = session.config.stash[STATE].run
    if run is not None and not session.config.option.collectonly:
        watch(session.config, run.run_dir, run.worker, run.cfg.case_timeout_s)


XFAIL = pytest.StashKey[str]()  # an item whose failures were all known issues: reported as xfailed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    spec = _spec_of(item)
    if spec is None:
        return (yield)
    from conformance.spec.known_issues import KnownIssuesError

    run = run_of(item.config)
    if not run.knows_items:  # once: the session's items in run order
        run.learn_items(info for i in item.session.items if (info := _item_info(i)) is not None)
    info = _item_info(item)
    skip = run.replay_mismatch(info)
    if skip is not None:
        pytest.skip(skip)
    try:
        state = item.stash[ITEM_STATE] = run.begin_item(info)
    except KnownIssuesError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)
    try:
        return (yield from _run_item(item, run, spec, state))
    finally:
        del item.stash[ITEM_STATE]  # its drawn cases and tallies go with its end


def _run_item(item: pytest.Item, run: Any, spec: Any, state: Any) -> Any:
    """The item's test call between its start and its end; pytest's outcome from the engine's `ItemEnd`."""
    from conformance.engine.case_sources import ERROR_MODE_EXAMPLES, fewer_examples
    from conformance.engine.judgement import is_conformance_failure

    params = item.callspec.params  # type: ignore[attr-defined]

    test = item.obj  # type: ignore[attr-defined]
    fewer = params["mode"] in spec.error_modes and not run.cfg.replay  # an invalid input: fewer cases
    try:
        with fewer_examples(test, ERROR_MODE_EXAMPLES) if fewer else contextlib.nullcontext():
            result = yield
    except BaseException as failure:
        stopped = interrupts.requested() is not None or interrupts.is_interrupt(failure)
        skipped = isinstance(failure, (unittest.SkipTest, pytest.skip.Exception))  # a target that cannot run it
        run.end_item(state, passed=False, interrupted=stopped, raised=None if skipped else failure)
        if stopped and not isinstance(failure, KeyboardInterrupt):  # e.g. inside hypothesis' exception group
            raise KeyboardInterrupt(interrupts.requested() or "interrupted") from failure
        warned = run.targets[params["target"]].finding_is_warning(run.cfg.virtual_findings)
        if warned and is_conformance_failure(failure):
            first = str(failure).splitlines()[0]
            pytest.xfail(f"virtual-target finding, a warning under --virtual-findings=warn: {first}")
        raise
    if interrupts.requested() is not None:  # the interrupt was lost on its way out (a finalizer swallowed it)
        run.end_item(state, passed=False, interrupted=True)
        interrupts.raise_if_requested()
    ended = run.end_item(state, passed=True)
    if ended.fail:
        pytest.fail(ended.fail, pytrace=False)
    if ended.warnings and run.cfg.fail_on_warning:
        pytest.fail(
            "; ".join(ended.warnings) + " (a warning: it fails the gate under --fail-on-warning)", pytrace=False
        )
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
    draws otherwise.  A planned case that fails is handed to hypothesis as the example to start from, which
    finds it again and shrinks it, whatever the profile draws; a case hypothesis cannot draw again (a saved
    one) stands as it failed, saying so.
    """
    spec = _spec_of(pyfuncitem)
    if spec is None:
        return None
    from conformance.engine.case_sources import starting_from
    from conformance.engine.judgement import ConformanceFailure

    run = run_of(pyfuncitem.config)
    state = pyfuncitem.stash[ITEM_STATE]
    cases = run.plan(state)
    if cases is None and run.sources.saved_from is not None:
        option = "--cases-from" if run.cfg.cases_from is not None else "--baseline"
        pytest.skip(f"{option} {run.sources.saved_from} has no cases for this item")
    if cases is None:
        return None
    planned = run.run_plan(state, cases)
    if planned is None:
        return True
    if planned.choices is None:
        raise ConformanceFailure(f"{planned.failure}\n(a saved case, not drawn in this run: not shrunk)")
    wanted = inspect.signature(pyfuncitem.obj).parameters  # hypothesis' wrapper asks for all but its own
    arguments = {name: value for name, value in pyfuncitem.funcargs.items() if name in wanted}
    with starting_from(pyfuncitem.obj, planned.choices):
        pyfuncitem.obj(**arguments)  # raises the shrunk failure
    raise ConformanceFailure(
        f"{planned.failure}\n(hypothesis' replay of the choices that drew this case passed: not shrunk)"
    )


def _printable(report: pytest.TestReport, run_dir: Path) -> None:
    """What the terminal shows of the item, where an op's words reach it (its error, a traceback through it, what it
    printed, why it was skipped), with control characters escaped and a long skip reason cut (the record keeps it)."""
    if report.failed and report.longrepr is not None:
        text = str(report.longrepr)
        if printable(text) != text:  # else pytest's own repr stays, with its crash line for the short summary
            report.longrepr = printable(text)
    elif report.skipped and isinstance(report.longrepr, tuple):
        path, line, reason = report.longrepr
        report.longrepr = (path, line, printable(shortened(reason, f"{run_dir} (the item's record)")))
    if hasattr(report, "wasxfail"):
        report.wasxfail = printable(report.wasxfail)
    report.sections = [(title, printable(content)) for title, content in report.sections]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    spec = _spec_of(item)
    if spec is None:
        return report
    from conformance.engine.judgement import finding_text, is_conformance_failure

    if report.when == "call" and report.passed and XFAIL in item.stash:
        report.outcome = "skipped"
        report.wasxfail = item.stash[XFAIL]
    if report.failed and call.excinfo is not None and is_conformance_failure(call.excinfo.value):
        report.longrepr = finding_text(call.excinfo.value)  # the finding, without the harness's frames
    _printable(report, run_of(item.config).run_dir)
    if report.failed and call.excinfo is not None and not interrupts.is_interrupt(call.excinfo.value):
        info = _item_info(item)
        if info is not None:  # the summary must count every item pytest fails (a recorded one is left alone)
            first = (str(call.excinfo.value).strip().splitlines() or [""])[0]
            run_of(item.config).record_failed(info, report.when, f"{call.excinfo.typename}: {first}"[:2000])
    if report.skipped and not hasattr(report, "wasxfail") and report.when in ("setup", "call"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")  # pytest's prefix for a skip raised inside the test
        info = _item_info(item)
        if info is not None:
            run_of(item.config).record_skip(info, reason)
    full = run_of(item.config).disk_full if report.when == "teardown" else None
    if full:  # nothing more can be recorded: the run stops, its summary counting what reached the disk
        item.session.shouldstop = f"conformance: {full}; the run stops here"
    return report
