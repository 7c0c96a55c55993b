"""`python -m conformance`: run the suite, or rebuild a run's summary from its store.

    python -m conformance run [PYTEST ARGS...]     the suite in ./cases on every visible target
    python -m conformance summary reports/<run>    summary.json + table from the outcome files
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from conformance.results import format_table, write_summary

USAGE_ERROR = 4  # pytest's exit code for usage errors, so scripts can treat both alike


def _run(pytest_args: list[str]) -> int:
    # A child process: pytest must import (and assert-rewrite) the plugin itself.
    if not any(not a.startswith("-") and Path(a.split("::")[0]).exists() for a in pytest_args):
        if not Path("cases").is_dir():
            print("conformance run: no ./cases folder here; pass the path of your case modules", file=sys.stderr)
            return USAGE_ERROR
        pytest_args = ["cases", *pytest_args]
    return subprocess.call([sys.executable, "-m", "pytest", *pytest_args])


def _summary(run_dir: Path) -> int:
    if not (run_dir / "outcomes").is_dir():
        print(f"conformance summary: {run_dir} has no outcomes/ folder (not a run folder)", file=sys.stderr)
        return USAGE_ERROR
    previous = run_dir / "summary.json"
    complete = previous.is_file() and json.loads(previous.read_text()).get("complete", False)
    summary = write_summary(run_dir, complete=complete)
    for line in format_table(summary):
        print(line)
    if not complete:
        print("note: the run did not finish (no complete summary); this shows what was recorded")
    print(f"results: {previous}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m conformance", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("run", help="run the suite with pytest (extra arguments go to pytest)", add_help=False)
    summary = commands.add_parser("summary", help="rebuild summary.json and print the table")
    summary.add_argument("run_dir", type=Path)
    if argv[:1] == ["run"]:
        return _run(argv[1:])
    args = parser.parse_args(argv)
    return _summary(args.run_dir)


if __name__ == "__main__":
    sys.exit(main())
