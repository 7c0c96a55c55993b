"""An op stuck in native code still ends as a recorded timeout (issue 37, item 4).

`sum(range(10**11))` loops in C holding the GIL: the SIGALRM behind --case-timeout, and SIGTERM, are never
handled while it runs, and the run hung until a kill -9, with no summary.  Each run here is a real process
(the watchdog kills it), with the hang in a planted op.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.store.reader import RunRecords
from conformance.store.summary_reader import read_summary

PLANTED = Path(__file__).with_name("planted_ops.py").read_text()
STUCK = """
import os
from pathlib import Path
from planted_ops import *

def native_loop(image, params):
    Path(os.environ["ENTERED"]).touch()  # inside the timed call: the loop below starts now
    return sum(range(10**11))  # C code that holds the GIL: no Python signal handler runs until it returns

test_good = make_spec("good", good_resize, dtypes=("float32",)).test()
test_stuck = make_spec("stuck", native_loop, dtypes=("float32",)).test()
"""
QUICK = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--targets=cpu", "--max-examples=2"]


def _start(pytester, *args):
    """The run in a process group of its own: what a CI job's shell starts, and what a kill ends whole."""
    pytester.makepyfile(planted_ops=PLANTED, test_stuck=STUCK)
    env = dict(os.environ, ENTERED=str(pytester.path / "entered"))
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", *QUICK, *args],
        cwd=pytester.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _finish(process, within):
    try:
        out, err = process.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the stuck process too (an xdist worker is not the leader)
        out, err = process.communicate()
        pytest.fail(f"the run did not end within {within} s:\n{out[-3000:]}\n{err[-3000:]}")
    return out, err


def _run(pytester):
    run = (pytester.path / "reports" / "latest").resolve()
    return run, read_summary(run), list(RunRecords(run))


def _stuck_group(summary):
    return next(g for g in summary["groups"] if g["op"] == "stuck")


def test_a_native_hang_in_one_process_is_recorded_as_a_timeout_and_ends_the_run_incomplete(pytester):
    start = time.monotonic()
    process = _start(pytester, "--case-timeout=1", "-n", "0", "-k", "good or stuck and reference")
    out, err = _finish(process, within=90)
    assert process.returncode == -signal.SIGKILL, (out[-3000:], err[-3000:])
    assert time.monotonic() - start < 90
    said = [line for line in err.splitlines() if "in native code" in line]
    assert len(said) == 1 and "ran past --case-timeout (1 s)" in said[0] and "incomplete" in said[0], err[-3000:]
    run, summary, records = _run(pytester)
    assert summary["complete"] is False
    stuck = _stuck_group(summary)
    assert stuck["verdict"] == "error" and stuck["causes"] == {"timeout": 1}, stuck
    timeout = next(r for r in records if r.get("crash") and r["op"] == "stuck")
    assert "per-case limit of 1 s (--case-timeout) in native code" in timeout["message"]
    assert "Rerun: python -m conformance run" in timeout["message"]  # the case it was stuck in, replayable
    assert summary["totals"]["pass"] > 0  # the items that ended before it are kept
    assert (run / "index.html").is_file()


def test_a_native_hang_under_xdist_ends_its_worker_as_a_recorded_timeout_and_the_run_goes_on(pytester):
    process = _start(pytester, "--case-timeout=1", "-n", "2", "-k", "good or stuck and reference")
    out, err = _finish(process, within=120)
    assert process.returncode == 1, (out[-3000:], err[-3000:])
    assert "1 failed" in out and "passed" in out, out[-3000:]
    _, summary, records = _run(pytester)
    assert summary["complete"] is True
    stuck = _stuck_group(summary)
    assert stuck["verdict"] == "error" and stuck["causes"] == {"timeout": 1}, stuck
    timeout = next(r for r in records if r.get("crash") and r["op"] == "stuck")
    assert "per-case limit of 1 s (--case-timeout) in native code" in timeout["message"]
    assert all(g["verdict"] == "pass" for g in summary["groups"] if g["op"] == "good")


@pytest.mark.parametrize("workers", ["0", "2"])
def test_sigterm_to_the_group_during_a_native_hang_ends_the_run_with_its_summary(pytester, workers):
    """What a CI cancellation sends.  The stuck process's SIGTERM handler cannot run; its watchdog ends it 5 s
    later: in one process, the run (killed: nobody is left to exit 2); under xdist, the worker, and the
    controller ends the run as interrupted (exit 2)."""
    selected = "stuck and reference" if workers == "0" else "good or stuck and reference"
    process = _start(pytester, "--case-timeout=600", "-n", workers, "-k", selected)
    entered = pytester.path / "entered"
    deadline = time.monotonic() + 90
    while not entered.exists():
        assert process.poll() is None and time.monotonic() < deadline, "the stuck op never started"
        time.sleep(0.05)
    stopped = time.monotonic()
    os.killpg(process.pid, signal.SIGTERM)
    out, err = _finish(process, within=60)
    assert time.monotonic() - stopped < 30
    assert process.returncode == (-signal.SIGKILL if workers == "0" else 2), (out[-3000:], err[-3000:])
    _, summary, records = _run(pytester)
    assert summary["complete"] is False
    assert _stuck_group(summary)["verdict"] == "interrupted"  # not a timeout, nor a crash: it was stopped
    assert not any(r.get("crash") for r in records)
    assert "conformance: stopped by SIGTERM while" in err + out and "in native code" in err + out, err[-3000:]
