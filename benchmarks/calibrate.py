"""Deep calibration sweep: every check on N drawn cases per variant and target, nothing stopped at a failure.

Tolerances and known-issue envelopes are set from these numbers (docs/tolerances.md): per
(variant, target, check) the distribution of the compared metric, how many cases the current
tolerance fails, and per known issue how many cases fall in its scope, how many it explains and
how far off they are, so an envelope can be set above what was seen and below a regression.
Failures outside every known issue are listed with their case JSON, to be triaged (a finding
in docs/findings.md with a known issue, or a tolerance with a reason).

Cases are drawn by the suite's own strategies, derandomised with --seed (so a run is repeatable
and different seeds sweep different cases).

    python benchmarks/calibrate.py cases/test_resize.py -n 2000 --targets cpu,vcuda:0 --json out.json
    python benchmarks/calibrate.py --summary out.json ...   # markdown tables of saved sweeps
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings

from conformance.checks.registry import applicable, value_checks
from conformance.devices.discovery import discover, select
from conformance.engine.cases import CaseCache
from conformance.engine.judgement import judge
from conformance.spec.issue_files import load
from conformance.spec.issue_paths import files_beside
from conformance.spec.known_issues import KnownIssue
from conformance.spec.loading import load_specs
from conformance.spec.opspec import OpSpec


class Cell:
    """One (variant, target, check): what its cases measured."""

    def __init__(self) -> None:
        self.cases = 0
        self.over = 0  # outside the current tolerance and outside every known issue's envelope
        self.max_abs: list[float] = []
        self.mismatch: list[float] = []
        self.psnr: list[float] = []
        self.gap: list[float] = []  # fidelity: dB lost beyond the reference
        self.unexplained: list[dict[str, Any]] = []
        self.issues: dict[str, dict[str, Any]] = defaultdict(
            lambda: {"in_scope": 0, "explained": 0, "max_abs": 0.0, "max_mismatch": 0.0, "outside": 0}
        )
        self.warnings = 0

    def add(self, outcome, issues: list[KnownIssue], features: dict[str, Any], case_json: str) -> None:
        self.cases += 1
        metrics = outcome.metrics
        scoped = [issue for issue in issues if issue.in_scope(features)]
        for issue in scoped:
            self.issues[issue.id]["in_scope"] += 1
        explained = not outcome.passed and any(i.covers(outcome.check, outcome.message, features) for i in scoped)
        if metrics is not None and math.isfinite(float(metrics.max_abs)) and not explained:
            self.max_abs.append(float(metrics.max_abs))
            self.mismatch.append(metrics.mismatch_fraction)
            if math.isfinite(metrics.psnr):
                self.psnr.append(metrics.psnr)
        if outcome.details and "psnr_vs_input" in outcome.details:
            self.gap.append(outcome.details["reference_psnr_vs_input"] - outcome.details["psnr_vs_input"])
        if outcome.passed:
            return
        if outcome.warning:
            self.warnings += 1
            return
        # what a known issue's envelope would need to hold, measured without its bounds
        for issue in scoped:
            if issue.covers(outcome.check, outcome.message, features):
                entry = self.issues[issue.id]
                entry["explained"] += 1
                if metrics is not None:
                    entry["max_abs"] = max(entry["max_abs"], float(metrics.max_abs))
                    entry["max_mismatch"] = max(entry["max_mismatch"], metrics.mismatch_fraction)
                if issue.held(metrics, outcome.details).broken:
                    entry["outside"] += 1
        judged = judge(outcome, issues, features)
        if judged.unexpected:
            self.over += 1
            if len(self.unexplained) < 5:
                self.unexplained.append({"message": outcome.message[:300], "case": json.loads(case_json)})

    def row(self) -> dict[str, Any]:
        def stat(values: list[float], q: float | None = None, low: bool = False) -> float | None:
            if not values:
                return None
            return float(np.min(values) if low else np.max(values) if q is None else np.percentile(values, q))

        return {
            "cases": self.cases,
            "over": self.over,
            "warnings": self.warnings,
            "max_abs": stat(self.max_abs),
            "p99_abs": stat(self.max_abs, 99),
            "p999_abs": stat(self.max_abs, 99.9),
            "max_mismatch": stat(self.mismatch),
            "min_psnr": stat(self.psnr, low=True),
            "max_gap_db": stat(self.gap),
            "p99_gap_db": stat(self.gap, 99),
            "issues": {k: dict(v) for k, v in self.issues.items()},
            "unexplained": self.unexplained,
        }


def sweep(
    spec: OpSpec, dtype: str, mode: str, targets, issues: list[KnownIssue], examples: int, seed_value: int
) -> dict[str, Cell]:
    cells: dict[str, Cell] = defaultdict(Cell)
    shared = CaseCache(max_bytes=64 * 2**20)
    targets = [target for target in targets if target.has_items(spec)]  # a host library: the cpu only
    checks = {target.name: [c.name for c in applicable(spec, target, mode, dtype=dtype)] for target in targets}
    scoped = {
        (target.name, check): [i for i in issues if i.applies_to(spec.name, target.name, dtype, mode, check)]
        for target in targets
        for check in checks[target.name]
    }

    @seed(seed_value)
    @settings(
        max_examples=examples,
        derandomize=False,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=spec.cases(dtype, mode))
    def run(case) -> None:
        shared.begin_group(case.key)  # case by case: nothing of the last case is read again
        features = spec.case_features(case)
        for target in targets:
            ctx = shared.context(spec, case, target, mode)
            if ctx.run.not_run or ctx.run.resource:
                continue
            for check in checks[target.name]:
                outcome = shared.outcome(ctx, check)
                if outcome is not None:
                    cells[f"{target.name}/{check}"].add(outcome, scoped[(target.name, check)], features, case.json)

    run()
    return cells


def summarize(paths: list[Path]) -> None:
    """Markdown: per variant and cell the compared metric's distribution, then per known issue its scope."""

    def number(value: Any) -> str:
        return "-" if value is None else f"{value:.3g}"

    print(
        "| variant | target/check | cases | over | max \\|d\\| | p99 | p99.9 | max mismatch | min PSNR | max gap dB |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    issues = []
    for path in paths:
        for row in json.loads(path.read_text()):
            if row["cell"].split("/")[1] in ("reference", "cross_device", "fidelity") or row["over"]:
                print(
                    f"| {row['variant']} | {row['cell']} | {row['cases']} | {row['over']} | {number(row['max_abs'])} | "
                    f"{number(row['p99_abs'])} | {number(row['p999_abs'])} | {number(row['max_mismatch'])} | "
                    f"{number(row['min_psnr'])} | {number(row['max_gap_db'])} |"
                )
            issues += [(row["variant"], row["cell"], issue, found) for issue, found in row["issues"].items()]
    print("\n| known issue | variant | target/check | in scope | explained | max \\|d\\| | max mismatch |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for variant, cell, issue, found in sorted(issues, key=lambda x: (x[2], x[0], x[1])):
        if found["explained"]:
            print(
                f"| {issue} | {variant} | {cell} | {found['in_scope']} | {found['explained']} | "
                f"{number(found['max_abs'])} | {number(found['max_mismatch'])} |"
            )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--summary"]:
        summarize([Path(p) for p in argv[1:]])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case_modules", type=Path, nargs="+")
    parser.add_argument("-n", "--examples", type=int, default=2000)
    parser.add_argument("-k", default="", help="only variants whose name contains this")
    parser.add_argument("--targets", default="cpu,vcuda:0")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write every row here (for docs/tolerances.md)")
    parser.add_argument(
        "--known-issues",
        type=Path,
        action="append",
        default=[],
        help="known-issue file(s) instead of the files beside each module (e.g. a draft beside it)",
    )
    args = parser.parse_args(argv)
    targets = select(args.targets, discover(2))
    rows = []
    for module in args.case_modules:
        files = args.known_issues or files_beside(module)
        issues = [i for path in files if path.exists() for i in load(path, value_checks=value_checks())]
        for spec in load_specs([module]):
            if spec.unmet_requirement():
                print(f"skipped {spec.name}: {spec.unmet_requirement()}", flush=True)
                continue
            for dtype, mode in spec.variant_pairs():
                variant = f"{spec.name}[{dtype}-{mode}]"
                if args.k not in variant:
                    continue
                start = time.perf_counter()
                cells = sweep(
                    spec,
                    dtype,
                    mode,
                    [t for t in targets if not (t.virtual and spec.needs_real_device)],
                    issues,
                    args.examples,
                    args.seed,
                )
                seconds = time.perf_counter() - start
                for key, cell in sorted(cells.items()):
                    row = {"variant": variant, "cell": key, "seconds": round(seconds, 1)} | cell.row()
                    rows.append(row)
                    if row["over"] or row["issues"] or key.endswith(("/reference", "/cross_device", "/fidelity")):
                        print(_line(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


def _line(row: dict[str, Any]) -> str:
    def number(value: Any) -> str:
        return "-" if value is None else f"{value:.3g}"

    issues = " ".join(
        f"{k}:{v['explained']}/{v['in_scope']} abs<={number(v['max_abs'])} "
        f"mis<={number(v['max_mismatch'])} outside={v['outside']}"
        for k, v in row["issues"].items()
    )
    return (
        f"{row['variant']:<44} {row['cell']:<24} n={row['cases']:<5} over={row['over']:<4} "
        f"max={number(row['max_abs'])} p99={number(row['p99_abs'])} mis={number(row['max_mismatch'])} "
        f"psnr>={number(row['min_psnr'])} gap={number(row['max_gap_db'])} {issues}"
    )


if __name__ == "__main__":
    sys.exit(main())
