"""Values as source for a repro script: literals, dtypes, enum members and named functions as themselves, tensors
and arrays stored in the script's npz, objects an earlier line made by their variable; and a call's arguments
from the values its frame was entered with."""

from __future__ import annotations

import enum
import inspect
import math
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from conformance.report.repro_trace import MISSING, public_name


class Unrenderable(Exception):
    """Why a call (or a value in it) cannot be written as library source."""


@dataclass
class Rendered:
    """The call as source: module-level definitions, the body of `def call(x)` (ending in `return ...`), the
    imports both need, the arrays they read from the npz, how it was written and what it leaves out."""

    body: list[str] = field(default_factory=list)
    definitions: list[str] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    how: str = ""
    notes: list[str] = field(default_factory=list)
    own: list[str] = field(default_factory=list)  # the names of the op's own functions among the definitions

    @property
    def written(self) -> bool:
        return bool(self.body)


class Writer:
    """Values as source: literals, dtypes, enum members and named functions as themselves; tensors and arrays
    stored in the npz; objects an earlier call made, by their variable."""

    def __init__(self, moved: set[int], x: Any = None) -> None:
        self.rendered = Rendered()
        self.names: dict[int, str] = {}
        self.tensors: list[tuple[str, torch.Tensor]] = []  # named tensors, whose views are written as views
        self.moved = moved  # ids of tensors the harness puts on the target (the input's, a random module's sample)
        self.derived: list[str] = []
        if x is not None:
            self.name(x, "x")

    def name(self, value: Any, variable: str) -> None:
        """An object a line of the script holds (the input, what a call returned), by its variable (a number or string
        is written as itself: small ones are shared objects)."""
        if id(value) not in self.names and not isinstance(value, (bool, int, float, str, type(None))):
            self.names[id(value)] = variable
            if isinstance(value, torch.Tensor):
                self.tensors.append((variable, value))

    def view(self, tensor: torch.Tensor) -> str | None:
        """A view of a named tensor (the harness's reshape of the input to a batch, of the output back) as the same
        view of the script's variable: a reshape where that gives the same strides, else `as_strided`."""
        try:
            address = tensor.untyped_storage().data_ptr()
        except (RuntimeError, NotImplementedError):
            return None
        for variable, base in self.tensors:
            if address == 0 or base.untyped_storage().data_ptr() != address:
                continue
            shape, stride = list(tensor.shape), list(tensor.stride())
            same = base.reshape(shape) if base.numel() == tensor.numel() else None
            if same is not None and same.data_ptr() == tensor.data_ptr() and list(same.stride()) == stride:
                return f"{variable}.reshape({shape})"
            return f"{variable}.as_strided({shape}, {stride}, {tensor.storage_offset()})"
        return None

    def name_of(self, obj: Any) -> str:
        found = public_name(obj)
        if found is None:
            raise Unrenderable(f"{obj!r} has no importable name")
        if found[0]:
            self._import(f"import {found[0]}")
        return found[1]

    def _import(self, line: str) -> None:
        if line not in self.rendered.imports:
            self.rendered.imports.append(line)

    def value(self, value: Any) -> str:
        known = self.names.get(id(value))
        if known is not None:
            return known
        if isinstance(value, enum.Enum):
            return f"{self.name_of(type(value))}.{value.name}"
        if value is None or isinstance(value, (bool, int, str)):
            return repr(value)
        if isinstance(value, float):
            return repr(value) if math.isfinite(value) else f'float("{value}")'
        if isinstance(value, (list, tuple)):
            inner = ", ".join(self.value(v) for v in value)
            return f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
        if isinstance(value, dict) and all(isinstance(k, (str, int)) for k in value):
            return "{" + ", ".join(f"{k!r}: {self.value(v)}" for k, v in value.items()) + "}"
        if isinstance(value, torch.dtype):
            return str(value)
        if isinstance(value, torch.device):
            return "torch.device(DEVICE)"  # the call ran on the cpu: a device argument is the input's
        if isinstance(value, np.generic):
            return f"np.{type(value).__name__}({value.item()!r})"
        if isinstance(value, torch.Tensor):
            return self._tensor(value)
        if isinstance(value, np.ndarray):
            key = self._store(value.copy())
            return f'DATA["{key}"]'
        if callable(value):
            return self.name_of(value)
        raise Unrenderable(f"an argument of type {type(value).__name__} cannot be written as source")

    def _store(self, array: np.ndarray) -> str:
        key = f"arg{len(self.rendered.arrays)}"
        self.rendered.arrays[key] = array
        return key

    def _tensor(self, tensor: torch.Tensor) -> str:
        viewed = self.view(tensor)
        if viewed is not None:
            return viewed
        host = tensor.detach().cpu()
        key = self._store((host.float() if host.dtype == torch.bfloat16 else host).numpy().copy())
        if id(tensor) not in self.moved:
            self.derived.append(key)
        return f'_stored("{key}", {host.dtype})'

    def arguments(self, code: types.CodeType, function: types.FunctionType, values: dict[str, Any], skip: int) -> str:
        """The call's arguments from the frame's values: positional-only ones, the first (the image) and any before
        `*args` by position, the rest by keyword, leaving out those at the function's own default."""
        names, count = code.co_varnames, code.co_argcount
        keyword_only = names[count : count + code.co_kwonlyargcount]
        star = bool(code.co_flags & inspect.CO_VARARGS)
        rest = names[count + len(keyword_only) :]
        given = function.__defaults__ or ()
        defaults = dict(zip(names[count - len(given) : count], given, strict=True))
        defaults.update(function.__kwdefaults__ or {})
        parts = []
        for index, name in enumerate(names[:count]):
            if index < skip:
                continue
            if star or index < code.co_posonlyargcount or index == skip:
                parts.append(self.value(values[name]))
            elif not _at_default(values[name], defaults, name):
                parts.append(f"{name}={self.value(values[name])}")
        if star:
            parts += [self.value(v) for v in values[rest[0]]]
        parts += [
            f"{name}={self.value(values[name])}"
            for name in keyword_only
            if not _at_default(values[name], defaults, name)
        ]
        if code.co_flags & inspect.CO_VARKEYWORDS:
            parts += [f"{k}={self.value(v)}" for k, v in values[rest[int(star)]].items()]
        return ", ".join(parts)


def _at_default(value: Any, defaults: dict[str, Any], name: str) -> bool:
    default = defaults.get(name, MISSING)
    if value is default:
        return True
    plain = (int, float, str, bool, type(None))
    return type(value) in plain and type(value) is type(default) and value == default
