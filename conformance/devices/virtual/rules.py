"""PyTorch's device rules, enforced on every aten op that touches a virtual tensor.

`dispatch` raises the same "Expected all tensors to be on the same device" error as real CUDA
(CPU 0-dim tensors mix with anything; CPU index tensors may index), runs the CPU kernel on the
real values and rewraps the result on the op's device.  `VirtualMode` also catches factory calls
(`torch.zeros(..., device="cuda:1")`), which involve no virtual tensor.
"""
from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from conformance.devices.placement import PlacementLog, leaves, library_frame, map_leaves
from conformance.devices.virtual.tensor import (CPU, DeviceMixError, NotEmulatable, VirtualTensor, device_of, private,
                                        state, unwrap, wrap)

# The aten overloads these rules name, resolved by name so that a torch lacking one still
# imports this module; the probe reports what is missing.
INDEX_OP_NAMES = ("index.Tensor", "index_put_.default", "index_put.default", "_index_put_impl_.default",
                  "_unsafe_index.Tensor", "_unsafe_index_put.default")
LIFT_NAMES = ("lift_fresh.default", "lift_fresh_copy.default", "lift.default")
TRANSFER_NAMES = ("_to_copy.default", "copy_.default")
USED_NAMES = (*INDEX_OP_NAMES, *LIFT_NAMES, *TRANSFER_NAMES, "clone.default", "_local_scalar_dense.default")


def overload(name: str) -> Any:
    """`aten.<op>.<overload>` by its dotted name, or None where this torch lacks it."""
    op, _, variant = name.partition(".")
    try:
        return getattr(getattr(torch.ops.aten, op), variant)
    except (AttributeError, RuntimeError):
        return None


def _overloads(names: tuple[str, ...]) -> frozenset:
    return frozenset(op for op in map(overload, names) if op is not None)


INDEX_OPS = _overloads(INDEX_OP_NAMES)
LIFTS = _overloads(LIFT_NAMES)
# by identity: an OpOverload's __hash__ is Python code, and these are asked on every op
INDEX_OP_IDS = frozenset(map(id, INDEX_OPS))
LIFT_IDS = frozenset(map(id, LIFTS))
TO_COPY, COPY = map(overload, TRANSFER_NAMES)


def resolve(device: Any) -> torch.device:
    """A device with `cuda` meaning the current virtual device, as CUDA reads it."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", state.current_index)
    return device


def _culprit(tensor: torch.Tensor, log: PlacementLog | None) -> str | None:
    """Why a tensor took part: a module attribute, or a cpu tensor the call created."""
    if log is None:
        return None
    described = f"the {tensor.device} tensor (shape {list(tensor.shape)}, {str(tensor.dtype).removeprefix('torch.')})"
    if id(tensor) in log.watched:
        return f"{described} is {log.watched[id(tensor)]}"
    origin = log.origin(tensor)
    if origin is not None:
        return f"{described} was created at {origin} without device="
    return None


def _check_devices(func, args: tuple, inputs: list[Any], log: PlacementLog | None) -> torch.device | None:
    """The one non-cpu device of the op's tensors (`inputs`: the leaves of its arguments), or None; raise if two
    devices mix."""
    tensors = [leaf for leaf in inputs if isinstance(leaf, torch.Tensor)]
    if id(func) in INDEX_OP_IDS:  # CPU index tensors are allowed with any indexed tensor
        allowed = {id(t) for t in leaves(args[1:2]) if isinstance(t, torch.Tensor) and t.device.type == "cpu"}
        tensors = [t for t in tensors if id(t) not in allowed]
    found: dict[torch.device, torch.Tensor] = {}
    for tensor in tensors:
        device = tensor.device
        if device not in found and not (device.type == "cpu" and tensor.dim() == 0):
            found[device] = tensor
    if len(found) > 1:
        devices = sorted(found, key=lambda d: (d.type == "cpu", str(d)))
        causes = [c for c in (_culprit(t, log) for t in found.values()) if c]
        cause = "; " + "; ".join(causes) if causes else ""
        raise DeviceMixError(
            f"Expected all tensors to be on the same device, but found at least two devices, "
            f"{devices[0]} and {devices[1]}! (in {func} at {library_frame(3)}{cause})")
    for device in found:
        if device.type != "cpu":
            return device
    for tensor in tensors:
        if isinstance(tensor, VirtualTensor):
            return tensor.device
    return None


def dispatch(func, args: tuple, kwargs: dict, log: PlacementLog | None) -> Any:
    """Run one aten op with virtual-device semantics."""
    inputs = leaves(args, kwargs)
    if log is not None:
        log.note(func, args, kwargs, device_of, inputs)
    if func.namespace not in ("aten", "prims"):
        _refuse_device_only_kernel(func, inputs)
    requested = kwargs.get("device")
    transfer = func is TO_COPY or func is COPY
    # transfers may cross devices: their output device is the target's (below)
    device = None if transfer else _check_devices(func, args, inputs, log)
    if requested is not None:
        device = resolve(requested)
        kwargs = {**kwargs, "device": CPU}
        if device.type == "cpu":
            device = None
    elif transfer:
        device = args[0].device if isinstance(args[0], VirtualTensor) else None
    wrappers = {id(leaf._inner): leaf for leaf in inputs if isinstance(leaf, VirtualTensor)}
    inner_args = map_leaves(unwrap, args) if wrappers else args
    inner_kwargs = map_leaves(unwrap, kwargs) if wrappers else kwargs
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
                _track_origin(func, value, inputs, log)
            return value
        return wrap(value, device)

    wrapped = rewrap(result) if isinstance(result, torch.Tensor) else map_leaves(rewrap, result)
    if log is not None:
        log.propagate(func, args, kwargs, wrapped, inputs)
    return wrapped


def _refuse_device_only_kernel(func, inputs: list[Any]) -> None:
    """A library op asked to run on a cuda device without a CPU kernel to stand in for it
    (e.g. torchvision's nvjpeg decode): emulating it would run something else."""
    on_device = any(isinstance(leaf, VirtualTensor) or (isinstance(leaf, torch.device) and leaf.type == "cuda")
                    for leaf in inputs)
    has_kernel = private(torch._C, "_dispatch_has_kernel_for_dispatch_key")
    if on_device and not has_kernel(func.name(), "CPU"):
        raise NotEmulatable(f"{func.name()} has no CPU kernel to stand in for its device kernel")


def _track_origin(func, output: torch.Tensor, inputs: list[Any], log: PlacementLog) -> None:
    """Remember where a cpu tensor made during the call came from (inherited through cpu ops)."""
    parents = [log.origin(a) for a in inputs if isinstance(a, torch.Tensor)]
    known = [p for p in parents if p is not None]
    if known:
        log.set_origin(output, known[0])
    elif not parents or id(func) in LIFT_IDS:  # a factory, or torch.tensor(data)
        log.set_origin(output, library_frame(3))


class VirtualMode(TorchDispatchMode):
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
