"""How long the HTML report takes to build and how big it is, for a run of N outcomes.

Writes a synthetic run (N passing outcome records plus F failures with 64x64 arrays, a known
issue and a skip), builds its report twice (cold, then again), and prints seconds and sizes.
Passing examples keep no pixels, so the size should follow F, not N.

    python benchmarks/report_scale.py -n 10000 -f 20
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from conformance.report.build import build_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from synthetic_runs import write_run


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=10_000, help="passing outcome records")
    parser.add_argument("-f", type=int, default=20, help="failures with arrays")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for n in (args.n // 10, args.n):
            run = write_run(Path(tmp) / f"run-{n}", outcomes=n, failures=args.f, side=64)
            timings = []
            for _ in range(2):
                start = time.perf_counter()
                build_report(run)
                timings.append(time.perf_counter() - start)
            report = folder_size(run / "report") + (run / "index.html").stat().st_size
            print(
                f"{n + args.f + 2:>7} outcomes ({args.f} failures): "
                f"build {timings[0]:.2f} s, again {timings[1]:.2f} s; "
                f"report {report / 1024:.0f} KiB (index.html {(run / 'index.html').stat().st_size / 1024:.0f} KiB), "
                f"outcome store {folder_size(run / 'outcomes') / 1024:.0f} KiB"
            )


if __name__ == "__main__":
    main()
