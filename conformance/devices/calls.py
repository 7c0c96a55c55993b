"""Calling the op under test on one target, and keeping whatever happens as data.

Function ops are called with the input tensor; module ops are built on the cpu,
moved with `.to(target)` (what is left behind is noted), given the case's
sampled random parameters, and called.  On accelerators the call runs with a
`PlacementLog`.  An exception never escapes: it becomes text on the `OpRun`.
"""
from __future__ import annotations

import signal
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any

import torch

from conformance.devices import isa

from conformance.devices import isa_feed
from conformance.devices.placement import PlacementLog, is_device_mix_error, is_library, is_plumbing, left_behind, map_leaves
from conformance.spec.recipes import Case
from conformance.spec.opspec import OpSpec, Sampled
from conformance.devices.targets import Target
from conformance.devices.virtual import NotEmulatable




class CaseTimeout(BaseException):
    """The op ran past the per-case time limit (`--case-timeout`).

    A BaseException, like KeyboardInterrupt: a library's `except Exception:` fallback must not
    swallow it, and no expected error class can accept it."""


_limits = {"case_timeout_s": 0.0}


def set_case_timeout(seconds: float) -> None:
    """Per-call time limit for ops (0: none); set once per session by the plugin."""
    _limits["case_timeout_s"] = max(0.0, seconds)


class time_limit:  # noqa: N801 - used like the context manager function it replaced
    """Raise CaseTimeout in the op after `seconds` (Python code only; the main thread of a POSIX process,
    which pytest and its xdist workers are; elsewhere no limit).  The process's SIGALRM handler is saved and
    restored around the call (pytest-timeout, for one, uses SIGALRM too).  A class, not a generator: it
    wraps every op call."""

    __slots__ = ("seconds", "previous")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds if seconds > 0 and _CAN_ALARM and threading.current_thread() is _MAIN else 0.0
        self.previous: Any = None

    def _expire(self, signum: int, frame: Any) -> None:
        raise CaseTimeout(f"the op ran longer than the per-case limit of {self.seconds:g} s (--case-timeout)")

    def __enter__(self) -> None:
        if self.seconds:
            self.previous = signal.signal(signal.SIGALRM, self._expire)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)

    def __exit__(self, *exc: Any) -> None:
        if self.seconds:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)


_CAN_ALARM = hasattr(signal, "setitimer")
_MAIN = threading.main_thread()


@dataclass
class OpRun:
    """What one call of the op gave: its output, or its error as text (no live exception:
    its traceback would keep every frame's tensors alive in the baseline cache)."""

    output: Any = None
    error: str | None = None  # describe_error(): type, message, raising frame
    trace: Any = None  # the traceback as text, or an ErrorTrace formatted when first read
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
    def error_text(self) -> str | None:
        """The full traceback (formatted on first use: with Python's carets it costs more than many ops, and most
        errors, an invalid input's expected one, are never shown)."""
        if isinstance(self.trace, ErrorTrace):
            self.trace = self.trace.format()
        return self.trace

    @property
    def raised(self) -> str | None:
        """The exception class name, or None when the call returned."""
        return self.error_type.__name__ if self.error_type is not None else None

    def fail(self, exc: BaseException) -> None:
        self.error = describe_error(exc)
        self.trace = ErrorTrace.capture(exc)
        self.error_type = type(exc)
        self.error_message = str(exc)
        self.mixed_devices = is_device_mix_error(str(exc))


def _frames(tb: Any) -> list[tuple[str, int, str]]:
    """(file, line, function) of a traceback's frames, read from the frames themselves: the traceback module's
    extraction checks every file's modification time, a system call per frame (an expected error per case)."""
    return [(frame.f_code.co_filename, lineno, frame.f_code.co_name) for frame, lineno in traceback.walk_tb(tb)]


CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


@dataclass(frozen=True)
class ErrorTrace:
    """An exception's traceback as plain data (no frames, so no tensors kept alive), chained exceptions included,
    formatted like Python's own when first shown."""

    parts: tuple[tuple[str, tuple[tuple[str, int, str], ...], str], ...]  # oldest first: (link, frames, exception)

    @classmethod
    def capture(cls, exc: BaseException) -> "ErrorTrace":
        parts, seen, current, link = [], set(), exc, ""
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            parts.append((link, tuple(_frames(current.__traceback__)),
                          "".join(traceback.format_exception_only(type(current), current))))
            if current.__cause__ is not None:
                current, link = current.__cause__, CAUSE
            elif current.__context__ is not None and not current.__suppress_context__:
                current, link = current.__context__, CONTEXT
            else:
                current = None
        parts.reverse()  # the newest exception last, each link moved to the part it introduces
        links = [link for link, _, _ in reversed(parts)]
        return cls(tuple((links[i], frames, text) for i, (_, frames, text) in enumerate(parts)))

    def format(self) -> str:
        out = []
        for link, frames, text in self.parts:
            out.append(link)
            if frames:
                out.append("Traceback (most recent call last):\n")
                out.extend(traceback.StackSummary.from_list([(f, n, name, None) for f, n, name in frames]).format())
            out.append(text)
        return "".join(out)


def describe_error(exc: BaseException) -> str:
    """Exception type and message, where it was raised and the library line that called into torch."""
    frames = [f for f in _frames(exc.__traceback__) if not is_plumbing(f[0])]
    where = ""
    if frames:
        raised = frames[-1]
        where = f" (raised at {raised[0]}:{raised[1]} in {raised[2]}"
        library = [f for f in frames if is_library(f[0])]
        if library and library[-1] is not raised:
            where += f", called from {library[-1][0]}:{library[-1][1]} in {library[-1][2]}"
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
    return map_leaves(lambda v: target.put(v) if isinstance(v, torch.Tensor) else v, value)


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


def isa_request(spec: OpSpec, case: Case, sampled: Sampled | None) -> dict[str, Any] | None:
    """What an ISA target's worker process needs to run the case (it rebuilds the input from the recipe);
    None for an op no case module defined (the worker could not load it)."""
    from conformance.spec.opspec import SOURCES

    if spec.name not in SOURCES:
        return None
    return {"source": SOURCES[spec.name], "op": spec.name, "case": case.json, "timeout": _limits["case_timeout_s"],
            "sampled": sampled}


def prefetch_on_isa(spec: OpSpec, case: Case, target: Target, sampled: Sampled | None) -> None:
    """Hand the case to the ISA target's worker now, so that its answer is ready when an item asks."""
    request = isa_request(spec, case, sampled)
    if request is not None:
        isa_feed.worker(target.level).submit((spec.name, case.key), request)  # type: ignore[attr-defined]


def _run_in_isa_worker(spec: OpSpec, case: Case, target: Target, sampled: Sampled | None) -> OpRun:
    """The case in the worker process of an ISA target (its answer may already be waiting)."""
    run = OpRun()
    request = isa_request(spec, case, sampled)
    if request is None:
        run.not_emulatable = f"{spec.name} was not defined by a case module (no source file to load it from)"
        return run
    answer = isa_feed.worker(target.level).call((spec.name, case.key), request)  # type: ignore[attr-defined]
    if answer.unavailable is not None:
        run.not_emulatable = answer.unavailable
    elif answer.error is not None:
        run.error, run.trace, run.error_message = answer.error, answer.error, answer.error_message
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

