"""The shipped suite gives the same summary with and without pytest-xdist."""

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.store.summary_reader import read_summary

REPO = Path(__file__).resolve().parents[1]


def run_suite(tmp_path: Path, name: str, *extra: str) -> tuple[int, dict]:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "cases",
        "-q",
        "-p",
        "no:cacheprovider",
        "--hypothesis-profile=ci",
        "--max-examples=8",
        "--targets=cpu",
        "-k",
        "uint8 and bilinear",
        "--reports-dir",
        str(tmp_path),
        "--run-name",
        name,
        *extra,
    ]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    summary_path = tmp_path / name / "summary.json"
    assert summary_path.is_file(), done.stdout + done.stderr
    return done.returncode, read_summary(tmp_path / name)


def without_peer_psnr(groups: list[dict]) -> list[dict]:
    """The rows without the cross-library PSNRs: -n 0 gives torch every core, each worker its share, and
    torch's cpu bilinear interpolation rounds differently with the thread count (docs/findings.md), which
    a PSNR between two libraries shows in its last digits; verdicts, counts and largest differences match."""
    return [
        {**row, "peers": {name: {k: v for k, v in peer.items() if k != "psnr"} for name, peer in row["peers"].items()}}
        if "peers" in row
        else row
        for row in groups
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="xdist start-up on Windows is out of scope here")
def test_two_workers_give_the_same_summary_as_one(tmp_path):
    serial_code, serial = run_suite(tmp_path, "serial", "-n", "0")
    parallel_code, parallel = run_suite(tmp_path, "parallel", "-n", "2")
    assert serial_code == parallel_code
    assert serial["groups"] and without_peer_psnr(serial["groups"]) == without_peer_psnr(parallel["groups"])
    assert serial["totals"] == parallel["totals"]
    # each worker's records, and the ops it collected (for the controller's known-issue check)
    written = sorted(p.name for p in (tmp_path / "parallel" / "outcomes").iterdir())
    assert written == ["gw0.defined.json", "gw0.jsonl", "gw1.defined.json", "gw1.jsonl"]
    assert sorted(p.name for p in (tmp_path / "parallel" / "examples").iterdir()) == ["gw0.parquet", "gw1.parquet"]
