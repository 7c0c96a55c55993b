"""Writing a run's store: the journal (one JSON line per item event, see docs/results.md), the
examples table (one row per check outcome, conformance.store.examples) and the arrays of failures.

Writes are buffered per item: the journal is flushed when an item starts and ends, the examples of an
item are appended as one batch when it ends, and the case an xdist worker is about to run is written in
place before the op runs (so a process that dies names it).  Readers skip (and count) a torn last line or
batch.  A write the full disk refuses stops this process's records there (`Store.full` says which file; the
plugin then stops the run), so what reached the disk is what the summary counts.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from conformance.store.disk import full_disk, whole_or_none
from conformance.store.example_writer import ExamplesWriter


def json_safe(value: Any) -> Any:
    """Standard JSON for every record, summary and page of a run: non-finite floats become strings ("inf", "-inf",
    "nan": a NaN output is a finding to show), and keys strings.  The one sanitiser of the package."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def save_arrays(file: Any, arrays: dict[str, Any]) -> None:
    """Arrays into one compressed .npz, by name.  Never with savez's `allow_pickle` keyword: older numpy releases
    that this package allows take it for one more array to store.  The arrays are numeric; every reader loads them
    with allow_pickle=False."""
    np.savez_compressed(file, **arrays)


def safe_name(text: str, limit: int = 120) -> str:
    """A file-name fragment that cannot escape its folder or confuse a shell."""
    cleaned = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9_.=-]+", "_", text)).strip("._-")
    return cleaned[:limit] or "item"


def write_atomically(path: Path, text: str) -> None:
    """A temporary file renamed over `path`: a reader never sees half a file, and a symlink at `path`
    is replaced, never written through."""
    with whole_or_none(path.with_name(f".{path.name}.{os.getpid()}.tmp"), path) as temporary:
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, path)


def compact(array: np.ndarray) -> np.ndarray:
    """An array in the smallest dtype that holds its values exactly: uint8 for whole numbers 0..255,
    float32 where float32 keeps every value, else float64 (readers convert back to float64)."""
    array = np.asarray(array)
    if array.dtype.kind != "f" or array.size == 0:
        return array
    finite = np.isfinite(array)
    if finite.all() and array.min() >= 0 and array.max() <= 255 and np.array_equal(np.rint(array), array):
        return array.astype(np.uint8)
    small = array.astype(np.float32)
    same = (small == array) | (np.isnan(small) & np.isnan(array))
    return small if same.all() else array


class Store:
    """One process's journal, examples table and artifacts (xdist-safe without locks: files per process)."""

    def __init__(self, run_dir: Path, worker: str, environment: dict[str, Any]) -> None:
        self.run_dir = run_dir
        self.worker = worker
        self.full: str | None = None  # the write a full disk refused: nothing more is written
        (run_dir / "outcomes").mkdir(parents=True, exist_ok=True)
        (run_dir / "environment").mkdir(exist_ok=True)
        if environment:  # the controller's crash records come with none: the workers' describe the run
            described = run_dir / "environment" / f"{worker}.json"
            try:
                write_atomically(described, json.dumps(json_safe(environment), indent=2))
            except OSError as exc:
                self._refused(exc, described)
        self.journal = run_dir / "outcomes" / f"{worker}.jsonl"
        self._file: TextIO = open(self.journal, "a", encoding="utf-8", buffering=1 << 16)  # noqa: SIM115 - closed in close()
        self.examples = ExamplesWriter(run_dir, worker)
        self._artifact_count = 0
        self._running: int | None = None  # outcomes/<worker>.running: the case this process is running
        self._running_size = 0  # the longest text written there (a shorter one is padded over it)

    def append(self, record: dict[str, Any], encoded: dict[str, str] | None = None, *, flush: bool = False) -> None:
        """Write one journal record as a line; `encoded` holds fields already serialised to JSON."""
        try:
            text = json.dumps(record, sort_keys=True, allow_nan=False, separators=(",", ":"))
        except ValueError:  # inf or nan somewhere: spelled as strings
            text = json.dumps(json_safe(record), sort_keys=True, separators=(",", ":"))
        if encoded:
            fields = ",".join(f"{json.dumps(key)}:{value}" for key, value in encoded.items())
            text = f"{text[:-1]}{',' if len(text) > 2 else ''}{fields}}}"
        if self.full:
            return
        try:
            self._file.write(text + "\n")
            if flush:
                self._file.flush()
        except OSError as exc:
            self._refused(exc, self.journal)

    def _refused(self, exc: OSError, path: Path) -> None:
        """A write that failed: a full disk's stops this process's records (the first is said), any other is raised."""
        said = full_disk(exc, path)
        if said is None:
            raise exc
        self.full = self.full or said

    def running(self, nodeid: str, case_json: str, stamp: int = 0, command_id: str = "") -> None:
        """Name the case this process is about to run, in place of the last one (a file of two lines, rewritten
        before every op call): if the process dies, the controller reads it (`last_case_started`), and its
        watchdog if it overruns (`stamp`: the check's number in `devices.deadline`, which says whether this is
        still the running case).  One write a case: a shorter text is padded with spaces over the longer one
        before it (the reader strips them), where truncating the file cost a second system call on each of the
        run's 670,000 checks.  `command_id`: the item as a rerun line names it, where pytest's id does not."""
        if self.full:
            return
        if self._running is None:
            self._running = os.open(
                self.run_dir / "outcomes" / f"{self.worker}.running", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644
            )
        head = {"nodeid": nodeid, "stamp": stamp, **({"command": command_id} if command_id else {})}
        data = f"{json.dumps(head)}\n{case_json}\n".encode()
        size = len(data)
        if size < self._running_size:
            data += b" " * (self._running_size - size)
        try:
            os.pwrite(self._running, data, 0)
        except OSError as exc:
            self._refused(exc, self.run_dir / "outcomes" / f"{self.worker}.running")
        self._running_size = max(size, self._running_size)

    def item_ended(self) -> None:
        """An item's end: its examples, then the journal, go to disk."""
        for write, path in ((self.examples.flush, self.examples.stream_path), (self._file.flush, self.journal)):
            try:
                if not self.full:
                    write()
            except OSError as exc:
                self._refused(exc, path)

    def save_arrays(self, stem: str, arrays: dict[str, np.ndarray]) -> str:
        """Keep a failing example's arrays (each in its smallest exact dtype); returns the path relative
        to the run dir."""
        self._artifact_count += 1
        folder = self.run_dir / "artifacts"
        folder.mkdir(exist_ok=True)
        name = f"{self.worker}-{self._artifact_count:05d}-{safe_name(stem)}.npz"
        if self.full:
            return ""
        try:
            with whole_or_none(folder / name) as path:
                save_arrays(path, {k: compact(v) for k, v in arrays.items()})
        except OSError as exc:
            self._refused(exc, folder / name)
            return ""
        return f"artifacts/{name}"

    def close(self) -> None:
        self.item_ended()
        try:
            if not self.full:
                self.examples.close()
        except OSError as exc:
            self._refused(exc, self.examples.folder / f"{self.worker}.parquet")
        try:
            self._file.close()
        except OSError as exc:  # what the full disk left in its buffer, said already
            self._refused(exc, self.journal)
        if self._running is not None:
            os.close(self._running)
            self._running = None
            (self.run_dir / "outcomes" / f"{self.worker}.running").unlink(missing_ok=True)
