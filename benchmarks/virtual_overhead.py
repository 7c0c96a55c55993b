"""What a virtual target costs compared with the cpu, on the same fixed resize cases.

Draws N cases per resize variant (derandomised), then times, in one run and on the
same cases:
  op call   the op alone, on the cpu and inside vcuda:1 (emulation + placement log);
  checks    the whole `check_case` per target (vcuda:1 adds placement and cross_device,
            whose cpu baseline is cached, as in a real session).
Prints seconds and the vcuda/cpu ratios.

    python benchmarks/virtual_overhead.py -n 40
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from hypothesis import Phase, given, settings

sys.path.insert(0, str(Path(__file__).parent))
from conformance.devices.calls import run_op
from conformance.devices.targets import CPU
from conformance.devices.virtual_target import virtual_targets
from conformance.engine.cases import CaseCache, check_case
from conformance.spec.loading import load_specs
from conformance.spec.recipes import materialize


def draw_cases(spec, dtype, mode, n):
    found = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None, phases=[Phase.generate])
    @given(spec.cases(dtype, mode))
    def collect(case):
        found.append(case)

    collect()
    return found


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=40, help="cases per (dtype, mode) variant")
    args = parser.parse_args()
    vcuda = virtual_targets(2)[1]
    specs = load_specs([Path(__file__).parents[1] / "cases" / "test_resize.py"])
    work = [
        (spec, mode, case)
        for spec in specs
        for dtype, mode in spec.variant_pairs()
        for case in draw_cases(spec, dtype, mode, args.n)
    ]
    inputs = {id(case): (materialize(case.recipe), materialize(case.recipe, put=vcuda.put)) for _, _, case in work}

    call = {
        target.name: timed(lambda t=target: [run_op(s, inputs[id(c)][t.virtual], c, t) for s, _, c in work])
        for target in (CPU, vcuda)
    }
    shared = CaseCache()
    checks = {
        target.name: timed(lambda t=target: [check_case(s, c, t, shared, m) for s, m, c in work])
        for target in (CPU, vcuda)
    }  # cpu first: vcuda reuses its cached baseline, as in a session
    print(f"{len(work)} resize cases ({args.n} per variant)")
    print(
        f"op call : cpu {call['cpu']:.2f} s, vcuda:1 {call['vcuda:1']:.2f} s, "
        f"ratio {call['vcuda:1'] / call['cpu']:.2f}x"
    )
    print(
        f"checks  : cpu {checks['cpu']:.2f} s, vcuda:1 {checks['vcuda:1']:.2f} s, "
        f"ratio {checks['vcuda:1'] / checks['cpu']:.2f}x"
    )


if __name__ == "__main__":
    main()
