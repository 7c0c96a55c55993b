"""Does the timing gate flag a planted 2x slowdown of one op, and nothing else, on this machine?

    python benchmarks/timing_gate.py [--runs 3] [--op normalize_v2]

Each run times a set of ops twice (the second time with OP called twice per call, a 2x
slowdown), compares the two with `compare`'s rule (ratio to the calibration op grown by more
than 1.5x) and reports what was flagged.  A run passes when exactly OP's timings are flagged.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conformance.store import timings as timing

OPS = "normalize_v2,normalize_v2_module,normalize_v1,normalize_kornia,to_dtype_v2,resize"
SHAPES = "1x3x16x16,1x3x224x224,1x3x1080x1920"


def time_ops(out: Path, slow: str | None) -> list[timing.Timing]:
    args = [
        sys.executable,
        "-m",
        "conformance",
        "timing",
        "-o",
        str(out),
        "--ops",
        OPS,
        "--shapes",
        SHAPES,
        "--no-isa",
    ] + ([f"--planted-slowdown={slow}"] if slow else [])
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return timing.read(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--op", default="normalize_v2")
    args = parser.parse_args()
    passed = 0
    with tempfile.TemporaryDirectory() as folder:
        for run in range(1, args.runs + 1):
            started = time.perf_counter()
            before = time_ops(Path(folder) / f"before-{run}.json", None)
            after = time_ops(Path(folder) / f"after-{run}.json", args.op)
            flagged, pairs = timing.compare(before, after)
            wrong = [s for s in flagged if s.after.op != args.op]
            missed = [p for p in pairs if p.after.op == args.op and p not in flagged]
            others = sorted((p.factor for p in pairs if p.after.op != args.op), reverse=True)
            planted = sorted(p.factor for p in pairs if p.after.op == args.op)
            ok = not wrong and not missed
            passed += ok
            print(
                f"run {run}: {'pass' if ok else 'FAIL'} in {time.perf_counter() - started:.0f} s; "
                f"{len(pairs)} timings; "
                f"planted op factors {min(planted):.2f}-{max(planted):.2f}; other ops' largest factors "
                f"{', '.join(f'{f:.2f}' for f in others[:3])}"
            )
            for slow in wrong:
                print(f"  false alarm: {slow.describe()}")
            if not wrong:
                closest = max((p for p in pairs if p.after.op != args.op), key=lambda p: p.factor)
                print(f"  closest other: {closest.describe()}")
            for pair in missed:
                print(f"  missed: {pair.describe()}")
    print(f"{passed} of {args.runs} runs flagged exactly {args.op}")
    return 0 if passed == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
