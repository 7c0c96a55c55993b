"""Tolerance overrides: a user's own acceptance policy for some ops, without editing the suite.

A CI gate on new hardware may need a looser (or stricter) tolerance somewhere, with its reason
on record.  `--tolerances FILE` (TOML) adds rules that are tried before each op's own; the
first matching one applies, and its name and reason appear in every record and report.

    [[tolerance]]
    name = "nvjpeg-idct"              # shown in messages and records
    op = "jpeg_v2"                    # glob over op names
    check = "cross_device"            # glob; default "*"
    dtype = "*"                       # glob; default "*"
    mode = "*"                        # glob; default "*"
    target = "cuda:*"                 # glob; default "*"
    atol = 2                          # default 0
    rtol = 0                          # default 0
    max_mismatch_fraction = 0.01      # default 0
    max_mae = 0.5                     # optional
    min_psnr = 30                     # optional
    reason = "nvjpeg's IDCT rounds differently from libjpeg's: measured max 2 on an H100"
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from pathlib import Path

from conformance.compare import Tolerance
from conformance.known_issues import tomllib

_SCOPE = ("op", "check", "dtype", "mode", "target")
_NUMBERS = ("atol", "rtol", "max_mismatch_fraction", "max_mae", "min_psnr")
_FIELDS = {"name", "reason", *_SCOPE, *_NUMBERS}


class OverridesError(ValueError):
    """A tolerance-overrides file that cannot be trusted; named with file and entry."""


@dataclass(frozen=True)
class Override:
    tolerance: Tolerance
    op: str
    check: str = "*"
    dtype: str = "*"
    mode: str = "*"
    target: str = "*"

    def matches(self, op: str, check: str, dtype: str, mode: str, target: str) -> bool:
        pairs = ((self.op, op), (self.check, check), (self.dtype, dtype), (self.mode, mode), (self.target, target))
        return all(fnmatch.fnmatchcase(value, pattern) for pattern, value in pairs)


def load(path: Path) -> list[Override]:
    """Parse and validate a file; raises OverridesError naming the file and entry."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise OverridesError(f"{path}: cannot read ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise OverridesError(f"{path}: not valid TOML ({exc})") from None
    unknown_tables = set(data) - {"tolerance"}
    if unknown_tables:
        raise OverridesError(f"{path}: unknown top-level key(s) {sorted(unknown_tables)}; expected [[tolerance]] tables")
    entries = data.get("tolerance", [])
    if not isinstance(entries, list):
        raise OverridesError(f"{path}: 'tolerance' must be an array of tables ([[tolerance]])")
    return [_entry(entry, f"{path} [[tolerance]] #{number}") for number, entry in enumerate(entries, 1)]


def _entry(entry: object, where: str) -> Override:
    if not isinstance(entry, dict):
        raise OverridesError(f"{where}: must be a table")
    unknown = set(entry) - _FIELDS
    if unknown:
        raise OverridesError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(_FIELDS)}")
    for required in ("name", "op", "reason"):
        if not isinstance(entry.get(required), str) or not entry[required].strip():
            raise OverridesError(f"{where}: field {required!r} is required and must be a non-empty string")
    for key in _SCOPE:
        if key in entry and not isinstance(entry[key], str):
            raise OverridesError(f"{where}: field {key!r} must be a string (a glob pattern)")
    for key in _NUMBERS:
        value = entry.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value != value):
            raise OverridesError(f"{where}: field {key!r} must be a number, got {value!r}")
    try:
        tolerance = Tolerance(name=entry["name"], reason=entry["reason"],
                              **{k: float(entry[k]) for k in _NUMBERS if k in entry})
    except ValueError as exc:
        raise OverridesError(f"{where}: {exc}") from None
    return Override(tolerance, **{k: entry[k] for k in _SCOPE if k in entry})


_active: list[Override] = []


def install(overrides: list[Override]) -> None:
    """Make these the session's overrides (the plugin calls this once per process)."""
    _active[:] = overrides


def pick(op: str, check: str, dtype: str, mode: str, target: str) -> Tolerance | None:
    """The first installed override for this op and scope, if any."""
    for override in _active:
        if override.matches(op, check, dtype, mode, target):
            return override.tolerance
    return None
