"""The library callable an op's call enters first, and the op called again with one of its arguments replaced there.

A case module's call is a small adapter (`lambda image, p: kornia.enhance.adjust_brightness(image, p["factor"])`);
what users' code reaches is the library's function or class behind it, and its signature says what each argument
may be.  `entering` runs a call under a profile hook that sees the first public callable of a library the call enters
(a public function of the library's module, or a public class's constructor) with the arguments it is entered with,
defaults included; a relation reads that callable's signature and, through `replacing`, gives the same value in
another accepted type at the same place, without knowing the adapter.  The hook is removed as soon as it has seen
that callable, so the call itself runs at full speed.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

# the packages whose callables' signatures are read (a frame is theirs when its module is one of them or below)
LIBRARIES = ("kornia", "torchvision")


@dataclass
class Entry:
    """The first public library callable a call entered: itself (a class for a constructor), its dotted name, its
    code (to find it again) and the arguments it was entered with."""

    callable: Callable[..., Any]
    name: str
    code: CodeType
    arguments: dict[str, Any] = field(default_factory=dict)


def _is_library(module: str, libraries: tuple[str, ...]) -> bool:
    return module.split(".", 1)[0] in libraries


def public_callable(frame: FrameType, libraries: tuple[str, ...] = LIBRARIES) -> Callable[..., Any] | None:
    """The public library function or class whose code the frame runs, or None (a private helper, a method)."""
    code = frame.f_code
    if code.co_name == "__init__":
        owner = type(frame.f_locals.get("self"))
        public = not owner.__name__.startswith("_") and _is_library(owner.__module__, libraries)
        return owner if public else None
    if code.co_name.startswith("_") or not _is_library(str(frame.f_globals.get("__name__", "")), libraries):
        return None
    candidate = frame.f_globals.get(code.co_name)
    return candidate if getattr(inspect.unwrap(candidate), "__code__", None) is code else None  # type: ignore[arg-type]


def _dotted(found: Callable[..., Any]) -> str:
    return f"{found.__module__}.{getattr(found, '__qualname__', getattr(found, '__name__', '?'))}"


@contextmanager
def entering(
    on_entry: Callable[[FrameType, Callable[..., Any]], None],
    code: CodeType | None = None,
    libraries: tuple[str, ...] = LIBRARIES,
) -> Iterator[None]:
    """Calls `on_entry(frame, callable)` once, at the first public library callable entered inside the block (with
    `code`: the first frame running that code); it may change the frame's arguments (`frame.f_locals[name] = v`,
    which the interpreter writes back into the frame after a profile hook)."""
    previous = sys.getprofile()
    seen = False

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal seen
        if seen or event != "call" or (code is not None and frame.f_code is not code):
            return
        found = public_callable(frame, libraries)
        if found is None:
            return
        seen = True
        sys.setprofile(previous)
        on_entry(frame, found)

    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)


def recording(found: list[Entry], libraries: tuple[str, ...] = LIBRARIES) -> Any:
    """`entering` that appends the entered callable and its arguments to `found`."""

    def record(frame: FrameType, callable_: Callable[..., Any]) -> None:
        arguments = {k: v for k, v in frame.f_locals.items() if k in frame.f_code.co_varnames[: _arity(frame.f_code)]}
        found.append(Entry(callable_, _dotted(callable_), frame.f_code, arguments))

    return entering(record, libraries=libraries)


def replacing(entry: Entry, values: dict[str, Any], entered: list[bool]) -> Any:
    """`entering` the entry's callable again, with the arguments named in `values` replaced by them; `entered` gets
    True when it was."""

    def replace(frame: FrameType, callable_: Callable[..., Any]) -> None:
        local = frame.f_locals  # read once: each read of f_locals syncs it from the frame again
        local.update(values)
        entered.append(True)

    return entering(replace, code=entry.code)


def _arity(code: CodeType) -> int:
    """How many of the code's local names are its arguments (positional, keyword-only and the *args/**kwargs)."""
    extra = bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return code.co_argcount + code.co_kwonlyargcount + extra
