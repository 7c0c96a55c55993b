"""`torch.cuda` while a virtual target is active: an explicit list of answers, the rest refused.

Libraries ask `torch.cuda` questions on their CUDA branches.  The questions in `answers()` have
a true answer for a virtual device (it is available, which one is current, its stream has
nothing queued).  Every other public callable of `torch.cuda` and `torch.cuda.amp` (device
properties, capability, bf16 support, streams and events of one's own, memory statistics,
graphs, AMP, RNG states) raises NotEmulatable naming it, so the item is skipped as "not
emulatable", never failed with an error the real device would not raise.  Everything is
restored when the outermost `virtual_cuda()` exits.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import torch

from conformance.devices.placement import PlacementLog
from conformance.devices.torch_private import only_lift_cpu_tensors, operator_name, set_only_lift_cpu_tensors
from conformance.devices.virtual.rules import resolve
from conformance.devices.virtual.state import NotEmulatable, ensure_device_guard, real_device_count, state
from conformance.devices.virtual.tensor import VirtualMode

# Private torch.cuda functions that torch.cuda.device() and lazy initialisation call: answered too.
PRIVATE_ANSWERS = ("_lazy_init", "_exchange_device", "_maybe_exchange_device")
# Public names kept as they are: they only call answered functions (`_exchange_device`).
KEPT = frozenset({"device", "device_of"})


class _Stream:
    """Stands in for the current/default CUDA stream: work on a virtual device is already done
    when it returns.  Anything else asked of it is not emulatable."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def synchronize(self) -> None: ...

    def wait_stream(self, stream: Any) -> None: ...

    def wait_event(self, event: Any) -> None: ...

    def query(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # protocol probes (getattr(s, "__x__", None)) must see a plain miss
            raise AttributeError(name)
        raise NotEmulatable(f"torch.cuda.Stream.{name} is not answered by a virtual device")


def _exchange(index: int) -> int:
    previous, state.current_index = state.current_index, index if index >= 0 else state.current_index
    return previous


def _device_index(device: Any = None) -> int:
    return state.current_index if device is None else resolve(device).index


def _stream(stream: Any) -> contextlib.AbstractContextManager:
    if stream is not None and not isinstance(stream, _Stream):
        raise NotEmulatable(
            "torch.cuda.stream with a stream other than the current or default one is not answered by a virtual device"
        )
    return contextlib.nullcontext()


@functools.cache
def answers(count: int) -> dict[str, Callable[..., Any]]:
    """Every `torch.cuda` function a virtual device answers, and its answer."""
    return {
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "init": lambda: None,
        "_lazy_init": lambda: None,
        "device_count": lambda: max(count, real_device_count()),
        "current_device": lambda: state.current_index,
        "set_device": lambda device: _exchange(device if isinstance(device, int) else _device_index(device)),
        "_exchange_device": _exchange,
        "_maybe_exchange_device": _exchange,
        "synchronize": lambda device=None: None,
        "current_stream": lambda device=None: _Stream(torch.device("cuda", _device_index(device))),
        "default_stream": lambda device=None: _Stream(torch.device("cuda", _device_index(device))),
        "stream": _stream,
        "get_device_name": lambda device=None: f"virtual cuda:{_device_index(device)} (cpu data)",
        # torch.manual_seed calls these; a virtual device draws from the CPU generator it seeds
        "manual_seed": lambda seed: None,
        "manual_seed_all": lambda seed: None,
        "empty_cache": lambda: None,  # nothing is cached on a virtual device
    }


def _refusal(module: ModuleType, name: str, original: Any) -> Any:
    """What an unanswered callable becomes: a function, or a class (isinstance keeps working)
    that cannot be instantiated."""
    message = f"{module.__name__}.{name} is not answered by a virtual device"

    @functools.wraps(original)  # keeps __wrapped__ and the name, which torch's own tables read
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NotEmulatable(message)

    if isinstance(original, type):
        return type(name, (), {"__new__": lambda cls, *args, **kwargs: refuse(), "__doc__": message})
    return refuse


@functools.cache
def _import_before_patching() -> None:
    """torch imports torch._dynamo on the first dispatch-mode entry, and it keeps references to
    torch.cuda functions in tables: it must see the real ones, never this facade's."""
    import torch._dynamo  # noqa: F401


@functools.cache
def _unanswered() -> tuple[tuple[ModuleType, str], ...]:
    """(module, name) of every public torch.cuda / torch.cuda.amp callable not in `answers`
    (asked before torch.cuda is first patched).  Exceptions (`except torch.cuda.OutOfMemoryError`)
    and the legacy tensor/storage types are left alone."""
    answered = set(answers(0)) | KEPT
    found = []
    for module in (torch.cuda, torch.cuda.amp):
        for name, value in vars(module).items():
            defined_here = getattr(value, "__module__", None) or ""
            if (
                name.startswith("_")
                or name in answered
                or not callable(value)
                or isinstance(value, ModuleType)
                or not defined_here.startswith("torch.cuda")
                or name.endswith(("Tensor", "Storage"))
                or (isinstance(value, type) and issubclass(value, BaseException))
            ):
                continue
            found.append((module, name))
    return tuple(found)


@functools.cache
def _replacements(count: int) -> tuple[tuple[ModuleType, dict[str, Any]], ...]:
    """What `torch.cuda` and `torch.cuda.amp` get while `count` virtual devices are active, per module: the
    answers and the refusals, built once (a refusal wraps its original's name and docstring: building them
    per call was most of a call)."""
    found: dict[ModuleType, dict[str, Any]] = {torch.cuda: dict(answers(count))}
    for module, name in _unanswered():
        found.setdefault(module, {})[name] = _refusal(module, name, getattr(module, name))
    return tuple(found.items())


_patch_lock = threading.Lock()
_patch_depth = [0]
_saved: list[tuple[ModuleType, dict[str, Any]]] = []
_saved_state: dict[str, Any] = {}


def _patch(count: int) -> None:
    with _patch_lock:
        if _patch_depth[0] == 0:  # everything that can fail comes before the first change
            _import_before_patching()
            ensure_device_guard()
            replacements = _replacements(count)
            lift = only_lift_cpu_tensors()
            for module, names in replacements:
                namespace = vars(module)
                _saved.append((module, {name: namespace[name] for name in names}))
            _saved_state.update(lift=lift, index=state.current_index, cudnn=torch.backends.cudnn.enabled)
            torch.backends.cudnn.enabled = False  # cuDNN kernels have no CPU twin; take PyTorch's native paths
            for module, names in replacements:
                vars(module).update(names)  # one dict update per module (tens of setattr calls cost more)
            set_only_lift_cpu_tensors(True)  # torch.tensor(..., device=) then goes through dispatch
        _patch_depth[0] += 1


def _unpatch() -> None:
    with _patch_lock:
        _patch_depth[0] -= 1
        if _patch_depth[0] > 0:
            return
        for module, originals in _saved:
            vars(module).update(originals)
        _saved.clear()
        set_only_lift_cpu_tensors(_saved_state["lift"])
        state.current_index = _saved_state["index"]
        torch.backends.cudnn.enabled = _saved_state["cudnn"]
        _saved_state.clear()


def _op_reaching_cuda(exc: BaseException) -> str:
    """The torch.ops operator whose call raised (the innermost on the traceback), for the message."""
    name = "a library op"
    trace = exc.__traceback__
    while trace is not None:
        name = operator_name(trace.tb_frame.f_locals.get("self")) or name
        trace = trace.tb_next
    return name


# How the CUDA runtime's own failures begin (torch.AcceleratorError, and the RuntimeErrors of older torch), with no
# driver, an old one, or no visible device: inside a virtual device, where no CUDA code should ever run.
CUDA_RUNTIME_ERRORS = ("CUDA error", "Found no NVIDIA driver", "No CUDA GPUs are available")


@contextlib.contextmanager
def virtual_cuda(count: int, log: PlacementLog | None = None) -> Iterator[None]:
    """Make `count` virtual CUDA devices answer for the duration; restore torch.cuda after.

    Re-entrant: only the outermost entry patches and restores; each entry pushes its own mode.
    A per-case timer must be disarmed before this exits (conformance.devices.calls does).
    """
    _patch(count)
    state.logs.append(log)
    try:
        with VirtualMode(log):
            yield
    except RuntimeError as exc:
        if not str(exc).startswith(CUDA_RUNTIME_ERRORS):
            raise
        # the CUDA runtime was reached without an aten op the mode could see (a library kernel registered for
        # host inputs that calls it itself, as torchvision 0.26's nvjpeg decode): nothing stands in for it
        first_line = str(exc).splitlines()[0]
        raise NotEmulatable(
            f"{_op_reaching_cuda(exc)} has no CPU kernel to stand in: it called CUDA ({first_line})"
        ) from exc
    finally:
        state.logs.pop()
        _unpatch()
