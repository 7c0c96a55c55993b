"""Recorded outputs: each op output of a case set, per target, as an exact digest plus the
array itself, so a run on another build can be compared with it (baselines, `compare`).

Layout of an outputs folder (inside a baseline, or a run folder under `outputs/`):

    <worker>.jsonl       one index line per output: op, target, dtype, mode, case JSON, digest,
                         shape, dtype, the cross-device tolerance in force, where the array lies
    <worker>-<n>.npz     the arrays, compressed, written before the index lines that name them

Arrays are read with `allow_pickle=False`: a baseline from elsewhere is data, never code.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from conformance.spec.recipes import Case, RecipeError
from conformance.store.writer import safe_name, save_arrays

FLUSH_BYTES = 8 * 2**20  # arrays buffered before a shard is written


class OutputsError(ValueError):
    """An outputs folder or file that cannot be read as recorded outputs."""


@dataclass(frozen=True, order=True)
class OutputKey:
    """Which output: exact matching, the case compared as its canonical JSON."""

    op: str
    target: str
    dtype: str
    mode: str
    case: str

    def describe(self) -> str:
        return f"{self.op} on {self.target} [{self.dtype}, {self.mode}] case {self.case}"


@dataclass(frozen=True)
class Recorded:
    key: OutputKey
    digest: str | None  # None when the op raised
    error: str | None  # the exception class the op raised
    shape: tuple[int, ...] | None
    array_dtype: str | None
    tolerance: dict[str, Any] | None  # the cross-device tolerance of this variant and target
    shard: str | None
    name: str | None
    plan: tuple[str, ...] = ("", "")


def digest(array: np.ndarray) -> str:
    """Exact identity of an output: dtype, shape and bytes."""
    h = hashlib.sha256(f"{array.dtype.str}|{array.shape}|".encode())
    h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()[:32]


class OutputRecorder:
    """Appends one worker's outputs to an outputs folder; each (key) once."""

    def __init__(self, folder: Path, worker: str) -> None:
        self.folder = folder
        self.worker = safe_name(worker)
        self.seen: set[OutputKey] = set()
        self._arrays: dict[str, np.ndarray] = {}
        self._lines: list[dict[str, Any]] = []
        self._bytes = 0
        self._shards = 0

    def has(self, key: OutputKey) -> bool:
        return key in self.seen

    def add(
        self,
        key: OutputKey,
        output: np.ndarray | None,
        error: str | None,
        tolerance: dict[str, Any] | None,
        plan: tuple[str, ...],
    ) -> None:
        """`plan`: the (module, test) whose items checked the case, so a later run can replay it."""
        if key in self.seen:
            return
        self.seen.add(key)
        line: dict[str, Any] = {
            "op": key.op,
            "target": key.target,
            "dtype": key.dtype,
            "mode": key.mode,
            "case": key.case,
            "tolerance": tolerance,
            "module": plan[0],
            "test": plan[1],
        }
        if output is None:
            line["error"] = error or "no tensor output"
        else:
            name = f"o{len(self.seen)}"
            line |= {
                "digest": digest(output),
                "shape": list(output.shape),
                "array_dtype": output.dtype.str,
                "name": name,
            }
            self._arrays[name] = np.ascontiguousarray(output)
            self._bytes += output.nbytes
        self._lines.append(line)
        if self._bytes >= FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self._lines:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        shard = None
        if self._arrays:
            while (self.folder / f"{self.worker}-{self._shards}.npz").exists():
                self._shards += 1
            shard = f"{self.worker}-{self._shards}.npz"
            temporary = self.folder / f".{shard}.tmp"
            with temporary.open("wb") as handle:
                save_arrays(handle, dict(self._arrays))
            temporary.replace(self.folder / shard)
        with (self.folder / f"{self.worker}.jsonl").open("a", encoding="utf-8") as index:
            for line in self._lines:
                if "name" in line:
                    line["shard"] = shard
                index.write(json.dumps(line, sort_keys=True) + "\n")
        self._arrays, self._lines, self._bytes = {}, [], 0


def _recorded(line: Any, where: str) -> Recorded:
    try:
        key = OutputKey(*(str(line[k]) for k in ("op", "target", "dtype", "mode", "case")))
        json.loads(key.case)
        plan = (str(line["module"]), str(line["test"]))
        if "error" in line:
            return Recorded(key, None, str(line["error"]), None, None, line.get("tolerance"), None, None, plan)
        shape = tuple(int(n) for n in line["shape"])
        np.dtype(line["array_dtype"])
        if not str(line["shard"]).endswith(".npz") or "/" in line["shard"] or line["shard"].startswith("."):
            raise ValueError(f"bad shard name {line['shard']!r}")
        return Recorded(
            key,
            str(line["digest"]),
            None,
            shape,
            str(line["array_dtype"]),
            line.get("tolerance"),
            str(line["shard"]),
            str(line["name"]),
            plan,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise OutputsError(f"{where}: not an output record ({type(exc).__name__}: {exc})") from None


def outputs_folder(path: Path) -> Path:
    """The outputs inside a baseline or run folder (or the outputs folder itself)."""
    if (path / "outputs").is_dir():
        return path / "outputs"
    if path.is_dir() and any(path.glob("*.jsonl")) and not (path / "outcomes").is_dir():
        return path
    if not path.exists():
        raise OutputsError(f"no such baseline or run folder: {str(path)!r}")
    raise OutputsError(
        f"{str(path)!r} holds no recorded outputs (make one with `python -m conformance baseline`, "
        f"or run with --baseline/--record-outputs)"
    )


def read_index(folder: Path) -> dict[OutputKey, Recorded]:
    """Every output recorded in `folder`; a malformed line is an error naming file and line."""
    if not folder.is_dir():
        raise OutputsError(f"{folder} has no recorded outputs (no such folder)")
    found: dict[OutputKey, Recorded] = {}
    for path in sorted(folder.glob("*.jsonl")):
        if path.is_symlink():
            raise OutputsError(f"{path}: a symlink; recorded outputs are read only from plain files")
        for number, text in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except json.JSONDecodeError as exc:
                raise OutputsError(f"{path}:{number}: not JSON ({exc.msg}); the file is truncated or damaged") from None
            record = _recorded(line, f"{path}:{number}")
            found.setdefault(record.key, record)
    return found


class ArrayReader:
    """Loads arrays named by index records, one shard open at a time, never unpickling."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._name: str | None = None
        self._open: Any = None

    def load(self, record: Recorded) -> np.ndarray:
        assert record.shard is not None and record.name is not None
        path = self.folder / record.shard
        if path.is_symlink() or not path.is_file():
            raise OutputsError(f"{path}: missing or not a plain file")
        try:
            if self._name != record.shard:
                self._open = np.load(path, allow_pickle=False)
                self._name = record.shard
            array = self._open[record.name]
        except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as exc:
            raise OutputsError(f"{path}: cannot read array {record.name!r} ({type(exc).__name__}: {exc})") from None
        if (
            tuple(array.shape) != record.shape
            or array.dtype.str != record.array_dtype
            or digest(array) != record.digest
        ):
            raise OutputsError(f"{path}: array {record.name!r} does not match its index line (damaged file)")
        return array


class BaselineOutputs:
    """A baseline's recorded outputs (`run --baseline DIR`), read once per process (index) and lazily (arrays)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.index = read_index(folder)
        self.reader = ArrayReader(folder)


def plans(index: dict[OutputKey, Recorded]) -> dict[tuple[str, ...], list[Case]]:
    """The recorded cases per (module, test, dtype, mode), for `--baseline` to check exactly them."""
    found: dict[tuple[str, ...], dict[str, Case]] = {}
    for key, record in sorted(index.items()):
        try:
            case = Case.from_json(key.case)
        except RecipeError as exc:
            raise OutputsError(f"recorded case of {key.op} is not a case ({exc})") from None
        found.setdefault((*record.plan, key.dtype, key.mode), {}).setdefault(case.key, case)
    return {plan: list(cases.values()) for plan, cases in found.items()}
