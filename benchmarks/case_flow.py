"""How one case flows through the harness's modules: from `ConformanceRun.check` down to the records, how
often the path climbs back up a layer or returns to a module it had left (issue 48: "a case flows down once").

Each item runs in this process with one example (`-n 0 --max-examples=1`); while its first case is checked, every call
into a conformance function that is handed the case, the spec, or something holding the spec (a case context) is
traced (`sys.setprofile`): the path the case flows along, its helpers aside.  From that trace:

    stays    the path as runs of consecutive calls in one module (library code between them is not counted)
    modules  the distinct modules the path visits
    climbs   calls whose module is in a higher layer than its caller's (the nearest conformance frame below it):
             the layers are the import-linter contract's (pyproject.toml), so these go through callbacks
    returns  stays in a module the path had already left

    python benchmarks/case_flow.py                              # the default items
    python benchmarks/case_flow.py --json flow.json 'cases/test_resize.py::test_resize[cpu-uint8-bilinear-reference]'
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
ITEMS = [
    "cases/test_resize.py::test_resize[cpu-uint8-bilinear-reference]",
    "cases/test_resize.py::test_resize[vcuda:1-float32-bilinear-cross_device]",
    "cases/test_affine_random.py::test_random_affine_kornia[cpu-float32-bilinear-reference]",
    "cases/test_normalize.py::test_normalize_v2[cpu-float32-valid-invariants]",
]


def layers() -> list[tuple[str, ...]]:
    """The import-linter layers, top first, each a tuple of module prefixes."""
    text = (ROOT / "pyproject.toml").read_text()  # no tomllib on Python 3.10
    block = re.search(r'type = "layers"\nlayers = \[(.*?)\]', text, re.S)
    assert block is not None, "pyproject.toml has no layers contract"
    return [tuple(p.strip() for p in layer.split("|")) for layer in re.findall(r'"([^"]+)"', block[1])]


def layer_of(module: str, ranked: list[tuple[str, ...]]) -> int:
    """0 for the top layer; len(ranked) for a module in none (the package's own __init__)."""
    for rank, prefixes in enumerate(ranked):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return len(ranked)


class Tracer:
    """A pytest plugin: traces the first `ConformanceRun.check` of each item."""

    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[str, str | None]]] = {}  # nodeid -> (callee module, caller module)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from conformance.engine.session import ConformanceRun

        original = ConformanceRun.check
        tracer = self

        def traced(run: Any, state: Any, spec: Any, case: Any) -> None:
            nodeid = state.info.nodeid
            if nodeid in tracer.calls:
                return original(run, state, spec, case)
            found: list[tuple[str, str | None]] = []
            tracer.calls[nodeid] = found

            def carries(value: Any) -> bool:
                return value is spec or value is case or getattr(value, "spec", None) is spec

            def profile(frame: FrameType, event: str, arg: Any) -> None:
                if event != "call":
                    return
                module = frame.f_globals.get("__name__", "")
                if not module.startswith("conformance"):
                    return
                code = frame.f_code
                names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
                if not any(carries(frame.f_locals.get(name)) for name in names):
                    return  # a helper the case does not flow through
                caller = frame.f_back
                while caller is not None and not caller.f_globals.get("__name__", "").startswith("conformance"):
                    caller = caller.f_back
                found.append((module, None if caller is None else caller.f_globals["__name__"]))

            sys.setprofile(profile)
            try:
                return original(run, state, spec, case)
            finally:
                sys.setprofile(None)

        ConformanceRun.check = traced  # type: ignore[method-assign]


def flow(calls: list[tuple[str, str | None]], ranked: list[tuple[str, ...]]) -> dict[str, Any]:
    stays: list[str] = []
    for module, _ in calls:
        if not stays or stays[-1] != module:
            stays.append(module)
    climbs = [
        f"{caller} -> {module}"
        for module, caller in calls
        if caller is not None and layer_of(module, ranked) < layer_of(caller, ranked)
    ]
    returns = sum(1 for i, module in enumerate(stays) if module in stays[:i])
    return {
        "calls": len(calls),
        "stays": len(stays),
        "modules": len(set(stays)),
        "climbs": len(climbs),
        "returns": returns,
        "climbed": sorted(set(climbs)),
        "path": stays,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("items", nargs="*", default=ITEMS)
    parser.add_argument("--json", type=Path, help="write each item's flow (with its path) here")
    args = parser.parse_args()
    tracer = Tracer()
    run = ["-p", "no:cacheprovider", "-q", "-n", "0", "--max-examples=1", "--sweep=none", "--targets=cpu,vcuda:1"]
    code = pytest.main([*run, *args.items], plugins=[tracer])
    ranked = layers()
    found = {nodeid: flow(calls, ranked) for nodeid, calls in tracer.calls.items()}
    print("| item | calls | stays | modules | climbs | returns |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for nodeid, seen in found.items():
        row = [seen[k] for k in ("calls", "stays", "modules", "climbs", "returns")]
        print(f"| `{nodeid.split('::')[-1]}` | " + " | ".join(str(v) for v in row) + " |")
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n")
    return 0 if found else int(code) or 1


if __name__ == "__main__":
    sys.exit(main())
