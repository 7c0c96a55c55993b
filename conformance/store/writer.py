"""Writing a run's records: one JSON line per record, flushed per line (see docs/results.md).

Every line is complete on disk before the next check runs, so a crash loses at most the line
being written; readers skip (and count) such a torn last line.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, TextIO

import numpy as np


def json_safe(value: Any) -> Any:
    """Non-finite floats become strings ("inf", "-inf", "nan") so the JSON stays standard."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def safe_name(text: str, limit: int = 120) -> str:
    """A file-name fragment that cannot escape its folder or confuse a shell."""
    cleaned = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9_.=-]+", "_", text)).strip("._-")
    return cleaned[:limit] or "item"


def write_atomically(path: Path, text: str) -> None:
    """A temporary file renamed over `path`: a reader never sees half a file, and a symlink at `path`
    is replaced, never written through."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


class Store:
    """Appends one process's outcomes to its own file (xdist-safe without locks)."""

    def __init__(self, run_dir: Path, worker: str, environment: dict[str, Any]) -> None:
        self.run_dir = run_dir
        self.worker = worker
        self._case_ids: dict[str, int] = {}  # case JSON -> its id in this file
        (run_dir / "outcomes").mkdir(parents=True, exist_ok=True)
        (run_dir / "environment").mkdir(exist_ok=True)
        if environment:  # the controller's crash records come with none: the workers' describe the run
            (run_dir / "environment" / f"{worker}.json").write_text(json.dumps(json_safe(environment), indent=2))
        self._file: TextIO = open(run_dir / "outcomes" / f"{worker}.jsonl", "a", encoding="utf-8")
        self._artifact_count = 0

    def append_example(self, record: dict[str, Any], case_json: str) -> None:
        """An example record; its case is written once per file (a `case` line) and referred to by id,
        since every check of every target records the same case."""
        case_id = self._case_ids.get(case_json)
        if case_id is None:
            case_id = self._case_ids[case_json] = len(self._case_ids)
            self.append({"kind": "case", "id": case_id}, encoded={"case": case_json})
        self.append(record | {"case_id": case_id})

    def append(self, record: dict[str, Any], encoded: dict[str, str] | None = None) -> None:
        """Write one record as a line; `encoded` holds fields already serialised to JSON."""
        try:
            text = json.dumps(record, sort_keys=True, allow_nan=False)
        except ValueError:  # inf or nan somewhere: spelled as strings
            text = json.dumps(json_safe(record), sort_keys=True)
        if encoded:
            fields = ",".join(f"{json.dumps(key)}:{value}" for key, value in encoded.items())
            text = f"{text[:-1]}{',' if len(text) > 2 else ''}{fields}}}"
        self._file.write(text + "\n")
        self._file.flush()

    def save_arrays(self, stem: str, arrays: dict[str, np.ndarray]) -> str:
        """Keep a failing example's arrays; returns the path relative to the run dir."""
        self._artifact_count += 1
        folder = self.run_dir / "artifacts"
        folder.mkdir(exist_ok=True)
        name = f"{self.worker}-{self._artifact_count:05d}-{safe_name(stem)}.npz"
        np.savez_compressed(folder / name, **{k: np.asarray(v) for k, v in arrays.items()})
        return f"artifacts/{name}"

    def close(self) -> None:
        self._file.close()


def check_entry(outcome: Any, verdict: str, message: str, known_issue: dict[str, Any] | None) -> dict[str, Any]:
    """One check's outcome as stored in an `example` record (schema: docs/results.md)."""
    tolerance = outcome.tolerance.to_dict() if outcome.tolerance else None
    if tolerance is not None and outcome.passed:
        tolerance.pop("reason", None)  # kept with failures; a pass needs only the numbers
    entry = {
        "check": outcome.check, "verdict": verdict, "against": outcome.against,
        "metrics": outcome.metrics.to_dict() if outcome.metrics else None, "tolerance": tolerance,
        "message": message, "traceback": outcome.traceback, "details": outcome.details,
        "cause": outcome.cause if not outcome.passed else None, "diverges": outcome.diverges,
        "behaviour": outcome.behaviour, "known_issue": known_issue,
    }
    # empty fields are left out: a long run writes hundreds of thousands of these
    return {k: v for k, v in entry.items() if v is not None and v != ""}
