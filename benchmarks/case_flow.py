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
    returns, reads aside   the same, leaving out calls of the carried record's own methods and properties (`case.key`,
             `spec.output_dtype_of`, `ctx.output64`): reading what the case holds, where the case does not go
    calls of the op  op runs (devices/calls.run_op) made while a check ran, by who called: "check" (the check
             module called it: what issue 48 removes) or "engine" (asked for through checks/requests)

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
    # checks that need runs of their own: the types relation (a recorded call, then one a replaced argument), the
    # history check (a reused instance on earlier inputs), the gradient (a backward and its probe)
    "cases/test_resize.py::test_resize[cpu-float32-bilinear-types]",
    "cases/test_resize.py::test_resize[cpu-float32-bilinear-history]",
    "cases/test_resize.py::test_resize[cpu-float32-bilinear-gradient]",
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


def who_calls(frame: FrameType) -> str:
    """ "check" where the nearest checks/ or engine/ frame below an op call is a check's, else "engine"."""
    below = frame.f_back
    while below is not None:
        module = below.f_globals.get("__name__", "")
        if module.startswith(("conformance.checks", "conformance.engine")):
            return "check" if module.startswith("conformance.checks") else "engine"
        below = below.f_back
    return "engine"


class Tracer:
    """A pytest plugin: traces the first `ConformanceRun.check` of each item."""

    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[str, str | None, bool]]] = {}  # nodeid -> (callee, caller, a record's read)
        self.op_calls: dict[str, dict[str, int]] = {}  # nodeid -> who called run_op -> how often

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from conformance.engine.session import ConformanceRun

        original = ConformanceRun.check
        tracer = self

        def traced(run: Any, state: Any, spec: Any, case: Any) -> None:
            nodeid = state.info.nodeid
            if nodeid in tracer.calls:
                return original(run, state, spec, case)
            found: list[tuple[str, str | None, bool]] = []
            tracer.calls[nodeid] = found
            op_calls = tracer.op_calls[nodeid] = {}

            def carries(value: Any) -> bool:
                return value is spec or value is case or getattr(value, "spec", None) is spec

            def profile(frame: FrameType, event: str, arg: Any) -> None:
                if event != "call":
                    return
                module = frame.f_globals.get("__name__", "")
                if not module.startswith("conformance"):
                    return
                code = frame.f_code
                caller = frame.f_back
                while caller is not None and not caller.f_globals.get("__name__", "").startswith("conformance"):
                    caller = caller.f_back
                if module == "conformance.devices.calls" and code.co_name == "run_op":
                    op_calls[who_calls(frame)] = op_calls.get(who_calls(frame), 0) + 1
                names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
                if not any(carries(frame.f_locals.get(name)) for name in names):
                    return  # a helper the case does not flow through
                read = bool(names) and names[0] == "self" and carries(frame.f_locals.get("self"))
                found.append((module, None if caller is None else caller.f_globals["__name__"], read))

            sys.setprofile(profile)
            try:
                return original(run, state, spec, case)
            finally:
                sys.setprofile(None)

        ConformanceRun.check = traced  # type: ignore[method-assign]


def _stays(modules: list[str]) -> list[str]:
    stays: list[str] = []
    for module in modules:
        if not stays or stays[-1] != module:
            stays.append(module)
    return stays


def _returns(stays: list[str]) -> int:
    return sum(1 for i, module in enumerate(stays) if module in stays[:i])


def flow(calls: list[tuple[str, str | None, bool]], ranked: list[tuple[str, ...]]) -> dict[str, Any]:
    stays = _stays([module for module, _, _ in calls])
    moves = _stays([module for module, _, read in calls if not read])
    climbs = [
        f"{caller} -> {module}"
        for module, caller, _ in calls
        if caller is not None and layer_of(module, ranked) < layer_of(caller, ranked)
    ]
    return {
        "calls": len(calls),
        "stays": len(stays),
        "modules": len(set(stays)),
        "climbs": len(climbs),
        "returns": _returns(stays),
        "returns_reads_aside": _returns(moves),
        "climbed": sorted(set(climbs)),
        "path": stays,
        "path_reads_aside": moves,
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
    found = {
        nodeid: flow(calls, ranked) | {"op_calls": tracer.op_calls[nodeid]} for nodeid, calls in tracer.calls.items()
    }
    print("| item | calls | stays | modules | climbs | returns | returns, reads aside | op calls by checks / engine |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for nodeid, seen in found.items():
        row = [seen[k] for k in ("calls", "stays", "modules", "climbs", "returns", "returns_reads_aside")]
        ops = seen["op_calls"]
        row.append(f"{ops.get('check', 0)} / {ops.get('engine', 0)}")
        print(f"| `{nodeid.split('::')[-1]}` | " + " | ".join(str(v) for v in row) + " |")
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n")
    return 0 if found else int(code) or 1


if __name__ == "__main__":
    sys.exit(main())
