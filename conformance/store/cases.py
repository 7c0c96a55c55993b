"""`--cases-from`: the cases an earlier run checked, read back from its store (JSON only)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.store.reader import expand, file_records


class SavedCasesError(ValueError):
    """A --cases-from source that is missing, not a run, or holds a malformed line."""


def saved_cases(source: Path) -> dict[tuple[str, str, str, str], list[Any]]:
    """The cases a run checked, per (module, test, dtype, mode), in the order it checked them.

    `source` is a run folder or one of its outcomes/*.jsonl files.  Only JSON is read (never
    pickles); a line that does not parse is an error naming it, except a torn last line (a run
    killed mid-write).
    """
    from conformance.recipes import Case, RecipeError
    from conformance.spec import variant_key

    if source.is_dir():
        files = sorted((source / "outcomes").glob("*.jsonl"))
        if not files:
            raise SavedCasesError(f"{source} holds no outcomes/*.jsonl (not a run folder)")
    elif source.is_file():
        files = [source]
    else:
        raise SavedCasesError(f"no such run folder or outcomes file: {str(source)!r}")
    plans: dict[tuple[str, str, str, str], list[Any]] = {}
    seen: set[tuple] = set()
    for path in files:
        for number, last, record in file_records(path):
            if record is None:
                if last:
                    continue
                raise SavedCasesError(f"{path}:{number}: not a JSON record")
            for outcome in expand(record):
                if outcome.get("phase") not in ("explore", "final", "replay") or "case" not in outcome:
                    continue
                try:
                    key = variant_key(str(outcome["nodeid"]), str(outcome["test"]), str(outcome["dtype"]),
                                      str(outcome["mode"]))
                    case = Case.from_json(json.dumps(outcome["case"]))
                except (KeyError, TypeError, RecipeError) as exc:
                    raise SavedCasesError(f"{path}:{number}: not a case record ({exc})") from None
                if (key, case.key) not in seen:
                    seen.add((key, case.key))
                    plans.setdefault(key, []).append(case)
    if not plans:
        raise SavedCasesError(f"{source} holds no checked cases")
    return plans
