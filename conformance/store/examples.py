"""The examples table: one row per check outcome of every counted example, in Parquet.

A run checks hundreds of thousands of (case, check) pairs; as JSON lines they took 630 bytes each.
Here each is a row of typed columns: repeated strings (ids, op names, verdicts, the case JSON, which
every check and target of an example share) are dictionary-encoded and the rest compressed, so a
passing example costs a few bytes, and the table opens in pandas, DuckDB or pyarrow as it is:

    duckdb -c "SELECT target, max_abs, \"case\" FROM 'reports/latest/examples/*.parquet'
               WHERE op = 'resize' AND dtype = 'uint8' AND mode LIKE 'bicubic%'
                 AND \"check\" = 'cross_device' AND max_abs > 1"

While a process runs, its rows are appended to `examples/<worker>.arrows` (an Arrow IPC stream), one
batch when each item ends (a fraction of a millisecond); when the process closes its store the stream
becomes `examples/<worker>.parquet`.  A process that was killed leaves its stream behind, and readers
take every complete batch from it (a torn last batch is counted, not read): a kill loses the rows of
the item it was running, nothing of those that ended.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from conformance.store.disk import whole_or_none
from conformance.store.example_columns import ITEM_COLUMNS, ROW_COLUMNS

FOLDER = "examples"
FLOATS = ("max_abs", "mae", "mismatch_fraction", "psnr", "atol", "envelope_used")
STRING_COLUMNS = tuple(c for c in (*ITEM_COLUMNS, *ROW_COLUMNS) if c not in (*FLOATS, "virtual", "example", "peers"))


@functools.cache
def table_schema() -> Any:
    import pyarrow as pa

    peer = pa.struct(
        [
            ("op", pa.string()),
            ("library", pa.string()),
            ("target", pa.string()),
            ("max_abs", pa.float64()),
            ("psnr", pa.float64()),
            ("skipped", pa.string()),
        ]
    )
    kinds = {
        "virtual": pa.bool_(),
        "example": pa.int64(),
        "peers": pa.list_(peer),
        **{name: pa.float64() for name in FLOATS},
    }
    return pa.schema([(name, kinds.get(name, pa.string())) for name in (*ITEM_COLUMNS, *ROW_COLUMNS)])


def _float(value: Any) -> float | None:
    """A metric as a float: the strings "inf"/"-inf"/"nan" the JSON records use become floats again."""
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def peer_rows(peers: Any) -> list[dict[str, Any]] | None:
    """The cross-library measurement of a reference outcome (`details["peers"]`) as the `peers` column's list."""
    if not isinstance(peers, dict):
        return None
    return [
        {
            "op": name,
            "library": entry.get("library"),
            "target": entry.get("target"),
            "max_abs": _float(entry.get("max_abs")),
            "psnr": _float(entry.get("psnr")),
            "skipped": None if entry.get("skipped") is None else str(entry["skipped"]),
        }
        for name, entry in sorted(peers.items())
        if isinstance(entry, dict)
    ]


def _json_number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def record(values: dict[str, Any], known_issues: dict[str, Any] | None = None) -> dict[str, Any]:
    """A row as an outcome record: its columns, its failure's detail (message, traceback, details, rerun line,
    artifact, the whole tolerance and metrics) and its known issue's entry; empty fields left out."""
    found: dict[str, Any] = {
        name: values.get(name)
        for name in (*ITEM_COLUMNS, "phase", "example", "verdict", "against", "cause", "diverges", "behaviour")
    }
    found["kind"], found["source"] = "outcome", "examples"
    if values.get("case"):
        try:
            found["case"] = json.loads(values["case"])
        except ValueError:
            found["case"] = None
    metrics = {name: _json_number(values.get(name)) for name in ("max_abs", "mae", "mismatch_fraction", "psnr")}
    tolerance = {"name": values.get("tolerance"), "atol": values.get("atol")}
    details: dict[str, Any] = {}
    if values.get("detail"):
        try:
            detail = json.loads(values["detail"])
        except ValueError:
            detail = {}
        metrics.update(detail.pop("metrics", None) or {})
        tolerance.update(detail.pop("tolerance", None) or {})
        details.update(detail.pop("details", None) or {})
        found.update(detail)
    if any(v is not None for v in metrics.values()):
        found["metrics"] = metrics
    if tolerance["name"] is not None:
        found["tolerance"] = {k: v for k, v in tolerance.items() if v is not None}
    known = values.get("known_issue")
    if known is not None:
        found["known_issue"] = (known_issues or {}).get(known) or {"id": known}
    if values.get("peers"):
        details["peers"] = {
            p["op"]: {k: v for k, v in p.items() if k != "op" and v is not None} for p in values["peers"]
        }
    if details:
        found["details"] = details
    return {k: v for k, v in found.items() if v is not None and v != ""}


def write_parquet(table: Any, path: Path) -> None:
    """A table as one Parquet file, written atomically; every string column dictionary-encoded,
    with a dictionary large enough for a run's case JSON."""
    import pyarrow.parquet as pq

    with whole_or_none(path.with_name(f".{path.name}.tmp"), path) as temporary:
        pq.write_table(
            table,
            temporary,
            compression="zstd",
            dictionary_pagesize_limit=64 * 2**20,
            use_dictionary=[c for c in STRING_COLUMNS if c != "detail"],
        )
        temporary.replace(path)


def read_stream(path: Path) -> tuple[Any, int]:
    """Every complete record batch of an Arrow stream, and 1 if a torn batch (a killed writer) ended it."""
    import pyarrow as pa

    batches, torn = [], 0
    try:
        with pa.OSFile(str(path), "rb") as source:
            reader = pa.ipc.open_stream(source)
            while True:
                try:
                    batches.append(reader.read_next_batch())
                except StopIteration:
                    break
    except (pa.ArrowInvalid, OSError, ValueError):
        torn = 1
    return pa.Table.from_batches(batches, schema=table_schema()), torn


def files(run_dir: Path) -> list[Path]:
    """The run's example files: Parquet, and the streams of processes that did not close their store."""
    folder = run_dir / FOLDER
    if not folder.is_dir() or folder.is_symlink():
        return []
    return sorted(
        p
        for p in folder.iterdir()
        if p.suffix in (".parquet", ".arrows") and p.is_file() and not p.is_symlink() and not p.name.startswith(".")
    )


def read_table(run_dir: Path, columns: list[str] | None = None, where: Any = None) -> tuple[Any, int]:
    """The run's rows as one pyarrow Table (optionally only `columns`, and rows matching the pyarrow
    compute expression `where`), and how many files ended in a torn batch."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables, torn = [], 0
    for path in files(run_dir):
        if path.suffix == ".parquet":
            try:
                table = pq.read_table(path, columns=columns, filters=where)
            except (pa.ArrowInvalid, OSError) as exc:
                raise StoreError(f"{path}: not a readable Parquet file ({exc})") from None
        else:
            table, broken = read_stream(path)
            torn += broken
            if where is not None:
                table = table.filter(where)
            if columns is not None:
                table = table.select(columns)
        tables.append(table)
    if not tables:
        schema = table_schema()
        return schema.empty_table().select(columns) if columns is not None else schema.empty_table(), torn
    return pa.concat_tables(tables, promote_options="default"), torn


def records(run_dir: Path, where: Any = None, known_issues: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """The rows (those matching `where`) as outcome records, one at a time."""
    table, _ = read_table(run_dir, where=where)
    for batch in table.to_batches(max_chunksize=4096):
        for values in batch.to_pylist():
            yield record(values, known_issues)


class StoreError(ValueError):
    """A run folder whose store cannot be read: an older format, or a damaged file."""
