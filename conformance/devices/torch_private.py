"""Every private torch API the harness uses, reached through this module only.

Private names can change in any torch release.  Each is looked up here, by name, when it is first
used, so that importing the harness never fails on another torch: a missing one raises
`MissingTorchApi` naming it and the torch version, where it is used.  The virtual device's probe
(conformance.devices.virtual.probe) asks for every name it rests on up front and turns virtual
targets off with the reason; `PRIVATE_APIS` lists them all.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import torch

# Every private entry point the harness calls, subclasses or replaces, by its dotted path.
DISPATCH_MODE = "torch.utils._python_dispatch.TorchDispatchMode"  # the placement log and the virtual device
OPERATOR_TYPES = ("torch._ops.OpOverloadPacket", "torch._ops.OpOverload")  # torch.ops operators, named in messages
PRIVATE_APIS: tuple[str, ...] = (
    DISPATCH_MODE,
    "torch.utils._python_dispatch.is_traceable_wrapper_subclass",  # Module.to() swaps a wrapper subclass
    "torch.Tensor._make_wrapper_subclass",  # the wrapper that reports a cuda device
    "torch._C._disabled_torch_function_impl",  # no __torch_function__ layer on it
    "torch._C._only_lift_cpu_tensors",  # torch.tensor(data, device=) through dispatch
    "torch._C._set_only_lift_cpu_tensors",
    "torch._C._ensureCUDADeviceGuardSet",  # a no-op CUDA device guard without a driver
    "torch._C._dispatch_has_kernel_for_dispatch_key",  # device-only kernels are refused
    "torch._C._cuda_getDriverVersion",  # the environment record (real CUDA only)
    "torch._dynamo.utils.counters",  # what a compiled target's calls compiled (graphs, graph breaks)
    *OPERATOR_TYPES,
)


class MissingTorchApi(RuntimeError):
    """This torch lacks a private entry point the harness needs."""


def lookup(path: str) -> Any:
    """The object at a dotted path: the longest importable module, then attributes (AttributeError or
    ImportError when it is not there)."""
    parts = path.split(".")
    found: Any = None
    split = len(parts)
    while split > 0:
        try:
            found = importlib.import_module(".".join(parts[:split]))
            break
        except ImportError:
            split -= 1
    if found is None:
        raise ImportError(f"no module in {path!r}")
    for part in parts[split:]:
        found = getattr(found, part)
    return found


def missing(paths: tuple[str, ...] = PRIVATE_APIS) -> list[str]:
    """The entry points of `paths` this torch lacks."""
    absent = []
    for path in paths:
        try:
            lookup(path)
        except (AttributeError, ImportError, RuntimeError):
            absent.append(path)
    return absent


@functools.cache
def private(path: str) -> Any:
    """A private entry point, or a stand-in that raises MissingTorchApi when called (looked up once)."""
    try:
        return lookup(path)
    except (AttributeError, ImportError, RuntimeError):

        def absent(*args: Any, **kwargs: Any) -> Any:
            raise MissingTorchApi(f"this torch ({torch.__version__}) has no {path}")

        return absent


def operator_name(value: Any) -> str | None:
    """`value`'s qualified name ("image::decode_jpegs_cuda") when it is a torch.ops operator, else None."""
    kinds = tuple(kind for kind in map(private, OPERATOR_TYPES) if isinstance(kind, type))
    operator: Any = value if isinstance(value, kinds) else None  # Any: isinstance with found types narrows to object
    if operator is None:
        return None
    return str(getattr(operator, "_qualified_op_name", None) or operator.name())  # a packet's name, or an overload's


def aten_overload(name: str) -> Any:
    """`torch.ops.aten.<op>.<overload>` by its dotted name (`"_to_copy.default"`), or None where this torch
    lacks it (aten's underscore ops are private too)."""
    op, _, variant = name.partition(".")
    try:
        return getattr(getattr(torch.ops.aten, op), variant)
    except (AttributeError, RuntimeError):
        return None


class _NoDispatchMode:
    """Stands in for TorchDispatchMode on a torch without it: subclasses still import; entering one says why."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __enter__(self) -> Any:
        raise MissingTorchApi(f"this torch ({torch.__version__}) has no {DISPATCH_MODE}")

    def __exit__(self, *exc: object) -> None:
        return None


def dispatch_mode_base() -> type:
    """The base class of the harness's dispatch modes."""
    try:
        found = lookup(DISPATCH_MODE)
    except (AttributeError, ImportError):
        return _NoDispatchMode
    return found if isinstance(found, type) else _NoDispatchMode


def only_lift_cpu_tensors() -> bool:
    return bool(private("torch._C._only_lift_cpu_tensors")())


def set_only_lift_cpu_tensors(value: bool) -> None:
    """With True, `torch.tensor(data, device=...)` builds on the host and copies in a step dispatch sees."""
    private("torch._C._set_only_lift_cpu_tensors")(value)


def cuda_driver_version() -> str | None:
    """The CUDA driver API version ("12.4"), or None where torch cannot say."""
    try:
        driver = int(private("torch._C._cuda_getDriverVersion")())  # e.g. 12040
    except (MissingTorchApi, RuntimeError, TypeError, ValueError):
        return None
    return f"{driver // 1000}.{driver % 1000 // 10}"


@functools.cache
def _dynamo_counters() -> Any:
    try:
        return lookup("torch._dynamo.utils.counters")
    except (AttributeError, ImportError, RuntimeError):
        return None


def compile_counts() -> tuple[int, int]:
    """(graphs compiled, graph breaks) so far in this process, from dynamo's counters (looked up once: this is
    read around every compiled call); (0, 0) without them."""
    counters = _dynamo_counters()
    if counters is None:
        return 0, 0
    return int(counters["stats"]["unique_graphs"]), int(sum(counters["graph_break"].values()))
