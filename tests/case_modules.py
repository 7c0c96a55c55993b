"""The suite's case modules, for the harness's tests: cases/ is not a package, so they load by path."""

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

from conformance.spec.issue_paths import files_in_folder

CASES = Path(__file__).parents[1] / "cases"


@cache
def case_module(name: str) -> ModuleType:
    """cases/<name>.py, loaded once per test session (its specs then are the same objects everywhere)."""
    spec = importlib.util.spec_from_file_location(f"cases_{name}", CASES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def copy_cases(folder: Path, *names: str) -> None:
    """cases/<name> copied into `folder` with the known-issue entries about their ops (a known-issues file speaks of
    the modules beside it: entries for ops no module there defines are a usage error)."""
    import fnmatch
    import json
    import re
    import shutil

    import tomllib

    folder.mkdir(parents=True, exist_ok=True)
    ops, optional = [], []
    for name in names:
        shutil.copy(CASES / name, folder / name)
        module = case_module(name.removesuffix(".py"))
        ops += [test.conformance_spec.name for test in vars(module).values() if hasattr(test, "conformance_spec")]
        optional += getattr(module, "CONFORMANCE_OPTIONAL_OPS", ())  # ops made by an option (the sweep's)
    texts = [path.read_text() for path in files_in_folder(CASES)]  # each family's, then the shared file: read order
    head, *entries = re.split(r"(?m)^(?=\[\[issue\]\])", "\n".join(texts))
    kept = []
    for entry in entries:
        found = re.search(r'(?m)^op = ("[^"\n]*"|\[[^\]]*\])', entry)
        globs = tomllib.loads(f"op = {found[1]}")["op"]
        globs = [globs] if isinstance(globs, str) else globs
        mine = [
            glob
            for glob in globs
            if any(fnmatch.fnmatchcase(op, glob) for op in ops) or any(fnmatch.fnmatchcase(glob, o) for o in optional)
        ]
        if mine:  # a list keeps the globs of the copied modules' ops only
            kept.append(entry[: found.start(1)] + json.dumps(mine) + entry[found.end(1) :])
    (folder / "known_issues.toml").write_text(head + "".join(kept))


PLANT_RUN = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--targets=cpu,vcuda:1"]


def failed_lines(result) -> list[str]:
    return [line for line in result.stdout.lines if line.startswith("FAILED ")]


def control_then_plant(
    pytester,
    plant: str,
    source: str,
    module: str,
    selection: str,
    said: str,
    examples: int,
    *,
    sweep: str = "none",
    check: str | tuple[str, ...] | None = None,
):
    """The stock items of `selection` (cases/<module> copied with its known issues; `sweep`: the --sweep the run
    makes) run green with the real library, then fail with `source` as a conftest that plants the bug, saying `said`
    (with `check`: only the items of that check, or of the checks named, fail); returns the planted run's FAILED
    lines."""
    import textwrap

    copy_cases(pytester.path / "cases", module)
    args = [*PLANT_RUN, f"--sweep={sweep}", f"--max-examples={examples}", "cases", "-k", selection]
    control = pytester.runpytest_subprocess(*args)
    outcomes = control.parseoutcomes()
    # a known issue's cases make an item an xfail: the suite's green
    assert outcomes.get("passed", 0) + outcomes.get("xfailed", 0) > 0, control.stdout.str()[-3000:]
    assert not failed_lines(control), "\n".join(failed_lines(control))
    pytester.makeconftest(textwrap.dedent(source))
    planted = pytester.runpytest_subprocess(*args)
    failed = failed_lines(planted)
    assert failed, f"the suite missed the plant {plant}:\n{planted.stdout.str()[-3000:]}"
    assert said in planted.stdout.str()
    if check is not None:
        checks = (check,) if isinstance(check, str) else check
        assert all(line.split("::")[1].split(" ")[0].rsplit("-", 1)[1][:-1] in checks for line in failed), failed
    return failed


def library_plant(module: str, name: str, planted: str, *, rebind: str) -> str:
    """A conftest's source that compiles `planted` (a function `name` that may call `_real`, the library's own) into
    the library module `module`, so its frames are the library's, with the real one's annotations and docstring
    (what the relations read), and binds it at `rebind` (the public name the case modules call)."""
    return f"""
import importlib
import kornia
import torch

PLANTED = {planted!r}
namespace = vars(importlib.import_module({module!r}))
namespace["_real"] = namespace[{name!r}]
exec(compile(PLANTED, namespace["__file__"], "exec"), namespace)
planted = namespace[{name!r}]
planted.__annotations__, planted.__doc__ = namespace["_real"].__annotations__, namespace["_real"].__doc__
owner, _, attribute = {rebind!r}.rpartition(".")
setattr(importlib.import_module(owner), attribute, planted)
"""
