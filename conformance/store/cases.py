"""`--cases-from`: the cases an earlier run checked, read back from its examples table (never pickles)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.spec.item_ids import variant_key
from conformance.spec.recipes import Case, RecipeError
from conformance.store import examples
from conformance.store.reader import file_records, journal_files
from conformance.store.tally import CASE_PHASES


class SavedCasesError(ValueError):
    """A --cases-from source that is missing, not a run, or holds a malformed record."""


def saved_cases(source: Path) -> dict[tuple[str, ...], list[Case]]:
    """The cases a run checked, per (module, test, dtype, mode), in the order it checked them.

    `source` is a run folder (its `examples/` table; a killed run's unfinished streams included)."""
    if not source.is_dir():
        raise SavedCasesError(f"no such run folder: {str(source)!r}")
    if not examples.files(source):
        if journal_files(source):
            try:  # an older store names itself
                for path in journal_files(source):
                    for _ in file_records(path):
                        pass
            except examples.StoreError as exc:
                raise SavedCasesError(str(exc)) from None
        raise SavedCasesError(f"{source} holds no examples/ table (not a run folder, or a run that checked nothing)")
    try:
        table, _ = examples.read_table(source, columns=["nodeid", "test", "dtype", "mode", "phase", "case"])
    except examples.StoreError as exc:
        raise SavedCasesError(str(exc)) from None
    plans: dict[tuple[str, ...], list[Case]] = {}
    seen: set[tuple] = set()
    parsed: dict[str, Any] = {}
    for batch in table.to_batches(max_chunksize=8192):
        for values in batch.to_pylist():
            if values["phase"] not in CASE_PHASES or not values["case"]:
                continue
            key = variant_key(str(values["nodeid"]), str(values["test"]), str(values["dtype"]), str(values["mode"]))
            if (key, values["case"]) in seen:
                continue
            seen.add((key, values["case"]))
            case = parsed.get(values["case"])
            if case is None:
                try:
                    case = parsed[values["case"]] = Case.from_json(values["case"])
                except RecipeError as exc:
                    raise SavedCasesError(
                        f"{source}: a row of {values['nodeid']} holds no valid case ({exc})"
                    ) from None
            plans.setdefault(key, []).append(case)
    if not plans:
        raise SavedCasesError(f"{source} holds no checked cases")
    return plans
