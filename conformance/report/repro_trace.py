"""Which library calls an op's call makes: the call run under a profiler that records each outermost call into a
library (a frame of no harness, case-module, torch, numpy or standard-library module) with the values its frame
was entered with, the function object that ran it, and the shortest public name of a function or class."""

from __future__ import annotations

import builtins
import gc
import sys
import types
from dataclasses import dataclass
from typing import Any

# roots whose frames are never "the library": the harness, its stack, and what the harness's calls are made of
NOT_LIBRARIES = frozenset({"conformance", "torch", "numpy", "hypothesis", "_pytest", "pytest", "pluggy", "xdist"})
MISSING = object()


@dataclass
class LibraryCall:
    """One outermost call into a library: its code, the frame's values at entry, what it returned."""

    code: types.CodeType
    values: dict[str, Any]
    returned: Any = None


def public_name(obj: Any) -> tuple[str, str] | None:
    """(module to import, expression) naming `obj` through its shortest public path (`torchvision.transforms.v2.
    functional.posterize`, not its defining `..._color` module); None for an object of no importable name."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    if module == "builtins":
        return ("", qualname) if getattr(builtins, qualname, None) is obj else None
    if module.partition(".")[0] in ("conformance", "__main__"):
        return None
    parts, found = module.split("."), []
    for end in range(1, len(parts) + 1):
        prefix = ".".join(parts[:end])
        reached = sys.modules.get(prefix, MISSING)
        for attribute in qualname.split("."):
            reached = getattr(reached, attribute, MISSING)
        if reached is obj:
            found.append(prefix)
    public = [p for p in found if not any(part.startswith("_") for part in p.split("."))]
    chosen = (public or found)[:1]
    return (chosen[0], f"{chosen[0]}.{qualname}") if chosen else None


def trace(run: Any, case_folder: str) -> tuple[Any, list[LibraryCall]]:
    """Call `run()` and record its outermost library calls (an import's module body counts as a library frame, so
    what an import runs is never taken for the op).  Returns what it returned (None where it raised) and the calls."""
    calls: list[LibraryCall] = []
    depth = 0

    def library(frame: types.FrameType) -> bool:
        name = str(frame.f_globals.get("__name__") or "")
        root = name.partition(".")[0]
        if root in NOT_LIBRARIES or root in sys.stdlib_module_names or name == "__main__":
            return False
        return not frame.f_code.co_filename.startswith(case_folder)

    def profile(frame: types.FrameType, event: str, arg: Any) -> None:
        nonlocal depth
        if event not in ("call", "return"):
            return
        module_body = frame.f_code.co_name == "<module>"
        if not module_body and not library(frame):
            return
        if event == "call":
            if depth == 0 and not module_body:
                calls.append(LibraryCall(frame.f_code, dict(frame.f_locals)))
            depth += 1
        else:
            depth -= 1
            if depth == 0 and calls and not module_body:
                calls[-1].returned = arg

    sys.setprofile(profile)
    try:
        result = run()
    except Exception:  # noqa: BLE001 - an error mode's call raises: what it was called with still renders
        result = None
    finally:
        sys.setprofile(None)
    return result, calls


def function_of(call: LibraryCall) -> types.FunctionType | None:
    """The function object that ran the call's code (a decorator's wrapper: the one whose closure the frame saw)."""
    code = call.code
    found = [f for f in gc.get_referrers(code) if isinstance(f, types.FunctionType) and f.__code__ is code]
    if len(found) > 1 and code.co_freevars:
        found = [f for f in found if _closure_matches(f, call.values)]
    return found[0] if len(found) == 1 else None


def _closure_matches(function: types.FunctionType, values: dict[str, Any]) -> bool:
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or (), strict=False):
        try:
            if cell.cell_contents is not values.get(name, MISSING):
                return False
        except ValueError:  # an empty cell
            return False
    return True


def qualname(code: types.CodeType) -> str:
    return str(getattr(code, "co_qualname", code.co_name))
