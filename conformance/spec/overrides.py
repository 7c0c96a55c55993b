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
from collections.abc import Sequence
from pathlib import Path

from conformance.spec.tables import check_fields, read_entries
from conformance.spec.tolerances import Rule, Tolerance

_SCOPE = ("check", "dtype", "mode", "target")
_NUMBERS = ("atol", "rtol", "max_mismatch_fraction", "max_mae", "min_psnr")
_FIELDS = {"name", "reason", "op", *_SCOPE, *_NUMBERS}


class OverridesError(ValueError):
    """A tolerance-overrides file that cannot be trusted; named with file and entry."""


Override = tuple[str, Rule]  # (glob over op names, the rule for check/dtype/mode/target)


def load(path: Path) -> list[Override]:
    """Parse and validate a file; raises OverridesError naming the file and entry."""
    return [_entry(raw, where) for raw, where in read_entries(path, "tolerance", OverridesError)]


def _entry(raw: dict, where: str) -> Override:
    check_fields(raw, _FIELDS, ("name", "op", "reason"), where, OverridesError)
    for key in _SCOPE:
        if key in raw and not isinstance(raw[key], str):
            raise OverridesError(f"{where}: field {key!r} must be a string (a glob pattern)")
    for key in _NUMBERS:
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value != value):
            raise OverridesError(f"{where}: field {key!r} must be a number, got {value!r}")
    try:
        tolerance = Tolerance(
            name=raw["name"], reason=raw["reason"], **{k: float(raw[k]) for k in _NUMBERS if k in raw}
        )
    except ValueError as exc:
        raise OverridesError(f"{where}: {exc}") from None
    return raw["op"], Rule(tolerance, **{k: raw[k] for k in _SCOPE if k in raw})


def pick(rules: Sequence[Override], op: str, check: str, dtype: str, mode: str, target: str) -> Tolerance | None:
    """The first of the run's override rules (RunConfig.overrides) for this op and scope, if any."""
    for op_pattern, rule in rules:
        if fnmatch.fnmatchcase(op, op_pattern) and rule.matches(check, dtype, mode, target):
            return rule.tolerance
    return None
