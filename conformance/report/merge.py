"""Combine runs from several machines (an H100 runner, an A100 runner, a CPU runner)
into one run folder whose matrix has a column per machine and target.

Journal records are streamed from each run into the merged folder; each run's examples table is
copied as one Parquet file with its machine label.  The same run given twice (or a copy of it) is
refused: every example would count twice.

The shards of one run (--shard K/N, conformance.engine.shards) are one column, whichever machines ran them:
runs recording a shard of the same N, cut from the same plan, under the same hypothesis profile and library
versions, are parts of one run.  Their parts must be distinct and hold no item twice; a missing part is an
error unless `allow_missing`, and then the merged summary is marked incomplete and names the missing shards.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from conformance.report.build import build_report
from conformance.report.merge_columns import Column, MergeError, check_duplicates, columns
from conformance.store import examples
from conformance.store.aggregate import write_summary, write_summary_file
from conformance.store.reader import RunRecords, load_environment, was_complete
from conformance.store.summary_model import Summary
from conformance.store.writer import json_safe, safe_name


def merge_runs(
    run_dirs: list[Path], out: Path, labels: list[str] | None = None, allow_missing_shards: bool = False
) -> Path:
    """Write the merged run to `out` (summary.json, outcomes, artifacts, index.html).  It is written in a
    folder beside `out` and renamed to it when whole: a merge refused halfway (a damaged file in the third run,
    shards holding one item twice) leaves nothing behind, so the same command works once the input is mended."""
    for run_dir in run_dirs:
        if not (run_dir / "outcomes").is_dir():
            raise MergeError(f"{run_dir} has no outcomes/ folder (not a run folder)")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise MergeError(f"{out} exists and is not empty; choose a new folder")
    check_duplicates(run_dirs)
    made = columns(run_dirs, labels, allow_missing_shards)
    stage = out.with_name(f".{out.name}.merging-{os.getpid()}")
    shutil.rmtree(stage, ignore_errors=True)
    try:
        _merge_into(stage, made)
        if out.exists():
            out.rmdir()  # empty (checked above)
        stage.rename(out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out / "index.html"


def _merge_into(out: Path, made: list[Column]) -> None:
    complete, torn_total = not any(c.missing for c in made), 0
    for column in made:
        owners: dict[str, int] = {}  # nodeid -> the part holding it: shards of one run never share an item
        for part, run_dir in enumerate(column.parts):
            complete = complete and was_complete(run_dir)
            torn_total += _merge_part(out, column, part, owners)
        env = load_environment(column.parts[0]) or {}
        env = env | {"machine_label": column.label} | ({"shards": _shards(column)} if column.shards else {})
        (out / "environment").mkdir(exist_ok=True)
        (out / "environment" / f"{safe_name(column.label, 60)}.json").write_text(
            json.dumps(env, indent=1), encoding="utf-8"
        )
    summary = replace(
        Summary.from_json(write_summary(out, complete=complete)),  # streamed from the merged files
        machines=tuple(c.label for c in made),
        torn_lines=torn_total,  # lines torn in the inputs (the merged files have none)
        shards={c.label: _shards(c) for c in made if c.shards},
    )
    write_summary_file(out, summary.to_json())
    build_report(out, title="merged: " + ", ".join(c.label for c in made), summary=summary)


def _shards(column: Column) -> dict[str, Any]:
    """What the merged run says about a sharded column: N, the parts merged and missing, where each ran."""
    parts = []
    for run_dir, record in zip(column.parts, column.shards, strict=True):
        env = load_environment(run_dir) or {}
        parts.append(
            {
                "shard": record.index,
                "items": record.items,
                "machine": env.get("machine"),
                "cpu_capability": env.get("cpu_capability"),
                "folder": run_dir.name,
            }
        )
    count = column.shards[0].count
    return {
        "count": count,
        "plan": column.shards[0].plan,
        "of_items": column.shards[0].of_items,
        "parts": parts,
        "missing": list(column.missing),
    }


def _merge_part(out: Path, column: Column, part: int, owners: dict[str, int]) -> int:
    """Stream one run (or shard) into the merged folder; returns the lines torn in it."""
    run_dir, label, tag = column.parts[part], column.label, column.tag(part)
    records = RunRecords(run_dir)
    (out / "outcomes").mkdir(parents=True, exist_ok=True)
    with open(out / "outcomes" / f"{tag}.jsonl", "w", encoding="utf-8") as stream:
        for record in records:
            record["machine"] = label
            if column.shards:  # each shard's processes are processes of their own in the merged run
                record["worker"] = f"{record.get('worker', '')}@shard{column.shards[part].index}"
                nodeid = str(record.get("nodeid") or "")  # its module's path differs where the suite is installed
                item = Path(nodeid.split("::")[0]).name + "::" + nodeid.partition("::")[2] if nodeid else None
                if item is not None and owners.setdefault(item, part) != part:
                    raise MergeError(
                        f"{nodeid} is in both {column.parts[owners[item]]} and {run_dir}: "
                        "these shards were not cut from one collection"
                    )
            if record.get("artifact"):
                record["artifact"] = _copy_artifact(run_dir, record["artifact"], out, tag)
            stream.write(json.dumps(json_safe(record), separators=(",", ":")) + "\n")
    table, torn = examples.read_table(run_dir)
    table = table.set_column(
        table.schema.get_field_index("detail"),
        "detail",
        pa.array([_relocated(detail, run_dir, out, tag) for detail in table.column("detail").to_pylist()], pa.string()),
    )
    table = table.set_column(
        table.schema.get_field_index("machine"), "machine", pa.array([label] * table.num_rows, pa.string())
    )
    (out / examples.FOLDER).mkdir(exist_ok=True)
    examples.write_parquet(table, out / examples.FOLDER / f"{tag}.parquet")
    return records.torn + torn


def _relocated(detail: str | None, run_dir: Path, out: Path, tag: str) -> str | None:
    """A row's detail with its artifact copied into the merged run (and its path there)."""
    if not detail or '"artifact"' not in detail:
        return detail
    found = json.loads(detail)
    if found.get("artifact"):
        found["artifact"] = _copy_artifact(run_dir, found["artifact"], out, tag)
    return json.dumps(found, sort_keys=True)


def _copy_artifact(run_dir: Path, relative: str, out: Path, tag: str) -> str | None:
    source = (run_dir / relative).resolve()
    if run_dir.resolve() not in source.parents or not source.is_file():
        return None  # never follow a path out of the run folder
    target = out / "artifacts" / tag / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return f"artifacts/{tag}/{source.name}"


def shard_notes(out: Path) -> list[str]:
    """Lines for the terminal about a merged run's sharded columns: missing shards, parts on unlike machines."""
    shards = json.loads((out / "summary.json").read_text(encoding="utf-8")).get("shards") or {}
    notes = []
    for label, found in shards.items():
        count, parts = found["count"], found["parts"]
        notes.append(f"{label}: {len(parts)} of {count} shards merged into one column")
        if found["missing"]:
            missing = ", ".join(f"{k}/{count}" for k in found["missing"])
            notes.append(f"warning: {label}: shard(s) {missing} missing; the merged summary is marked incomplete")
        capabilities = sorted({str(p.get("cpu_capability")) for p in parts})
        if len(capabilities) > 1:
            notes.append(
                f"warning: {label}: its shards ran on cpu capabilities {', '.join(capabilities)}: the column's cpu "
                "results mix them (pin one runner type for a comparable column)"
            )
    return notes
