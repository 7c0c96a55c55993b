"""The stock suite, in a checkout or in an installed package, and the pytest arguments that run it.

A wheel carries the repo's cases/ as conformance/suite/cases/ (setup.py).  Either way its items get the same
ids, `cases/test_<family>.py::...`: outside a checkout pytest's rootdir is the folder above the installed
cases/, so `--lf`, `-k`, known issues, rerun lines and merged runs read alike on every machine.  Pure path
logic: `run` must start pytest without importing torch.
"""

from __future__ import annotations

import os
from pathlib import Path

NO_STOCK = "--no-stock"  # `run`'s own flag: only the named case modules, not the stock suite beside them
ISSUES_FILE = "known_issues.toml"
# pytest's own options that take their value as the next argument (plugin options are joined by launch.joined)
CORE_VALUE_OPTIONS = (
    *("-k", "-m", "-p", "-o", "-n", "-W", "-c", "--junitxml", "--rootdir", "--basetemp", "--dist", "--maxfail"),
    *("--durations", "--tb", "--confcutdir", "--deselect", "--ignore", "--ignore-glob", "-r"),
)


def stock_cases() -> Path | None:
    """The stock suite's folder: installed beside this module, else the checkout's cases/ (an editable install
    or the source tree itself); None in a package built without it."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "cases", here.parent.parent / "cases"):
        if (candidate / ISSUES_FILE).is_file():
            return candidate
    return None


def named_paths(args: list[str]) -> list[str]:
    """The files, folders and node ids the (joined) pytest arguments name for collection."""
    return [
        arg
        for previous, arg in zip(["", *args], args, strict=False)
        if arg and not arg.startswith("-") and previous not in CORE_VALUE_OPTIONS
    ]


def case_paths(args: list[str]) -> list[str]:
    """The named files and folders that exist (for the commands that read the case modules themselves)."""
    return [arg for arg in named_paths(args) if Path(arg.split("::")[0]).exists()]


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve() == folder.resolve() or folder.resolve() in path.resolve().parents


def _given(args: list[str], option: str, env: str) -> bool:
    return bool(os.environ.get(env)) or any(a == option or a.startswith(option + "=") for a in args)


def suite_arguments(args: list[str]) -> list[str]:
    """The arguments with the stock suite in them: run when nothing is named, added beside the user's own case
    folders (not with --no-stock, not to a node id, which names one item), and found by its ids
    (`cases/test_x.py::...`) from any directory.  In a checkout the suite is ./cases, pytest's testpaths."""
    stock = stock_cases()
    own_only = NO_STOCK in args
    args = [a for a in args if a != NO_STOCK]
    named = named_paths(args)
    if own_only and not named:
        raise ValueError(f"{NO_STOCK} runs only the case modules you name, and none is named")
    if stock is None:
        return args
    checkout = Path("cases").is_dir() and Path("cases").resolve() == stock.resolve()
    root = Path.cwd() if checkout else stock.parent
    resolved = {arg: _resolved(arg, root) for arg in named}
    args = [resolved.get(a, a) for a in args]
    includes_stock = any(_inside(Path(p.split("::")[0]), stock) for p in resolved.values())
    add_stock = not own_only and not any("::" in a for a in named) and not includes_stock
    if checkout:
        return ["-o", "testpaths=cases", *args, *(["cases"] if named and add_stock else [])]
    if named and not add_stock and not includes_stock:
        return args
    cached = not any(a.replace(" ", "") in ("no:cacheprovider", "-pno:cacheprovider") for a in args)
    where = [
        f"--rootdir={stock.parent}",
        *(["-o", f"cache_dir={Path.cwd() / '.pytest_cache'}"] if cached else []),
        *([] if _given(args, "--reports-dir", "CONFORMANCE_REPORTS") else [f"--reports-dir={Path.cwd() / 'reports'}"]),
    ]
    return [*where, *args, *([str(stock)] if add_stock else [])]


def _resolved(arg: str, root: Path) -> str:
    """A named path as given where it exists here; else, where it names the stock suite's items from the rootdir
    (`cases/test_x.py::...`, a rerun line's id), its absolute path."""
    path, sep, rest = arg.partition("::")
    if Path(path).exists() or not (root / path).exists():
        return arg
    return f"{(root / path).resolve()}{sep}{rest}"


def command_path(named: str, module: Path, here: Path) -> str:
    """How a command started in `here` names a case module that pytest ids as `named`: as pytest does where `run`
    finds that module from here (a path below here, or the stock suite's `cases/...` from anywhere), else relative
    to here for a module below it, else its absolute path (a folder of one's own beside or above this one, which
    pytest ids from its rootdir or from the folder itself)."""
    found, module, stock = here / named, module.resolve(), stock_cases()
    if not found.exists() and stock is not None:
        found = stock.parent / named  # what `run` makes of a path that names nothing here (suite_arguments)
    if found.exists() and found.resolve() == module:
        return named
    return os.path.relpath(module, here) if _inside(module, here) else str(module)


def sweeps(args: list[str], here: Path) -> bool:
    """Whether pytest's collection arguments (relative to `here`) take in the stock suite's device sweep module:
    under `--no-stock`, or with only some families named, the sweep does not run, and says nothing."""
    stock = stock_cases()
    module = stock / "test_sweep.py" if stock is not None else None
    return module is not None and any(_inside(module, here / arg.split("::")[0]) for arg in args)
