"""Known-issue bookkeeping for a run: which entries apply to an item, and strictness across a cell.

A cell is one op variant on one target (module::test, target, dtype, mode); its items are its
checks. A strict entry about several checks must reproduce in one of them, judged at the cell's
last item it applies to.  An entry whose `where` names a feature that no case of an item had is
a typo, not a scope: it would silently match nothing, so the item says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance.spec import known_issues as ki
from conformance.spec.issue_files import load
from conformance.spec.issue_paths import files_beside
from conformance.spec.item_ids import parse_item_id
from conformance.spec.known_issues import KnownIssuesError

Cell = tuple[str, str, str, str]  # (module::test, target, dtype, mode)


def cell_of(nodeid: str) -> tuple[Cell, str] | None:
    parsed = parse_item_id(nodeid)
    if parsed is None:
        return None
    return (f"{parsed.module}::{parsed.test}", parsed.target, parsed.dtype, parsed.mode), parsed.check


class IssueBook:
    def __init__(self, explicit_files: tuple[Path, ...] = (), value_checks: tuple[str, ...] = ()) -> None:
        self._explicit = list(explicit_files)
        self._value_checks = value_checks  # checks whose entries need an envelope (conformance.checks.registry)
        self._by_file: dict[Path, list[ki.KnownIssue]] = {}
        self._origin: dict[str, Path] = {}  # entry id -> the file that has it
        self._cells: dict[Cell, list[tuple[str, str]]] | None = None  # cell -> (nodeid, check) in run order
        self._strictness: dict[tuple[str, Cell], list[Any]] = {}  # (issue, cell) -> [cases in scope, reproduced]
        self._announced: set[str] = set()
        self._described: set[str] = set()

    @property
    def explicit_files(self) -> tuple[Path, ...]:
        """The --known-issues files (they speak of every collected case module, not of a folder's)."""
        return tuple(self._explicit)

    def files_for(self, module_path: Path) -> list[Path]:
        """--known-issues files, else the files beside the case module (its family's, then the shared one)."""
        return self._explicit or files_beside(module_path)

    def files_in_use(self, module_paths: list[Path]) -> list[Path]:
        """The --known-issues files, else the files beside each of these case modules."""
        return sorted({file for path in module_paths for file in self.files_for(path)})

    def entries(self, files: list[Path]) -> list[ki.KnownIssue]:
        """Entries from these files; raises KnownIssuesError on a malformed file or an id two files use."""
        found = []
        for path in files:
            if path not in self._by_file:
                self._by_file[path] = load(path, value_checks=self._value_checks)
                for issue in self._by_file[path]:
                    first = self._origin.setdefault(issue.id, path)
                    if first != path:
                        raise KnownIssuesError(f"{path}: id {issue.id!r} is already an entry of {first}")
            found.extend(self._by_file[path])
        return found

    def first_seen(self, issues: list[ki.KnownIssue]) -> list[ki.KnownIssue]:
        """Entries whose id is not yet written to this worker's records (each is written once)."""
        new = [i for i in issues if i.id not in self._announced]
        self._announced.update(i.id for i in new)
        return new

    def first_applying(self, applicable: list[ki.KnownIssue]) -> list[ki.KnownIssue]:
        """Entries applying to an item here for the first time: written whole once (an entry that applies to
        nothing here needs only its id)."""
        new = [i for i in applicable if i.id not in self._described]
        self._described.update(i.id for i in new)
        return new

    def learn_order(self, nodeids: Iterable[str]) -> None:
        """The session's items in run order: strictness is judged at a cell's last item."""
        self._cells = {}
        for nodeid in nodeids:
            found = cell_of(nodeid)
            if found is not None:
                self._cells.setdefault(found[0], []).append((nodeid, found[1]))

    def stale(
        self, nodeid: str, check: str, op: str, applicable: list[ki.KnownIssue], in_scope: Counter, reproduced: set[str]
    ) -> ki.Staleness:
        """Strict entries that no item of this cell reproduced, judged at the cell's last item they apply to:
        fixed when the cases in their scope would have shown them (else a note: too few to tell)."""
        found = ki.Staleness()
        cell_found = cell_of(nodeid)
        if cell_found is None:
            return found
        cell, _ = cell_found
        items = (self._cells or {}).get(cell, [(nodeid, check)])
        position = next((n for n, (other, _) in enumerate(items) if other == nodeid), len(items) - 1)
        _, target, dtype, mode = cell
        for issue in applicable:
            if not issue.strict:
                continue
            seen = self._strictness.setdefault((issue.id, cell), [0, False])
            seen[0] = max(seen[0], in_scope[issue.id])  # every item of a cell checks the same cases
            seen[1] |= issue.id in reproduced
            later = [c for _, c in items[position + 1 :] if issue.applies_to(op, target, dtype, mode, c)]
            if later or not seen[0] or seen[1]:
                continue
            chance = issue.unseen_chance(seen[0])
            if chance < ki.FIXED_ALPHA:
                found.fixed.append((issue, seen[0], chance))
            else:
                found.too_few.append((issue, seen[0]))
        return found


def unknown_where_keys(applicable: list[ki.KnownIssue], features_seen: set[str]) -> list[str]:
    """Messages for `where` and `scale_by` keys that no case of the item had as a feature (a typo matches nothing,
    or scales by nothing)."""
    found = []
    for issue in applicable:
        missing = sorted(({name for name, _ in issue.where} | set(issue.scale_by)) - features_seen)
        if missing and features_seen:
            found.append(
                f"known issue {issue.id} ({issue.source}): where or scale_by key(s) {', '.join(map(repr, missing))} "
                f"name no feature of this op's cases (features: {', '.join(sorted(features_seen))}); "
                f"a misspelt key matches nothing"
            )
    return found
