"""What other installed packages add to the harness, through entry points (the packaging ecosystem's plugin
mechanism, as pytest's own `pytest11`): each group is declared here once, and each is read by the layer that uses
it.

- `conformance.targets`: a callable returning the targets of its kind this machine has (devices.discovery);
- `conformance.libraries`: a dict of a `Library`'s fields: a package whose implementations cases test (spec.libraries);
- `conformance.checks`: a module that calls `register(Check(...))` when imported (conformance.checks);
- `conformance.sweep_arguments`: a dict, class name -> constructor arguments for the device sweep (spec.sweep).

The libraries and sweep arguments are plain data, read while conformance.spec is imported: the module that holds
them must not import conformance.  A package declares them in its pyproject.toml
(`[project.entry-points."conformance.targets"]`).  An entry point that fails to load is an error that names it
and its package, never a silently smaller run.
"""

from __future__ import annotations

import functools
import importlib.metadata
from dataclasses import dataclass
from typing import Any

TARGETS = "conformance.targets"
LIBRARIES = "conformance.libraries"
CHECKS = "conformance.checks"
SWEEP_ARGUMENTS = "conformance.sweep_arguments"
GROUPS = (TARGETS, LIBRARIES, CHECKS, SWEEP_ARGUMENTS)


class ExtensionError(RuntimeError):
    """An installed package's entry point that cannot be loaded, or that gives what its group does not take."""


@dataclass(frozen=True)
class Extension:
    """One loaded entry point."""

    group: str
    name: str
    package: str  # the distribution that declares it
    value: Any

    def problem(self, text: str) -> ExtensionError:
        return ExtensionError(f"{self.describe()}: {text}")

    def describe(self) -> str:
        return f"entry point {self.name!r} in group {self.group!r} (package {self.package})"


@functools.cache
def _installed_entry_points() -> dict[str, tuple[importlib.metadata.EntryPoint, ...]]:
    """The four groups' entry points, read once per process (each read scans every distribution on the path)."""
    every = importlib.metadata.entry_points()
    return {group: tuple(every.select(group=group)) for group in GROUPS}


@functools.cache
def extensions(group: str) -> tuple[Extension, ...]:
    """The group's entry points, loaded once per process, in the order of their names."""
    if group not in GROUPS:
        raise ValueError(f"unknown extension group {group!r}; the groups are {', '.join(GROUPS)}")
    found = []
    for point in sorted(_installed_entry_points()[group], key=lambda p: p.name):
        package = point.dist.name if point.dist is not None else "unknown package"
        try:
            value = point.load()
        except Exception as exc:  # any failure of someone else's import is reported with its origin
            raise ExtensionError(
                f"entry point {point.name!r} in group {group!r} (package {package}) failed to load "
                f"{point.value!r}: {type(exc).__name__}: {exc}"
            ) from exc
        found.append(Extension(group, point.name, package, value))
    return tuple(found)
