"""Where tensors live during a call: transfers, device mixing, and what modules leave behind.

A `PlacementLog` is filled while an op runs on an accelerator target: on a
virtual target by the emulation itself, on a real one by `ObserverMode`, a
dispatch mode that only watches.  The placement check turns the log, the
output's device and a module's attributes into one verdict.

Copies are judged by where their data comes from, not by their size alone: the
input image is marked ("tainted") before the call, and every op's outputs inherit
the mark from its inputs, so a copy of image-derived data is an image copy even on
a 1x1 image, while an 8x8 quantisation table built by the op is a constant upload
(a lesser finding, reported by its own check) even on a 4x4 image.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from conformance.devices.frames import library_frame
from conformance.devices.torch_private import aten_overload, dispatch_mode_base
from conformance.devices.trees import leaves

# Ops that move data between devices by design; every other op must not mix devices.
TO_COPY, COPY_FROM, COPY_FROM_AND_RESIZE = map(
    aten_overload, ("_to_copy.default", "_copy_from.default", "_copy_from_and_resize.default")
)
TRANSFER_OPS = frozenset(
    op for op in (TO_COPY, aten_overload("copy_.default"), COPY_FROM, COPY_FROM_AND_RESIZE) if op is not None
)
SCALAR_READS = frozenset(op for op in (aten_overload("_local_scalar_dense.default"),) if op is not None)
# by identity: an OpOverload's __hash__ is Python code, and these are asked on every op
TRANSFER_OP_IDS = frozenset(map(id, TRANSFER_OPS))
SCALAR_READ_IDS = frozenset(map(id, SCALAR_READS))
MIXED_DEVICE_MESSAGE = "Expected all tensors to be on the same device"
# A host-made upload smaller than this is a constant (a table, a mean/std list), whatever the image's size: on
# a 1x1 image every table would otherwise be "image-sized".
HOST_DATA_FLOOR = 256
TAINT = "_conformance_taint"  # attribute names of a log's marks on tensors (PlacementLog)
ORIGIN = "_conformance_origin"


@dataclass(frozen=True)
class Transfer:
    """One copy between the host and a device inside the op call."""

    direction: str  # "to_host" or "to_device"
    op: str
    shape: tuple[int, ...]
    dtype: str
    numel: int
    nbytes: int
    where: str

    source: str = "constant"  # "image": derived from the input image; "constant": anything else

    def to_dict(self) -> dict[str, Any]:
        return {
            "direction": self.direction,
            "op": self.op,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "numel": self.numel,
            "nbytes": self.nbytes,
            "where": self.where,
            "source": self.source,
        }

    def describe(self) -> str:
        arrow = "device -> host" if self.direction == "to_host" else "host -> device"
        what = "data derived from the input image" if self.source == "image" else "a constant"
        return f"{arrow} copy of {what} {list(self.shape)} {self.dtype} ({self.nbytes} bytes) at {self.where}"


@dataclass
class PlacementLog:
    """What one call did across devices.

    watched: id(tensor) -> name, for module tensors left off the target; any op that
             touches one records it in `used`.
    Two marks ride on the tensors of the call themselves, as attributes naming this log (a tensor kept from
    an earlier call carries another log's mark, which does not count; cheaper than a weak dictionary,
    consulted on every op):
    origin:  where a cpu tensor made during the call came from (virtual targets only, to name the
             culprit of a device-mixing error);
    taint:   that a tensor holds data derived from the input image (marked before the call with
             `taint`, passed on by `propagate` after every op).
    """

    device: torch.device
    watched: dict[int, str] = field(default_factory=dict)
    transfers: list[Transfer] = field(default_factory=list)
    scalar_reads: int = 0
    used: dict[str, str] = field(default_factory=dict)
    token: object = field(default_factory=object)  # this log's mark on tensors

    def taint(self, tensor: torch.Tensor) -> None:
        setattr(tensor, TAINT, self.token)

    def tainted(self, tensor: Any) -> bool:
        return getattr(tensor, TAINT, None) is self.token

    def origin(self, tensor: torch.Tensor) -> str | None:
        found = getattr(tensor, ORIGIN, None)
        return found[1] if found is not None and found[0] is self.token else None

    def set_origin(self, tensor: torch.Tensor, where: str) -> None:
        setattr(tensor, ORIGIN, (self.token, where))

    def propagate(self, func, args: tuple, kwargs: dict, result: Any, inputs: list[Any] | None = None) -> None:
        """After an op: its outputs (and the tensor it wrote into) carry the image's mark if an input did;
        `inputs`: the leaves of args and kwargs, when the caller has them."""
        token = self.token
        if any(getattr(leaf, TAINT, None) is token for leaf in inputs or leaves(args, kwargs)):
            for leaf in (result,) if isinstance(result, torch.Tensor) else leaves(result):
                if isinstance(leaf, torch.Tensor):
                    setattr(leaf, TAINT, token)
            if (
                getattr(getattr(func, "_schema", None), "is_mutable", False)
                and args
                and isinstance(args[0], torch.Tensor)
            ):
                setattr(args[0], TAINT, token)

    def note(self, func, args: tuple, kwargs: dict, device_of, inputs: list[Any] | None = None) -> None:
        """Record what an op call moves or touches; `device_of` gives a tensor's (possibly virtual) device;
        `inputs`: the leaves of args and kwargs, when the caller has them."""
        if self.watched:
            for leaf in inputs or leaves(args, kwargs):
                name = self.watched.get(id(leaf)) if isinstance(leaf, torch.Tensor) else None
                if name is not None and name not in self.used:
                    self.used[name] = f"{func} at {library_frame(2)}"
        if id(func) in SCALAR_READ_IDS:
            self.scalar_reads += 1
            return
        if id(func) not in TRANSFER_OP_IDS or not args or not isinstance(args[0], torch.Tensor):
            return
        if func is TO_COPY:
            source = args[0]
            destination = kwargs.get("device") or device_of(source)
        elif func is COPY_FROM or func is COPY_FROM_AND_RESIZE:
            source, destination = args[0], device_of(args[1])
        else:  # copy_(self, src)
            source, destination = args[1], device_of(args[0])
        if not isinstance(source, torch.Tensor):
            return
        start, end = device_of(source).type, torch.device(destination).type
        if start == end:
            return
        self.transfers.append(
            Transfer(
                "to_host" if end == "cpu" else "to_device",
                str(func),
                tuple(source.shape),
                str(source.dtype).removeprefix("torch."),
                source.numel(),
                source.numel() * source.element_size(),
                library_frame(2),
                "image" if self.tainted(source) else "constant",
            )
        )

    def image_copies(self, smallest_image_plane: int) -> list[Transfer]:
        """Copies of image-derived data at least one image plane large: the op moved the image between
        host and device.  Smaller image-derived copies (per-channel statistics) are only recorded."""
        return [t for t in self.transfers if t.source == "image" and t.numel >= max(1, smallest_image_plane)]

    def constant_uploads(self, smallest_image_plane: int | None = None) -> list[Transfer]:
        """Host -> device copies of data that did not come from the image: the op's own constants (smaller
        than an image plane and HOST_DATA_FLOOR, where a plane is given)."""
        bound = None if smallest_image_plane is None else max(HOST_DATA_FLOOR, smallest_image_plane)
        return [t for t in self._host_uploads() if bound is None or t.numel < bound]

    def host_made_uploads(self, smallest_image_plane: int) -> list[Transfer]:
        """The larger ones: data made on the host inside the call, noise or a mask drawn with the cpu generator
        (or a field built on the host) instead of on the device."""
        return [t for t in self._host_uploads() if t.numel >= max(HOST_DATA_FLOOR, smallest_image_plane)]

    def _host_uploads(self) -> list[Transfer]:
        return [t for t in self.transfers if t.source == "constant" and t.direction == "to_device"]

    def to_dict(self) -> dict[str, Any]:
        return {
            "transfers": [t.to_dict() for t in self.transfers],
            "scalar_reads": self.scalar_reads,
            "used_off_target": dict(self.used),
        }


class ObserverMode(dispatch_mode_base()):  # type: ignore[misc]
    """On a real accelerator: log transfers and watched tensors, change nothing."""

    def __init__(self, log: PlacementLog) -> None:
        super().__init__()
        self.log = log

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        """This mode never runs under torch.compile: its __torch_dispatch__ needs no dynamo-disabling wrapper
        (torch >= 2.8 adds one per call unless a mode says so; older torch never asks)."""
        return False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        inputs = leaves(args, kwargs)
        self.log.note(func, args, kwargs, _device, inputs)
        result = func(*args, **kwargs)
        self.log.propagate(func, args, kwargs, result, inputs)
        return result


def _device(tensor: torch.Tensor) -> torch.device:
    return tensor.device


def is_device_mix_error(message: str) -> bool:
    return MIXED_DEVICE_MESSAGE in message


# -- modules -------------------------------------------------------------------------------
def module_tensors(module: torch.nn.Module) -> list[tuple[str, str, torch.Tensor]]:
    """(name, kind, tensor) for every parameter, buffer and plain tensor attribute, all submodules.

    Plain attributes include tensors in a list, tuple or dict held directly by a module;
    `Module.to()` moves parameters and buffers only.
    """
    found: list[tuple[str, str, torch.Tensor]] = []
    root = type(module).__name__
    for prefix, sub in module.named_modules():
        owner = f"{root}.{prefix}" if prefix else root
        found += [(f"{owner}.{n}", "parameter", p) for n, p in sub._parameters.items() if p is not None]
        found += [(f"{owner}.{n}", "buffer", b) for n, b in sub._buffers.items() if b is not None]
        for name, value in vars(sub).items():
            if name.startswith("_") and name in ("_parameters", "_buffers", "_modules"):
                continue
            items = (
                value.items()
                if isinstance(value, dict)
                else enumerate(value)
                if isinstance(value, (list, tuple))
                else [(None, value)]
            )
            for key, item in items:
                if isinstance(item, torch.Tensor):
                    label = f"{owner}.{name}" + ("" if key is None else f"[{key!r}]")
                    found.append((label, "plain tensor attribute", item))
    return found


def left_behind(module: torch.nn.Module, device: torch.device) -> tuple[list[str], dict[int, str]]:
    """After `module.to(device)`: problems with parameters/buffers, and plain attributes to watch."""
    problems, watch = [], {}
    for name, kind, tensor in module_tensors(module):
        if tensor.device == device:
            continue
        if kind == "plain tensor attribute":
            watch[id(tensor)] = (
                f"{name} (a plain tensor attribute on {tensor.device}: Module.to() does not "
                f"move it; register it with register_buffer)"
            )
        else:
            problems.append(f"{kind} {name} is on {tensor.device} after .to({device})")
    return problems, watch
