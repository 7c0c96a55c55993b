"""A watchdog process beside each process that runs items: it ends that process when an op overruns the case
timeout in native code, where nothing inside the process can cut it, and records the item as that timeout.

Why: `--case-timeout` cuts an op with SIGALRM, whose handler runs only between Python bytecodes.  An op stuck in
native code that holds the GIL (a C loop) never gets back to them: the SIGALRM, SIGTERM and Ctrl-C handlers never
run, nor does any thread of the process, and a run hung until a kill -9, with no summary.  This process reads the
running call's deadline (its limit and a grace, `devices.deadline`) from memory both map; once it is past:

- an xdist worker: the item, its message and case go to `outcomes/<worker>.overran`, then the worker is killed;
  the controller records the item as a timeout and replaces the worker, as for any worker that dies;
- a single process (-n 0): the item is recorded as a timeout, summary.json and the report are written marked
  incomplete and one line says so; then the process is killed (no controller is left to go on with the run).

The watched process also hands its signals' wakeup bytes here: a stop (SIGTERM, Ctrl-C) that arrives while an op
is stuck in native code, where its handler cannot run, and is still stuck STOP_GRACE_S later, ends the process the
same way, its item interrupted rather than timed out.
The watchdog runs in a session of its own, so that a signal to the run's process group (Ctrl-C, CI's SIGTERM) does
not reach it, even while it starts; it ends when the watched process closes its end of the pipe, or dies.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from conformance.devices import deadline
from conformance.devices.deadline import SharedDeadline, grace_s
from conformance.store import overruns
from conformance.store.records import RecordWriter

POLL_S = 0.2
STOP_GRACE_S = 5.0  # after a stop, how long an op stuck in native code may go on before the run is ended
STOPS = {signal.SIGINT.value: "Ctrl-C (SIGINT)", signal.SIGTERM.value: "SIGTERM"}


def runs_items(config: Any) -> bool:
    """Whether this pytest process runs the items: an xdist worker or a single process, not the controller."""
    return hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None)


class Watchdog:
    """The watched process's side: the watchdog process, the shared deadline, the signal wakeup fd it set.
    Registered with pytest as a plugin, so it is stopped at the session's unconfigure."""

    def __init__(self, run_dir: Path, worker: str, single: bool) -> None:
        self.shared = SharedDeadline()
        fd = self.shared.fileno()
        command = [sys.executable, "-m", "conformance.watchdog", str(os.getpid()), str(fd), str(run_dir), worker]
        self.process = subprocess.Popen(
            [*command, *(["--single"] if single else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            pass_fds=(fd,),
            start_new_session=True,  # a signal to the run's process group is the run's to answer, not this one's
        )
        deadline.install(self.shared)
        self.wakeup = False
        if threading.current_thread() is threading.main_thread():
            pipe = self.process.stdin.fileno()  # type: ignore[union-attr]
            os.set_blocking(pipe, False)  # what set_wakeup_fd asks: a signal handler never blocks on it
            previous = signal.set_wakeup_fd(pipe, warn_on_full_buffer=False)
            if previous != -1:  # another's (an event loop's): theirs to keep
                signal.set_wakeup_fd(previous)
            self.wakeup = previous == -1

    def stop(self) -> None:
        deadline.install(None)
        if self.wakeup:
            signal.set_wakeup_fd(-1)
            self.wakeup = False
        with contextlib.suppress(OSError):
            self.process.stdin.close()  # type: ignore[union-attr]
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.shared.close()

    def pytest_unconfigure(self, config: Any) -> None:
        self.stop()


def watch(config: Any, run_dir: Path, worker: str, limit_s: float) -> Watchdog | None:
    """Start this process's watchdog where it runs items under a case timeout; stopped at unconfigure."""
    if not limit_s or not runs_items(config):
        return None
    found = Watchdog(run_dir, worker, single=not hasattr(config, "workerinput"))
    config.pluginmanager.register(found, "conformance-watchdog")
    return found


class Watched:
    """The watchdog's view of the process it watches, and how it ends it.  Its methods import the store and the
    report when they are needed, not at the top: a watchdog starts beside every process that runs items (each
    pytester run of the harness's tests too), and numpy alone tripled its start-up; the report imports torch."""

    def __init__(self, pid: int, run_dir: Path, worker: str, single: bool) -> None:
        self.pid, self.run_dir, self.worker, self.single = pid, run_dir, worker, single

    def overran(self, limit_s: float, check: int) -> None:
        """The running call went past its limit and grace in native code: record it, then end the process."""
        nodeid = overruns.current_item(self.run_dir, self.worker) or "?"
        found = overruns.running(self.run_dir, self.worker)
        case = found[1] if found is not None and found[0] == nodeid and found[2] == check else None
        grace = grace_s(limit_s)
        message = (
            f"the op ran past the per-case limit of {limit_s:g} s (--case-timeout) in native code, where it cannot "
            f"be cut: the watchdog ended its process {grace:g} s later"
        )
        said = f"conformance: {nodeid} ran past --case-timeout ({limit_s:g} s) in native code, where it cannot be cut"
        try:
            if not self.single:
                overruns.mark(self.run_dir, self.worker, nodeid, overruns.Ending(message, case, stopped=False))
                say(f"{said}; its worker {self.worker} was ended {grace:g} s later")
                return
            writer = RecordWriter(self.run_dir, "watchdog", dict)
            writer.crash(nodeid, message, case, overran=True)
            writer.close()
            say(f"{said}; the run was ended {grace:g} s later: {self.finish()}")
        finally:
            self.kill()

    def stopped(self, why: str) -> None:
        """A stop arrived while an op was stuck in native code, which it cannot reach: end the process, its item
        interrupted (a single process: the run, its summary marked incomplete)."""
        nodeid = overruns.current_item(self.run_dir, self.worker) or "an item"
        said = f"conformance: {why} while {nodeid} was in native code, where a stop cannot act"
        try:
            if not self.single:
                overruns.mark(self.run_dir, self.worker, nodeid, overruns.Ending("", None, stopped=True))
                say(f"{said}; its worker {self.worker} was ended")
                return
            say(f"{said}; {self.finish()}")
        finally:
            self.kill()

    def finish(self) -> str:
        """summary.json and the report, marked incomplete; what to say of them."""
        # imported here: the report imports torch, which a watchdog never needs
        from conformance.report.terminal import finish_run_folder

        try:
            ended = finish_run_folder(self.run_dir, interrupted=True)
        except Exception as exc:  # noqa: BLE001 - the process is ended whatever the summary does
            return f"incomplete, and its summary could not be written ({type(exc).__name__}: {exc})"
        shown = (
            f"; report: {ended.report_path}" if ended.report_path is not None else f" (no report: {ended.report_error})"
        )
        return f"incomplete, summary {self.run_dir / 'summary.json'}{shown}"

    def kill(self) -> None:
        if os.getppid() == self.pid:  # still the process it watches (not one that took its number)
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


def say(line: str) -> None:
    with contextlib.suppress(OSError):
        sys.stderr.write(f"\n{line}\n")
        sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.watchdog", description=__doc__.splitlines()[0])
    parser.add_argument("pid", type=int)
    parser.add_argument("fd", type=int, help="the shared deadline's file (devices.deadline)")
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("worker")
    parser.add_argument("--single", action="store_true", help="a single process: finish the run folder")
    args = parser.parse_args(argv)
    shared = SharedDeadline.attach(args.fd)
    watched = Watched(args.pid, args.run_dir, args.worker, args.single)
    stop: tuple[float, int, str] | None = None  # (when to end the run, the stuck call, why) after a stop
    while True:
        if select.select([0], [], [], POLL_S)[0]:
            data = os.read(0, 512)
            if not data:
                return 0  # the watched process closed the pipe: it ended, or stopped watching
            asked = [STOPS[b] for b in data if b in STOPS]
            due, _, call, _ = shared.read()
            if asked and stop is None and due:
                stop = (time.monotonic() + STOP_GRACE_S, call, f"stopped by {asked[0]}")
        due, limit_s, call, check = shared.read()
        now = time.monotonic()
        if due and now > due:
            watched.overran(limit_s, check)
            return 0
        if stop is not None and now > stop[0]:
            if due and call == stop[1]:
                watched.stopped(stop[2])
                return 0
            stop = None


if __name__ == "__main__":
    sys.exit(main())
