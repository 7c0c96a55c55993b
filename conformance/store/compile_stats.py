"""What the compiled targets compiled, per op: seconds spent in calls that compiled, graphs, graph breaks and
calls.  Each process writes `compile/<worker>.json` when it closes; the summary's readers add them up.
Information only: a recompile or a graph break is a cost, not a wrong answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.store.writer import write_atomically

FOLDER = "compile"
FIELDS = ("seconds", "graphs", "graph_breaks", "calls")


def write(run_dir: Path, worker: str, stats: dict[str, dict[str, float]]) -> None:
    if not stats:
        return
    folder = run_dir / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    write_atomically(folder / f"{worker}.json", json.dumps(stats, sort_keys=True))


def read(run_dir: Path) -> dict[str, dict[str, float]]:
    """Per op, the processes' counts added up; unreadable files are skipped (the numbers are information)."""
    total: dict[str, dict[str, float]] = {}
    folder = run_dir / FOLDER
    if folder.is_symlink() or not folder.is_dir():
        return total
    for path in sorted(folder.glob("*.json")):
        try:
            found: Any = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(found, dict):
            continue
        for op, counts in found.items():
            if not isinstance(counts, dict):
                continue
            kept = total.setdefault(str(op), dict.fromkeys(FIELDS, 0.0))
            for name in FIELDS:
                value = counts.get(name, 0)
                kept[name] += float(value) if isinstance(value, (int, float)) else 0.0
    return total


def line(stats: dict[str, dict[str, float]]) -> str | None:
    """The terminal's one line about compiling, or None when nothing was compiled."""
    if not stats:
        return None
    seconds = sum(s["seconds"] for s in stats.values())
    graphs = int(sum(s["graphs"] for s in stats.values()))
    breaks = int(sum(s["graph_breaks"] for s in stats.values()))
    broken = sorted(op for op, s in stats.items() if s["graph_breaks"])
    text = (
        f"compiled: {len(stats)} ops, {graphs} graphs in {seconds:.0f} s of calls that compiled, {breaks} graph breaks"
    )
    if broken:
        text += f" (in {', '.join(broken[:6])}{', ...' if len(broken) > 6 else ''})"
    return text + "; information, not a verdict"
