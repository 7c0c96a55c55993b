"""summary.json on disk: each variant's fields once, its checks under it by name.

A summary has a group per item (machine, test, op, target, virtual, dtype, mode, check), and written as such each
group repeated its variant's eight fields and every key name: three fifths of the stock suite's 5.4 MB.  On disk
(schema /3) a variant holds its checks, and a check leaves out what its absence says: `examples` (the sum of its
`counts`), a `worst` of null and empty `known_issues`.  Readers get the flat groups back (`unpack`), so every
consumer reads `summary["groups"]` as before; a file of schema /2 (flat groups) reads as it is.
"""

from __future__ import annotations

import copy
from typing import Any

SCHEMA = "conformance.summary/3"
FLAT_SCHEMA = "conformance.summary/2"  # groups written flat: still read
VARIANT_FIELDS = ("machine", "family", "test", "op", "target", "virtual", "dtype", "mode")


LEFT_OUT: dict[str, Any] = {"worst": None, "known_issues": []}  # a check's fields left out where they hold this


def _left_out() -> dict[str, Any]:
    """LEFT_OUT afresh, for a group read back (groups never share a list)."""
    return {name: copy.copy(value) for name, value in LEFT_OUT.items()}


def pack(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary as written: `variants` in the groups' order, each with its `checks` by name."""
    variants: dict[tuple[Any, ...], dict[str, Any]] = {}
    for group in summary["groups"]:
        key = tuple(group.get(name) for name in VARIANT_FIELDS)
        variant = variants.setdefault(key, {name: group.get(name) for name in VARIANT_FIELDS} | {"checks": {}})
        variant["checks"][group["check"]] = {
            name: value
            for name, value in group.items()
            if name not in VARIANT_FIELDS and name not in ("check", "examples") and LEFT_OUT.get(name, ...) != value
        }
    written = {name: value for name, value in summary.items() if name != "groups"}
    return written | {"schema": SCHEMA, "variants": list(variants.values())}


def unpack(found: Any) -> Any:
    """A parsed summary.json with its flat `groups` (what `pack` wrote, back); anything else as it is (the
    reader's checks say what is wrong with it)."""
    if not isinstance(found, dict) or found.get("schema") != SCHEMA or not isinstance(found.get("variants"), list):
        return found
    groups: list[Any] = []
    for variant in found["variants"]:
        checks = variant.get("checks") if isinstance(variant, dict) else None
        if not isinstance(checks, dict):
            groups.append(None)  # a damaged variant: the reader refuses the file
            continue
        shared = {name: variant.get(name) for name in VARIANT_FIELDS}
        for name, check in checks.items():
            group = shared | _left_out() | {"check": name} | (check if isinstance(check, dict) else {})
            counts = group.get("counts")
            if isinstance(counts, dict) and all(isinstance(n, int) for n in counts.values()):
                group["examples"] = sum(counts.values())
            groups.append(group)
    return {name: value for name, value in found.items() if name != "variants"} | {"groups": groups}
