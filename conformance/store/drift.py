"""What changed between two sets of recorded outputs (a baseline and a later run).

Each output is matched exactly (op, target, dtype, mode and the case's JSON).  Identical
digests are unchanged; otherwise both arrays are compared in float64 under the variant's
cross-device tolerance (what two runs of one op may differ by): beyond it the change
fails, inside it the change is information with its size.  An error on one side only, or a
different error class, is a change that fails.  Cases recorded on one side only are listed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from conformance.spec.recipes import peak
from conformance.spec.tolerances import Metrics, Tolerance, measure
from conformance.store.outputs import ArrayReader, OutputKey, OutputsError, Recorded, read_index

FAILING = ("changed", "error_changed")
SEVERITIES = ("changed", "error_changed", "bit_level", "only_in_baseline", "only_in_run")
SEVERITY_TEXT = {
    "changed": "changed beyond tolerance",
    "error_changed": "raised differently",
    "bit_level": "changed inside tolerance (information)",
    "only_in_baseline": "in the baseline only",
    "only_in_run": "in this run only",
}
FALLBACK = Tolerance("exact", reason="no tolerance was recorded with the output: any change is reported as one")


@dataclass
class Change:
    key: OutputKey
    severity: str
    message: str
    metrics: Metrics | None = None
    tolerance: str | None = None

    @property
    def fails(self) -> bool:
        return self.severity in FAILING

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.key.op,
            "target": self.key.target,
            "dtype": self.key.dtype,
            "mode": self.key.mode,
            "case": self.key.case,
            "severity": self.severity,
            "message": self.message,
            "tolerance": self.tolerance,
            "metrics": self.metrics.to_dict() if self.metrics else None,
        }


def tolerance_of(*records: Recorded | None) -> Tolerance:
    for record in records:
        if record is not None and record.tolerance:
            try:
                return Tolerance(**record.tolerance)
            except (TypeError, ValueError):
                continue
    return FALLBACK


def data_range(dtype: str) -> float:
    return peak(dtype)


def compare_one(
    key: OutputKey,
    before: Recorded,
    after: Recorded,
    before_array: np.ndarray | None,
    after_array: np.ndarray | None,
    tolerance: Tolerance,
) -> Change | None:
    """None when unchanged; else the change and its severity."""
    if before.error is not None or after.error is not None:
        if before.error == after.error:
            return None
        was = f"raised {before.error}" if before.error else "returned an output"
        now = f"raises {after.error}" if after.error else "returns an output"
        return Change(key, "error_changed", f"{was} in the baseline, {now} now")
    if before.digest == after.digest:
        return None
    assert before_array is not None and after_array is not None
    if before_array.shape != after_array.shape:
        return Change(
            key, "changed", f"shape {after_array.shape}, baseline {before_array.shape}", tolerance=tolerance.name
        )
    if before_array.dtype != after_array.dtype:
        note = f"; dtype {after_array.dtype}, baseline {before_array.dtype}"
    else:
        note = ""
    metrics = measure(after_array, before_array, tolerance, data_range(key.dtype))
    violations = tolerance.violations(metrics)
    if violations or note:
        return Change(
            key, "changed", "; ".join(violations) + note + f" [tolerance {tolerance.name!r}]", metrics, tolerance.name
        )
    return Change(
        key,
        "bit_level",
        f"{_changed(after_array, before_array)} of {metrics.elements} elements differ, "
        f"max abs diff {metrics.max_abs:.6g}, inside tolerance {tolerance.name!r}",
        metrics,
        tolerance.name,
    )


def _changed(a: np.ndarray, b: np.ndarray) -> int:
    return int(np.count_nonzero(~((a == b) | (np.isnan(a.astype(np.float64)) & np.isnan(b.astype(np.float64))))))


def compare_folders(baseline: Path, run: Path) -> list[Change]:
    """Every change between two outputs folders, failures first (raises OutputsError on damage)."""
    before, after = read_index(baseline), read_index(run)
    if not before:
        raise OutputsError(f"{baseline} holds no recorded outputs")
    if not after:
        raise OutputsError(f"{run} holds no recorded outputs")
    if not {k.op for k in before} & {k.op for k in after}:
        raise OutputsError(
            f"no op in common: the baseline has {sorted({k.op for k in before})}, the run "
            f"{sorted({k.op for k in after})} (a baseline from another op set?)"
        )
    read_before, read_after = ArrayReader(baseline), ArrayReader(run)
    changes: list[Change] = []
    for key in sorted(before.keys() | after.keys(), key=lambda k: (before.get(k) is None or after.get(k) is None, k)):
        old, new = before.get(key), after.get(key)
        if old is None or new is None:
            changes.append(
                Change(
                    key,
                    "only_in_run" if old is None else "only_in_baseline",
                    "no output for this case " + ("in the baseline" if old is None else "in this run"),
                )
            )
            continue
        if old.error is None and new.error is None and old.digest == new.digest:
            continue
        old_array = read_before.load(old) if old.error is None else None
        new_array = read_after.load(new) if new.error is None else None
        found = compare_one(key, old, new, old_array, new_array, tolerance_of(new, old))
        if found is not None:
            changes.append(found)
    changes.sort(key=lambda c: (SEVERITIES.index(c.severity), c.key))
    return changes


def counts(changes: list[Change], compared: int) -> dict[str, int]:
    found = Counter(c.severity for c in changes)
    return {"compared": compared, **{s: found.get(s, 0) for s in SEVERITIES}}
