"""`python -m conformance`: run the suite, or rebuild a run's summary from its store.

    python -m conformance run [PYTEST ARGS...]     the suite in ./cases on every visible target
    python -m conformance summary reports/<run>    summary.json + table from the outcome files
    python -m conformance report reports/<run>     (re)build reports/<run>/index.html
    python -m conformance merge RUN... -o OUT      combine runs from several machines into one report
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


def _report(run_dir: Path) -> int:
    from conformance.report import build_report

    if not (run_dir / "outcomes").is_dir():
        print(f"conformance report: {run_dir} has no outcomes/ folder (not a run folder)", file=sys.stderr)
        return USAGE_ERROR
    print(f"report: {build_report(run_dir)}")
    return 0


def _merge(run_dirs: list[Path], out: Path, labels: list[str] | None) -> int:
    from conformance.report.merge import MergeError, merge_runs

    try:
        index = merge_runs(run_dirs, out, labels)
    except MergeError as exc:
        print(f"conformance merge: {exc}", file=sys.stderr)
        return USAGE_ERROR
    print(f"report: {index}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(prog="python -m conformance", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("run", help="run the suite with pytest (extra arguments go to pytest)", add_help=False)
    summary = commands.add_parser("summary", help="rebuild summary.json and print the table")
    summary.add_argument("run_dir", type=Path)
    report = commands.add_parser("report", help="(re)build index.html of a run from its outcome files")
    report.add_argument("run_dir", type=Path)
    merge = commands.add_parser("merge", help="combine runs (e.g. from several machines) into one report")
    merge.add_argument("run_dirs", type=Path, nargs="+")
    merge.add_argument("-o", "--output", type=Path, required=True, help="folder of the merged run (must not exist)")
    merge.add_argument("--label", action="append", default=None,
                       help="column label per run, in order (default: the machine name recorded by each run)")
    if argv[:1] == ["run"]:
        return _run(argv[1:])
    args = parser.parse_args(argv)
    if args.command == "report":
        return _report(args.run_dir)
    if args.command == "merge":
        return _merge(args.run_dirs, args.output, args.label)
    return _summary(args.run_dir)


if __name__ == "__main__":
    sys.exit(main())
