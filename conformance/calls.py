"""Calling the op under test on one target, and keeping whatever happens as data.

Function ops are called with the input tensor; module ops are built on the cpu,
moved with `.to(target)` (what is left behind is noted), given the case's
sampled random parameters, and called.  On accelerators the call runs with a
`PlacementLog`.  An exception never escapes: it becomes text on the `OpRun`.
"""
from __future__ import annotations

import contextlib
import signal
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.utils._pytree import tree_map

from conformance.placement import PlacementLog, is_device_mix_error, is_library, is_plumbing, left_behind
from conformance.recipes import Case
from conformance.spec import OpSpec, Sampled
from conformance.targets import Target
from conformance.virtual import NotEmulatable




class CaseTimeout(BaseException):
    """The op ran past the per-case time limit (`--case-timeout`).

    A BaseException, like KeyboardInterrupt: a library's `except Exception:` fallback must not
    swallow it, and no expected error class can accept it."""


_limits = {"case_timeout_s": 0.0}


def set_case_timeout(seconds: float) -> None:
    """Per-call time limit for ops (0: none); set once per session by the plugin."""
    _limits["case_timeout_s"] = max(0.0, seconds)


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise CaseTimeout in the op after `seconds` (Python code only; the main thread of a
    POSIX process, which pytest and its xdist workers are; elsewhere no limit)."""
    usable = seconds > 0 and hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise CaseTimeout(f"the op ran longer than the per-case limit of {seconds:g} s (--case-timeout)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass
class OpRun:
    """What one call of the op gave: its output, or its error as text (no live exception:
    its traceback would keep every frame's tensors alive in the baseline cache)."""

    output: Any = None
    error: str | None = None  # describe_error(): type, message, raising frame
    error_text: str | None = None  # the full traceback
    error_type: type[BaseException] | None = None  # the class only: no frames are kept
    error_message: str = ""
    timed_out: bool = False  # the harness cut the call at --case-timeout
    mixed_devices: bool = False  # the error is PyTorch's "tensors on different devices"
    not_emulatable: str | None = None
    resource: str | None = None  # out of memory: not a verdict on the op
    log: PlacementLog | None = None
    module_problems: list[str] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return getattr(self.output, "nbytes", 1024)

    @property
    def raised(self) -> str | None:
        """The exception class name, or None when the call returned."""
        return self.error_type.__name__ if self.error_type is not None else None

    def fail(self, exc: BaseException) -> None:
        self.error = describe_error(exc)
        self.error_text = "".join(traceback.format_exception(exc))
        self.error_type = type(exc)
        self.error_message = str(exc)
        self.mixed_devices = is_device_mix_error(str(exc))


def describe_error(exc: BaseException) -> str:
    """Exception type and message, where it was raised and the library line that called into torch."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not is_plumbing(f.filename)]
    where = ""
    if frames:
        raised = frames[-1]
        where = f" (raised at {raised.filename}:{raised.lineno} in {raised.name}"
        library = [f for f in frames if is_library(f.filename)]
        if library and library[-1] is not raised:
            where += f", called from {library[-1].filename}:{library[-1].lineno} in {library[-1].name}"
        where += ")"
    return f"{type(exc).__name__}: {str(exc).strip()}{where}"


def _release_memory(target: Target) -> None:
    if target.kind == "cuda" and torch.cuda.is_available():
        torch.cuda.empty_cache()


CPU_KIND = "cpu"


def seed_everything(seed: int, kind: str) -> None:
    """Seed the cpu generator, and the target's own where it is a real, initialised device.

    Not `torch.manual_seed`: on a CUDA build with no GPU initialised, it queues a lazy seeding call
    for cuda, xpu and mtia each, with a formatted stack, about 8 ms per call: most of a small case."""
    torch.default_generator.manual_seed(seed)
    if kind == "cuda" and torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)
    elif kind == "xpu" and torch.xpu.is_initialized():
        torch.xpu.manual_seed_all(seed)
    elif kind == "mps":
        torch.mps.manual_seed(seed)


def on_target(value: Any, target: Target) -> Any:
    """Sampled parameters moved to a target (tensors moved, everything else as is)."""
    return tree_map(lambda v: target.put(v) if isinstance(v, torch.Tensor) else v, value)


def sample_params(spec: OpSpec, host_input: torch.Tensor, case: Case) -> Sampled | None:
    """A random augmentation's parameters, drawn once on the cpu with the case's seed."""
    if spec.module is None or spec.module.sample is None:
        return None
    with torch.random.fork_rng(devices=[]):
        seed_everything(case.recipe.seed, CPU_KIND)
        return spec.module.sample(spec.module.build(dict(case.params)), host_input, dict(case.params))


@dataclass
class Sampling:
    """A random module's own sampler, run on a target with the module moved there."""

    params: Sampled | None = None
    log: PlacementLog | None = None
    error: str | None = None
    mixed_devices: bool = False
    not_emulatable: str | None = None


def sample_on(spec: OpSpec, tensor: torch.Tensor, case: Case, target: Target) -> Sampling:
    """`spec.module.sample` with the module moved to the target and the input there (seeded with the case)."""
    assert spec.module is not None and spec.module.sample is not None
    found = Sampling(log=PlacementLog(target.device))
    found.log.taint(tensor)
    try:
        with target.active():
            module = spec.module.build(dict(case.params))
        module = target.put(module)
        # the timer is innermost: disarmed before target.active restores torch.cuda, never firing inside it
        with torch.random.fork_rng(devices=[]), target.active(found.log), time_limit(_limits["case_timeout_s"]):
            seed_everything(case.recipe.seed, target.kind)
            found.params = spec.module.sample(module, tensor, dict(case.params))
            target.synchronize()
    except NotEmulatable as exc:
        found.not_emulatable = str(exc)
    except (Exception, CaseTimeout) as exc:  # noqa: BLE001 - recorded as the check's finding
        found.error = describe_error(exc)
        found.mixed_devices = is_device_mix_error(str(exc))
    return found


def run_op(spec: OpSpec, tensor: torch.Tensor, case: Case, target: Target, sampled: Sampled | None = None,
           *, move_module: bool = True) -> OpRun:
    """Call the op on a target; with `move_module=False` a module op keeps its module on the cpu.
    A random module called without `sampled` draws its own parameters (seeded with the case)."""
    if getattr(target, "level", None) is not None:
        return _run_in_isa_worker(spec, case, target, sampled)
    log = PlacementLog(target.device) if target.is_accelerator else None
    if log is not None:
        log.taint(tensor)
    run = OpRun(log=log)
    with torch.random.fork_rng(devices=[]):
        seed_everything(case.recipe.seed, target.kind)
        _call(spec, tensor, case, target, sampled, move_module, run)
    return run


def _run_in_isa_worker(spec: OpSpec, case: Case, target: Target, sampled: Sampled | None) -> OpRun:
    """The case in the worker process of an ISA target (it rebuilds the input from the recipe)."""
    from conformance import isa
    from conformance.spec import SOURCES

    run = OpRun()
    if spec.name not in SOURCES:
        run.not_emulatable = f"{spec.name} was not defined by a case module (no source file to load it from)"
        return run
    answer = isa.worker(target.level).call(  # type: ignore[attr-defined]
        {"source": SOURCES[spec.name], "op": spec.name, "case": case.json, "timeout": _limits["case_timeout_s"],
         "sampled": sampled}, _limits["case_timeout_s"])
    if answer.unavailable is not None:
        run.not_emulatable = answer.unavailable
    elif answer.error is not None:
        run.error, run.error_text, run.error_message = answer.error, answer.error, answer.error_message
        run.error_type = CaseTimeout if answer.timed_out else isa.error_class(answer.error_type)
        run.timed_out = answer.timed_out
        run.mixed_devices = is_device_mix_error(answer.error_message)
    else:
        run.output = answer.output
    return run


def _call(spec: OpSpec, tensor: torch.Tensor, case: Case, target: Target, sampled: Sampled | None,
          move_module: bool, run: OpRun) -> None:
    log = run.log
    try:
        module = None
        if spec.module is not None:
            with target.active():  # construction sees what users' code sees on this target
                module = spec.module.build(dict(case.params))
            if move_module:
                module = target.put(module)
                if log is not None:
                    run.module_problems, log.watched = left_behind(module, target.device)
        with target.active(log), time_limit(_limits["case_timeout_s"]):  # the timer ends before the restore
            if spec.module is not None:
                output = spec.module.forward(module, tensor, dict(case.params),
                                             None if sampled is None else on_target(sampled, target))
            else:
                output = spec.call(tensor, dict(case.params))
            target.synchronize()
        run.output = spec.read_output(output) if spec.read_output is not None else output
    except NotEmulatable as exc:
        run.not_emulatable = str(exc)
    except torch.OutOfMemoryError as exc:
        run.resource = describe_error(exc)
        _release_memory(target)
    except CaseTimeout as exc:
        run.fail(exc)
        run.timed_out = True
    except Exception as exc:  # noqa: BLE001 - any op failure is an outcome
        run.fail(exc)

