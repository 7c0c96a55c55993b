"""What changed between two torch builds: a baseline on each, then `compare`.

    python benchmarks/cross_build.py OLD_PYTHON NEW_PYTHON [-o OUT] [--] [PYTEST ARGS...]

OLD_PYTHON and NEW_PYTHON are the interpreters of two environments with the harness installed
(e.g. tox's `.tox/torch214/bin/python` and `.tox/torch215/bin/python`, see tox.ini).  Each makes a
baseline of the same fixed cases (the derandomised `baseline` profile) with timings; the new one is
then compared with the old one.  Exit status: `compare`'s (1 when something changed beyond
tolerance or slowed down).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old_python")
    parser.add_argument("new_python")
    parser.add_argument(
        "-o", "--output", type=Path, default=Path("reports") / f"cross-build-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    parser.add_argument("--slowdown", default="1.5")
    args, pytest_args = parser.parse_known_args()
    pytest_args = [a for a in pytest_args if a != "--"]
    if args.output.exists():
        parser.error(f"{args.output} exists")
    folders = {}
    for side, python in (("old", args.old_python), ("new", args.new_python)):
        folders[side] = args.output / side
        started = time.perf_counter()
        rc = subprocess.call([python, "-m", "conformance", "baseline", "-o", str(folders[side]), *pytest_args])
        print(f"{side} baseline ({python}): exit {rc} in {time.perf_counter() - started:.1f} s", flush=True)
        if rc != 0:
            return rc
    return subprocess.call(
        [
            args.new_python,
            "-m",
            "conformance",
            "compare",
            str(folders["old"]),
            str(folders["new"]),
            "--slowdown",
            args.slowdown,
            "--json",
            str(args.output / "compare.json"),
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
