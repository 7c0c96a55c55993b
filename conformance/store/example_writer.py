"""Writing the examples table (conformance.store.examples): one process's rows, appended to its Arrow stream
item by item, and turned into Parquet when the process closes its store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.store.example_columns import ITEM_COLUMNS, ROW_COLUMNS, ExampleRow, item_values
from conformance.store.examples import FOLDER, read_stream, table_schema, write_parquet


class ExamplesWriter:
    """One process's rows, buffered per item (its columns once, then an ExampleRow per row), appended to its Arrow
    stream when the item ends, converted to Parquet at close."""

    def __init__(self, run_dir: Path, worker: str) -> None:
        self.folder = run_dir / FOLDER
        self.worker = worker
        self.segments: list[tuple[tuple[Any, ...], int]] = []  # (item columns, rows of it)
        self.rows: list[ExampleRow] = []
        self._stream: Any = None
        self._sink: Any = None
        self.written = 0

    @property
    def stream_path(self) -> Path:
        return self.folder / f"{self.worker}.arrows"

    def begin_item(self, item: dict[str, Any]) -> None:
        """The item whose rows follow (its ITEM_COLUMNS, from its journal record)."""
        self.segments.append((item_values(item), 0))

    def add(self, row: ExampleRow) -> None:
        """One row of the running item."""
        self.rows.append(row)
        item, count = self.segments[-1]
        self.segments[-1] = (item, count + 1)

    def flush(self) -> None:
        """Append the buffered rows as one record batch."""
        segments, rows = [(item, count) for item, count in self.segments if count], self.rows
        self.segments = self.segments[-1:] and [(self.segments[-1][0], 0)]
        self.rows = []
        if not rows:
            return
        import pyarrow as pa

        schema = table_schema()
        if self._stream is None:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._sink = pa.OSFile(str(self.stream_path), "ab")
            self._stream = pa.ipc.new_stream(self._sink, schema)
        columns = [
            [value for item, count in segments for value in [item[i]] * count] for i in range(len(ITEM_COLUMNS))
        ] + [[getattr(row, name) for row in rows] for name in ROW_COLUMNS]
        self._stream.write_batch(
            pa.RecordBatch.from_arrays(
                [pa.array(column, type=field.type) for column, field in zip(columns, schema, strict=True)],
                schema=schema,
            )
        )
        self._sink.flush()
        self.written += len(rows)

    def close(self) -> None:
        """Flush, then turn this process's stream into `examples/<worker>.parquet`."""
        self.flush()
        if self._stream is None:
            return
        self._stream.close()
        self._sink.close()
        self._stream = self._sink = None
        table, _ = read_stream(self.stream_path)
        write_parquet(table, self.folder / f"{self.worker}.parquet")
        self.stream_path.unlink()
