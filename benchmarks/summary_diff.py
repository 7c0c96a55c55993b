"""Two runs' summaries compared item by item: what a change that must not move any item, check or verdict (a
refactor) is held to (issue 48).  Each group (machine, test, op, target, virtual, dtype, mode, check) of one run
is compared with the same group of the other, field by field through the typed model, and the runs' totals and
known-issue lists too.  The checkout's folder in a message (a warning names the file of the constant it saw
uploaded) is not a difference: paths up to a `site-packages/` or a `cases/` folder are dropped first, and so is the
line number after a case module's name (a refactor of the case module moves its lines, not its items).

    python benchmarks/summary_diff.py reports/before reports/after     # exit 0: the same; 1: what differs
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

from conformance.store.summary_model import Group, Summary
from conformance.store.summary_reader import SummaryError, load_summary

GROUP_KEY = ("machine", "test", "op", "target", "virtual", "dtype", "mode", "check")
RUN_FIELDS = ("complete", "totals", "unused_known_issues", "unreproduced_known_issues", "interrupted")
CHECKOUT = re.compile(r"\S*/(?=site-packages/|cases/)")  # a path's folders up to one the runs share
CASE_LINE = re.compile(r"(cases/[\w/]+\.py):\d+")  # a case module's line in a message: a refactor moves lines


def _key(group: Group) -> tuple[Any, ...]:
    return tuple(getattr(group, name) for name in GROUP_KEY)


def _portable(value: Any) -> Any:
    """The value with checkout paths and case-module line numbers dropped from its strings (also in mapping keys
    and lists)."""
    if isinstance(value, str):
        return CASE_LINE.sub(r"\1", CHECKOUT.sub("", value))
    if isinstance(value, Mapping):
        return {_portable(k): _portable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_portable(v) for v in value]
    return value


def differences(before: Summary, after: Summary) -> dict[str, list[str]]:
    """What differs, by field: each entry names the group (or the run field) and the two values."""
    found: dict[str, list[str]] = {}
    mine = {_key(g): g for g in before.groups}
    theirs = {_key(g): g for g in after.groups}
    for key in sorted(mine.keys() - theirs.keys(), key=repr):
        found.setdefault("only before", []).append(repr(key))
    for key in sorted(theirs.keys() - mine.keys(), key=repr):
        found.setdefault("only after", []).append(repr(key))
    for key in sorted(mine.keys() & theirs.keys(), key=repr):
        for field in fields(Group):
            a, b = _portable(getattr(mine[key], field.name)), _portable(getattr(theirs[key], field.name))
            if a != b:
                found.setdefault(field.name, []).append(f"{key}: {a!r} -> {b!r}")
    for name in RUN_FIELDS:
        a, b = _portable(getattr(before, name)), _portable(getattr(after, name))
        if a != b:
            found.setdefault(name, []).append(f"{a!r} -> {b!r}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="a run folder (its summary.json)")
    parser.add_argument("after", type=Path)
    parser.add_argument("--shown", type=int, default=3, help="examples printed per differing field")
    args = parser.parse_args(argv)
    try:
        summaries = [load_summary(folder) for folder in (args.before, args.after)]
    except SummaryError as exc:
        print(f"summary_diff: {exc}", file=sys.stderr)
        return 2
    if None in summaries:
        print("summary_diff: a run folder without a readable summary.json", file=sys.stderr)
        return 2
    before, after = summaries
    assert before is not None and after is not None
    found = differences(before, after)
    print(f"{len(before.groups):,} groups before, {len(after.groups):,} after")
    for name, entries in sorted(found.items()):
        print(f"{name}: {len(entries):,} differ")
        for entry in entries[: args.shown]:
            print(f"  {entry[:300]}")
    print("the same, item by item" if not found else "they differ")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
