"""Virtual accelerators: tensors that say `cuda:N` but keep their data on the CPU.

A `VirtualTensor` wraps a CPU tensor and reports an accelerator device, so
library code takes its CUDA branches (`x.is_cuda`, `device.type == "cuda"`).
Every aten op on it goes through `_dispatch`, which enforces PyTorch's device
rules (the same "Expected all tensors to be on the same device" error as real
CUDA; CPU 0-dim tensors mix with anything; CPU index tensors may index), runs
the CPU kernel on the real values and rewraps the result.  `VirtualMode` also
catches factory calls (`torch.zeros(..., device="cuda:1")`), and
`virtual_cuda()` answers the `torch.cuda` questions libraries ask while a
virtual target is active, restoring everything afterwards.

Numerics are the CPU's; what this tests is placement and device-dependent Python.
"""
from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

from conformance.placement import PlacementLog, library_frame

aten = torch.ops.aten
CPU = torch.device("cpu")
INDEX_OPS = frozenset({aten.index.Tensor, aten.index_put_.default, aten.index_put.default,
                       aten._index_put_impl_.default, aten._unsafe_index.Tensor, aten._unsafe_index_put.default})


LIFTS = frozenset({aten.lift_fresh.default, aten.lift_fresh_copy.default, aten.lift.default})


class NotEmulatable(RuntimeError):
    """The op needs something a virtual device cannot provide (a device-only kernel or API)."""


class DeviceMixError(RuntimeError):
    """Two devices met in one op: the error real CUDA raises, with the culprit named."""


class VirtualTensor(torch.Tensor):
    """A CPU tensor that reports an accelerator device."""

    _inner: torch.Tensor
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, inner: torch.Tensor, device: torch.device) -> "VirtualTensor":
        wrapper = torch.Tensor._make_wrapper_subclass(
            cls, inner.size(), strides=inner.stride(), storage_offset=inner.storage_offset(),
            dtype=inner.dtype, layout=inner.layout, device=device, requires_grad=False)
        wrapper._inner = inner
        return wrapper

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {}, None)

    # A traceable wrapper: Module.to() then swaps parameters in whole instead of `.data =`,
    # which would keep the device but lose the inner tensor.
    def __tensor_flatten__(self) -> tuple[list[str], torch.device]:
        return ["_inner"], self.device

    @staticmethod
    def __tensor_unflatten__(inner: dict[str, torch.Tensor], device: torch.device, outer_size, outer_stride):
        return VirtualTensor(inner["_inner"], device)

    # Python indexing sets a device guard in C++ before dispatch; index the inner tensor instead.
    def __getitem__(self, index: Any) -> torch.Tensor:
        result = _wrap(self._inner[_index_for(self, index)], self.device)
        log = current_log()
        if log is not None:
            log.propagate(aten.index.Tensor, (self, index), {}, result)
        return result

    def __setitem__(self, index: Any, value: Any) -> None:
        log = current_log()
        if log is not None and isinstance(value, torch.Tensor) and value.device != self.device:
            log.note(aten.copy_.default, (self, value), {}, device_of)  # a host value is copied over
        self._inner[_index_for(self, index)] = _unwrap(value)
        if log is not None:
            log.propagate(aten.copy_.default, (self, value), {}, self)

    # Bindings that set a C++ device guard before dispatch: on a machine with fewer real GPUs
    # than the virtual index, that guard would fail, so these go to dispatch directly.
    def contiguous(self, memory_format: torch.memory_format = torch.contiguous_format) -> torch.Tensor:
        if self.is_contiguous(memory_format=memory_format):
            return self
        return aten.clone.default(self, memory_format=memory_format)

    def copy_(self, src: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
        return aten.copy_.default(self, src, non_blocking)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        return aten._local_scalar_dense.default(self).__index__()

    def tolist(self) -> Any:
        log = current_log()
        if log is not None:
            log.note(aten._to_copy.default, (self,), {"device": CPU}, device_of)  # like CUDA: a copy to the host
        return self._inner.tolist()

    def numpy(self, *, force: bool = False) -> Any:
        if not force:  # what CUDA tensors say
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. "
                            "Use Tensor.cpu() to copy the tensor to host memory first.")
        return self.cpu().numpy()

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return f"{self._inner!r}"[:-1] + f", device='{self.device}' (virtual))"

    def __format__(self, spec: str) -> str:
        return format(self.item(), spec) if self.dim() == 0 else repr(self)


def _wrap(tensor: torch.Tensor, device: torch.device) -> VirtualTensor:
    return VirtualTensor(tensor, device)


def _unwrap(value: Any) -> Any:
    return value._inner if isinstance(value, VirtualTensor) else value


def device_of(tensor: torch.Tensor) -> torch.device:
    return tensor.device


def _index_for(target: VirtualTensor, index: Any) -> Any:
    """Index components on the inner tensor: CPU tensors allowed, other devices are an error."""
    parts = index if isinstance(index, tuple) else (index,)
    for part in parts:
        if isinstance(part, torch.Tensor) and part.device.type != "cpu" and part.device != target.device:
            raise DeviceMixError(f"indices should be either on cpu or on the same device as the indexed "
                                 f"tensor ({target.device}), got {part.device}")
    return tuple(_unwrap(p) for p in parts) if isinstance(index, tuple) else _unwrap(index)


# -- the dispatch rule -----------------------------------------------------------------------
class _State(threading.local):
    current_index = 0


_state = _State()


def _resolve(device: Any) -> torch.device:
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", _state.current_index)
    return device


def _culprit(tensor: torch.Tensor, log: PlacementLog | None) -> str | None:
    """Why a tensor took part: a module attribute, or a cpu tensor the call created."""
    if log is None:
        return None
    described = f"the {tensor.device} tensor (shape {list(tensor.shape)}, {str(tensor.dtype).removeprefix('torch.')})"
    if id(tensor) in log.watched:
        return f"{described} is {log.watched[id(tensor)]}"
    origin = log.origins.get(tensor)
    if origin is not None:
        return f"{described} was created at {origin} without device="
    return None


def _check_devices(func, args: tuple, kwargs: dict, log: PlacementLog | None) -> torch.device | None:
    """The one non-cpu device of the op's tensors, or None; raise if two devices mix."""
    leaves = tree_leaves((args, kwargs))
    if func in INDEX_OPS:  # CPU index tensors are allowed with any indexed tensor
        allowed = {id(t) for t in tree_leaves(args[1:2]) if isinstance(t, torch.Tensor) and t.device.type == "cpu"}
        leaves = [leaf for leaf in leaves if id(leaf) not in allowed]
    found: dict[torch.device, torch.Tensor] = {}
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor) and not (leaf.device.type == "cpu" and leaf.dim() == 0):
            found.setdefault(leaf.device, leaf)
    if len(found) > 1:
        devices = sorted(found, key=lambda d: (d.type == "cpu", str(d)))
        causes = [c for c in (_culprit(t, log) for t in found.values()) if c]
        cause = "; " + "; ".join(causes) if causes else ""
        raise DeviceMixError(
            f"Expected all tensors to be on the same device, but found at least two devices, "
            f"{devices[0]} and {devices[1]}! (in {func} at {library_frame(3)}{cause})")
    accelerators = [d for d in found if d.type != "cpu"]
    if accelerators:
        return accelerators[0]
    virtual_scalars = [leaf.device for leaf in leaves if isinstance(leaf, VirtualTensor)]
    return virtual_scalars[0] if virtual_scalars else None


def _dispatch(func, args: tuple, kwargs: dict, log: PlacementLog | None) -> Any:
    """Run one aten op with virtual-device semantics."""
    if log is not None:
        log.note(func, args, kwargs, device_of)
    if func.namespace not in ("aten", "prims"):
        _refuse_device_only_kernel(func, args, kwargs)
    requested = kwargs.get("device")
    if func in (aten._to_copy.default, aten.copy_.default):
        device = None  # transfers may cross devices; the output device is decided below
    else:
        device = _check_devices(func, args, kwargs, log)
    if requested is not None:
        device = _resolve(requested)
        kwargs = {**kwargs, "device": CPU}
        if device.type == "cpu":
            device = None
    elif func is aten._to_copy.default:
        device = args[0].device if isinstance(args[0], VirtualTensor) else None
    elif func is aten.copy_.default:
        device = args[0].device if isinstance(args[0], VirtualTensor) else None
    wrappers = {id(leaf._inner): leaf for leaf in tree_leaves((args, kwargs)) if isinstance(leaf, VirtualTensor)}
    inner_args, inner_kwargs = tree_map(_unwrap, (args, kwargs))
    try:
        result = func(*inner_args, **inner_kwargs)
    except NotImplementedError as exc:
        if device is not None:
            first_line = str(exc).splitlines()[0] if str(exc) else ""
            raise NotEmulatable(f"{func} has no CPU kernel, so a virtual device cannot run it ({first_line})") from exc
        raise

    def rewrap(value: Any) -> Any:
        if not isinstance(value, torch.Tensor):
            return value
        if id(value) in wrappers:  # in-place and out= ops return their own (virtual) argument
            return wrappers[id(value)]
        if device is None:
            if log is not None:
                _track_origin(func, value, args, log)
            return value
        return _wrap(value, device)

    wrapped = tree_map(rewrap, result)
    if log is not None:
        log.propagate(func, args, kwargs, wrapped)
    return wrapped


def _refuse_device_only_kernel(func, args: tuple, kwargs: dict) -> None:
    """A library op asked to run on a cuda device without a CPU kernel to stand in for it
    (e.g. torchvision's nvjpeg decode): emulating it would run something else."""
    leaves = tree_leaves((args, kwargs))
    on_device = any(isinstance(leaf, VirtualTensor) or (isinstance(leaf, torch.device) and leaf.type == "cuda")
                    for leaf in leaves)
    if on_device and not torch._C._dispatch_has_kernel_for_dispatch_key(func.name(), "CPU"):
        raise NotEmulatable(f"{func.name()} has no CPU kernel to stand in for its device kernel")


def _track_origin(func, output: torch.Tensor, args: tuple, log: PlacementLog) -> None:
    """Remember where a cpu tensor made during the call came from (inherited through cpu ops)."""
    parents = [log.origins.get(a) for a in tree_leaves(args) if isinstance(a, torch.Tensor)]
    known = [p for p in parents if p is not None]
    if known:
        log.origins[output] = known[0]
    elif not parents or func in LIFTS:  # a factory, or torch.tensor(data)
        log.origins[output] = library_frame(3)


class VirtualMode(TorchDispatchMode):
    """Routes every op (factories included) through `_dispatch`, logging into `log`."""

    def __init__(self, log: PlacementLog | None) -> None:
        super().__init__()
        self.log = log

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        return _dispatch(func, args, kwargs or {}, self.log)


# -- torch.cuda while a virtual target is active -----------------------------------------------
class _Stream:
    """Stands in for a CUDA stream: work on a virtual device is already done when it returns."""

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def synchronize(self) -> None: ...

    def wait_stream(self, stream: Any) -> None: ...

    def wait_event(self, event: Any) -> None: ...

    def query(self) -> bool:
        return True


def _exchange(index: int) -> int:
    previous, _state.current_index = _state.current_index, index if index >= 0 else _state.current_index
    return previous


def _cuda_answers(count: int) -> dict[str, Any]:
    def device_index(device: Any = None) -> int:
        return _state.current_index if device is None else _resolve(device).index

    return {
        "is_available": lambda: True,
        "device_count": lambda: max(count, _real_device_count()),
        "_lazy_init": lambda: None,
        "current_device": lambda: _state.current_index,
        "set_device": lambda device: _exchange(_resolve(device).index if not isinstance(device, int) else device),
        "_exchange_device": _exchange,
        "_maybe_exchange_device": _exchange,
        "synchronize": lambda device=None: None,
        "current_stream": lambda device=None: _Stream(torch.device("cuda", device_index(device))),
        "default_stream": lambda device=None: _Stream(torch.device("cuda", device_index(device))),
        "get_device_name": lambda device=None: f"virtual cuda:{device_index(device)} (cpu data)",
    }


@functools.lru_cache(maxsize=None)
def _real_device_count() -> int:
    """Real CUDA devices, asked once (before torch.cuda is ever patched)."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


class _Activation(threading.local):
    logs: list[PlacementLog | None]

    def __init__(self) -> None:
        self.logs = []


_active = _Activation()
_patch_lock = threading.Lock()
_patch_depth = [0]
_saved: dict[str, Any] = {}


def _patch(count: int) -> None:
    with _patch_lock:
        _patch_depth[0] += 1
        if _patch_depth[0] > 1:
            return
        _ensure_device_guard()
        answers = _cuda_answers(count)
        _saved.update({name: getattr(torch.cuda, name) for name in answers})
        _saved["<lift>"] = torch._C._only_lift_cpu_tensors()
        _saved["<index>"] = _state.current_index
        _saved["<cudnn>"] = torch.backends.cudnn.enabled
        torch.backends.cudnn.enabled = False  # cuDNN kernels have no CPU twin; take PyTorch's native paths
        for name, answer in answers.items():
            setattr(torch.cuda, name, answer)
        torch._C._set_only_lift_cpu_tensors(True)  # torch.tensor(..., device=) then goes through dispatch


def _unpatch() -> None:
    with _patch_lock:
        _patch_depth[0] -= 1
        if _patch_depth[0] > 0:
            return
        torch._C._set_only_lift_cpu_tensors(_saved.pop("<lift>"))
        _state.current_index = _saved.pop("<index>")
        torch.backends.cudnn.enabled = _saved.pop("<cudnn>")
        for name, original in _saved.items():
            setattr(torch.cuda, name, original)
        _saved.clear()


@contextlib.contextmanager
def virtual_cuda(count: int, log: PlacementLog | None = None) -> Iterator[None]:
    """Make `count` virtual CUDA devices answer for the duration; restore torch.cuda after.

    Re-entrant: only the outermost entry patches and restores; each entry pushes its own mode.
    """
    _patch(count)
    _active.logs.append(log)
    try:
        with VirtualMode(log):
            yield
    finally:
        _active.logs.pop()
        _unpatch()


def current_log() -> PlacementLog | None:
    return _active.logs[-1] if _active.logs else None


def _ensure_device_guard() -> None:
    """Without a driver, C++ code that guards a cuda tensor's device would fail: make that
    guard a no-op, as PyTorch's fake tensors do.  With real CUDA nothing changes."""
    if _real_device_count() == 0:
        torch._C._ensureCUDADeviceGuardSet()


def host_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """The harness's own read of a tensor's values on the host: a virtual tensor's data is
    already there (no op runs, nothing is logged); a real device's is copied."""
    if isinstance(tensor, VirtualTensor):
        return tensor._inner
    return tensor.detach().cpu()


def to_virtual(value: Any, device: torch.device) -> Any:
    """A virtual copy of a host tensor (like `.to(device)`, which copies)."""
    _ensure_device_guard()
    if isinstance(value, VirtualTensor):
        return value if value.device == device else _wrap(value._inner.clone(), device)
    return _wrap(value.detach().to("cpu").clone(), device)
