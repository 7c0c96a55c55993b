"""The report's cross-library page (`crosslib.html`): one row per operation, one column per library
and target, each cell the worst difference against the reference and against each other library,
with the pictures of the worst cases.

It reads what the run recorded: the operations and their implementations (`Summary.operations`),
each implementation's reference groups (verdicts, worst difference, and the cross-library
measurement `peers`), and the `worst` records whose arrays are the worst cases.  Pairs are measured
once (by the later implementation); the page shows each pair in both cells.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from conformance.devices.facts import FactsBook
from conformance.report import pictures
from conformance.report.figures import artifact_path
from conformance.spec.libraries import ORDER
from conformance.spec.recipes import peak
from conformance.store.summary_model import Summary, rank

MAX_CARDS = 400  # worst-case cards with pictures; beyond that cells show their numbers only


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else number


class WorstRecords:
    """The `worst` records as they stream past: the largest per (machine, op, target, against)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str, str, str], dict[str, Any]] = {}

    def add(self, record: dict[str, Any]) -> None:
        if record.get("kind") != "worst":
            return
        key = (
            str(record.get("machine", "")),
            str(record.get("op")),
            str(record.get("target")),
            str(record.get("against")),
        )
        value = _number(record.get("max_abs"))
        previous = self.kept.get(key)
        if value is not None and (previous is None or value > (_number(previous.get("max_abs")) or 0)):
            self.kept[key] = record


@dataclass
class Entry:
    """One implementation on one target (and machine): what its cell shows."""

    op: str
    library: str
    target: str
    machine: str
    verdict: str = "pass"
    examples: int = 0
    reference: dict[str, Any] | None = None  # worst reference difference: max_abs, atol, dtype, mode
    known_issues: set[str] = field(default_factory=set)
    pairs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)  # (other op, its target) -> worst
    anchor: str | None = None


def _pair(
    found: dict[tuple[str, str], dict[str, Any]], key: tuple[str, str], info: dict[str, Any], dtype: str, mode: str
) -> None:
    kept = found.setdefault(key, {"library": info.get("library"), "max_abs": None, "compared": 0, "skipped": {}})
    kept["compared"] += int(info.get("compared", 0) or 0)
    for reason, count in (info.get("skipped") or {}).items():
        kept["skipped"][reason] = kept["skipped"].get(reason, 0) + count
    value = _number(info.get("max_abs"))
    if value is not None and (kept["max_abs"] is None or value > kept["max_abs"]):
        kept.update(max_abs=value, psnr=info.get("psnr"), dtype=dtype, mode=mode)


def model(summary: Summary, worst: WorstRecords, targets: FactsBook) -> dict[str, Any] | None:
    """Rows, columns and cells of the page; None when the run checked no operation's implementations."""
    operations = summary.operations
    implementation = {
        impl["op"]: (name, impl)
        for name, described in operations.items()
        for impl in described.get("implementations", [])
        if isinstance(impl, dict) and "op" in impl
    }
    if not implementation:
        return None
    entries: dict[tuple[str, str, str], Entry] = {}  # (machine, op, target)
    measured: list[tuple[tuple[str, str, str], tuple[str, str], dict[str, Any], str, str]] = []
    for group in summary.groups:
        if group.op not in implementation:
            continue
        key = (group.machine, group.op, group.target)
        entry = entries.get(key)
        if entry is None:
            library = implementation[group.op][1].get("library", "?")
            entry = entries[key] = Entry(group.op, library, group.target, key[0])
        if rank(group.verdict) < rank(entry.verdict):
            entry.verdict = group.verdict
        entry.examples = max(entry.examples, group.examples)
        entry.known_issues.update(group.known_issues)
        if group.check != "reference":
            continue
        worst_here = group.worst
        value = _number(worst_here.max_abs) if worst_here is not None else None
        if (
            worst_here is not None
            and value is not None
            and (entry.reference is None or value > entry.reference["max_abs"])
        ):
            entry.reference = {
                "max_abs": value,
                "atol": worst_here.atol,
                "tolerance": worst_here.tolerance,
                "dtype": group.dtype,
                "mode": group.mode,
            }
        for other, info in group.peers.items():
            if isinstance(info, dict):
                measured.append((key, (other, str(info.get("target", group.target))), info, group.dtype, group.mode))
    for (machine, op, target), (other, other_target), info, dtype, mode in measured:
        _pair(entries[(machine, op, target)].pairs, (other, other_target), info, dtype, mode)
        mirror = entries.get((machine, other, other_target))
        if mirror is not None:
            _pair(mirror.pairs, (op, target), info | {"library": entries[(machine, op, target)].library}, dtype, mode)
    columns = sorted(
        {(e.machine, e.library, e.target) for e in entries.values()},
        key=lambda c: (c[0], ORDER.index(c[1]) if c[1] in ORDER else len(ORDER), c[1], targets[c[2]].sort_key()),
    )
    rows = []
    for name in sorted({implementation[e.op][0] for e in entries.values()}):
        cells = []
        for machine, library, target in columns:
            found = sorted(
                (
                    e
                    for e in entries.values()
                    if implementation[e.op][0] == name
                    and e.machine == machine
                    and e.library == library
                    and e.target == target
                ),
                key=lambda e: e.op,
            )
            cells.append(found)
        verdicts = [e.verdict for cell in cells for e in cell]
        rows.append(
            {
                "operation": name,
                "described": operations[name],
                "cells": cells,
                "worst_verdict": min(verdicts, key=rank) if verdicts else "pass",
            }
        )
    rows.sort(key=lambda r: (rank(r["worst_verdict"]), r["operation"]))
    return {
        "columns": [{"machine": m, "library": lib, "target": t} for m, lib, t in columns],
        "rows": rows,
        "entries": entries,
        "refusals": refusals(summary, operations),
    }


# what an implementation's error items showed, by what it declares and their worst verdict
_SHOWN = {
    ("raises", "pass"): "raises",
    ("must raise", "pass"): "raises",
    ("accepts", "pass"): "accepts (documented)",
    ("must raise", "known_issue"): "accepts (known issue)",
    ("raises", "known_issue"): "other class (known issue)",
}


def refusals(summary: Summary, operations: Mapping[str, Any]) -> dict[str, Any]:
    """Which library refuses which invalid input: per operation and error mode, each library's declaration and
    what its items showed (the worst verdict over targets), so the libraries that accept what the others refuse
    stand out.  Columns in the libraries' order."""
    verdicts: dict[tuple[str, str], str] = {}
    for group in summary.groups:
        key = (group.op, group.mode)
        if key in verdicts and rank(verdicts[key]) <= rank(group.verdict):
            continue
        verdicts[key] = group.verdict
    libraries: list[str] = []
    rows = []
    for name, described in sorted(operations.items()):
        for mode, why in (described.get("invalid") or {}).items():
            cells: dict[str, dict[str, str]] = {}
            for impl in described.get("implementations", []):
                declared = (impl.get("on_invalid") or {}).get(mode)
                if not isinstance(declared, dict):
                    continue
                verdict = verdicts.get((str(impl.get("op")), mode), "not run")
                kind = str(declared.get("declared"))
                if kind == "not applicable":
                    shown = "n/a"
                elif verdict in ("skipped", "not run"):
                    shown = verdict
                else:
                    shown = _SHOWN.get((kind, verdict), f"{verdict}" if kind != "accepts" else f"accepts: {verdict}")
                cell = {"shown": shown, "verdict": verdict, "declared": kind, "why": str(declared.get("why", ""))}
                library = str(impl.get("library"))
                cells[library + ("" if library not in cells else f" ({impl.get('op')})")] = cell
            libraries += [lib for lib in cells if lib not in libraries]
            rows.append({"operation": name, "mode": mode, "why": why, "cells": cells})
    libraries.sort(key=lambda lib: (ORDER.index(lib) if lib in ORDER else len(ORDER), lib))
    return {"libraries": libraries, "rows": rows}


def cards(
    found: dict[str, Any], worst: WorstRecords, run_dir: Path, only: set[tuple[str, str, str]]
) -> list[dict[str, Any]]:
    """Pictures of the worst cases (against the reference and each other library) of the entries in `only`."""
    made: list[dict[str, Any]] = []
    for (machine, op, target), entry in sorted(found["entries"].items()):
        if (machine, op, target) not in only:
            continue
        kept = sorted(
            (r for (m, o, t, _), r in worst.kept.items() if (m, o, t) == (machine, op, target)),
            key=lambda r: (r.get("against") != "reference", str(r.get("against"))),
        )
        if not kept or len(made) >= MAX_CARDS:
            continue
        entry.anchor = f"card-{len(made)}"
        panels = [_comparison(r, artifact_path(run_dir, r.get("artifact"))) for r in kept]
        made.append({"anchor": entry.anchor, "entry": entry, "comparisons": panels})
    return made


def _comparison(record: dict[str, Any], path: Path | None) -> dict[str, Any]:
    against = str(record.get("against"))
    shown: dict[str, Any] = {
        "against": against,
        "record": record,
        "case_json": json.dumps(record.get("case"), sort_keys=True) if record.get("case") else "",
        "label": "the reference"
        if against == "reference"
        else f"{record.get('peer_library') or against} ({against} on {record.get('peer_target')})",
    }
    if path is None:
        return shown | {"missing": "no arrays were kept"}
    try:
        with np.load(path, allow_pickle=False) as stored:
            arrays = {name: stored[name].astype(np.float64) for name in stored.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile):
        return shown | {"missing": f"{record.get('artifact')} could not be read"}
    white = peak(str(record.get("dtype")))
    other = "reference" if against == "reference" else "peer"
    panels = []
    for name, label in (
        ("input", "input"),
        ("reference", "reference"),
        ("peer", shown["label"]),
        ("output", f"{record.get('op')} output"),
    ):
        if name in arrays and arrays[name].ndim >= 2:
            panels.append({"label": label, "image": pictures.embed(pictures.to_picture(arrays[name], white))})
    shown["panels"] = panels
    if "output" in arrays and other in arrays and arrays["output"].shape == arrays[other].shape:
        diff = pictures.difference(arrays["output"], arrays[other])
        finite = diff[np.isfinite(diff)]
        top = float(finite.max()) if finite.size else 0.0
        shown["heatmap"] = pictures.embed(pictures.heatmap(diff, top))
        shown["scale"] = pictures.scale_label(top, "levels" if white > 1 else "")
    return shown
