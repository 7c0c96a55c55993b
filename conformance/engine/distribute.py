"""pytest-xdist integration: which items share a worker, each worker's share of the cores,
and surviving a worker that dies.

Grouped by variant, one worker runs a case module's dtype/mode on every target (every op of the
module: the implementations of one operation share their drawn cases), so hypothesis draws the
cases once and the input, reference and cpu output are computed once; grouped by target, a
worker keeps to one device (several real GPUs).  Groups are read from the test ids by the
plugin's scheduler.  `-n N` alone means xdist's "load", which ignores groups, so "loadgroup"
is used unless the user chose a mode.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from conformance.devices.exits import end_now
from conformance.devices.facts import FactsBook
from conformance.engine import interrupts
from conformance.spec.item_ids import parse_item_id, worker_group
from conformance.store.crashes import last_case_started
from conformance.store.overruns import ending
from conformance.store.records import RecordWriter

HANDED_KEY = "conformance_targets"  # in a worker's input: target name -> what the target's `start` handed it


def handed_to_worker(workerinput: dict[str, Any] | None) -> dict[str, dict[str, str]]:
    """In a worker: what the controller's targets handed it (nothing without xdist)."""
    return json.loads(workerinput[HANDED_KEY]) if workerinput and HANDED_KEY in workerinput else {}


def group_by(chosen: str, targets: list[Any]) -> str:
    """'target' or 'variant' for --group-by (auto: per target with two or more real accelerators)."""
    if chosen != "auto":
        return chosen
    return "target" if sum(t.own_device for t in targets) >= 2 else "variant"


def dist_chosen(config: pytest.Config) -> bool:
    """Whether the user named a distribution mode (--dist, -d) anywhere pytest reads options."""
    words = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split(), *config.getini("addopts")]
    return any(w == "-d" or w.startswith("--dist") for w in map(str, words))


def configure(config: pytest.Config, run_dir: Path, cfg: Any | None) -> None:
    """On the xdist controller.  Always: hand the run folder to the workers and record items whose
    worker died.  Only for a run that asked for conformance (`cfg` given): group items by variant
    or target (loadgroup instead of -n's load) and share the cores' thread pools."""
    if cfg is not None and getattr(config.option, "dist", "no") == "load" and not dist_chosen(config):
        config.option.dist = "loadgroup"  # -n alone means "load", which ignores the groups
    workers = getattr(config.option, "numprocesses", None)
    hooks = XdistHooks(run_dir, cfg)
    if cfg is not None and isinstance(workers, int) and workers > 1:
        share_threads(workers)
        hooks.start_targets()
    config.pluginmanager.register(hooks, "conformance-xdist")


def end_without_finalizing() -> None:
    """Called at an xdist worker's start: when its interpreter exits (after it said all it has to say to the
    controller), it ends at once (`exits.end_now`)."""
    atexit.register(end_now)


def share_torch_threads(workers: int) -> None:
    """In a worker: its share of the cores for torch's intra-op pool."""
    import torch

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(1, workers)))


def share_threads(workers: int) -> None:
    """Before the workers start (they inherit the environment): each gets its share of the cores
    for numpy's BLAS and OpenMP too, not only torch's pool; N workers each running all-core
    pools oversubscribe the machine.  Values the user set are kept."""
    share = str(max(1, (os.cpu_count() or 1) // workers))
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, share)


class XdistHooks:
    """Hands the controller's run folder (and what its targets started) to every worker; records items whose
    worker died."""

    def __init__(self, run_dir: Path, cfg: Any | None) -> None:
        self.run_dir, self.cfg = run_dir, cfg
        self.handed: dict[str, dict[str, str]] = {}  # target name -> what its `start` gave the workers
        self.started: list[Any] = []
        self.folder: str | None = None
        self.facts = FactsBook(t.facts() for t in cfg.targets) if cfg is not None else FactsBook()

    def start_targets(self) -> None:
        """Each target's `start` (a target kind that runs elsewhere starts what every xdist worker shares)."""
        if self.cfg is None:
            return
        self.folder = tempfile.mkdtemp(prefix="conformance-targets-")
        for target in self.cfg.targets:
            handed = target.start(self.folder)
            self.started.append(target)
            if handed is not None:
                self.handed[target.name] = handed

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionstart(self, session: pytest.Session) -> Any:
        """xdist starts its workers here.  They start with the stops blocked (each takes them once its handler is
        in: `plugin._handle_stops`), and a stop meanwhile is held until the run loop: raised here, pytest skips the
        session's end (no summary, no teardown of the workers), and such a run was seen to hang until killed."""
        if self.cfg is None:
            return (yield)
        with interrupts.held(), interrupts.blocked():
            return (yield)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> None:
        interrupts.raise_if_requested()  # a stop held while the workers started

    def pytest_configure_node(self, node) -> None:
        node.workerinput["conformance_run_dir"] = str(self.run_dir)
        if self.handed:
            node.workerinput[HANDED_KEY] = json.dumps(self.handed)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """Each started target's `stop` (at once after a stop of the run); their folder goes whatever happens (a
        stop here is only remembered: `interrupts.closing`)."""
        try:
            now = interrupts.requested() is not None
            failed: list[BaseException] = []
            for target in self.started:  # each is stopped, whatever another's stop raises (an installed kind's)
                try:
                    target.stop(now)
                except Exception as exc:  # noqa: BLE001 - raised below, once the others are stopped
                    failed.append(exc)
            if failed:
                raise failed[0]
        finally:
            if self.folder is not None:
                shutil.rmtree(self.folder, ignore_errors=True)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On the controller: a worker that died mid-item (os.abort, a segfault, or its watchdog ending an op
        stuck in native code past --case-timeout) is recorded, with the case it had started (so that case can be
        replayed)."""
        text = str(report.longrepr) if report.failed else ""
        parsed = parse_item_id(report.nodeid)
        if "crashed while running" not in text or parsed is None:
            return
        ended = ending(self.run_dir, report.nodeid)  # its watchdog ended it, stuck in native code
        if ended is not None and ended.stopped:
            return  # after a stop: the item was interrupted, and an incomplete summary says so
        writer = RecordWriter(self.run_dir, "main", dict)
        facts = self.facts[parsed.target]
        if ended is not None:
            writer.crash(report.nodeid, ended.message, ended.case_json, overran=True, facts=facts)
        else:
            last = last_case_started(self.run_dir, report.nodeid)
            writer.crash(report.nodeid, text.strip().splitlines()[-1], last, facts=facts)
        writer.close()

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log):
        if self.cfg is not None and config.getvalue("dist") == "loadgroup":
            return _group_scheduling(self.cfg)(config, log)
        return None


def group_of(nodeid: str, targets: Any, by: str) -> str | None:
    """The group of a conformance item, read from its test id; None for other tests."""
    parsed = parse_item_id(nodeid)
    if parsed is None or parsed.target not in targets:
        return None
    return parsed.target if by == "target" else "::".join(worker_group(nodeid, parsed.dtype, parsed.mode))


def _group_scheduling(cfg: Any):
    from xdist.scheduler import LoadGroupScheduling

    class ConformanceGroupScheduling(LoadGroupScheduling):
        """xdist's loadgroup, with two changes.

        Conformance items are grouped by their test ids, not by `xdist_group` marks: xdist passes
        marks to the controller as a node-id suffix, which pytest 9.2 no longer lets it set (the
        marks are silently ignored: pytest-xdist#1386); other tests keep xdist's grouping.  And an
        item whose worker died is not handed to the replacement worker: xdist requeues the dead
        worker's whole group, crashed item included, so an item that aborts the process would kill
        every worker in turn.
        """

        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid, cfg.target_names, cfg.group_by) or super()._split_scope(nodeid)

        def remove_node(self, node):
            workload = self.assigned_work.pop(node)
            pending = [(scope, nodeid) for scope, unit in workload.items() for nodeid, done in unit.items() if not done]
            if not pending:
                return None  # a worker that finished
            scope, crashed = pending[0]  # items run in order: the first unfinished one was running
            workload[scope][crashed] = True  # done: the controller reports it as crashed
            self.workqueue.update({s: unit for s, unit in workload.items() if not all(unit.values())})
            for other in self.assigned_work:
                self._reschedule(other)
            return crashed

    return ConformanceGroupScheduling
