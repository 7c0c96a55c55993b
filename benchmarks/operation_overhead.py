"""Per-example cost of declaring an op as one library's implementation of an operation.

An implementation's reference check also measures its output against every earlier implementation
(whose outputs a suite run has already computed and cached), and its item keeps its worst cases for
the cross-library page.  This times, in one process and on the same fixed cases, every check of
one op declared alone (member=None) and the same op as an implementation, with its peers already
run, alternating blocks and keeping the fastest: the ratio is what the operation adds per example
and target.

    python benchmarks/operation_overhead.py                       # resize_cv2's uint8 bilinear, cpu
    python benchmarks/operation_overhead.py --op normalize_v1 --mode valid --dtype float32 --targets cpu,vcuda:0
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings

from conformance.checks.registry import applicable
from conformance.devices.discovery import discover, select
from conformance.engine.cases import CaseCache, check_case
from conformance.engine.worst import WorstCases
from conformance.spec.loading import load_specs

ROOT = Path(__file__).resolve().parents[1]


def draw_cases(spec, dtype: str, mode: str, count: int) -> list:
    found: list = []

    @seed(1)
    @settings(max_examples=count, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(case=spec.cases(dtype, mode))
    def collect(case) -> None:
        found.append(case)

    collect()
    return found


def run_all(spec, cases, targets, mode: str, shared: CaseCache) -> float:
    """Seconds to run the op and every check on every case and target (nothing cached for this spec)."""
    start = time.perf_counter()
    for case in cases:
        for target in targets:
            if target.has_items(spec):
                check_case(spec, dataclasses.replace(case, op=spec.name), target, shared, mode)
    return time.perf_counter() - start


def checks_only(spec, cases, targets, mode: str, shared: CaseCache) -> float:
    """Seconds for every check (and the worst-case keeping) of every case and target, the op's runs and
    the peers' outputs cached as in a suite run: what the declaration changes."""
    start = time.perf_counter()
    for case in cases:
        case = dataclasses.replace(case, op=spec.name)
        worst = WorstCases()
        for target in targets:
            if not target.has_items(spec):
                continue
            context = shared.context(spec, case, target, mode)
            context.outcomes.clear()
            context.peers_measured = False
            for check in applicable(spec, target, mode):
                outcome = shared.outcome(context, check.name)
                if outcome is not None:
                    worst.observe(context, outcome)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--module", default="cases/test_resize.py")
    parser.add_argument("--op", default="resize_cv2")
    parser.add_argument("--dtype", default="uint8")
    parser.add_argument("--mode", default="bilinear")
    parser.add_argument("--targets", default="cpu")
    parser.add_argument("-n", "--cases", type=int, default=200)
    parser.add_argument("--blocks", type=int, default=5)
    args = parser.parse_args()
    specs = {s.name: s for s in load_specs([ROOT / args.module])}
    member = specs[args.op]
    alone = dataclasses.replace(member, member=None, name=f"{member.name}_alone")
    targets = select(args.targets, discover())
    cases = draw_cases(member, args.dtype, args.mode, args.cases)
    shared = CaseCache(max_bytes=2**31)
    peers = [p for p in member.member.earlier() if (args.dtype, args.mode) in p.variant_pairs()]
    for peer in peers:  # as in a suite run: the earlier implementations ran first
        run_all(peer, cases, targets, args.mode, shared)
    whole = {
        name: run_all(spec, cases, targets, args.mode, shared) for name, spec in (("alone", alone), ("member", member))
    }
    best = {"alone": float("inf"), "member": float("inf")}
    for _ in range(args.blocks):
        for name, spec in (("alone", alone), ("member", member)):
            best[name] = min(best[name], checks_only(spec, cases, targets, args.mode, shared))
    ms = {k: v / len(cases) * 1e3 for k, v in best.items()}
    print(
        f"{args.op} [{args.dtype}, {args.mode}] on {args.targets}: {len(cases)} cases; peers {[p.name for p in peers]}"
    )
    print(
        f"op + checks, first run: alone {whole['alone'] / len(cases) * 1e3:.3f} ms, "
        f"member {whole['member'] / len(cases) * 1e3:.3f} ms per case"
    )
    print(
        f"checks only (fastest of {args.blocks}): alone {ms['alone']:.3f} ms, member {ms['member']:.3f} ms per case: "
        f"+{ms['member'] - ms['alone']:.3f} ms, {best['member'] / best['alone']:.2f}x"
    )


if __name__ == "__main__":
    main()
