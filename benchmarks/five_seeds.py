"""Is the first run on a fresh machine green?  The README's suite command in the dev profile
(random draws), once per seed, each with an empty hypothesis database, reporting every failure.

A gate that fails on some seeds cries wolf; this shows what a user's first few runs would see.

    python benchmarks/five_seeds.py                 # seeds 1..5, the whole suite
    python benchmarks/five_seeds.py --seeds 11 12 -- -k jpeg
    python benchmarks/five_seeds.py --keep /tmp/seeds    # keep the run folders (benchmarks/case_fractions.py)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--keep", type=Path, default=None, help="write the run folders here and keep them")
    parser.add_argument("pytest_args", nargs="*", help="after --: extra pytest arguments")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "CI"}  # CI would select the derandomised ci profile
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        scratch = str(args.keep) if args.keep else temporary
        for seed in args.seeds:
            run = Path(scratch) / f"seed-{seed}"
            start = time.perf_counter()
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "conformance",
                    "run",
                    "-p",
                    "no:cacheprovider",
                    "-q",
                    "-rf",
                    "--hypothesis-profile=dev",
                    f"--hypothesis-seed={seed}",
                    f"--run-name=seed-{seed}",
                    *args.pytest_args,
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
                env=env | {"HYPOTHESIS_STORAGE_DIRECTORY": str(run / "hypothesis"), "CONFORMANCE_REPORTS": scratch},
            )
            seconds = time.perf_counter() - start
            failed = [line for line in done.stdout.splitlines() if line.startswith("FAILED ")]
            summary = run / "summary.json"
            totals = json.loads(summary.read_text())["totals"] if summary.is_file() else {}
            last = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-300:]
            rows.append((seed, done.returncode, seconds, last, failed, totals))
            print(f"seed {seed}: exit {done.returncode} in {seconds:.0f} s: {last}", flush=True)
            for line in failed:  # pytest's short summary: the test id and the start of its message
                print(f"  {line[:400]}", flush=True)
    green = sum(1 for row in rows if row[1] == 0)
    print(f"{green} of {len(rows)} dev-profile runs green")
    return 0 if green == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
