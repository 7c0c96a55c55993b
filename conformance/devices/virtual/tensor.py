"""The virtual tensor: a CPU tensor that reports an accelerator device (`cuda:N`), and the path of every
aten op that touches one.

Library code then takes its CUDA branches (`x.is_cuda`, `device.type == "cuda"`) while every aten op
still runs the CPU kernel on the real values: `dispatch` applies the device rules
(conformance.devices.virtual.rules), runs the kernel on the inner tensors and rewraps the result on the
op's device.  `VirtualMode` routes factory calls (`torch.zeros(..., device="cuda:1")`), which involve no
virtual tensor, the same way.  Python bindings that would set a real C++ CUDA device guard before
dispatch are overridden here so they go to dispatch directly.
"""

from __future__ import annotations

from typing import Any

import torch

from conformance.devices.placement import PlacementLog
from conformance.devices.torch_private import dispatch_mode_base, private
from conformance.devices.trees import leaves, map_leaves
from conformance.devices.virtual.rules import (
    COPY,
    TO_COPY,
    check_devices,
    refuse_device_only_kernel,
    resolve,
    track_origin,
)
from conformance.devices.virtual.state import DeviceMixError, NotEmulatable, current_log, ensure_device_guard, state

CPU = torch.device("cpu")
_MAKE_WRAPPER_SUBCLASS = private("torch.Tensor._make_wrapper_subclass")  # looked up once: every op's result calls it


class VirtualTensor(torch.Tensor):
    """A CPU tensor that reports an accelerator device."""

    _inner: torch.Tensor
    __torch_function__ = private("torch._C._disabled_torch_function_impl")

    @staticmethod
    def __new__(cls, inner: torch.Tensor, device: torch.device) -> VirtualTensor:
        wrapper = _MAKE_WRAPPER_SUBCLASS(
            cls,
            inner.size(),
            strides=inner.stride(),
            storage_offset=inner.storage_offset(),
            dtype=inner.dtype,
            layout=inner.layout,
            device=device,
            requires_grad=False,
        )
        wrapper._inner = inner
        return wrapper

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):  # type: ignore[override]  # torch's protocol
        return dispatch(func, args, kwargs or {}, None)

    # A traceable wrapper: Module.to() then swaps parameters in whole instead of `.data =`,
    # which would keep the device but lose the inner tensor.
    def __tensor_flatten__(self) -> tuple[list[str], torch.device]:
        return ["_inner"], self.device

    @staticmethod
    def __tensor_unflatten__(inner: dict[str, torch.Tensor], device: torch.device, outer_size, outer_stride):
        return VirtualTensor(inner["_inner"], device)

    # Python indexing sets a device guard in C++ before dispatch; index the inner tensor instead (its aten ops
    # skip the rules: they run on cpu tensors of this package's own).
    def __getitem__(self, index: Any) -> torch.Tensor:
        if self.requires_grad and torch.is_grad_enabled():  # the inner indexing below records no autograd graph
            return _with_autograd(self, index)
        return self._indexed(index)

    def _indexed(self, index: Any) -> torch.Tensor:
        inner_index = _index_for(self, index)
        state.direct += 1
        try:
            result = wrap(self._inner[inner_index], self.device)
        finally:
            state.direct -= 1
        log = current_log()
        if log is not None:
            log.propagate(torch.ops.aten.index.Tensor, (self, index), {}, result)
        return result

    def __setitem__(self, index: Any, value: Any) -> None:
        if torch.is_grad_enabled() and (self.requires_grad or getattr(value, "requires_grad", False)):
            raise NotEmulatable("an indexed assignment that autograd must record, on a virtual tensor")
        log = current_log()
        copy = torch.ops.aten.copy_.default
        if log is not None and isinstance(value, torch.Tensor) and value.device != self.device:
            log.note(copy, (self, value), {}, device_of)  # a host value is copied over
        inner_index, inner_value = _index_for(self, index), unwrap(value)
        state.direct += 1
        try:
            self._inner[inner_index] = inner_value
        finally:
            state.direct -= 1
        if log is not None:
            log.propagate(copy, (self, value), {}, self)

    # Bindings that set a C++ device guard before dispatch: on a machine with fewer real GPUs
    # than the virtual index, that guard would fail, so these go to dispatch directly.
    def contiguous(self, memory_format: torch.memory_format = torch.contiguous_format) -> torch.Tensor:
        if self.is_contiguous(memory_format=memory_format):
            return self
        return torch.ops.aten.clone.default(self, memory_format=memory_format)

    def copy_(self, src: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
        return torch.ops.aten.copy_.default(self, src, non_blocking)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        return torch.ops.aten._local_scalar_dense.default(self).__index__()

    def tolist(self) -> Any:
        log = current_log()
        if log is not None:  # like CUDA: a copy to the host
            log.note(torch.ops.aten._to_copy.default, (self,), {"device": CPU}, device_of)
        return self._inner.tolist()

    def numpy(self, *, force: bool = False) -> Any:
        if not force:  # what CUDA tensors say
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. "
                "Use Tensor.cpu() to copy the tensor to host memory first."
            )
        return self.cpu().numpy()

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]  # torch's stub says Any
        return f"{self._inner!r}"[:-1] + f", device='{self.device}' (virtual))"

    def __format__(self, spec: str) -> str:
        return format(self.item(), spec) if self.dim() == 0 else repr(self)


def _with_autograd(tensor: VirtualTensor, index: Any) -> torch.Tensor:
    """`tensor[index]` as the aten ops Python indexing decomposes it into (select, slice, unsqueeze), called
    through the dispatcher so that autograd records them.  Basic indices only: advanced ones are gathers
    whose gradient this emulation does not reproduce."""
    parts = index if isinstance(index, tuple) else (index,)
    if not all(p is None or p is Ellipsis or (isinstance(p, (int, slice)) and not isinstance(p, bool)) for p in parts):
        raise NotEmulatable("the gradient of advanced (tensor, list or bool) indexing on a virtual tensor")
    consumed = sum(1 for p in parts if p is not None and p is not Ellipsis)
    if any(p is Ellipsis for p in parts):
        at = next(n for n, p in enumerate(parts) if p is Ellipsis)
        parts = (*parts[:at], *(slice(None),) * (tensor.dim() - consumed), *parts[at + 1 :])
    aten, found, dim = torch.ops.aten, tensor, 0
    for part in parts:
        if part is None:
            found, dim = aten.unsqueeze.default(found, dim), dim + 1
        elif isinstance(part, int):
            found = aten.select.int(found, dim, part)
        else:
            found, dim = aten.slice.Tensor(found, dim, part.start, part.stop, part.step or 1), dim + 1
    return found


def wrap(tensor: torch.Tensor, device: torch.device) -> VirtualTensor:
    return VirtualTensor(tensor, device)


def unwrap(value: Any) -> Any:
    return value._inner if isinstance(value, VirtualTensor) else value


def device_of(tensor: torch.Tensor) -> torch.device:
    return tensor.device


def _index_for(target: VirtualTensor, index: Any) -> Any:
    """Index components on the inner tensor: CPU tensors allowed, other devices are an error."""
    parts = index if isinstance(index, tuple) else (index,)
    for part in parts:
        if isinstance(part, torch.Tensor) and part.device.type != "cpu" and part.device != target.device:
            raise DeviceMixError(
                f"indices should be either on cpu or on the same device as the indexed "
                f"tensor ({target.device}), got {part.device}"
            )
    return tuple(unwrap(p) for p in parts) if isinstance(index, tuple) else unwrap(index)


def holds_values(value: Any) -> bool:
    """Whether `value` is a tensor whose values the host can read: one on the meta device has none (an op that
    returns one on a target whose outputs hold values broke an invariant, which the invariants check says)."""
    return isinstance(value, torch.Tensor) and not value.is_meta


def host_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """The harness's own read of a tensor's values on the host: a virtual tensor's data is
    already there (no op runs, nothing is logged); a real device's is copied."""
    if isinstance(tensor, VirtualTensor):
        return tensor._inner
    return tensor.detach().cpu()


def to_virtual(value: Any, device: torch.device) -> Any:
    """A virtual copy of a host tensor (like `.to(device)`, which copies)."""
    ensure_device_guard()
    if isinstance(value, VirtualTensor):
        return value if value.device == device else wrap(value._inner.clone(), device)
    return wrap(value.detach().to("cpu").clone(), device)


def dispatch(func, args: tuple, kwargs: dict, log: PlacementLog | None) -> Any:
    """Run one aten op with virtual-device semantics."""
    inputs = leaves(args, kwargs)
    if log is not None:
        log.note(func, args, kwargs, device_of, inputs)
    if func.namespace not in ("aten", "prims"):
        refuse_device_only_kernel(func, inputs)
    requested = kwargs.get("device")
    transfer = func is TO_COPY or func is COPY
    # transfers may cross devices: their output device is the target's (below)
    device = None if transfer else check_devices(func, args, inputs, log)
    if requested is not None:
        device = resolve(requested)
        kwargs = {**kwargs, "device": CPU}
        if device.type == "cpu":
            device = None
    elif transfer:
        device = args[0].device if isinstance(args[0], VirtualTensor) else None
    wrappers = {id(leaf._inner): leaf for leaf in inputs if isinstance(leaf, VirtualTensor)}
    inner_args = map_leaves(unwrap, args) if wrappers else args
    inner_kwargs = map_leaves(unwrap, kwargs) if wrappers and kwargs else kwargs
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
                track_origin(func, value, inputs, log)
            return value
        return wrap(value, device)

    wrapped = rewrap(result) if isinstance(result, torch.Tensor) else map_leaves(rewrap, result)
    if log is not None:
        log.propagate(func, args, kwargs, wrapped, inputs)
    return wrapped


class VirtualMode(dispatch_mode_base()):  # type: ignore[misc]
    """Routes every op (factories included) through `dispatch`, logging into `log`."""

    def __init__(self, log: PlacementLog | None) -> None:
        super().__init__()
        self.log = log

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """Virtual targets are never compiled: no dynamo-disabling wrapper per call (see placement.ObserverMode)."""
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if state.direct:  # this package's own work on the cpu tensors inside virtual ones
            return func(*args, **(kwargs or {}))
        return dispatch(func, args, kwargs or {}, self.log)
