"""What a failure costs with and without a known-issues entry, against a correct op.

Runs pytest (ci profile, cpu) in a scratch folder on three one-op case modules built from the
harness tests' planted ops: a correct resize, a resize shifted by one column with a known-issues
entry for it, and the same shifted resize without one.  Prints each session's time and how many
checked examples were counted and how many were shrinking steps.

    python benchmarks/known_failure_cost.py --max-examples 100
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from conformance.store.summary_reader import read_summary

ROOT = Path(__file__).resolve().parents[1]
ENTRY = '[[issue]]\nid = "shift"\nop = "shifted"\nlink = "https://example.org/shift"\nreason = "planted"\n'


def session(folder: Path, op: str, call: str, known: bool, examples: int) -> tuple[float, int, int]:
    (folder / "test_cases.py").write_text(f"from planted_ops import *\ntest_{op} = make_spec({op!r}, {call}).test()\n")
    issues = folder / "known_issues.toml"
    issues.write_text(ENTRY if known else "")
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--hypothesis-profile=ci",
            "--targets=cpu",
            f"--max-examples={examples}",
            f"--run-name={op}-{known}",
            "test_cases.py",
        ],
        cwd=folder,
        capture_output=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    groups = read_summary(folder / "reports" / f"{op}-{known}")["groups"]
    placement = [g for g in groups if g["check"] == "placement"]
    return seconds, sum(g["examples"] for g in placement), sum(g.get("shrunk", 0) for g in placement)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        shutil.copy(ROOT / "tests" / "planted_ops.py", folder)
        runs = {
            "correct op": session(folder, "good", "good_resize", False, args.max_examples),
            "failing op, known issue": session(folder, "shifted", "shifted_resize", True, args.max_examples),
            "failing op, no entry": session(folder, "shifted", "shifted_resize", False, args.max_examples),
        }
    base = runs["correct op"][0]
    for name, (seconds, counted, shrinking) in runs.items():
        print(
            f"{name:26s} {seconds:6.1f} s ({seconds / base:.2f}x)  {counted:4d} examples checked, "
            f"{shrinking:4d} shrinking steps"
        )


if __name__ == "__main__":
    main()
