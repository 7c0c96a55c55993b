"""Which library versions this process really runs: the imported module's `__version__` and file.

Package metadata can disagree with what is imported (a source checkout on PYTHONPATH, a
`pip install --no-deps` over another build, a vendored copy), and verdicts depend on the code
that ran.  Skips (`requires=`, `needs=`), known-issue version ranges and the environment record
all read versions from here.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from conformance.spec.libraries import IMPORT_NAMES


def harness_version() -> str:
    """This package's installed version (`conformance.__version__`): a run folder says which harness wrote it (its
    checks and tolerances change between versions, so two runs' verdicts compare only with that in view)."""
    try:
        return importlib.metadata.version("conformance")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"  # run from a source tree that was never installed


@dataclass(frozen=True)
class Installed:
    """One package as this process sees it."""

    package: str
    version: str | None  # the imported module's __version__ (metadata when the module has none)
    file: str | None  # the imported module's file
    metadata: str | None  # what pip recorded

    @property
    def mismatch(self) -> bool:
        """The imported module is another release than pip recorded: local labels (+cu132) aside, and a build
        number pip records beyond the module's own version (OpenCV's 5.0.0 against 5.0.0.93) is the same release."""
        if self.version is None or self.metadata is None:
            return False
        mine, recorded = self.version.split("+")[0], self.metadata.split("+")[0]
        try:
            a, b = Version(mine), Version(recorded)
        except InvalidVersion:
            return mine != recorded
        common = min(len(a.release), len(b.release))
        return a.release[:common] != b.release[:common] or (a.pre, a.dev) != (b.pre, b.dev)

    def to_dict(self) -> dict[str, str | None]:
        return {"version": self.version, "file": self.file, "metadata": self.metadata}


@cache
def installed(package: str) -> Installed:
    try:
        metadata: str | None = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        metadata = None
    try:
        module = importlib.import_module(IMPORT_NAMES.get(package, package).replace("-", "_"))
    except Exception:  # noqa: BLE001 - a package that fails to import is reported as absent
        return Installed(package, None, None, metadata)
    version = getattr(module, "__version__", None)
    return Installed(
        package, str(version) if version is not None else metadata, getattr(module, "__file__", None), metadata
    )


def version_of(package: str) -> str | None:
    """The imported version of a package, or None when it cannot be imported."""
    return installed(package).version


def satisfies(package: str, specifier: str) -> bool:
    """Whether the imported version is in the PEP 440 range (local labels like +cu132 ignored)."""
    version = version_of(package)
    if version is None:
        return False
    try:
        return Version(version.split("+")[0]) in SpecifierSet(specifier)
    except (InvalidVersion, InvalidSpecifier):
        return False


def below(package: str, version: str) -> bool:
    """Whether the imported version is older than `version` (False when not installed)."""
    return satisfies(package, f"<{version}")


def unmet(name: str, requires: Mapping[str, str]) -> str | None:
    """Why `name` cannot run with the imported packages, naming the version found; or None."""
    for package, wanted in requires.items():
        found = version_of(package)
        if found is None:
            return f"{name} needs {package}{wanted}, which is not installed (or does not import)"
        if not satisfies(package, wanted):
            return f"{name} needs {package}{wanted}; imported {package} {found}"
    return None


def resolved(dotted: str) -> object | None:
    """What a dotted name (a module, then attributes) names in the imported libraries, or None."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except Exception:  # noqa: BLE001 - not a module (or one that fails to import): try a shorter prefix
            continue
        for attribute in parts[split:]:
            if not hasattr(found, attribute):
                return None
            found = getattr(found, attribute)
        return found
    return None


def reachable(dotted: str) -> bool:
    """Whether a dotted name (a module, then attributes) exists in the imported libraries."""
    return resolved(dotted) is not None


def missing(name: str, needs: tuple[str, ...] | list[str]) -> str | None:
    """Why `name` cannot run: the first dotted name it needs that the imported library lacks."""
    for dotted in needs:
        if not reachable(dotted):
            package = dotted.split(".")[0]
            found = version_of(package)
            if not found:
                return f"{name} needs {dotted}, and {package} is not installed (or does not import)"
            return f"{name} needs {dotted}, which {package} {found} lacks"
    return None
