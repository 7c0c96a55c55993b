"""What a merge merges: which run folders make which column of the merged matrix (a run, or the shards of one run:
the same split, profile and libraries), labelled by machine, and the refusal of one run given twice or a copy of
a run (every example would count twice).  conformance.report.merge writes the merged folder from the columns."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.engine.shards import ShardRecord, ShardRecordError, read_record
from conformance.store import examples
from conformance.store.reader import load_environment
from conformance.store.writer import safe_name


class MergeError(ValueError):
    """Inputs that cannot be merged: not run folders, an existing output, mismatched labels, duplicates."""


def _machine(run_dir: Path) -> str:
    for path in sorted((run_dir / "environment").glob("*.json")):
        try:
            return str(json.loads(path.read_text(encoding="utf-8")).get("machine") or run_dir.name)
        except (OSError, json.JSONDecodeError):
            break
    return run_dir.name


@dataclass(frozen=True)
class Column:
    """One column of the merged matrix: a run, or the shards of one run (`parts` in shard order)."""

    label: str
    parts: tuple[Path, ...]
    shards: tuple[ShardRecord, ...] = ()  # one per part; empty: not sharded
    missing: tuple[int, ...] = ()  # the shards of N that no part holds (only with allow_missing)

    def tag(self, part: int) -> str:
        """The name of a part's files in the merged folder (a column's parts must not overwrite each other)."""
        return safe_name(self.label, 60) + (f"-shard{self.shards[part].index}" if self.shards else "")


def _identity(run_dir: Path, record: ShardRecord) -> tuple[Any, ...]:
    """What the parts of one sharded run share: the split (N and its plan), the profile and the libraries."""
    env = load_environment(run_dir) or {}
    return record.count, record.plan, env.get("hypothesis_profile"), json.dumps(env.get("packages"), sort_keys=True)


def columns(run_dirs: list[Path], labels: list[str] | None, allow_missing: bool = False) -> list[Column]:
    """The merged matrix's columns, in the order their first run was given."""
    if labels is not None and len(labels) != len(run_dirs):
        raise MergeError(f"{len(labels)} --label value(s) for {len(run_dirs)} run folder(s)")
    given = list(labels) if labels else [_machine(d) for d in run_dirs]
    found: dict[Any, list[tuple[Path, str, ShardRecord | None]]] = {}
    for n, run_dir in enumerate(run_dirs):
        try:
            record = read_record(run_dir)
        except ShardRecordError as exc:
            raise MergeError(str(exc)) from None
        key = ("run", n) if record is None else ("shards", *_identity(run_dir, record))
        found.setdefault(key, []).append((run_dir, given[n], record))
    made = [_column(parts, allow_missing, labelled=labels is not None) for parts in found.values()]
    names = [c.label for c in made]
    for i, column in enumerate(made):  # two columns from one machine: tell them apart by folder
        if names.count(column.label) > 1:
            made[i] = Column(f"{column.label} ({column.parts[0].name})", column.parts, column.shards, column.missing)
    return made


def _column(parts: list[tuple[Path, str, ShardRecord | None]], allow_missing: bool, labelled: bool) -> Column:
    """A run's column, or a sharded run's (labelled as its first folder was, else by the machines that ran it)."""
    run_dir, label, record = parts[0]
    if record is None:
        return Column(label, (run_dir,))
    by_index: dict[int, tuple[Path, str, ShardRecord]] = {}
    for run, given, part in parts:
        assert part is not None  # a column's parts share one shard identity
        if part.index in by_index:
            raise MergeError(
                f"{by_index[part.index][0]} and {run} are both shard {part.index}/{part.count} of one run: "
                "its items would count twice"
            )
        by_index[part.index] = (run, given, part)
    missing = tuple(sorted(set(range(1, record.count + 1)) - set(by_index)))
    if missing and not allow_missing:
        raise MergeError(
            f"shard(s) {', '.join(f'{k}/{record.count}' for k in missing)} of the run sharded in "
            f"{', '.join(str(p[0]) for p in parts)} missing: give every shard's run folder, or "
            "--allow-missing-shards to merge the parts there are (the summary then says which are missing)"
        )
    ordered = [by_index[k] for k in sorted(by_index)]
    machines = sorted({_machine(p[0]) for p in ordered})
    if not labelled:
        label = machines[0] if len(machines) == 1 else "shards: " + ", ".join(machines)
    return Column(label, tuple(p[0] for p in ordered), tuple(p[2] for p in ordered), missing)


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _fingerprints(run_dir: Path) -> tuple[set[str], str]:
    """Digests of the run's non-empty journal and example files, and of its environment files together."""
    files = {
        _digest(p)
        for p in [*sorted((run_dir / "outcomes").glob("*.jsonl")), *examples.files(run_dir)]
        if p.stat().st_size
    }
    environment = hashlib.sha256(
        b"".join(_digest(p).encode() for p in sorted((run_dir / "environment").glob("*.json")))
    )
    return files, environment.hexdigest()


def check_duplicates(run_dirs: list[Path]) -> None:
    """Refuse one run named twice, or two runs sharing an outcome file byte for byte from the same
    environment (a copy of a run): records carry their process id, so two real runs never do."""
    seen: dict[Path, Path] = {}
    prints: list[tuple[Path, set[str], str]] = []
    for run_dir in run_dirs:
        real = run_dir.resolve()
        if real in seen:
            raise MergeError(f"{run_dir} is given twice (as {seen[real]}): its examples would count twice")
        seen[real] = run_dir
        files, environment = _fingerprints(run_dir)
        for other, other_files, other_environment in prints:
            if files & other_files and environment == other_environment:
                raise MergeError(
                    f"{run_dir} and {other} hold the same records (a copy of one run): "
                    f"merging them would count every example twice"
                )
        prints.append((run_dir, files, environment))
