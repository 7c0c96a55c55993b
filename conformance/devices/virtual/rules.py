"""PyTorch's device rules, as the virtual device applies them to each aten op (conformance.devices.virtual.tensor
runs the op): the one device of an op's tensors, or the same "Expected all tensors to be on the same device"
error as real CUDA (CPU 0-dim tensors mix with anything; CPU index tensors may index); the device a bare
`cuda` means; kernels that exist only on the device; where a cpu tensor made during a call came from.
"""

from __future__ import annotations

from typing import Any

import torch

from conformance.devices.frames import library_frame
from conformance.devices.placement import PlacementLog
from conformance.devices.torch_private import aten_overload, private
from conformance.devices.trees import leaves
from conformance.devices.virtual.state import DeviceMixError, NotEmulatable, state

# The aten overloads these rules name, resolved by name so that a torch lacking one still
# imports this module; the probe reports what is missing.
INDEX_OP_NAMES = (
    "index.Tensor",
    "index_put_.default",
    "index_put.default",
    "_index_put_impl_.default",
    "_unsafe_index.Tensor",
    "_unsafe_index_put.default",
)
LIFT_NAMES = ("lift_fresh.default", "lift_fresh_copy.default", "lift.default")
TRANSFER_NAMES = ("_to_copy.default", "copy_.default")
USED_NAMES = (*INDEX_OP_NAMES, *LIFT_NAMES, *TRANSFER_NAMES, "clone.default", "_local_scalar_dense.default")


def _overloads(names: tuple[str, ...]) -> frozenset:
    return frozenset(op for op in map(aten_overload, names) if op is not None)


INDEX_OPS = _overloads(INDEX_OP_NAMES)
LIFTS = _overloads(LIFT_NAMES)
# by identity: an OpOverload's __hash__ is Python code, and these are asked on every op
INDEX_OP_IDS = frozenset(map(id, INDEX_OPS))
LIFT_IDS = frozenset(map(id, LIFTS))
TO_COPY, COPY = map(aten_overload, TRANSFER_NAMES)


def resolve(device: Any) -> torch.device:
    """A device with `cuda` meaning the current virtual device, as CUDA reads it."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", state.current_index)
    return device


def culprit(tensor: torch.Tensor, log: PlacementLog | None) -> str | None:
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


def check_devices(func, args: tuple, inputs: list[Any], log: PlacementLog | None) -> torch.device | None:
    """The one non-cpu device of the op's tensors (`inputs`: the leaves of its arguments), or None; raise if two
    devices mix."""
    allowed: set[int] = set()
    if id(func) in INDEX_OP_IDS:  # CPU index tensors are allowed with any indexed tensor
        allowed = {id(t) for t in leaves(args[1:2]) if isinstance(t, torch.Tensor) and t.device.type == "cpu"}
    found: dict[torch.device, torch.Tensor] = {}
    for tensor in inputs:  # one pass, no intermediate lists: this runs on every aten op of a virtual call
        if not isinstance(tensor, torch.Tensor) or (allowed and id(tensor) in allowed):
            continue
        device = tensor.device
        if device not in found and not (device.type == "cpu" and tensor.dim() == 0):
            found[device] = tensor
    if len(found) > 1:
        devices = sorted(found, key=lambda d: (d.type == "cpu", str(d)))
        causes = [c for c in (culprit(t, log) for t in found.values()) if c]
        cause = "; " + "; ".join(causes) if causes else ""
        raise DeviceMixError(
            f"Expected all tensors to be on the same device, but found at least two devices, "
            f"{devices[0]} and {devices[1]}! (in {func} at {library_frame(3)}{cause})"
        )
    for device in found:
        if device.type != "cpu":
            return device
    return None


def refuse_device_only_kernel(func, inputs: list[Any]) -> None:
    """A library op asked to run on a cuda device without a CPU kernel to stand in for it
    (e.g. torchvision's nvjpeg decode): emulating it would run something else."""
    on_device = any(isinstance(leaf, (torch.Tensor, torch.device)) and _device_type(leaf) == "cuda" for leaf in inputs)
    has_kernel = private("torch._C._dispatch_has_kernel_for_dispatch_key")
    if on_device and not has_kernel(func.name(), "CPU"):
        raise NotEmulatable(f"{func.name()} has no CPU kernel to stand in for its device kernel")


def track_origin(func, output: torch.Tensor, inputs: list[Any], log: PlacementLog) -> None:
    """Remember where a cpu tensor made during the call came from (inherited through cpu ops)."""
    parents = [log.origin(a) for a in inputs if isinstance(a, torch.Tensor)]
    known = [p for p in parents if p is not None]
    if known:
        log.set_origin(output, known[0])
    elif not parents or id(func) in LIFT_IDS:  # a factory, or torch.tensor(data)
        log.set_origin(output, library_frame(3))


def _device_type(value: torch.Tensor | torch.device) -> str:
    return value.type if isinstance(value, torch.device) else value.device.type
