"""`cpu:<level>`: the cpu with its kernels for a lower instruction set, run in a worker process started with
ATEN_CPU_CAPABILITY set (conformance.devices.isa).  Its cases are handed to the worker ahead of their items
(`prefetch`), so the worker computes while this process checks the other targets."""

from __future__ import annotations

import contextlib
import os
import subprocess
from dataclasses import dataclass
from typing import Any

from conformance.devices import isa, isa_feed, isa_start
from conformance.devices.cpu_elsewhere import CpuElsewhereTarget
from conformance.devices.facts import ScriptDevice
from conformance.devices.isa import ENV, lower_levels
from conformance.devices.placement import is_device_mix_error
from conformance.devices.runs import CaseTimeout, OpRun
from conformance.devices.targets import Target
from conformance.spec.opspec import SOURCES, OpSpec, Sampled
from conformance.spec.recipes import Case


@dataclass(frozen=True)
class IsaTarget(CpuElsewhereTarget):
    level: str = "default"

    cpu_path = True
    prefetches = True
    table_rank = 0.5  # after the cpu

    def script_device(self) -> ScriptDevice:
        """The cpu with this instruction set's kernels (ATEN_CPU_CAPABILITY)."""
        return ScriptDevice("cpu", self.level)

    @property
    def child_environment(self) -> dict[str, str]:
        return {ENV: self.level}

    def run_elsewhere(self, spec: OpSpec, case: Case, sampled: Sampled | None, timeout_s: float) -> OpRun:
        """The case in the worker process (its answer may already be waiting)."""
        run = OpRun()
        request = _request(spec, case, sampled, timeout_s)
        if request is None:
            run.not_run = f"{spec.name} was not defined by a case module (no source file to load it from)"
            return run
        answer = isa_feed.worker(self.level).call((spec.name, case.key), request)
        if answer.unavailable is not None:
            run.not_run = answer.unavailable
        elif answer.error is not None:
            run.error, run.trace, run.error_message = answer.error, answer.error, answer.error_message
            run.error_type = CaseTimeout if answer.timed_out else isa.error_class(answer.error_type)
            run.timed_out = answer.timed_out
            run.mixed_devices = is_device_mix_error(answer.error_message)
        else:
            run.output = answer.output
        return run

    def prefetch(self, spec: OpSpec, case: Case, sampled: Sampled | None, timeout_s: float) -> None:
        request = _request(spec, case, sampled, timeout_s)
        if request is not None:
            isa_feed.worker(self.level).submit((spec.name, case.key), request)

    def discard_prefetched(self) -> None:
        isa_feed.worker(self.level).discard()

    def start(self, folder: str) -> dict[str, str]:
        """One worker process for every xdist worker to share (conformance.devices.isa_feed): its start-up (torch
        and the libraries under test) is paid once per level, not once per xdist worker."""
        path = os.path.join(folder, f"{self.level}.sock")
        env = dict(os.environ, **self.child_environment)
        env.pop("CONFORMANCE_TARGETS", None)
        _STARTED[self.level] = isa_start.start(["--listen", path], env, stdin=subprocess.PIPE)
        return {"socket": path}

    def setup_worker(self, handed: dict[str, str] | None) -> None:
        if handed and "socket" in handed:
            isa_feed.use_shared({self.level: handed["socket"]})

    def close_worker(self) -> None:
        isa_feed.close(self.level)

    def stop(self, now: bool) -> None:
        """The shared worker ends when its stdin closes; after a stop it is killed at once (it may be in a case that
        runs to its timeout, and a cancelled job has seconds)."""
        for told in _STARTED.values():  # every level's is told first: they exit side by side
            with contextlib.suppress(OSError, AttributeError):  # stdin is a pipe (started with PIPE)
                told.stdin.close()  # type: ignore[union-attr]
        process = _STARTED.pop(self.level, None)
        if process is None:
            return
        try:
            process.wait(timeout=0 if now else 15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


_STARTED: dict[str, subprocess.Popen[bytes]] = {}  # level -> the shared worker this (controller) process started


def _request(spec: OpSpec, case: Case, sampled: Sampled | None, timeout_s: float) -> dict[str, Any] | None:
    """What the worker needs to run the case (it rebuilds the input from the recipe); None for an op no case
    module defined (the worker could not load it)."""
    if spec.name not in SOURCES:
        return None
    return {"source": SOURCES[spec.name], "op": spec.name, "case": case.json, "timeout": timeout_s, "sampled": sampled}


def isa_targets() -> list[Target]:
    return [
        IsaTarget(f"cpu:{level}", "cpu", f"host CPU, {ENV}={level} (worker process)", level=level)
        for level in lower_levels()
    ]
