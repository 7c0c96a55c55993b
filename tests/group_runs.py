"""`python -m conformance run` in a process group of its own, for the tests that stop or crash a run as CI does:
a user module of transforms swept (`--sweep`), its own temporary folder (TMPDIR: what the run leaves there is
what it left), and what is left of the group once the run has ended."""

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import conformance
from conformance.store.summary_reader import read_summary

REPO = Path(conformance.__file__).resolve().parents[1]  # the checkout whose conformance this session imports
NOISE = ("conformance: torch", "conformance: imported", "conformance: cuda", "conformance: hypothesis", "platform ")


def _interrupt_default() -> None:
    """Python's Ctrl-C handler in the run whatever this process inherited (see test_cli's `_interrupt_default`)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class GroupRun:
    """One run of `python -m conformance run cases/test_sweep.py --sweep <module>`, the session leader of its group."""

    def __init__(self, tmp_path: Path, modules: dict[str, str], *args: str, env: dict[str, str] | None = None):
        # short: an ISA worker's socket path must fit AF_UNIX's 108 bytes, which pytest's tmp_path does not
        self.tmp = Path(tempfile.mkdtemp(prefix="cf-", dir="/tmp"))
        code = tmp_path / "modules"
        code.mkdir()
        for name, text in modules.items():
            (code / f"{name}.py").write_text(text)
        self.run_dir = tmp_path / "reports" / "cut"
        path = os.pathsep.join(p for p in (str(code), os.environ.get("PYTHONPATH", "")) if p)
        self.env = {**os.environ, "TMPDIR": str(self.tmp), "PYTHONPATH": path, **(env or {})}
        command = [sys.executable, "-m", "conformance", "run", "cases/test_sweep.py", "-p", "no:cacheprovider"]
        command += ["--reports-dir", str(tmp_path / "reports"), "--run-name", "cut", *args]
        self.process = subprocess.Popen(
            command,
            cwd=REPO,
            env=self.env,
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=_interrupt_default,
        )
        self.output = ""

    def __enter__(self) -> "GroupRun":
        return self

    def __exit__(self, *exc: object) -> None:
        """Whatever the test found: nothing of the run goes on, and its temporary folder goes."""
        self.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def wait_for(self, condition: Callable[[], bool], what: str, within: float = 600) -> None:
        """Poll for `condition` while the run goes on (a loaded machine takes its time to start)."""
        began = time.monotonic()
        while not condition():
            if self.process.poll() is not None:
                raise AssertionError(f"the run ended before {what}: {self.process.communicate()[0][-3000:]}")
            if time.monotonic() - began > within:
                self.kill()
                raise AssertionError(f"no {what} in {within} s")
            time.sleep(0.05)

    def stop_like_timeout(self, signum: int = signal.SIGTERM) -> None:
        """What GNU `timeout` does when its time is up: the signal to the command, then to its whole process group."""
        os.kill(self.process.pid, signum)
        os.killpg(self.process.pid, signum)

    def stop_like_terminal(self) -> None:
        """Ctrl-C at a terminal: SIGINT to the foreground process group."""
        os.killpg(self.process.pid, signal.SIGINT)

    def finish(self, within: float) -> float:
        """Wait for the run to end; the seconds it took (it fails past `within`)."""
        began = time.monotonic()
        try:
            self.output = self.process.communicate(timeout=within)[0]
        except subprocess.TimeoutExpired:
            self.kill()
            left = self.process.communicate()[0][-3000:]
            raise AssertionError(f"the run had not ended {within} s later: {left}") from None
        return time.monotonic() - began

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def lines(self) -> list[str]:
        """What the run printed, less the header's version lines."""
        return [line for line in self.output.splitlines() if line.strip() and not line.startswith(NOISE)]

    def summary(self) -> dict[str, Any]:
        return read_summary(self.run_dir)

    def left_behind(self, within: float = 15) -> list[str]:
        """Processes still alive in the run's group (zombies are dead: an init that does not reap keeps them) and
        the run's temporary folders, once given `within` seconds to go."""
        began = time.monotonic()
        while True:
            found = [f"process {p}" for p in _alive_in_group(self.process.pid)]
            found += [f"folder {f.name}" for f in self.tmp.glob("conformance-*")]
            if not found or time.monotonic() - began > within:
                return found
            time.sleep(0.2)


def _alive_in_group(pgid: int) -> list[str]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        state, _ppid, group = text.rpartition(")")[2].split()[:3]
        if int(group) == pgid and state != "Z":
            found.append(f"{stat.parent.name} {text.partition(' ')[2][:60]}")
    return found
