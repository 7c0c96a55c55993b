"""`python -m conformance`: run the suite, or rebuild a run's summary from its store.

    python -m conformance run [PYTEST ARGS...]     the suite in ./cases on every visible target
    python -m conformance summary reports/<run>    summary.json + table from the outcome files
    python -m conformance report reports/<run>     (re)build reports/<run>/index.html
    python -m conformance merge RUN... -o OUT      combine runs from several machines into one report
    python -m conformance prune REPORTS --keep N   delete old run folders (--older-than DAYS, --dry-run)
    python -m conformance baseline -o DIR [PYTEST ARGS...]   record outputs and timings of this build
    python -m conformance compare BASELINE OTHER   what changed between two builds (outputs, timings)
    python -m conformance timing -o FILE           time each op per target and input size
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

from conformance.report.table import format_table

from conformance.store.aggregate import write_summary

from conformance.store.examples import StoreError

from conformance.store.reader import was_complete

USAGE_ERROR = 4  # pytest's exit code for usage errors, so scripts can treat both alike


HYPOTHESIS_VALUE_OPTIONS = ("--hypothesis-profile", "--hypothesis-seed", "--hypothesis-verbosity")


def _plugin_value_options() -> set[str]:
    """The plugin's options that take a value (read from its own `pytest_addoption`)."""
    from _pytest.config.argparsing import Parser

    from conformance import plugin

    parser = Parser()
    plugin.pytest_addoption(parser)
    return {name for option in parser.getgroup("conformance").options
            if option.attrs().get("action", "store") in ("store", "append") for name in option.names()}


WORKERS_ENV = "CONFORMANCE_WORKERS_CHOSEN"  # how many xdist workers `run` chose (for the run's header)
# Options after which one process is what the user needs: a debugger, unbuffered output, one case,
# collection only; and those by which the user chose the process count or turned xdist off.
SERIAL_OPTIONS = ("--pdb", "--trace", "-s", "--capture=no", "--replay", "--co", "--collect-only", "--setup-plan")
CHOSEN_OPTIONS = ("-n", "--numprocesses", "--dist", "-d", "--tx", "no:xdist")


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def workers_for(args: list[str]) -> int:
    """How many pytest-xdist workers `run` starts: one per core, unless the arguments chose (-n, --dist,
    -p no:xdist), ask for one process (--pdb, -s, --replay, --co) or xdist is not installed."""
    words = [*args, *os.environ.get("PYTEST_ADDOPTS", "").split()]
    if any(w in CHOSEN_OPTIONS or w.startswith(("-n", "--numprocesses=", "--dist=", "-pno:xdist")) or w in
           SERIAL_OPTIONS or w.startswith(("--replay=", "--capture=no")) for w in words):
        return 0
    if importlib.util.find_spec("xdist") is None:
        return 0
    count = cores()
    return count if count > 1 else 0


def pytest_command(args: list[str]) -> list[str]:
    """The pytest arguments for `run`.  What to collect is pytest's own decision: ./cases is its
    `testpaths`, used when the arguments name no file or folder.  Plugin options are joined to their
    values (`--reports-dir=DIR`), because pytest finds its rootdir before it loads plugins and would
    take a separate value that is an existing path for a path to test.  Unless the user chose otherwise,
    the run uses every core (`-n <cores>`, see `workers_for`)."""
    joined = _joined(args)
    workers = workers_for(joined)
    return (["--conformance"] + (["-o", "testpaths=cases"] if Path("cases").is_dir() else [])
            + ([f"-n{workers}"] if workers else []) + joined)


def _joined(args: list[str]) -> list[str]:
    joined, values = [], _plugin_value_options() | set(HYPOTHESIS_VALUE_OPTIONS)
    args = list(args)
    while args:
        arg = args.pop(0)
        if arg in values and args:
            arg = f"{arg}={args.pop(0)}"
        joined.append(arg)
    return joined


def run_pytest(pytest_args: list[str], workers: int = 0) -> int:
    """pytest in a child process (it must import and assert-rewrite the plugin itself).  Ctrl-C reaches
    the child too, which ends the run as interrupted (summary and report marked incomplete, exit 2):
    this process waits for that instead of killing it; SIGTERM is passed on for the same ending.
    `workers`: the xdist workers `run` chose itself (the header says so)."""
    env = dict(os.environ, **({WORKERS_ENV: str(workers)} if workers else {}))
    child = subprocess.Popen([sys.executable, "-m", "pytest", *pytest_args], env=env)
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: child.send_signal(signal.SIGTERM))
    try:
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                continue
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(pytest_args: list[str]) -> int:
    return run_pytest(pytest_command(pytest_args), workers_for(_joined(pytest_args)))


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
    for line in format_table(summary, full=True):
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
    try:
        print(f"report: {build_report(run_dir)}")
    except StoreError as exc:
        print(f"conformance report: {exc}", file=sys.stderr)
        return USAGE_ERROR
    return 0


def _merge(run_dirs: list[Path], out: Path, labels: list[str] | None) -> int:
    from conformance.report.merge import MergeError, merge_runs

    try:
        index = merge_runs(run_dirs, out, labels)
    except (MergeError, StoreError) as exc:
        print(f"conformance merge: {exc}", file=sys.stderr)
        return USAGE_ERROR
    print(f"report: {index}")
    return 0


def _prune(reports: Path, keep: int | None, older_than: float | None, dry_run: bool) -> int:
    from conformance.store.prune import PruneError, prune

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


class UsageErrors(argparse.ArgumentParser):
    """argparse, but a usage error exits 4 like pytest's (2 means "interrupted" to a CI gate)."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["run"]:  # everything after it is pytest's: nothing else to parse or import here
        return _run(argv[1:])
    parser = UsageErrors(prog="python -m conformance", description=__doc__.splitlines()[0])
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
    prune = commands.add_parser("prune", help="delete old run folders (never `latest`, never through a link)")
    prune.add_argument("reports_dir", type=Path)
    prune.add_argument("--keep", type=int, default=None, metavar="N", help="keep the N newest runs")
    prune.add_argument("--older-than", type=float, default=None, metavar="DAYS",
                       help="remove runs that finished more than DAYS ago (with --keep: only beyond the N newest)")
    prune.add_argument("--dry-run", action="store_true", help="print what would be removed; remove nothing")
    from conformance.engine import timing

    baseline = commands.add_parser("baseline", help="record this build's outputs (fixed cases) and timings into a "
                                                    "folder; other arguments go to pytest")
    baseline.add_argument("-o", "--output", type=Path, required=True, help="baseline folder (must not exist or be empty)")
    baseline.add_argument("--no-timing", action="store_true", help="outputs only")
    compare = commands.add_parser("compare", help="compare a baseline with another baseline or a run made with "
                                                  "--baseline; exit 1 on a change beyond tolerance or a slowdown")
    compare.add_argument("baseline", type=Path)
    compare.add_argument("other", type=Path)
    compare.add_argument("--slowdown", type=float, default=timing.DEFAULT_THRESHOLD, metavar="FACTOR",
                         help=f"flag ops slower than FACTOR x the baseline, against the calibration op "
                              f"(default {timing.DEFAULT_THRESHOLD})")
    compare.add_argument("--json", type=Path, default=None, metavar="FILE", help="write every change to FILE")
    timed = commands.add_parser("timing", help="time each op per target and input size (written as JSON)")
    timed.add_argument("-o", "--output", type=Path, required=True, help="timings file to write")
    timed.add_argument("--cases", type=Path, default=Path("cases"), help="case modules (default ./cases)")
    timed.add_argument("--planted-slowdown", default=None, metavar="OP", help=argparse.SUPPRESS)
    timed.add_argument("--as-target", default=None, help=argparse.SUPPRESS)  # an ISA level's child process
    timed.add_argument("--no-isa", action="store_true", help="do not time the cpu's lower instruction-set levels")
    for sub in (baseline, timed):
        sub.add_argument("--shapes", default=",".join(timing.SHAPES),
                         help=f"input shapes to time, comma list of {', '.join(timing.SHAPES)}")
        sub.add_argument("--ops", default=None, help="only these ops (comma list of op names)")
        sub.add_argument("--rounds", type=int, default=9, help="timed blocks per op and calibration (median)")
    if argv[:1] == ["baseline"]:
        args, rest = parser.parse_known_args(argv)
    else:
        args, rest = parser.parse_args(argv), []
    if args.command in ("baseline", "timing"):
        shapes = [s for s in args.shapes.split(",") if s]
        unknown = [s for s in shapes if s not in timing.SHAPES]
        if unknown or not shapes or args.rounds < 1:
            parser.error(f"--shapes: unknown {unknown or 'empty list'} (known: {', '.join(timing.SHAPES)})"
                         if unknown or not shapes else "--rounds must be at least 1")
        ops = [o for o in args.ops.split(",") if o] if args.ops else None
    if args.command == "baseline":
        from conformance.builds import make_baseline

        return make_baseline(args.output, rest, timings=not args.no_timing, shapes=shapes, ops=ops,
                             rounds=args.rounds)
    if args.command == "timing":
        from conformance.builds import measure_timings

        if not args.cases.exists():
            print(f"conformance timing: no such case folder or file {str(args.cases)!r}", file=sys.stderr)
            return USAGE_ERROR
        return measure_timings(args.output, [args.cases], shapes=shapes, ops=ops, rounds=args.rounds,
                               environment={}, slow=args.planted_slowdown, as_target=args.as_target,
                               isa=not args.no_isa)
    if args.command == "compare":
        from conformance.builds import compare as compare_builds

        if not args.slowdown > 1:
            parser.error("--slowdown must be a factor above 1")
        return compare_builds(args.baseline, args.other, threshold=args.slowdown, json_out=args.json)
    if args.command == "report":
        return _report(args.run_dir)
    if args.command == "merge":
        return _merge(args.run_dirs, args.output, args.label)
    if args.command == "prune":
        return _prune(args.reports_dir, args.keep, args.older_than, args.dry_run)
    return _summary(args.run_dir)


if __name__ == "__main__":
    sys.exit(main())
