"""--shard K/N: one of N parts of the collection, for a CI matrix that runs the parts on N machines.

The unit is the variant group (`ordering.variant_group`: a module's operation, dtype and mode, every target and
check): its items read the same drawn cases (an operation's implementations the cases its first one drew), the
per-case cache holds one group at a time, and a known issue's strictness is judged across a cell inside it, so a
group split between shards would draw other cases and judge other cells than the unsharded run.  Groups go to
shards by a balanced greedy rule: heaviest first (ties by key), each to the lightest shard so far (ties to the
lowest number).  A group's weight is its number of distinct (test, check) pairs, not of items: items also count
targets, and a runner with another cpu capability has other `cpu:<level>` targets, which must not move groups
between shards.  The rule reads only the group keys (module file name, not path) and weights, so every machine,
collection order, hash seed and xdist worker count gives the same split; `plan`, a digest of what it read, lets
`merge` see that shards were cut from the same collection.  Light (no torch): the plugin calls it at collection.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.engine.ordering import variant_group
from conformance.store.writer import write_atomically

RECORD = "shard.json"  # in the run folder: which part of which split this run is
SCHEMA = "conformance.shard/1"
RULE = "greedy-by-test-checks/1"  # a change to the rule or the weights changes this name, and so every plan
_FORM = re.compile(r"([0-9]+)/([0-9]+)")


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse(text: str | None) -> Shard | None:
    """--shard's value (None: not sharded); a malformed one is a one-line usage error."""
    if text is None:
        return None
    found = _FORM.fullmatch(text.strip())
    if found is None:
        raise pytest.UsageError(f"--shard: expected K/N (part K of N, e.g. 2/3), got {text!r}")
    index, count = int(found[1]), int(found[2])
    if count < 1:
        raise pytest.UsageError(f"--shard {text}: N, the number of shards, must be at least 1")
    if not 1 <= index <= count:
        raise pytest.UsageError(f"--shard {text}: K, the shard to run, must be from 1 to {count}")
    return Shard(index, count)


class ShardRecordError(ValueError):
    """A shard.json that cannot be read: `merge` refuses it (taken for an unsharded run, its part would be a
    column of its own)."""


@dataclass(frozen=True)
class ShardRecord:
    """What a sharded run records (shard.json) and `merge` reads: which part, of which plan, and its share."""

    index: int
    count: int
    plan: str  # digest of the rule, the group keys and their weights
    groups: int  # variant groups in this shard
    of_groups: int
    items: int
    of_items: int
    ops: tuple[str, ...]  # the ops of the whole collection: the collection checks judge it, not one shard

    def line(self) -> str:
        return (
            f"conformance: shard {self.index}/{self.count}: {self.groups} of {self.of_groups} variant groups "
            f"({self.items} of {self.of_items} items)"
        )


def group_key(item: Any, spec: Any) -> tuple[str, str]:
    """An item's group (stable across machines: the module's file name, not its path) and what it adds to the
    group's weight (its test and check).  Another test of the session is a group of its module, one per item."""
    module = Path(item.nodeid.split("::")[0]).name
    params = getattr(getattr(item, "callspec", None), "params", {})
    if spec is None or not isinstance(params.get("target"), str):
        return f"{module}::", item.nodeid
    _, operation, dtype, mode = variant_group(item.nodeid, item.originalname, params["dtype"], params["mode"], spec)
    return "::".join((module, operation, dtype, mode)), f"{item.originalname}[{params['check']}]"


def assign(weights: dict[str, int], count: int) -> dict[str, int]:
    """Group -> shard (1-based): heaviest first, each to the lightest shard so far."""
    loads, found = [0] * count, {}
    for key in sorted(weights, key=lambda k: (-weights[k], k)):
        lightest = min(range(count), key=lambda n: (loads[n], n))
        found[key] = lightest + 1
        loads[lightest] += weights[key]
    return found


def split(
    items: Sequence[Any], shard: Shard, spec_of: Callable[[Any], Any]
) -> tuple[list[Any], list[Any], ShardRecord]:
    """The items of this shard and the others (each in collection order), and the record of the split."""
    keys: list[str] = []
    kinds: dict[str, set[str]] = {}  # group -> its (test, check) pairs
    for item in items:
        key, kind = group_key(item, spec_of(item))
        keys.append(key)
        kinds.setdefault(key, set()).add(kind)
    weights = {key: len(found) for key, found in kinds.items()}
    chosen = assign(weights, shard.count)
    kept = [item for item, key in zip(items, keys, strict=True) if chosen[key] == shard.index]
    dropped = [item for item, key in zip(items, keys, strict=True) if chosen[key] != shard.index]
    plan = hashlib.sha256(json.dumps([RULE, sorted(weights.items())]).encode()).hexdigest()[:16]
    ops = sorted({spec.name for item in items if (spec := spec_of(item)) is not None})
    groups = sum(1 for n in chosen.values() if n == shard.index)
    record = ShardRecord(shard.index, shard.count, plan, groups, len(chosen), len(kept), len(items), tuple(ops))
    return kept, dropped, record


def take(
    config: pytest.Config, items: list[Any], shard: Shard, run_dir: Path, spec_of: Callable[[Any], Any]
) -> ShardRecord:
    """Keep this shard's items (in place), report the others to pytest as deselected, and record the split in
    the run folder for `merge` (not for a listing: --co leaves no run folder)."""
    kept, dropped, record = split(items, shard, spec_of)
    if not config.option.collectonly:
        write_record(run_dir, record)
    config.hook.pytest_deselected(items=dropped)
    items[:] = kept
    return record


def announce(config: pytest.Config, run_dir: Path) -> ShardRecord | None:
    """On the xdist controller, which collects nothing: the record its first worker wrote, and its line."""
    record = read_record(run_dir)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if record is not None and reporter is not None:
        reporter.write_line(record.line())
    return record


def write_record(run_dir: Path, record: ShardRecord) -> None:
    """Each process that collects writes the same record (atomically: xdist workers write it at once)."""
    write_atomically(run_dir / RECORD, json.dumps({"schema": SCHEMA, "rule": RULE, **asdict(record)}, indent=1))


def read_record(run_dir: Path) -> ShardRecord | None:
    """The run's shard record; None for a run that was not sharded."""
    path = run_dir / RECORD
    if not path.exists():
        return None
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        schema = found.get("schema")
        fields = {name: found[name] for name in ShardRecord.__dataclass_fields__}
        record = ShardRecord(**fields | {"ops": tuple(fields["ops"])})
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ShardRecordError(f"{path} cannot be read: {exc}") from None
    if schema != SCHEMA:
        raise ShardRecordError(f"{path}: schema {schema!r}, expected {SCHEMA!r}")
    return record
