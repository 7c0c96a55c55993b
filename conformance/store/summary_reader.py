"""Reading a run's summary.json back: as the run wrote it (`read_summary`, plain JSON) or as the typed model every
reader uses (`load_summary`).  A file that is there and cannot be shown, another schema or a damaged field, is one
SummaryError line that says how to rebuild it, never silently replaced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.store.examples import StoreError
from conformance.store.summary_file import FLAT_SCHEMA, SCHEMA, unpack
from conformance.store.summary_model import Summary


class SummaryError(StoreError):
    """A summary.json that is there but cannot be shown (another schema, a damaged field): one line that says
    which and how to rebuild it.  The file is left as it is: it may be the only copy of a merge's columns."""


# What the report reads of a summary, by type: a file that has these is safe to draw, one that lacks them is refused.
FIELDS: dict[str, type | tuple[type, ...]] = {
    "complete": bool,
    "torn_lines": int,
    "environment": dict,
    "totals": dict,
    "groups": list,
    "unused_known_issues": list,
    "unreproduced_known_issues": list,
}
OPTIONAL_FIELDS: dict[str, type | tuple[type, ...]] = {"interrupted": list, "notes": list, "operations": dict}
GROUP_FIELDS: dict[str, type | tuple[type, ...]] = {
    **dict.fromkeys(("machine", "test", "op", "target", "dtype", "mode", "check", "verdict"), str),
    "virtual": bool,
    "examples": int,
    "counts": dict,
    "worst": (dict, type(None)),
    "known_issues": list,
}


def _unusable(found: Any) -> str | None:
    """Why a parsed summary.json cannot be shown (None: it can)."""
    if not isinstance(found, dict):
        return f"a JSON {type(found).__name__}, not an object"
    if found.get("schema") not in (SCHEMA, FLAT_SCHEMA):
        return f"schema {found.get('schema')!r}, this conformance writes {SCHEMA!r}"
    wanted = FIELDS | {name: kind for name, kind in OPTIONAL_FIELDS.items() if name in found}
    wrong = [name for name, kind in wanted.items() if not isinstance(found.get(name), kind)]
    if wrong:
        return f"its {wrong[0]!r} is missing or of the wrong type"
    for n, group in enumerate(found["groups"]):
        group = group if isinstance(group, dict) else {}
        wrong = [k for k, kind in GROUP_FIELDS.items() if not isinstance(group.get(k), kind)]
        if wrong or not _counts(group["counts"]):
            return f"its group {n} has no usable {(wrong or ['counts'])[0]!r}"
    return None if _counts(found["totals"]) else "its 'totals' are not counts"


def _counts(found: dict[str, Any]) -> bool:
    return all(isinstance(v, int) for v in found.values())


def read_summary(run_dir: Path) -> dict[str, Any] | None:
    """run_dir/summary.json as the run wrote it, or None where the run has none: no file, a torn write (not JSON),
    or only the session's `complete` word (a bare {"complete": ...}).  One that is there and cannot be shown
    raises SummaryError (never silently replaced)."""
    path = run_dir / "summary.json"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SummaryError(f"{path} cannot be read ({exc.strerror or exc})") from None
    try:
        found = unpack(json.loads(text))
    except json.JSONDecodeError:
        return None
    if isinstance(found, dict) and "schema" not in found and set(found) <= {"complete"}:
        return None
    why = _unusable(found)
    if why is not None:
        raise SummaryError(
            f"{path} is not a summary this conformance can show ({why}); "
            f"rebuild it from the run's records with: python -m conformance summary {run_dir}"
        )
    return found


def load_summary(run_dir: Path) -> Summary | None:
    """run_dir/summary.json as the typed model (`read_summary`'s None and SummaryError alike)."""
    found = read_summary(run_dir)
    return Summary.from_json(found) if found is not None else None
