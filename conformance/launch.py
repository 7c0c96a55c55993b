"""Starting pytest for `python -m conformance run` and `baseline`: the arguments it gets (every core
by default, plugin options joined to their values) and a child process that ends like the user's run
ends (Ctrl-C and SIGTERM become an interrupted run, exit 2, within STOP_GRACE_S; a pytest that dies before
its summary leaves one all the same, see conformance.report.unfinished)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from conformance.engine.options import value_options
from conformance.suite.stock import suite_arguments

WORKERS_ENV = "CONFORMANCE_WORKERS_CHOSEN"  # how many xdist workers `run` chose (for the run's header)
HYPOTHESIS_VALUE_OPTIONS = ("--hypothesis-profile", "--hypothesis-seed", "--hypothesis-verbosity")
# Options after which one process is what the user needs: a debugger, unbuffered output, one case,
# collection only; and those by which the user chose the process count or turned xdist off.
SERIAL_OPTIONS = ("--pdb", "--trace", "-s", "--capture=no", "--replay", "--co", "--collect-only", "--setup-plan")
CHOSEN_OPTIONS = ("-n", "--numprocesses", "--dist", "-d", "--tx", "no:xdist")
# "<launcher pid>:<fd>": the pipe on which pytest names its run folder to the launcher (`announce_run_dir`)
RUN_DIR_ENV = "CONFORMANCE_RUN_DIR_PIPE"
STOP_GRACE_S = 20.0  # after a stop, how long pytest may take to end before it is killed (CI allows 30 s or less)
INTERRUPTED = 2  # pytest's ExitCode.INTERRUPTED
USAGE_ERROR = 4  # pytest's ExitCode.USAGE_ERROR


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def workers_for(args: list[str]) -> int:
    """How many pytest-xdist workers `run` starts: one per core, unless the arguments chose (-n, --dist,
    -p no:xdist), ask for one process (--pdb, -s, --replay, --co) or xdist is not installed."""
    words = [*args, *os.environ.get("PYTEST_ADDOPTS", "").split()]
    if any(
        w in CHOSEN_OPTIONS
        or w.startswith(("-n", "--numprocesses=", "--dist=", "-pno:xdist", "--replay=", "--capture=no"))
        or w in SERIAL_OPTIONS
        for w in words
    ):
        return 0
    if importlib.util.find_spec("xdist") is None:
        return 0
    count = cores()
    return count if count > 1 else 0


def joined(args: list[str]) -> list[str]:
    """The arguments with each plugin or hypothesis option that takes a value joined to it (`--reports-dir=DIR`):
    pytest finds its rootdir before it loads plugins, and would take a separate value that is an existing path
    for a path to test."""
    found, values = [], value_options() | set(HYPOTHESIS_VALUE_OPTIONS)
    rest = list(args)
    while rest:
        arg = rest.pop(0)
        if arg in values and rest:
            arg = f"{arg}={rest.pop(0)}"
        found.append(arg)
    return found


def pytest_command(args: list[str]) -> list[str]:
    """The pytest arguments for `run`: the stock suite, alone or beside the user's own case folders, from a
    checkout or an installed package (`conformance.suite.suite_arguments`; a ValueError is a usage error).
    Unless the user chose otherwise, the run uses every core (`-n <cores>`, see `workers_for`)."""
    args = joined(args)
    workers = workers_for(args)
    return ["--conformance"] + ([f"-n{workers}"] if workers else []) + suite_arguments(args)


def announce_run_dir(run_dir: Path) -> None:
    """In pytest started by `run_pytest` (once, in its own process): name the run folder to the launcher, which
    finishes it if pytest dies before its summary.  The variable is dropped here so that nothing pytest starts
    (xdist workers, another pytest) writes to a descriptor number that means something else there."""
    found = os.environ.pop(RUN_DIR_ENV, "")
    pid, _, fd = found.partition(":")
    if pid.isdigit() and fd.isdigit() and int(pid) == os.getppid():
        with contextlib.suppress(OSError):
            os.write(int(fd), f"{run_dir}\n".encode())
            os.close(int(fd))


class Child:
    """pytest in a child process, and the stops this process receives while it runs.  SIGTERM is passed on
    (a signal to the launcher alone is CI's cancellation too); Ctrl-C reaches the child from the terminal.
    Either way pytest ends the run as interrupted; one that has not ended STOP_GRACE_S later is killed."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.stopped: str | None = None
        self.deadline = float("inf")

    def stop(self, signum: int, frame: FrameType | None = None) -> None:
        if self.stopped is None:
            self.stopped = signal.Signals(signum).name
            self.deadline = time.monotonic() + STOP_GRACE_S
        if signum == signal.SIGTERM and self.process is not None:
            with contextlib.suppress(OSError):
                self.process.send_signal(signal.SIGTERM)

    def run(self, command: list[str], env: dict[str, str], fd: int) -> int:
        """Start it (`fd` is inherited), wait for it, and return its exit code."""
        previous = signal.signal(signal.SIGTERM, self.stop)
        try:
            try:
                self.process = subprocess.Popen(command, env=env, pass_fds=(fd,))
            finally:
                os.close(fd)
            while True:
                try:
                    return self.process.wait(timeout=max(0.05, min(1.0, self.deadline - time.monotonic())))
                except subprocess.TimeoutExpired:
                    if time.monotonic() > self.deadline:
                        self.deadline = float("inf")
                        late = f"conformance: pytest had not ended {STOP_GRACE_S:g} s after the stop: killed"
                        print(late, file=sys.stderr)
                        self.process.kill()
                except KeyboardInterrupt:
                    self.stop(signal.SIGINT)
        finally:
            signal.signal(signal.SIGTERM, previous)


def run_pytest(pytest_args: list[str], workers: int = 0) -> int:
    """pytest in a child process (it must import and assert-rewrite the plugin itself), and its exit code:
    pytest's own, or, where it died before its summary, what `ended` makes of it.  `workers`: the xdist
    workers `run` chose itself (the header says so)."""
    env = dict(os.environ, **({WORKERS_ENV: str(workers)} if workers else {}))
    reader, writer = os.pipe()
    env[RUN_DIR_ENV] = f"{os.getpid()}:{writer}"
    child = Child()
    code = child.run([sys.executable, "-m", "pytest", *pytest_args], env, writer)
    os.set_blocking(reader, False)  # whatever pytest started that may have kept the pipe open
    named = ""
    with contextlib.suppress(OSError):
        named = os.read(reader, 1 << 16).decode(errors="replace").strip()
    os.close(reader)
    return ended(code, Path(named) if named else None, child.stopped)


def ended(code: int, run_dir: Path | None, stopped: str | None) -> int:
    """The exit code of a `run` whose pytest ended with `code` (negative: killed by that signal), and for a run
    that never reached its summary, the summary all the same and one line (conformance.report.unfinished)."""
    killed = None
    if code < 0:
        killed = signal.Signals(-code).name if -code in signal.valid_signals() else f"signal {-code}"
    if killed in ("SIGINT", "SIGTERM"):
        stopped = stopped or killed
    if run_dir is not None and run_dir.is_dir():
        # only now, after the run: it imports torch, which `run` must not before pytest starts
        from conformance.report import unfinished

        if unfinished.unfinished(run_dir) and (stopped or killed or unfinished.began(run_dir)):
            how = f"was killed by {killed}" if killed else f"exited with code {code}"
            said = unfinished.finish(run_dir, None if stopped else how)
            head = f"the run was stopped ({stopped})" if stopped else f"pytest {how}"
            # on a line of its own: pytest may have died mid-line
            print(f"\nconformance: {head} before it wrote its summary{said}", file=sys.stderr, flush=True)
            return INTERRUPTED if stopped else 1
    elif stopped:
        print(f"conformance: the run was stopped ({stopped}) before it started: nothing was recorded", file=sys.stderr)
        return INTERRUPTED
    if killed is None:
        return code
    print(f"conformance: pytest was killed by {killed} after its summary", file=sys.stderr, flush=True)
    return INTERRUPTED if stopped else 1


def run(args: list[str]) -> int:
    """`python -m conformance run ARGS`."""
    try:
        command = pytest_command(args)
    except ValueError as exc:
        print(f"conformance run: {exc}", file=sys.stderr)
        return USAGE_ERROR
    return run_pytest(command, workers_for(joined(args)))
