"""How often each strict known issue reproduces among the cases in its scope: the `min_case_fraction`
its entry can claim, from real runs' summaries; with `--headroom FILE`, whether each `max_case_fraction` below 1.0
in a known-issues file has room over what the runs drew.

A strict entry that reproduces in none of the n cases in its scope of a cell (op, target, dtype, mode)
is called fixed only when (1 - min_case_fraction) ** n < 1e-3 (conformance.spec.known_issues), so a short run
is not red for an entry that simply had no chance to show.  The fraction an entry claims must be low
enough to hold in every cell it applies to: per cell (the most cases in scope, and explained, over its
check items, which see the same cases) the one-sided 95% Wilson lower bound of explained / in scope,
then the lowest over the cells with at least MIN_CASES in scope, rounded down to 0.05.

    python benchmarks/seed_campaign.py --keep /tmp/seeds
    python benchmarks/case_fractions.py /tmp/seeds/seed-*        # proposed values, per entry
    python benchmarks/case_fractions.py --headroom cases/known_issues.toml /tmp/seeds/seed-*

A case fraction is a share of what was drawn, and another seed draws another share: an entry keeps one only where
every cell (pooled over the runs, at least MIN_CASES in scope) has its 99.9% Wilson upper bound at or below it and no
single run's item came within p = HEADROOM_P of the gate's binomial test (conformance.spec.known_issues, p < 1e-3).
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

from conformance.checks.registry import value_checks
from conformance.spec.issue_files import load
from conformance.spec.known_issues import binomial_tail
from conformance.store.summary_reader import read_summary

MIN_CASES = 20
Z = 1.645  # one-sided 95%
Z_HEADROOM = 3.09  # one-sided 99.9%
HEADROOM_P = 0.05


def wilson(explained: int, cases: int, z: float = Z, upper: bool = False) -> float:
    """The one-sided Wilson bound of explained / cases (lower, or with `upper` the upper one)."""
    if cases == 0:
        return 1.0 if upper else 0.0
    p = explained / cases
    centre = p + z * z / (2 * cases)
    spread = z * math.sqrt(p * (1 - p) / cases + z * z / (4 * cases * cases))
    return min(1.0, max(0.0, (centre + (spread if upper else -spread)) / (1 + z * z / cases)))


def cells(runs: list[Path]) -> dict[str, dict[tuple, list[int]]]:
    """issue -> (run, op, target, dtype, mode) -> [cases in scope, cases explained] (the largest over checks)."""
    found: dict[str, dict[tuple, list[int]]] = defaultdict(dict)
    for run in runs:
        for group in read_summary(run)["groups"]:
            for issue, (in_scope, explained) in (group.get("issue_scope") or {}).items():
                key = (run.name, group["op"], group["target"], group["dtype"], group["mode"])
                kept = found[issue].setdefault(key, [0, 0])
                kept[0], kept[1] = max(kept[0], in_scope), max(kept[1], explained)
    return found


def headroom(issues_file: Path, runs: list[Path]) -> None:
    """One Markdown row per entry with a case fraction below 1.0: the closest run, the pooled upper bound, a verdict."""
    found = cells(runs)
    print("| entry | max_case_fraction | closest run's item | its p | highest pooled cell (99.9% upper) | verdict |")
    print("| --- | ---: | --- | ---: | --- | --- |")
    for issue in sorted(load(issues_file, value_checks=value_checks()), key=lambda i: i.id):
        bound = issue.max_case_fraction
        if bound is None or bound >= 1.0:
            continue
        by_cell = found.get(issue.id, {})
        if not by_cell:
            print(f"| `{issue.id}` | {bound} | no case in scope in these runs | - | - | not measured here |")
            continue
        closest = min(by_cell.items(), key=lambda kv: binomial_tail(kv[1][1], kv[1][0], bound))
        p = binomial_tail(closest[1][1], closest[1][0], bound)
        pooled: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
        for (_, *cell), (in_scope, explained) in by_cell.items():
            pooled[tuple(cell)][0] += in_scope
            pooled[tuple(cell)][1] += explained
        judged = {cell: wilson(e, n, Z_HEADROOM, upper=True) for cell, (n, e) in pooled.items() if n >= MIN_CASES}
        top = max(judged, key=judged.__getitem__) if judged else None
        roomy = p > HEADROOM_P and all(upper <= bound for upper in judged.values())
        (run, *cell), (n, e) = closest
        shown = "-" if top is None else f"{'/'.join(top)}: {pooled[top][1]}/{pooled[top][0]} ({judged[top]:.2f})"
        verdict = "room" if roomy else "**no room**"
        print(f"| `{issue.id}` | {bound} | {run} {'/'.join(cell)}: {e}/{n} | {p:.2g} | {shown} | {verdict} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (each with summary.json)")
    parser.add_argument("--headroom", type=Path, help="a known-issues file: judge its case fractions instead")
    args = parser.parse_args()
    if args.headroom is not None:
        headroom(args.headroom, args.runs)
        return
    for issue, by_cell in sorted(cells(args.runs).items()):
        pooled: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])  # over runs: the same cell, other draws
        for (_, *cell), (in_scope, explained) in by_cell.items():
            pooled[tuple(cell)][0] += in_scope
            pooled[tuple(cell)][1] += explained
        judged = [(wilson(e, n), n, e, cell) for cell, (n, e) in pooled.items() if n >= MIN_CASES]
        if not judged:
            print(f"{issue}: no cell with {MIN_CASES} cases in scope ({sum(n for n, _ in pooled.values())} in all)")
            continue
        lowest = min(judged)
        proposed = math.floor(lowest[0] * 20) / 20
        print(
            f"{issue}: min_case_fraction = {proposed:.2f}  (lowest cell {'/'.join(lowest[3])}: {lowest[2]} of "
            f"{lowest[1]}; {len(judged)} cells)"
        )


if __name__ == "__main__":
    main()
