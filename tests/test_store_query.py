"""The query docs/results.md documents, run with DuckDB on a real run's examples table: it finds
vision#8399 (CUDA's uint8 bicubic resize goes through float) on a virtual device, with replayable cases."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def documented_query() -> str:
    text = (REPO / "docs" / "results.md").read_text()
    return re.search(r'duckdb -c "(SELECT .*?)"\n```', text, re.S).group(1).replace('\\"', '"')


def test_the_documented_query_finds_cuda_and_cpu_differing_on_uint8_bicubic(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases/test_resize.py::test_resize",
            "-q",
            "-p",
            "no:cacheprovider",
            "--hypothesis-profile=ci",
            "--max-examples=30",
            "--targets=cpu,vcuda:0",
            "-k",
            "uint8 and bicubic",
            f"--reports-dir={tmp_path}",
            "--run-name=run",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-2000:]
    query = documented_query().replace("reports/latest", str(tmp_path / "run"))
    rows = duckdb.sql(query).fetchall()
    assert rows, "the query found no case"
    assert all(target == "vcuda:0" and mode.startswith("bicubic") and max_abs > 1 for target, mode, max_abs, _ in rows)
    assert rows == sorted(rows, key=lambda r: -r[2])
    case = json.loads(rows[0][3])
    assert case["op"] == "resize" and case["recipe"]["dtype"] == "uint8"  # ready for --replay
