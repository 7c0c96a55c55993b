"""The examples table's columns, named once: an item's (the same on every row of it) and a row's, the typed
`ExampleRow`.  A row is built by keyword, so a value left out or one too many is an error naming the column,
never a shift of every later column."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

ITEM_COLUMNS = ("machine", "nodeid", "test", "op", "target", "virtual", "dtype", "mode", "check", "worker")
LABELLED_BY_MERGE = ("machine",)  # empty in a run's own table; `merge` labels each run's rows with its machine


@dataclass(frozen=True, slots=True, kw_only=True)
class ExampleRow:
    """One check outcome of one counted example (the columns after the item's)."""

    phase: str  # COUNTED_PHASES: generate, planned, final, replay, ...
    example: int
    case: str  # the case JSON
    verdict: str
    against: str | None  # reference, cpu, eager, ...
    cause: str | None
    max_abs: float | None
    mae: float | None
    mismatch_fraction: float | None
    psnr: float | None
    tolerance: str | None  # the tolerance's name
    atol: float | None
    known_issue: str | None  # the id of the entry that explained it
    envelope: str | None  # the entry whose size bounds the failure was held to (explaining it or broken)
    envelope_used: float | None  # the largest ratio of a metric to that entry's bound (above 1: outside)
    diverges: str | None
    behaviour: str | None
    peers: list[dict[str, Any]] | None  # the cross-library measurement of a reference outcome
    detail: str | None  # JSON: message, traceback, details, rerun line, artifact of a failure


ROW_COLUMNS = tuple(f.name for f in fields(ExampleRow))


def item_values(item: dict[str, Any]) -> tuple[Any, ...]:
    """An item's ITEM_COLUMNS from its journal record (which holds more); a missing one is an error."""
    missing = [name for name in ITEM_COLUMNS if name not in item and name not in LABELLED_BY_MERGE]
    if missing:
        raise KeyError(f"examples table: the item has no {', '.join(missing)} column value")
    return tuple(item.get(name) for name in ITEM_COLUMNS)
