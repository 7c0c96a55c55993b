"""Combine runs from several machines (an H100 runner, an A100 runner, a CPU runner)
into one run folder whose matrix has a column per machine and target.

Journal records are streamed from each run into the merged folder; each run's examples table is
copied as one Parquet file with its machine label.  The same run given twice (or a copy of it) is
refused: every example would count twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pyarrow as pa

from conformance.report.build import build_report
from conformance.store import examples
from conformance.store.aggregate import write_summary
from conformance.store.reader import RunRecords, was_complete
from conformance.store.writer import json_safe, safe_name


class MergeError(ValueError):
    """Inputs that cannot be merged: not run folders, an existing output, mismatched labels, duplicates."""


def _machine(run_dir: Path) -> str:
    for path in sorted((run_dir / "environment").glob("*.json")):
        try:
            return str(json.loads(path.read_text(encoding="utf-8")).get("machine") or run_dir.name)
        except (OSError, json.JSONDecodeError):
            break
    return run_dir.name


def _labels(run_dirs: list[Path], labels: list[str] | None) -> list[str]:
    if labels is not None and len(labels) != len(run_dirs):
        raise MergeError(f"{len(labels)} --label value(s) for {len(run_dirs)} run folder(s)")
    chosen = list(labels) if labels else [_machine(d) for d in run_dirs]
    for i, label in enumerate(chosen):  # two runs from one machine: tell them apart by folder
        if chosen.count(label) > 1:
            chosen[i] = f"{label} ({run_dirs[i].name})"
    return chosen


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


def merge_runs(run_dirs: list[Path], out: Path, labels: list[str] | None = None) -> Path:
    """Write the merged run to `out` (summary.json, outcomes, artifacts, index.html).  It is written in a
    folder beside `out` and renamed to it when whole: a merge refused halfway (a damaged file in the third run)
    leaves nothing behind, so the same command works once the input is mended."""
    for run_dir in run_dirs:
        if not (run_dir / "outcomes").is_dir():
            raise MergeError(f"{run_dir} has no outcomes/ folder (not a run folder)")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise MergeError(f"{out} exists and is not empty; choose a new folder")
    check_duplicates(run_dirs)
    names = _labels(run_dirs, labels)
    stage = out.with_name(f".{out.name}.merging-{os.getpid()}")
    shutil.rmtree(stage, ignore_errors=True)
    try:
        _merge_into(stage, run_dirs, names)
        if out.exists():
            out.rmdir()  # empty (checked above)
        stage.rename(out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out / "index.html"


def _merge_into(out: Path, run_dirs: list[Path], names: list[str]) -> None:
    complete, torn_total = True, 0
    for run_dir, label in zip(run_dirs, names, strict=False):
        tag = safe_name(label, 60)
        records = RunRecords(run_dir)
        complete = complete and was_complete(run_dir)
        (out / "outcomes").mkdir(parents=True, exist_ok=True)
        with open(out / "outcomes" / f"{tag}.jsonl", "w", encoding="utf-8") as stream:
            for record in records:
                record["machine"] = label
                if record.get("artifact"):
                    record["artifact"] = _copy_artifact(run_dir, record["artifact"], out, tag)
                stream.write(json.dumps(json_safe(record), separators=(",", ":")) + "\n")
        table, torn = examples.read_table(run_dir)
        torn_total += records.torn + torn
        table = table.set_column(
            table.schema.get_field_index("detail"),
            "detail",
            pa.array(
                [_relocated(detail, run_dir, out, tag) for detail in table.column("detail").to_pylist()], pa.string()
            ),
        )
        table = table.set_column(
            table.schema.get_field_index("machine"), "machine", pa.array([label] * table.num_rows, pa.string())
        )
        (out / examples.FOLDER).mkdir(exist_ok=True)
        examples.write_parquet(table, out / examples.FOLDER / f"{tag}.parquet")
        for path in sorted((run_dir / "environment").glob("*.json"))[:1]:
            env = json.loads(path.read_text(encoding="utf-8")) | {"machine_label": label}
            (out / "environment").mkdir(exist_ok=True)
            (out / "environment" / f"{tag}.json").write_text(json.dumps(env, indent=1), encoding="utf-8")
    summary = write_summary(out, complete=complete)  # streamed from the merged files
    summary["machines"] = names
    summary["torn_lines"] = torn_total  # lines torn in the inputs (the merged files have none)
    (out / "summary.json").write_text(json.dumps(json_safe(summary), separators=(",", ":")), encoding="utf-8")
    build_report(out, title="merged: " + ", ".join(names))


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
