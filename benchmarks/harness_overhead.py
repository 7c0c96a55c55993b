"""Harness cost against a bare loop, on the same fixed cases.

(a) runs pytest with the ci profile on a case module for one target, timing the session;
(b) reads back the cases that session checked (from its outcome records) and runs, per case,
    only: make the input, call the op, compute the reference, compare in float64.
Prints both times and the ratio (a)/(b).

    python benchmarks/harness_overhead.py cases/test_resize.py --targets cpu
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from measure_tolerances import load_specs  # noqa: E402

from conformance.checks import expected_output  # noqa: E402
from conformance.compare import measure  # noqa: E402
from conformance.recipes import Case, materialize, to_float64  # noqa: E402


def harness(case_module: Path, targets: str, reports: Path, extra: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", str(case_module), "-q", "-p", "no:cacheprovider",
                    "--hypothesis-profile=ci", f"--targets={targets}", f"--reports-dir={reports}",
                    "--run-name=bench", *extra], check=False, capture_output=True)
    return time.perf_counter() - start


def checked_cases(run_dir: Path) -> list[Case]:
    cases, seen = [], set()
    for path in sorted((run_dir / "outcomes").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("phase") in ("explore", "final") and record.get("case"):
                key = (record["nodeid"], json.dumps(record["case"], sort_keys=True), record.get("example"))
                if key not in seen:
                    seen.add(key)
                    cases.append(Case.from_json(json.dumps(record["case"])))
    return cases


def bare(case_module: Path, cases: list[Case]) -> float:
    specs = {spec.name: spec for spec in load_specs(case_module)}
    start = time.perf_counter()
    for case in cases:
        spec = specs[case.op]
        image = materialize(case.recipe)
        try:
            output = spec.call(image, dict(case.params))
        except Exception:  # noqa: BLE001 - a known crash (e.g. the uint8 1x1 assert) costs its call only
            continue
        expected = expected_output(spec.reference(to_float64(image), case), case.recipe.dtype)
        measure(to_float64(output), expected, spec.tolerance("reference", case.recipe.dtype, "", "cpu"), 255.0)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case_module", type=Path)
    parser.add_argument("--targets", default="cpu")
    args, extra = parser.parse_known_args()
    with tempfile.TemporaryDirectory() as tmp:
        seconds = harness(args.case_module, args.targets, Path(tmp), extra)
        cases = checked_cases(Path(tmp) / "bench")
    loop = bare(args.case_module, cases)
    print(f"{len(cases)} cases on {args.targets}: harness (pytest + hypothesis + checks + store + report) "
          f"{seconds:.1f} s, bare loop {loop:.1f} s, ratio {seconds / loop:.2f}x")


if __name__ == "__main__":
    main()
