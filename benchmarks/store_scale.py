"""Wall time and peak memory of `summary` and `report` on a large result store.

A thorough profile writes many times the records of a ci run; `summary` and `report` must
stream them.  This script synthesises such a store from a real run: every line of the run's
outcome files is replicated (case ids kept unique per file, some copies renamed as other ops so
the number of groups grows too), spread over four worker files as `-n 4` writes them; then it
times each command in a child process and reads the child's peak RSS from wait4().

    CI=1 python -m conformance run -p no:cacheprovider --reports-dir /tmp/store-ci --run-name ci -k normalize
    python benchmarks/store_scale.py build /tmp/store-ci/ci /tmp/store-5x --lines 1500000 --variants 6
    python benchmarks/store_scale.py measure /tmp/store-5x [--pythonpath OLD_CHECKOUT]
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

WORKERS = 4


def _renamed(record: dict[str, Any], variant: int) -> dict[str, Any]:
    """The record as if it came from another op (variant > 0): more groups, as a full suite has."""
    if variant == 0 or "test" not in record:
        return record
    suffix = f"_s{variant}"
    out = dict(record)
    out["test"] = record["test"] + suffix
    out["op"] = str(record.get("op", "")) + suffix
    if "nodeid" in record:
        out["nodeid"] = record["nodeid"].replace(f"::{record['test']}[", f"::{out['test']}[")
    return out


def build(source: Path, out: Path, lines: int, variants: int) -> None:
    """Replicate `source`'s records into `out` until it holds about `lines` lines."""
    parsed = []
    for path in sorted((source / "outcomes").glob("*.jsonl")):
        for text in path.read_text(encoding="utf-8").splitlines():
            try:
                parsed.append(json.loads(text))
            except json.JSONDecodeError:
                continue
    copies = max(1, lines // max(1, len(parsed)))
    shutil.rmtree(out, ignore_errors=True)
    (out / "outcomes").mkdir(parents=True)
    for folder in ("environment", "artifacts"):
        if (source / folder).is_dir():
            shutil.copytree(source / folder, out / folder)
    streams = [open(out / "outcomes" / f"gw{w}.jsonl", "w", encoding="utf-8") for w in range(WORKERS)]
    span = 1 + max((r.get("id", 0) for r in parsed if r.get("kind") == "case"), default=0)
    written = 0
    for copy in range(copies):
        stream, offset = streams[copy % WORKERS], (copy // WORKERS) * span
        variant_records = [_renamed(r, copy % variants) for r in parsed]
        for record in variant_records:
            if record.get("kind") == "case":
                case = json.dumps(record["case"], sort_keys=True, separators=(",", ":"))
                stream.write(f'{{"id": {record["id"] + offset}, "kind": "case","case":{case}}}\n')
            elif "case_id" in record:
                stream.write(json.dumps(record | {"case_id": record["case_id"] + offset}, sort_keys=True) + "\n")
            else:
                stream.write(json.dumps(record, sort_keys=True) + "\n")
            written += 1
    for stream in streams:
        stream.close()
    (out / "summary.json").write_text(json.dumps({"complete": True}))
    size = sum(p.stat().st_size for p in (out / "outcomes").iterdir())
    print(f"{out}: {written} lines ({copies} copies of {len(parsed)}, {variants} op variants), "
          f"{size / 2**20:.0f} MiB of outcome files")


def measure(run: Path, pythonpath: str | None) -> None:
    """Each command in a child process: wall seconds and the child's own peak RSS (wait4)."""
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    for command in ("summary", "report"):
        start = time.perf_counter()
        child = subprocess.Popen([sys.executable, "-m", "conformance", command, str(run)], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        error = child.stderr.read().decode()[-500:] if child.stderr else ""
        print(f"{command}: {seconds:.1f} s wall, peak RSS {usage.ru_maxrss / 1024:.0f} MiB, "
              f"exit {os.waitstatus_to_exitcode(status)} {error}".rstrip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    made = commands.add_parser("build", help="synthesise a large store from a real run")
    made.add_argument("source", type=Path)
    made.add_argument("out", type=Path)
    made.add_argument("--lines", type=int, default=1_500_000)
    made.add_argument("--variants", type=int, default=6, help="op names the copies are spread over")
    timed = commands.add_parser("measure", help="time `summary` and `report` on a store")
    timed.add_argument("run", type=Path)
    timed.add_argument("--pythonpath", default=None, help="import conformance from here (an older checkout)")
    args = parser.parse_args()
    if args.command == "build":
        build(args.source, args.out, args.lines, args.variants)
    else:
        measure(args.run, args.pythonpath)


if __name__ == "__main__":
    main()
