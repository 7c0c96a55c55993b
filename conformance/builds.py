"""`python -m conformance baseline` and `compare`: what changed on a build since another one.

A baseline folder (safe to commit or upload: JSON and npz arrays, nothing pickled):

    baseline.json   format, when, the pytest arguments, the environment that made it
    outputs/        every output of the baseline profile's fixed cases, per target (conformance.store.outputs)
    timings.json    time per op, target and input size, against a calibration op (conformance.engine.timing)
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from conformance.devices.discovery import discover
from conformance.devices.targets import CPU
from conformance.engine.timing import measure_all
from conformance.launch import pytest_command, run_pytest
from conformance.report.build import build_report
from conformance.spec.loading import load_specs
from conformance.store import drift
from conformance.store import timings as timing
from conformance.store.outputs import OutputsError, outputs_folder, read_index
from conformance.suite.stock import case_paths, stock_cases

FORMAT = "conformance-baseline/1"
SHOWN = 40  # changes listed on the terminal per severity (all are in --json)


def _environment_of(run_dir: Path) -> dict[str, Any]:
    for path in sorted((run_dir / "environment").glob("*.json")):
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
    return {}


def make_baseline(
    out: Path, pytest_args: list[str], *, timings: bool, shapes: list[str], ops: list[str] | None, rounds: int
) -> int:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(f"conformance baseline: {out} exists and is not empty (a baseline is never overwritten)", file=sys.stderr)
        return 4
    try:
        pytest_args = pytest_command(pytest_args)
    except ValueError as exc:
        print(f"conformance baseline: {exc}", file=sys.stderr)
        return 4
    cases = case_paths(pytest_args)
    if not cases:
        stock = stock_cases()
        if stock is None:
            print("conformance baseline: no stock suite installed; pass the path of your case modules", file=sys.stderr)
            return 4
        cases = [str(stock)]
    out.mkdir(parents=True, exist_ok=True)
    run_name = f"baseline-{time.strftime('%Y%m%d-%H%M%S')}"
    reports = Path("reports")
    rc = run_pytest(
        [
            *pytest_args,
            f"--record-outputs={out / 'outputs'}",
            "--hypothesis-profile=baseline",
            f"--run-name={run_name}",
            "-p",
            "no:cacheprovider",
            "-q",
            f"--reports-dir={reports}",
        ]
    )
    if rc not in (0, 1):
        print(f"conformance baseline: the suite ended with exit code {rc}; no baseline written", file=sys.stderr)
        return rc
    run_dirs = sorted(reports.glob(f"{run_name}*"))
    environment = _environment_of(run_dirs[-1]) if run_dirs else {}
    try:
        index = read_index(out / "outputs")
    except OutputsError as exc:
        print(f"conformance baseline: {exc}", file=sys.stderr)
        return 4
    manifest: dict[str, Any] = {
        "format": FORMAT,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "pytest_args": pytest_args,
        "hypothesis_profile": "baseline",
        "run_folder": str(run_dirs[-1]) if run_dirs else None,
        "environment": environment,
        "outputs": len(index),
        "ops": sorted({k.op for k in index}),
        "suite_exit_code": rc,
    }
    (out / "baseline.json").write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
    print(
        f"baseline: {len(index)} outputs of {len(manifest['ops'])} ops in {out / 'outputs'} "
        f"(the suite's own verdict: exit {rc}, see {manifest['run_folder']})"
    )
    if not timings:
        return 0
    rc = measure_timings(
        out / "timings.json",
        [Path(c.split("::")[0]) for c in cases],
        shapes=shapes,
        ops=ops,
        rounds=rounds,
        environment=environment,
    )
    if rc == 0 and run_dirs:  # the run's report shows the timings as charts
        shutil.copyfile(out / "timings.json", run_dirs[-1] / "timings.json")
        print(f"report: {build_report(run_dirs[-1])}")
    return rc


def measure_timings(
    path: Path,
    case_paths: list[Path],
    *,
    shapes: list[str],
    ops: list[str] | None,
    rounds: int,
    environment: dict[str, Any],
    slow: str | None = None,
    as_target: str | None = None,
    isa: bool = True,
) -> int:
    """Time every op on this process's targets; each cpu ISA level in a child process with it set.
    `as_target`: this process is such a child: time the cpu only, under that name."""
    specs = [s for s in load_specs(case_paths) if ops is None or s.name in ops]
    if ops is not None and not specs:
        print(f"conformance timing: no op named {', '.join(ops)} in {', '.join(map(str, case_paths))}", file=sys.stderr)
        return 4
    if slow is not None:
        specs = [planted_slowdown(s) if s.name == slow else s for s in specs]
    targets = [CPU] if as_target else discover(0, isa=isa)
    here = [t for t in targets if t.runs_eager_here]  # timing is of eager kernels
    print(f"timing {len(specs)} ops on {as_target or ', '.join(t.name for t in targets)}, shapes {', '.join(shapes)}:")
    found = measure_all(specs, here, shapes, progress=print, rounds=rounds)
    if as_target:
        found = [dataclasses.replace(t, target=as_target) for t in found]
    for child_target in [t for t in targets if t.child_environment is not None]:
        with tempfile.TemporaryDirectory() as folder:
            child = Path(folder) / "timings.json"
            args = [
                sys.executable,
                "-m",
                "conformance",
                "timing",
                "-o",
                str(child),
                "--shapes",
                ",".join(shapes),
                "--rounds",
                str(rounds),
                "--as-target",
                child_target.name,
            ]
            args += [f"--cases={p}" for p in case_paths[:1]] + ([f"--ops={','.join(ops)}"] if ops else [])
            args += [f"--planted-slowdown={slow}"] if slow else []
            if subprocess.call(args, env=dict(os.environ, **(child_target.child_environment or {}))) == 0:
                found += timing.read(child)
            else:
                print(f"  {child_target.name}: not timed (its worker process failed)")
    timing.write(path, found, environment)
    print(f"timings: {len(found)} in {path}")
    return 0


def planted_slowdown(spec: Any) -> Any:
    """The op, called twice per call: a 2x slowdown for the timing gate's benchmark."""
    if spec.call is not None:
        return dataclasses.replace(
            spec, call=lambda image, params: (spec.call(image, params), spec.call(image, params))[1]
        )
    forward = spec.module.forward
    module = dataclasses.replace(spec.module, forward=lambda m, i, p, s: (forward(m, i, p, s), forward(m, i, p, s))[1])
    return dataclasses.replace(spec, module=module)


def _timings_of(folder: Path) -> list[timing.Timing] | None:
    path = folder / "timings.json"
    return timing.read(path) if path.is_file() and not path.is_symlink() else None


def compare(baseline: Path, other: Path, *, threshold: float, json_out: Path | None) -> int:
    """Print what changed; 1 when an output changed beyond tolerance or an op slowed down."""
    try:
        changes = drift.compare_folders(outputs_folder(baseline), outputs_folder(other))
        before_t, after_t = _timings_of(baseline), _timings_of(other)
    except (OutputsError, timing.TimingsError) as exc:
        print(f"conformance compare: {exc}", file=sys.stderr)
        return 4
    compared = len(read_index(outputs_folder(baseline)).keys() & read_index(outputs_folder(other)).keys())
    if compared == 0:
        print(
            f"conformance compare: no case in common between {baseline} and {other}: they were made with other "
            f"case parameters (hypothesis profile, seed, max examples) or other ops",
            file=sys.stderr,
        )
        return 4
    totals = drift.counts(changes, compared)
    print(
        f"outputs: {compared} compared; " + ", ".join(f"{totals[s]} {drift.SEVERITY_TEXT[s]}" for s in drift.SEVERITIES)
    )
    for severity in drift.SEVERITIES:
        rows = [c for c in changes if c.severity == severity]
        for change in rows[:SHOWN]:
            print(
                f"  {severity:16} {change.key.op} on {change.key.target} [{change.key.dtype}, {change.key.mode}]: "
                f"{change.message}"
            )
        if len(rows) > SHOWN:
            print(f"  ... and {len(rows) - SHOWN} more {drift.SEVERITY_TEXT[severity]} (all in --json)")
    slowdowns: list[timing.Slowdown] = []
    pairs: list[timing.Slowdown] = []
    if before_t is not None and after_t is not None:
        slowdowns, pairs = timing.compare(before_t, after_t, threshold)
        print(f"timings: {len(pairs)} compared against the calibration op; {len(slowdowns)} slower than {threshold:g}x")
        for slow in slowdowns:
            print(f"  slower  {slow.describe()}")
    else:
        print("timings: not compared (timings.json missing on one side)")
    if json_out is not None:
        json_out.write_text(
            json.dumps(
                {
                    "outputs": totals,
                    "changes": [c.to_dict() for c in changes],
                    "timings": [
                        {
                            "op": p.after.op,
                            "target": p.after.target,
                            "dtype": p.after.dtype,
                            "mode": p.after.mode,
                            "shape": p.after.shape,
                            "before_s": p.before.seconds,
                            "after_s": p.after.seconds,
                            "factor": p.factor,
                            "slower": p in slowdowns,
                        }
                        for p in pairs
                    ],
                },
                indent=1,
            ),
            encoding="utf-8",
        )
    failing = totals["changed"] + totals["error_changed"] + len(slowdowns)
    return 1 if failing else 0
