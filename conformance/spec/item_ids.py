"""The test-id format of conformance items: `test_<op>[<target>-<dtype>-<mode>-<check>]`.

One module owns it, light enough for the plugin to import without torch: ids are written at
parametrization and read back by the xdist scheduler, the store and known-issue bookkeeping.
"""

from __future__ import annotations

from typing import NamedTuple


def item_params_id(target: str, dtype: str, mode: str, check: str) -> str:
    """The parameter part of a conformance test id: `test_<name>[<target>-<dtype>-<mode>-<check>]`."""
    return f"{target}-{dtype}-{mode}-{check}"


class ItemId(NamedTuple):
    module: str
    test: str
    target: str
    dtype: str
    mode: str
    check: str


def parse_item_id(nodeid: str) -> ItemId | None:
    """The parts of a conformance test id; None for other ids.
    Target, dtype and check names hold no "-"; a mode may."""
    module, sep, rest = nodeid.rpartition("::")
    test, bracket, params = rest.partition("[")
    front, dash, check = params.removesuffix("]").rpartition("-")
    parts = front.split("-", 2)
    if not sep or not bracket or not dash or len(parts) != 3:
        return None
    return ItemId(module, test, parts[0], parts[1], parts[2], check)


def variant_key(nodeid: str, test: str, dtype: str, mode: str) -> tuple[str, str, str, str]:
    """Which items share drawn cases, inputs and references: one module's test, dtype and mode, any target."""
    return nodeid.split("::")[0], test, dtype, mode


def worker_group(nodeid: str, dtype: str, mode: str) -> tuple[str, str, str]:
    """Which items one pytest-xdist worker runs together: a case module's variant, every op and target,
    so the implementations of one operation (separate tests) check the same drawn cases in one worker."""
    return nodeid.split("::")[0], dtype, mode
