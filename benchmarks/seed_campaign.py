"""Is a first run green whatever it draws?  The README's suite command in a random profile, once per seed, each with
an empty hypothesis database, every failure listed: a gate that fails on some seeds cries wolf.

What CI or a nightly job runs to keep the dev profile honest (docs/ci.md): a seed list (`--seeds 1-20`) or the deeper
`thorough` profile.  Each seed's exit, time and item counts go to `--json`; the run folders, kept with `--keep`, are
what `benchmarks/envelopes.py` (known-issue envelopes: how much of each bound the seeds used) and
`benchmarks/case_fractions.py` read.

    python benchmarks/seed_campaign.py                                # seeds 1..20, the whole suite
    python benchmarks/seed_campaign.py --seeds 11 12 -- -k jpeg       # extra pytest arguments after --
    python benchmarks/seed_campaign.py --seeds 1-20 --keep /tmp/seeds --json docs/calibration/seeds.json
    python benchmarks/seed_campaign.py --profile thorough --seeds 1   # a nightly's deep run
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
from typing import Any

from conformance.store.examples import StoreError
from conformance.store.summary_reader import read_summary

ROOT = Path(__file__).resolve().parents[1]


def seed_list(words: list[str]) -> list[int]:
    """Seeds as given: numbers and ranges (`1-20`)."""
    seeds: list[int] = []
    for word in words:
        low, _, high = word.partition("-")
        seeds += list(range(int(low), int(high) + 1)) if high else [int(low)]
    return seeds


def run_seed(seed: int, profile: str, scratch: Path, pytest_args: list[str]) -> dict[str, Any]:
    """One run of the suite command with this seed; what it printed and counted."""
    run = scratch / f"seed-{seed}"
    env = {k: v for k, v in os.environ.items() if k != "CI"}  # CI would select the derandomised ci profile
    env |= {"HYPOTHESIS_STORAGE_DIRECTORY": str(run / "hypothesis"), "CONFORMANCE_REPORTS": str(scratch)}
    command = ["-p", "no:cacheprovider", "-q", "-rf", f"--hypothesis-profile={profile}", f"--hypothesis-seed={seed}"]
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "run", *command, f"--run-name=seed-{seed}", *pytest_args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    seconds = time.perf_counter() - start
    try:
        summary = read_summary(run) if run.is_dir() else None
    except StoreError as exc:  # a run that died writing it: the seed's row says so
        summary = {"totals": {"unreadable summary": str(exc)}}
    totals = summary["totals"] if summary is not None else {}
    lines = done.stdout.strip().splitlines()
    return {
        "seed": seed,
        "profile": profile,
        "exit": done.returncode,
        "seconds": round(seconds, 1),
        "last_line": lines[-1] if lines else done.stderr[-300:],
        "failed": [line[:400] for line in lines if line.startswith("FAILED ")],  # pytest's short summary
        "totals": totals,
        "run": str(run),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", nargs="+", default=["1-20"], help="seeds and ranges (default 1-20)")
    parser.add_argument("--profile", default="dev", help="a random hypothesis profile: dev (default) or thorough")
    parser.add_argument("--keep", type=Path, default=None, help="write the run folders here and keep them")
    parser.add_argument("--json", type=Path, default=None, help="write each seed's result here (JSON)")
    parser.add_argument("pytest_args", nargs="*", help="after --: extra pytest arguments")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as temporary:
        scratch = (args.keep or Path(temporary)).resolve()
        scratch.mkdir(parents=True, exist_ok=True)
        for seed in seed_list(args.seeds):
            row = run_seed(seed, args.profile, scratch, args.pytest_args)
            rows.append(row)
            print(f"seed {seed}: exit {row['exit']} in {row['seconds']:.0f} s: {row['last_line']}", flush=True)
            for line in row["failed"]:
                print(f"  {line}", flush=True)
            if args.json is not None:  # after each seed: a campaign stopped half-way keeps what it measured
                args.json.write_text(json.dumps({"pytest_args": args.pytest_args, "seeds": rows}, indent=1) + "\n")
    green = sum(1 for row in rows if row["exit"] == 0)
    print(f"{green} of {len(rows)} {args.profile}-profile runs green")
    return 0 if green == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
