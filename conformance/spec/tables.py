"""The project's TOML files of `[[table]]` entries (known issues, tolerance overrides): reading
them and the checks every entry gets, each defect a one-line error naming the file and entry."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, from PyPI
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]


def read_entries(path: Path, table: str, error: type[Exception]) -> list[tuple[dict, str]]:
    """Each `[[table]]` entry of the file with where it is ("<path> [[table]] #n")."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML: {exc}") from None
    unknown = set(data) - {table}
    if unknown:
        raise error(f"{path}: unknown top-level key(s) {sorted(unknown)}; use [[{table}]] tables")
    entries = data.get(table, [])
    if not isinstance(entries, list):
        raise error(f"{path}: '{table}' must be an array of tables ([[{table}]])")
    found = []
    for number, raw in enumerate(entries, 1):
        where = f"{path} [[{table}]] #{number}"
        if not isinstance(raw, dict):
            raise error(f"{where}: each [[{table}]] must be a table")
        found.append((raw, where))
    return found


def check_fields(raw: dict, allowed: set[str], required: Iterable[str], where: str, error: type[Exception]) -> None:
    """No unknown fields; each required one a non-empty string."""
    unknown = set(raw) - allowed
    if unknown:
        raise error(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
    for name in required:
        if not isinstance(raw.get(name), str) or not raw[name].strip():
            raise error(f"{where}: field {name!r} is required and must be a non-empty string")
