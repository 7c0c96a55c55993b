"""Importing the modules a device sweep names (`--sweep`): as kornia must be imported in a worker (never asking on
stdin), and a module that cannot be imported refused in one line (a usage error) before collection needs it.

A module named on the command line is first imported in a process of its own: an `os._exit` at import ends the
process that runs it, which no handler survives (the run exited 5, pytest's "no tests collected", and said
nothing), and a KeyboardInterrupt raised by the module itself is indistinguishable, in this process, from a stop
(the run exited 2, with no output and no run folder).  The stock modules are not probed: they import cleanly.
"""

from __future__ import annotations

import importlib
import os
import signal
import subprocess
import sys
from typing import Any

from conformance.spec.sweep_tables import SweepModuleError, own_arguments

DEFAULT_MODULES = (
    "kornia.augmentation",
    "torchvision.transforms.v2",
    "kornia.color",
    "kornia.enhance",
    "kornia.filters",
    "kornia.geometry.transform",
)
CHOICES = f"'default' sweeps {' and '.join(DEFAULT_MODULES)}, 'none' sweeps nothing"
PROBE_TIMEOUT_S = 300.0
INTERRUPTED_AT_IMPORT = 70  # the probe's exit status for a module that raised KeyboardInterrupt
# what the probe runs: an exception (SystemExit too) exits 0, left to the import here to say in its usual words
PROBE = f"""
import importlib, sys
try:
    importlib.import_module(sys.argv[1])
except KeyboardInterrupt:
    sys.exit({INTERRUPTED_AT_IMPORT})
except BaseException:
    pass
"""


def never_ask() -> None:
    """kornia 0.8 asks on stdin whether to install a missing optional dependency: in a worker process that
    waits forever.  Make it raise instead (the class is then skipped, saying which dependency is missing)."""
    os.environ.setdefault("KORNIA_INSTALLATION_MODE", "raise")  # read when kornia is imported (0.9)
    config = getattr(sys.modules.get("kornia.config"), "kornia_config", None)
    lazy = getattr(config, "lazyloader", None)
    if lazy is not None and hasattr(lazy, "installation_mode"):
        lazy.installation_mode = "RAISE"


def import_module(module_name: str) -> Any:
    """The module, imported as kornia must be in a worker (never asking on stdin), or SweepModuleError."""
    never_ask()
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as exc:  # any failure to import (a sys.exit() at import too) is a usage error
        first_line = str(exc).splitlines()[0] if str(exc) else ""
        raise SweepModuleError(
            f"--sweep: cannot import {module_name!r} ({type(exc).__name__}: {first_line}); {CHOICES}"
        ) from exc
    never_ask()  # the module may have imported kornia just now
    return module


def ends_its_process(module_name: str) -> str | None:
    """What importing the module did to a process of its own, where it ended it (os._exit, a signal, a crash) or
    raised KeyboardInterrupt; None where that process lived on (an ordinary exception included)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), KORNIA_INSTALLATION_MODE="raise")
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, module_name],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return f"did not finish importing in {PROBE_TIMEOUT_S:g} s"
    code = done.returncode
    if code == 0:
        return None
    if code == INTERRUPTED_AT_IMPORT:
        return "raised KeyboardInterrupt"
    if code < 0:
        name = signal.Signals(-code).name if -code in signal.valid_signals() else f"signal {-code}"
        return f"killed the process importing it ({name})"
    return f"ended the process importing it with exit status {code} (os._exit, or a crash)"


def check_importable(module_names: list[str], probe: bool = True) -> None:
    """Raise SweepModuleError for the first module that does not import, that ends its process or raises
    KeyboardInterrupt when imported (tried in a process of its own where `probe`, for those not stock), or that
    names a class it lacks in its own arguments, before collection needs it."""
    for name in module_names:
        ended = ends_its_process(name) if probe and name not in DEFAULT_MODULES else None
        if ended is not None:
            raise SweepModuleError(f"--sweep: importing {name!r} {ended}: it cannot be swept; {CHOICES}")
        import_module(name)
        own_arguments(name)
