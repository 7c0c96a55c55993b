"""The suite's case modules, for the harness's tests: cases/ is not a package, so they load by path."""

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType

CASES = Path(__file__).parents[1] / "cases"


@cache
def case_module(name: str) -> ModuleType:
    """cases/<name>.py, loaded once per test session (its specs then are the same objects everywhere)."""
    spec = importlib.util.spec_from_file_location(f"cases_{name}", CASES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
