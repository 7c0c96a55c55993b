"""Starting pytest for `python -m conformance run` and `baseline`: the arguments it gets (every core
by default, plugin options joined to their values) and a child process that ends like the user's run
ends (Ctrl-C and SIGTERM become an interrupted run, exit 2)."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

from conformance.engine.options import value_options

WORKERS_ENV = "CONFORMANCE_WORKERS_CHOSEN"  # how many xdist workers `run` chose (for the run's header)
HYPOTHESIS_VALUE_OPTIONS = ("--hypothesis-profile", "--hypothesis-seed", "--hypothesis-verbosity")
# Options after which one process is what the user needs: a debugger, unbuffered output, one case,
# collection only; and those by which the user chose the process count or turned xdist off.
SERIAL_OPTIONS = ("--pdb", "--trace", "-s", "--capture=no", "--replay", "--co", "--collect-only", "--setup-plan")
CHOSEN_OPTIONS = ("-n", "--numprocesses", "--dist", "-d", "--tx", "no:xdist")


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
    """The pytest arguments for `run`.  What to collect is pytest's own decision: ./cases is its
    `testpaths`, used when the arguments name no file or folder.  Unless the user chose otherwise, the run
    uses every core (`-n <cores>`, see `workers_for`)."""
    args = joined(args)
    workers = workers_for(args)
    return (
        ["--conformance"]
        + (["-o", "testpaths=cases"] if Path("cases").is_dir() else [])
        + ([f"-n{workers}"] if workers else [])
        + args
    )


def run_pytest(pytest_args: list[str], workers: int = 0) -> int:
    """pytest in a child process (it must import and assert-rewrite the plugin itself).  Ctrl-C reaches
    the child too, which ends the run as interrupted (summary and report marked incomplete, exit 2):
    this process waits for that instead of killing it; SIGTERM is passed on for the same ending.
    `workers`: the xdist workers `run` chose itself (the header says so)."""
    env = dict(os.environ, **({WORKERS_ENV: str(workers)} if workers else {}))
    child = subprocess.Popen([sys.executable, "-m", "pytest", *pytest_args], env=env)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signal.SIGTERM))
    try:
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                continue
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(args: list[str]) -> int:
    """`python -m conformance run ARGS`."""
    return run_pytest(pytest_command(args), workers_for(joined(args)))
