"""`python -m conformance`: run the suite, or rebuild a run's summary from its store.

python -m conformance run [PYTEST ARGS...]     the suite in ./cases on every visible target
python -m conformance summary reports/<run>    summary.json + table from the outcome files
python -m conformance report reports/<run>     (re)build reports/<run>/index.html
python -m conformance merge RUN... -o OUT      combine runs from several machines (or a run's shards) into one report
python -m conformance prune REPORTS --keep N   delete old run folders (--older-than DAYS, --dry-run)
python -m conformance baseline -o DIR [PYTEST ARGS...]   record outputs and timings of this build
python -m conformance compare BASELINE OTHER   what changed between two builds (outputs, timings)
python -m conformance timing -o FILE           time each op per target and input size
python -m conformance repro ITEM [--run DIR]   a script that reproduces a failure with torch and the library alone
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import NoReturn

from conformance import launch
from conformance.report.build import build_report
from conformance.report.merge import merge_runs, shard_notes
from conformance.report.merge_columns import MergeError
from conformance.report.table import format_table
from conformance.store.aggregate import write_summary
from conformance.store.examples import StoreError
from conformance.store.prune import PruneError, prune
from conformance.store.reader import was_complete
from conformance.store.summary_model import Summary
from conformance.store.summary_reader import load_summary
from conformance.store.timings import DEFAULT_THRESHOLD, SHAPES
from conformance.suite.stock import stock_cases

USAGE_ERROR = 4  # pytest's exit code for usage errors, so scripts can treat both alike


def _summary(run_dir: Path) -> int:
    if not (run_dir / "outcomes").is_dir():
        print(f"conformance summary: {run_dir} has no outcomes/ folder (not a run folder)", file=sys.stderr)
        return USAGE_ERROR
    previous = run_dir / "summary.json"
    complete = was_complete(run_dir)
    try:
        summary = write_summary(run_dir, complete=complete)
    except StoreError as exc:
        print(f"conformance summary: {exc}", file=sys.stderr)
        return USAGE_ERROR
    for line in format_table(Summary.from_json(summary), full=True):
        print(line)
    if not complete:
        print("note: the run did not finish (no complete summary); this shows what was recorded")
    print(f"results: {previous}")
    return 0


def _report(run_dir: Path) -> int:
    if not (run_dir / "outcomes").is_dir():
        print(f"conformance report: {run_dir} has no outcomes/ folder (not a run folder)", file=sys.stderr)
        return USAGE_ERROR
    try:
        written = load_summary(run_dir)  # read once, here: build_report writes one where the run has none
        index = build_report(run_dir, summary=written)
        if written is None:  # the report shows the summary the run wrote: one made now is said to be new
            print(f"summary: {run_dir / 'summary.json'} (the run had none: written from its records)")
        print(f"report: {index}")
    except StoreError as exc:
        print(f"conformance report: {exc}", file=sys.stderr)
        return USAGE_ERROR
    return 0


def _merge(run_dirs: list[Path], out: Path, labels: list[str] | None, allow_missing: bool) -> int:
    try:
        index = merge_runs(run_dirs, out, labels, allow_missing_shards=allow_missing)
    except (MergeError, StoreError) as exc:
        print(f"conformance merge: {exc}", file=sys.stderr)
        return USAGE_ERROR
    for line in shard_notes(out):
        print(line)
    print(f"report: {index}")
    return 0


def _prune(reports: Path, keep: int | None, older_than: float | None, dry_run: bool) -> int:
    try:
        pruned = prune(reports, keep=keep, older_than_days=older_than, dry_run=dry_run)
    except PruneError as exc:
        print(f"conformance prune: {exc}", file=sys.stderr)
        return USAGE_ERROR
    for run in pruned.removed:
        print(f"{'would remove' if dry_run else 'removed'}: {run}")
    for why in pruned.ignored:
        print(f"left alone: {why}")
    print(f"{len(pruned.removed)} run(s) {'would be ' if dry_run else ''}removed, {len(pruned.kept)} kept")
    return 0


def _repro(args: argparse.Namespace) -> int:
    # imported here, as `baseline` is: the script writer imports torch and the libraries, which other commands skip
    from conformance.report.repro import ReproError
    from conformance.report.repro_script import make_repro

    try:
        script, failure = make_repro(args.item, args.run, args.output, args.target, args.mode, args.cases)
    except ReproError as exc:
        print(f"conformance repro: {exc}", file=sys.stderr)
        return USAGE_ERROR
    print(f"repro: {script} (its input and expected output: {script.with_suffix('.npz').name} beside it)")
    print(f"run it with: python {script} [DEVICE]   (needs torch, numpy and the library; not conformance)")
    if not failure.failed and failure.target == "cpu":
        print(f"note: the case passes on the cpu here ({failure.check} check); the script exits 0 on this machine")
    return 0


class UsageErrors(argparse.ArgumentParser):
    """argparse, but a usage error exits 4 like pytest's (2 means "interrupted" to a CI gate)."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:  # everything after it is pytest's
        return launch.run(argv[1:])
    parser = UsageErrors(prog="python -m conformance", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("run", help="run the suite with pytest (extra arguments go to pytest)", add_help=False)
    summary = commands.add_parser("summary", help="rebuild summary.json and print the table")
    summary.add_argument("run_dir", type=Path)
    report = commands.add_parser("report", help="(re)build index.html of a run from its outcome files")
    report.add_argument("run_dir", type=Path)
    merge = commands.add_parser(
        "merge", help="combine runs (from several machines, or the shards of one run) into one report"
    )
    merge.add_argument("run_dirs", type=Path, nargs="+")
    merge.add_argument("-o", "--output", type=Path, required=True, help="folder of the merged run (must not exist)")
    merge.add_argument(
        "--label",
        action="append",
        default=None,
        help="column label per run, in order (default: the machine name recorded by each run; a sharded run's "
        "column takes its first folder's)",
    )
    merge.add_argument(
        "--allow-missing-shards",
        action="store_true",
        help="merge a sharded run with shards missing (else an error); its summary is marked incomplete",
    )
    prune = commands.add_parser("prune", help="delete old run folders (never `latest`, never through a link)")
    prune.add_argument("reports_dir", type=Path)
    prune.add_argument("--keep", type=int, default=None, metavar="N", help="keep the N newest runs")
    prune.add_argument(
        "--older-than",
        type=float,
        default=None,
        metavar="DAYS",
        help="remove runs that finished more than DAYS ago (with --keep: only beyond the N newest)",
    )
    prune.add_argument("--dry-run", action="store_true", help="print what would be removed; remove nothing")
    repro = commands.add_parser(
        "repro", help="write a script that reproduces a failure with torch, numpy and the library (not conformance)"
    )
    repro.add_argument("item", help="a failing item's id (as pytest prints it), or a case JSON (a .json file or text)")
    repro.add_argument("--run", type=Path, default=Path("reports/latest"), help="its run (default reports/latest)")
    repro.add_argument("-o", "--output", type=Path, default=None, help="a .py file, or a folder (./repro_<item>.py)")
    repro.add_argument("--target", default="cpu", help="for a case JSON: the target the script runs (default cpu)")
    repro.add_argument("--mode", default=None, help="for a case JSON: the op's mode (default 'default' or its first)")
    repro.add_argument("--cases", type=Path, default=Path("cases"), help="for a case JSON: its case modules (./cases)")

    baseline = commands.add_parser(
        "baseline",
        help="record this build's outputs (fixed cases) and timings into a folder; other arguments go to pytest",
    )
    baseline.add_argument(
        "-o", "--output", type=Path, required=True, help="baseline folder (must not exist or be empty)"
    )
    baseline.add_argument("--no-timing", action="store_true", help="outputs only")
    compare = commands.add_parser(
        "compare",
        help="compare a baseline with another baseline or a run made with "
        "--baseline; exit 1 on a change beyond tolerance or a slowdown",
    )
    compare.add_argument("baseline", type=Path)
    compare.add_argument("other", type=Path)
    compare.add_argument(
        "--slowdown",
        type=float,
        default=DEFAULT_THRESHOLD,
        metavar="FACTOR",
        help=f"flag ops slower than FACTOR x the baseline, against the calibration op (default {DEFAULT_THRESHOLD})",
    )
    compare.add_argument("--json", type=Path, default=None, metavar="FILE", help="write every change to FILE")
    timed = commands.add_parser("timing", help="time each op per target and input size (written as JSON)")
    timed.add_argument("-o", "--output", type=Path, required=True, help="timings file to write")
    timed.add_argument("--cases", type=Path, default=stock_cases(), help="case modules (default: the stock suite)")
    timed.add_argument("--planted-slowdown", default=None, metavar="OP", help=argparse.SUPPRESS)
    timed.add_argument("--as-target", default=None, help=argparse.SUPPRESS)  # an ISA level's child process
    timed.add_argument("--no-isa", action="store_true", help="do not time the cpu's lower instruction-set levels")
    for sub in (baseline, timed):
        sub.add_argument(
            "--shapes", default=",".join(SHAPES), help=f"input shapes to time, comma list of {', '.join(SHAPES)}"
        )
        sub.add_argument("--ops", default=None, help="only these ops (comma list of op names)")
        sub.add_argument("--rounds", type=int, default=9, help="timed blocks per op and calibration (median)")
    if argv[:1] == ["baseline"]:
        args, rest = parser.parse_known_args(argv)
    else:
        args, rest = parser.parse_args(argv), []
    if args.command in ("baseline", "timing"):
        shapes = [s for s in args.shapes.split(",") if s]
        unknown = [s for s in shapes if s not in SHAPES]
        if unknown or not shapes or args.rounds < 1:
            parser.error(
                f"--shapes: unknown {unknown or 'empty list'} (known: {', '.join(SHAPES)})"
                if unknown or not shapes
                else "--rounds must be at least 1"
            )
        ops = [o for o in args.ops.split(",") if o] if args.ops else None
    # baseline, timing and compare import torch (conformance.builds): not imported for the other commands,
    # so that `run` starts pytest at once
    if args.command == "baseline":
        from conformance.builds import make_baseline

        return make_baseline(args.output, rest, timings=not args.no_timing, shapes=shapes, ops=ops, rounds=args.rounds)
    if args.command == "timing":
        from conformance.builds import measure_timings

        if args.cases is None or not args.cases.exists():
            print(f"conformance timing: no such case folder or file {str(args.cases)!r}", file=sys.stderr)
            return USAGE_ERROR
        return measure_timings(
            args.output,
            [args.cases],
            shapes=shapes,
            ops=ops,
            rounds=args.rounds,
            environment={},
            slow=args.planted_slowdown,
            as_target=args.as_target,
            isa=not args.no_isa,
        )
    if args.command == "compare":
        from conformance.builds import compare as compare_builds

        if not args.slowdown > 1:
            parser.error("--slowdown must be a factor above 1")
        return compare_builds(args.baseline, args.other, threshold=args.slowdown, json_out=args.json)
    if args.command == "report":
        return _report(args.run_dir)
    if args.command == "merge":
        return _merge(args.run_dirs, args.output, args.label, args.allow_missing_shards)
    if args.command == "prune":
        return _prune(args.reports_dir, args.keep, args.older_than, args.dry_run)
    if args.command == "repro":
        return _repro(args)
    return _summary(args.run_dir)


if __name__ == "__main__":
    sys.exit(main())
