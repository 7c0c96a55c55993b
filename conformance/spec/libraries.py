"""The libraries the harness knows, each declared once (light: no torch import).

A `Library` record names the distribution pip installs, the module it imports as, the implementations it
offers to operations (the names reports use, and the default op-name suffix), and whether its code is
under test.  Everything else reads these records: the imported versions (conformance.spec.versions), the
environment a run records (conformance.devices.environment), the cross-library page's column order, and the
test that references never enter a library under test.  Adding a library is one record here (and its
package in pyproject's extras), or, from another package, an entry point in the `conformance.libraries` group
that names a dict of its fields (conformance.spec.extensions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from conformance.spec.extensions import LIBRARIES as LIBRARY_GROUP
from conformance.spec.extensions import extensions

# The implementation names reports use (an Implementation's `library`)
TV2, TV1, TVIO = "torchvision v2", "torchvision v1", "torchvision.io"
KORNIA, PILLOW, OPENCV, TORCHCODEC = "kornia", "Pillow", "OpenCV", "TorchCodec"
# torchvision's functionals (v1 and v2) take a PIL image wherever they take a tensor, through a path of their own
TORCHVISION_PIL = (
    "torchvision documents its functionals' image argument as 'img (PIL Image or Tensor)' (v1) and dispatches v2's "
    "on the input's type, PIL.Image.Image among the registered ones"
)


@dataclass(frozen=True)
class Library:
    package: str  # the distribution pip installs, as its metadata names it
    module: str  # the module it imports as
    implementations: tuple[tuple[str, str], ...] = ()  # (name in reports, default op-name suffix)
    under_test: bool = True  # the suite checks its code; False: the harness's own stack
    reference_backend: bool = False  # a reference may be built on it where it does not implement the operation
    # dtypes its implementations take only from a release on (dtype -> first version): an Operation draws them
    # only where the imported release has them, and says so (`narrowed`)
    dtypes_since: tuple[tuple[str, str], ...] = ()


BUILT_IN: tuple[Library, ...] = (
    Library("torch", "torch"),
    # uint16 images: torchvision 0.20's release notes (before, v2 kernels read them as other integers or refuse)
    Library(
        "torchvision", "torchvision", ((TV2, "tv2"), (TV1, "tv1"), (TVIO, "tv")), dtypes_since=(("uint16", "0.20"),)
    ),
    Library("kornia", "kornia", ((KORNIA, "kornia"),)),
    Library("Pillow", "PIL", ((PILLOW, "pil"),), reference_backend=True),  # its libjpeg is the JPEG reference
    Library("opencv-python-headless", "cv2", ((OPENCV, "cv2"),)),
    Library("torchcodec", "torchcodec", ((TORCHCODEC, "torchcodec"),)),
    Library("hypothesis", "hypothesis", under_test=False),
    Library("numpy", "numpy", under_test=False),
    Library("pytest", "pytest", under_test=False),
    Library("pytest-xdist", "xdist", under_test=False),
)


def _installed() -> tuple[Library, ...]:
    """The libraries installed packages add: each a new distribution, its implementations' names and suffixes new."""
    known = {library.package for library in BUILT_IN}
    names = {name for library in BUILT_IN for pair in library.implementations for name in pair}
    added = []
    for extension in extensions(LIBRARY_GROUP):
        try:  # plain data: loaded while this module is imported, the entry point's module cannot import it
            fields: dict[str, Any] = dict(extension.value)
            if "implementations" in fields:
                fields["implementations"] = tuple(tuple(pair) for pair in fields["implementations"])
            library = Library(**fields)
        except (AttributeError, TypeError, ValueError) as exc:
            raise extension.problem(f"is not a mapping of Library's fields (package, module, ...): {exc}") from None
        clashes = sorted(({library.package} & known) | ({n for pair in library.implementations for n in pair} & names))
        if clashes:
            raise extension.problem(f"names {', '.join(map(repr, clashes))}, which another library already has")
        known.add(library.package)
        names.update(n for pair in library.implementations for n in pair)
        added.append(library)
    return tuple(added)


LIBRARIES: tuple[Library, ...] = BUILT_IN + _installed()
ORDER = tuple(name for library in LIBRARIES for name, _ in library.implementations)  # the page's columns
SUFFIXES = {name: suffix for library in LIBRARIES for name, suffix in library.implementations}
IMPORT_NAMES = {library.package: library.module for library in LIBRARIES}  # distribution -> module


def implementing(name: str) -> Library | None:
    """The library that offers the implementation named `name` in reports (None for a name of one's own)."""
    return next((lib for lib in LIBRARIES if any(name == n for n, _ in lib.implementations)), None)
