"""What a run folder written before known issues had journal records of their own would weigh as this version
writes it, from the same draws: a copy of the folder with

- each process's journal as its writer writes it now: the ids of the entries it loaded once (`known_issues`), each
  entry whole once, before the first item it applies to (`known_issue`), no `known_issues_loaded` in item records;
- a known issue's arrays kept for its first case in each process only (the recorder's rule now; the same draws
  reach that case first, so it is the one kept), the other rows' `artifact` emptied;

then summary.json and the report rebuilt by this version.  A whole dev-profile run takes an hour on a busy
two-core machine; this measures its store in a minute.  `tests/test_plugin.py` checks the two rules on a real run.

    python benchmarks/slim_store.py reports/<run> /tmp/slim/<run>
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from conformance.store import examples
from conformance.store.reader import file_records, journal_files


def _line(record: dict) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"


def journal(source: Path, target: Path) -> None:
    """One process's journal with its known-issue entries in records of their own."""
    loaded: dict[str, dict] = {}
    named: set[str] = set()
    described: set[str] = set()
    with open(source, encoding="utf-8") as lines, open(target, "w", encoding="utf-8") as out:
        for (_, _, record), line in zip(file_records(source), lines, strict=True):
            if record is None or record.get("kind") != "item" or "known_issues_loaded" not in record:
                out.write(line)
                continue
            worker = record.get("worker", "")
            loaded.update(record.pop("known_issues_loaded") or {})
            new = [i for i in loaded if i not in named]
            if new:
                named.update(new)
                out.write(_line({"kind": "known_issues", "loaded": new, "worker": worker}))
            for issue in record.get("known_issues_applied") or []:
                if issue not in described and issue in loaded:
                    described.add(issue)
                    out.write(_line({"entry": loaded[issue], "kind": "known_issue", "worker": worker}))
            out.write(_line(record))


def first_arrays(run: Path, out: Path) -> None:
    """Each examples file with a known issue's arrays kept for its first case in the process only."""
    for path in examples.files(run):
        table = pq.read_table(path)
        details, known = table.column("detail").to_pylist(), table.column("known_issue").to_pylist()
        kept: dict[str, str] = {}  # issue -> the first artifact (artifact names count up in each process)
        for detail, issue in zip(details, known, strict=True):
            artifact = json.loads(detail).get("artifact") if detail and issue else None
            if artifact and (issue not in kept or artifact < kept[issue]):
                kept[issue] = artifact
        mended = []
        for detail, issue in zip(details, known, strict=True):
            found = json.loads(detail) if detail and issue else None
            if found and found.get("artifact") and found["artifact"] != kept[issue]:
                (out / found["artifact"]).unlink(missing_ok=True)
                found["artifact"] = None
                detail = json.dumps(found, sort_keys=True)
            mended.append(detail)
        index = table.schema.get_field_index("detail")
        examples.write_parquet(
            table.set_column(index, "detail", pa.array(mended, pa.string())), out / path.relative_to(run)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    if args.out.exists():
        raise SystemExit(f"{args.out} exists; choose a new folder")
    shutil.copytree(args.run, args.out, symlinks=True)
    for path in journal_files(args.run):
        journal(path, args.out / path.relative_to(args.run))
    first_arrays(args.run, args.out)
    for command in ("summary", "report"):
        subprocess.run([sys.executable, "-m", "conformance", command, str(args.out)], check=True, capture_output=True)


if __name__ == "__main__":
    main()
