"""Combine runs from several machines (an H100 runner, an A100 runner, a CPU runner)
into one run folder whose matrix has a column per machine and target."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from conformance.report.build import build_report
from conformance.results import json_safe, read_outcomes, safe_name, summarize


class MergeError(ValueError):
    """Inputs that cannot be merged: not run folders, an existing output, mismatched labels."""


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


def merge_runs(run_dirs: list[Path], out: Path, labels: list[str] | None = None) -> Path:
    """Write the merged run to `out` (summary.json, outcomes, artifacts, index.html)."""
    for run_dir in run_dirs:
        if not (run_dir / "outcomes").is_dir():
            raise MergeError(f"{run_dir} has no outcomes/ folder (not a run folder)")
    if out.exists() and any(out.iterdir()):
        raise MergeError(f"{out} exists and is not empty; choose a new folder")
    names = _labels(run_dirs, labels)
    all_records, environments, complete, torn_total = [], [], True, 0
    for run_dir, label in zip(run_dirs, names):
        tag = safe_name(label, 60)
        records, torn = read_outcomes(run_dir)
        torn_total += torn
        summary_path = run_dir / "summary.json"
        complete = complete and summary_path.is_file() and json.loads(summary_path.read_text()).get("complete", False)
        (out / "outcomes").mkdir(parents=True, exist_ok=True)
        with open(out / "outcomes" / f"{tag}.jsonl", "w", encoding="utf-8") as stream:
            for record in records:
                record["machine"] = label
                if record.get("artifact"):
                    record["artifact"] = _copy_artifact(run_dir, record["artifact"], out, tag)
                stream.write(json.dumps(json_safe(record), separators=(",", ":")) + "\n")
        all_records += records
        for path in sorted((run_dir / "environment").glob("*.json"))[:1]:
            env = json.loads(path.read_text(encoding="utf-8")) | {"machine_label": label}
            (out / "environment").mkdir(exist_ok=True)
            (out / "environment" / f"{tag}.json").write_text(json.dumps(env, indent=1), encoding="utf-8")
            environments.append(env)
    summary = summarize(all_records, environments[0] if environments else None, torn=torn_total, complete=complete)
    summary["machines"] = names
    (out / "summary.json").write_text(json.dumps(json_safe(summary), indent=1), encoding="utf-8")
    return build_report(out, title="merged: " + ", ".join(names))


def _copy_artifact(run_dir: Path, relative: str, out: Path, tag: str) -> str | None:
    source = (run_dir / relative).resolve()
    if run_dir.resolve() not in source.parents or not source.is_file():
        return None  # never follow a path out of the run folder
    target = out / "artifacts" / tag / source.name
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    return f"artifacts/{tag}/{source.name}"
