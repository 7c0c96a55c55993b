"""The columns of a cell's checks table (the page's drill-down): each a heading and the one function that says what
a check's cell holds, from its summary group.  The page draws whatever is listed here as text, so a new column is
one field of `store.summary_model.Group` and one entry below; nothing in the page's script names a field."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from conformance.spec.tolerances import is_uncalibrated
from conformance.store.summary_model import Group


@dataclass(frozen=True)
class CheckColumn:
    heading: str
    text: Callable[[Group], str]  # what the column says of one check (set as text: never markup)


def verdict_label(verdict: str) -> str:
    """A verdict as the page says it (known_issue: known issue)."""
    return verdict.replace("_", " ")


def _cases(group: Group) -> str:
    return ", ".join(f"{count} {verdict_label(verdict)}" for verdict, count in group.counts.items())


def _number(value: object) -> str:
    """To four significant digits where it is a number (a summary may hold "inf" or "nan" as text)."""
    try:
        return f"{float(value):.4g}"  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)


def _worst(group: Group) -> str:
    """The largest difference against the tolerance's atol."""
    worst = group.worst
    if worst is None or worst.max_abs is None:
        return ""
    uncalibrated = " (uncalibrated)" if is_uncalibrated(worst.tolerance) else ""
    return f"{_number(worst.max_abs)} / {_number(worst.atol)}{uncalibrated}"


def _notes(group: Group) -> str:
    """A warning, the side a cross-device gap is on, what unmoved modules did, and which forms were tried."""
    notes = [group.first_warning]
    if group.diverges.get("cpu"):
        notes.append(f"differs from the cpu in {group.diverges['cpu']} case(s), where the cpu is off the reference")
    notes.append("; ".join(f"{behaviour} ({count})" for behaviour, count in group.behaviours.items()))
    notes.append("; ".join(f"{kind}: {', '.join(values)}" for kind, values in group.covered.items()))
    return "; ".join(note for note in notes if note)


CHECK_COLUMNS = (
    CheckColumn("check", lambda group: group.check),
    CheckColumn("verdict", lambda group: verdict_label(group.verdict)),
    CheckColumn("cases", _cases),
    CheckColumn("worst |diff| / atol", _worst),
    CheckColumn("known issues", lambda group: ", ".join(group.known_issues)),
    CheckColumn("notes", _notes),
)


def headings() -> list[str]:
    """The table's header row."""
    return [column.heading for column in CHECK_COLUMNS]


def check_cells(group: Group) -> list[str]:
    """One check's row of the table: each column's text, in CHECK_COLUMNS' order."""
    return [column.text(group) for column in CHECK_COLUMNS]
