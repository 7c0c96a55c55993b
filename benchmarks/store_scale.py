"""Wall time and peak memory of `summary` and `report` on a large result store.

A thorough profile checks many times the examples of a ci run; `summary` and `report` must not grow
with them.  This script synthesises such a store from a real run: its journal records and its examples
table are replicated (some copies renamed as other ops, so the number of groups grows too), spread
over four worker files as `-n 4` writes them; then it times each command in a child process and reads
the child's peak RSS from wait4().

    CI=1 python -m conformance run -p no:cacheprovider --reports-dir /tmp/store-ci --run-name ci
    python benchmarks/store_scale.py build /tmp/store-ci/ci /tmp/store-5x --copies 5 --variants 6
    python benchmarks/store_scale.py measure /tmp/store-5x
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from conformance.store import examples

WORKERS = 4


def _renamed(record: dict[str, Any], suffix: str) -> dict[str, Any]:
    """The record as if it came from another op: more groups, as a larger suite has."""
    if not suffix or "test" not in record:
        return record
    out = dict(record)
    out["test"] = record["test"] + suffix
    out["op"] = str(record.get("op", "")) + suffix
    if "nodeid" in record:
        out["nodeid"] = record["nodeid"].replace(f"::{record['test']}[", f"::{out['test']}[")
    return out


def build(source: Path, out: Path, copies: int, variants: int) -> None:
    """`copies` copies of `source`'s journal and examples in `out`, renamed over `variants` op names."""
    parsed = []
    for path in sorted((source / "outcomes").glob("*.jsonl")):
        for text in path.read_text(encoding="utf-8").splitlines():
            try:
                parsed.append(json.loads(text))
            except json.JSONDecodeError:
                continue
    table, _ = examples.read_table(source)
    shutil.rmtree(out, ignore_errors=True)
    (out / "outcomes").mkdir(parents=True)
    (out / examples.FOLDER).mkdir()
    for folder in ("environment", "artifacts"):
        if (source / folder).is_dir():
            shutil.copytree(source / folder, out / folder)
    parts: dict[int, list[Any]] = {w: [] for w in range(WORKERS)}
    lines = 0
    for copy in range(copies):
        worker, suffix = copy % WORKERS, f"_s{copy % variants}" if copy % variants else ""
        with open(out / "outcomes" / f"gw{worker}.jsonl", "a", encoding="utf-8") as stream:
            for record in parsed:
                stream.write(json.dumps(_renamed(record, suffix), sort_keys=True) + "\n")
                lines += 1
        renamed = table
        if suffix:
            for column in ("test", "op"):
                renamed = renamed.set_column(
                    renamed.schema.get_field_index(column),
                    column,
                    pc.binary_join_element_wise(renamed.column(column), suffix, ""),
                )
        parts[worker].append(renamed)
    for worker, tables in parts.items():
        if tables:
            examples.write_parquet(pa.concat_tables(tables), out / examples.FOLDER / f"gw{worker}.parquet")
    (out / "summary.json").write_text(json.dumps({"complete": True}))
    size = sum(p.stat().st_size for folder in ("outcomes", examples.FOLDER) for p in (out / folder).iterdir())
    print(
        f"{out}: {lines} journal lines and {copies * table.num_rows} example rows ({copies} copies, {variants} op "
        f"variants), {size / 2**20:.0f} MiB of journal and examples"
    )


def measure(run: Path, pythonpath: str | None) -> None:
    """Each command in a child process: wall seconds and the child's own peak RSS (wait4)."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    for command in ("summary", "report"):
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "conformance", command, str(run)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        error = child.stderr.read().decode()[-500:] if child.stderr else ""
        print(
            f"{command}: {seconds:.1f} s wall, peak RSS {usage.ru_maxrss / 1024:.0f} MiB, "
            f"exit {os.waitstatus_to_exitcode(status)} {error}".rstrip()
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    made = commands.add_parser("build", help="synthesise a large store from a real run")
    made.add_argument("source", type=Path)
    made.add_argument("out", type=Path)
    made.add_argument("--copies", type=int, default=5)
    made.add_argument("--variants", type=int, default=6, help="op names the copies are spread over")
    timed = commands.add_parser("measure", help="time `summary` and `report` on a store")
    timed.add_argument("run", type=Path)
    timed.add_argument("--pythonpath", default=None, help="import conformance from here (an older checkout)")
    args = parser.parse_args()
    if args.command == "build":
        build(args.source, args.out, args.copies, args.variants)
    else:
        measure(args.run, args.pythonpath)


if __name__ == "__main__":
    main()
