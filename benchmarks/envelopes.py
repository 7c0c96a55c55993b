"""How much of each known issue's envelope the cases of real runs used: a bound over the drawable domain sits above
every seed's cases with room to spare; a "bound" that some seed reaches or breaks is a measured maximum.

Reads the examples tables of run folders (kept by `benchmarks/seed_campaign.py --keep`): each measured failure held
to an entry's size bounds carries the entry (`envelope`) and the largest ratio of its metric to the bound, scaled
by the case's features where the entry says so (`envelope_used`; above 1: outside, a failure).  Per entry: the runs
and cases that reached it, the most used and its case, how many fell outside.

    python benchmarks/seed_campaign.py --seeds 1-20 --keep /tmp/seeds
    python benchmarks/envelopes.py /tmp/seeds/seed-* --markdown docs/calibration/envelopes.md
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.compute as pc

from conformance.checks.registry import value_checks
from conformance.spec.issue_files import load
from conformance.spec.issue_paths import files_in_folder
from conformance.spec.known_issues import SIZE_BOUNDS, KnownIssue
from conformance.store.examples import read_table
from conformance.suite.stock import stock_cases

NEAR = 0.9  # a case using this much of a bound: the bound may be a measured maximum, not a bound


@dataclass
class Use:
    """One entry's envelope across the runs."""

    issue: str
    cases: int = 0
    outside: int = 0
    most: float = 0.0
    most_case: str = ""
    most_where: str = ""
    runs: set[str] = field(default_factory=set)


def uses(runs: list[Path]) -> dict[str, Use]:
    found: dict[str, Use] = {}
    columns = ["op", "target", "dtype", "mode", "check", "envelope", "envelope_used", "case"]
    for run in runs:
        table, _ = read_table(run, where=pc.field("envelope").is_valid())
        if "envelope" not in table.column_names:
            continue  # a run written before envelopes were recorded
        for row in table.select(columns).to_pylist():
            use = found.setdefault(row["envelope"], Use(row["envelope"]))
            used = float(row["envelope_used"])
            use.cases += 1
            use.outside += used > 1
            use.runs.add(run.name)
            if used > use.most:
                use.most, use.most_case = used, row["case"]
                use.most_where = f"{row['op']} [{row['dtype']}, {row['mode']}] {row['check']} on {row['target']}"
    return found


def bound_text(entry: KnownIssue) -> str:
    """The entry's size bounds as its file writes them."""
    parts = [
        f"{name} {value:g}" + (f" × {' × '.join(entry.scale_by)}" if name == "max_abs" and entry.scale_by else "")
        for name in SIZE_BOUNDS
        if (value := getattr(entry, name)) is not None
    ]
    return ", ".join(parts)


def markdown(found: dict[str, Use], runs: list[Path]) -> str:
    folder = stock_cases()
    files = files_in_folder(folder) if folder is not None else []
    stock = [entry for path in files for entry in load(path, value_checks=value_checks())]
    entries = {e.id: e for e in stock}
    lines = [
        "# Known-issue envelopes across seeds",
        "",
        f"Written by `python benchmarks/envelopes.py` from {len(runs)} run folders "
        f"({', '.join(r.name for r in runs)}).",
        "Each row: an entry whose size bounds held measured failures in these runs; *most used* is the largest ratio",
        "of a failure's metric to its bound (1.0: at the bound; above: outside, a failure of the gate).",
        "",
        "| entry | bound | runs | cases | outside | most used | where |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for use in sorted(found.values(), key=lambda u: (-u.most, u.issue)):
        entry = entries.get(use.issue)
        bound = bound_text(entry) if entry is not None else "(not in the stock file)"
        flag = " ⚠" if use.most >= NEAR else ""
        lines.append(
            f"| `{use.issue}` | {bound} | {len(use.runs)} | {use.cases} | {use.outside} | {use.most:.3f}{flag} | "
            f"{use.most_where} |"
        )
    bounded = {e.id for e in stock if any(getattr(e, name) is not None for name in SIZE_BOUNDS)}
    unused = sorted(bounded - set(found))
    lines += ["", f"Entries with size bounds that no measured failure reached in these runs: {len(unused)}."]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders")
    parser.add_argument("--markdown", type=Path, default=None, help="write the table here")
    parser.add_argument("--json", type=Path, default=None, help="write the numbers here")
    args = parser.parse_args()
    found = uses(args.runs)
    text = markdown(found, args.runs)
    if args.markdown is not None:
        args.markdown.write_text(text)
    if args.json is not None:
        data = {
            u.issue: {"cases": u.cases, "outside": u.outside, "most_used": u.most, "case": u.most_case}
            | {"where": u.most_where, "runs": sorted(u.runs)}
            for u in found.values()
        }
        args.json.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(text)
    near = [u.issue for u in found.values() if u.most >= NEAR]
    print(f"{len(near)} entries at or above {NEAR:.0%} of their bound: {', '.join(sorted(near)) or 'none'}")
    return 1 if any(u.outside for u in found.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
