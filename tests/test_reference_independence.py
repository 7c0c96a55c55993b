"""References never read the library under test: a wrong table in kornia must not pass because
the reference read the same table.

The libraries are the records of conformance.spec.libraries: those that implement operations.
Statically, no module under conformance/references imports any of them.  Dynamically, every shipped
spec's reference is run on drawn cases while a profiler watches every Python call: none may enter
those libraries' files (which also catches a lazy import inside a case module's reference function).
A library marked `reference_backend` (Pillow: JPEG through libjpeg) is the documented meaning of some
ops, so a case module's reference may call it, except for an operation it implements (it is under test
there).
"""

import ast
import importlib.util
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from conformance.spec.libraries import LIBRARIES, implementing

ROOT = Path(__file__).parents[1]
IMPLEMENTING = [library for library in LIBRARIES if library.implementations]
UNDER_TEST = tuple(library.module for library in IMPLEMENTING)


def _folder(name: str) -> str | None:
    try:
        module = __import__(name)
    except ImportError:
        return None
    return os.path.dirname(module.__file__) + os.sep


LIBRARY_DIRS = tuple(
    folder for library in IMPLEMENTING if not library.reference_backend and (folder := _folder(library.module))
)
BACKEND_DIRS = {library.package: _folder(library.module) for library in IMPLEMENTING if library.reference_backend}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("path", sorted((ROOT / "conformance" / "references").glob("*.py")), ids=lambda p: p.name)
def test_reference_modules_import_no_library_under_test(path):
    assert not _imports(path) & set(UNDER_TEST)


def _shipped_specs():
    specs = []
    for path in sorted((ROOT / "cases").glob("test_*.py")):
        module_spec = importlib.util.spec_from_file_location(f"independence_{path.stem}", path)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        specs += [value.conformance_spec for value in vars(module).values() if hasattr(value, "conformance_spec")]
    return [spec for spec in specs if spec.reference is not None]  # the device sweep's transforms have none


SPECS = _shipped_specs()


class LibraryCall(AssertionError):
    pass


def _under_test(spec) -> tuple[str, ...]:
    """The library folders a spec's reference must not enter (a reference backend's, where it implements the
    operation)."""
    member = spec.member
    implementing_here = {implementing(s.member.library) for s in member.operation.specs()} if member else set()
    return LIBRARY_DIRS + tuple(
        folder
        for package, folder in BACKEND_DIRS.items()
        if folder and any(library is not None and library.package == package for library in implementing_here)
    )


def _traced(function, *args, forbidden=LIBRARY_DIRS):
    """Run function(*args); the first Python call into a library under test is reported."""
    entered: list[str] = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename.startswith(forbidden) and not entered:
            entered.append(f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        result = function(*args)
    finally:
        sys.setprofile(None)
    if entered:
        raise LibraryCall(f"the reference called into the library under test: {entered[0]}")
    return result


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.name)
def test_no_reference_calls_into_the_library_under_test(spec):
    from conformance.engine.cases import CaseCache

    shared = CaseCache()
    dtype, mode = next((d, m) for d, m in spec.variant_pairs() if m not in spec.error_modes)

    @settings(max_examples=5, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(case=spec.cases(dtype, mode))
    def check(case):
        source = shared.input(case)
        sampled = shared.sampled(spec, case)  # the library's sampler may run: it is not the reference
        arguments = (source.values, case) if sampled is None else (source.values, case, sampled)
        _traced(spec.reference, *arguments, forbidden=_under_test(spec))

    check()
