"""Measure how far each op variant is from its reference, to set and justify tolerances.

Draws N cases per (op, dtype, mode) with the spec's own strategies (derandomised,
so the numbers are reproducible), runs the op on the CPU, and reports the
largest |output - reference| in float64 (and the largest relative difference,
against max(|reference|, 1e-3)), split into cases inside and outside the scope of
a known issue, plus how often the current tolerance is exceeded, the lowest PSNR
against the reference, and for lossy ops the largest fidelity gap (dB lost beyond
the reference, both against the input).

    python benchmarks/measure_tolerances.py cases/test_resize.py -n 300
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np
from hypothesis import Phase, given, settings

import torch

from conformance.calls import run_op, sample_params
from conformance.checks import expected_output, psnr
from conformance.compare import measure
from conformance.known_issues import load
from conformance.recipes import materialize, to_float64
from conformance.spec import OpSpec
from conformance.targets import CPU


def load_specs(path: Path) -> list[OpSpec]:
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return [getattr(value, "conformance_spec") for value in vars(module).values()
            if hasattr(value, "conformance_spec")]


def measure_variant(spec: OpSpec, dtype: str, mode: str, examples: int, issues) -> dict[str, object]:
    applicable = [i for i in issues if i.applies_to(spec.name, "cpu", dtype, mode) and "reference" in i.checks]
    clean, scoped, relative, psnrs, gaps, over = [], [], [], [], [], 0
    tolerance = spec.tolerance("reference", dtype, mode, "cpu")

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate])
    @given(case=spec.cases(dtype, mode))
    def sample(case) -> None:
        nonlocal over
        host_input = materialize(case.recipe)
        sampled = sample_params(spec, host_input, case)
        run = run_op(spec, materialize(case.recipe), case, CPU, sampled)
        if run.error is not None or not isinstance(run.output, torch.Tensor):
            return  # errors are the suite's business, not this measurement's
        out_dtype = spec.output_dtype_of(case)
        input64 = to_float64(host_input)
        ideal = spec.reference(input64, case) if sampled is None else spec.reference(input64, case, sampled)
        expected = expected_output(ideal, out_dtype)
        output = to_float64(run.output)
        metrics = measure(output, expected, tolerance, 255.0 if out_dtype == "uint8" else 1.0)
        features = spec.case_features(case)
        in_scope = any(i.in_scope(features) for i in applicable)
        (scoped if in_scope else clean).append(metrics.max_abs)
        if not in_scope and metrics.psnr is not None:
            psnrs.append(metrics.psnr)
        if not in_scope and spec.fidelity is not None and output.shape == input64.shape:
            peak = 255.0 if out_dtype == "uint8" else 1.0
            gaps.append(psnr(expected, input64, peak) - psnr(output, input64, peak))
        if not in_scope and output.shape == expected.shape and output.size:
            finite = np.isfinite(expected)
            relative.append(float(np.max(np.abs(output - expected)[finite] / np.maximum(np.abs(expected[finite]), 1e-3),
                                         initial=0.0)))
        over += bool(tolerance.violations(metrics)) and not in_scope

    sample()
    return {
        "variant": f"{spec.name}[{dtype}-{mode}]",
        "cases": len(clean) + len(scoped),
        "max_abs": max(clean, default=float("nan")),
        "p99": float(np.percentile(clean, 99)) if clean else float("nan"),
        "max_rel": max(relative, default=float("nan")),
        "min_psnr": min(psnrs, default=float("inf")),
        "fidelity_gap": max(gaps, default=float("nan")),
        "over_tolerance": over,
        "tolerance": f"{tolerance.name} atol={tolerance.atol:g} rtol={tolerance.rtol:g}",
        "known_issue_scope": len(scoped),
        "known_issue_max_abs": max(scoped, default=float("nan")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case_module", type=Path)
    parser.add_argument("-n", "--examples", type=int, default=200)
    parser.add_argument("-k", default="", help="only variants whose name contains this")
    args = parser.parse_args(argv)
    issues_file = args.case_module.parent / "known_issues.toml"
    issues = load(issues_file) if issues_file.exists() else []
    print(f"{'variant':<42} {'cases':>5} {'max|d|':>10} {'p99':>10} {'max rel':>9} {'over':>4}  "
          f"{'in-KI':>5} {'KI max':>8} {'minPSNR':>7} {'fid.gap':>7}  tolerance")
    for spec in load_specs(args.case_module):
        for dtype, mode in spec.variant_pairs():
            if args.k not in f"{spec.name}[{dtype}-{mode}]" or mode in spec.error_modes:
                continue
            row = measure_variant(spec, dtype, mode, args.examples, issues)
            print(f"{row['variant']:<42} {row['cases']:>5} {row['max_abs']:>10.3g} {row['p99']:>10.3g} "
                  f"{row['max_rel']:>9.2g} "
                  f"{row['over_tolerance']:>4}  {row['known_issue_scope']:>5} {row['known_issue_max_abs']:>8.3g} "
                  f"{row['min_psnr']:>7.1f} {row['fidelity_gap']:>7.2f}  "
                  f"{row['tolerance']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
