"""How often each strict known issue reproduces among the cases in its scope: the `min_case_fraction`
its entry can claim, from real runs' summaries.

A strict entry that reproduces in none of the n cases in its scope of a cell (op, target, dtype, mode)
is called fixed only when (1 - min_case_fraction) ** n < 1e-3 (conformance.spec.known_issues), so a short run
is not red for an entry that simply had no chance to show.  The fraction an entry claims must be low
enough to hold in every cell it applies to: per cell (the most cases in scope, and explained, over its
check items, which see the same cases) the one-sided 95% Wilson lower bound of explained / in scope,
then the lowest over the cells with at least MIN_CASES in scope, rounded down to 0.05.

    python benchmarks/seed_campaign.py --keep /tmp/seeds
    python benchmarks/case_fractions.py /tmp/seeds/seed-*        # proposed values, per entry
"""

from __future__ import annotations

import argparse
import math
from collections import defaultdict
from pathlib import Path

from conformance.store.aggregate import read_summary

MIN_CASES = 20
Z = 1.645  # one-sided 95%


def wilson_lower(explained: int, cases: int) -> float:
    if cases == 0:
        return 0.0
    p = explained / cases
    centre = p + Z * Z / (2 * cases)
    spread = Z * math.sqrt(p * (1 - p) / cases + Z * Z / (4 * cases * cases))
    return max(0.0, (centre - spread) / (1 + Z * Z / cases))


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders (each with summary.json)")
    args = parser.parse_args()
    for issue, by_cell in sorted(cells(args.runs).items()):
        pooled: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])  # over runs: the same cell, other draws
        for (_, *cell), (in_scope, explained) in by_cell.items():
            pooled[tuple(cell)][0] += in_scope
            pooled[tuple(cell)][1] += explained
        judged = [(wilson_lower(e, n), n, e, cell) for cell, (n, e) in pooled.items() if n >= MIN_CASES]
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
