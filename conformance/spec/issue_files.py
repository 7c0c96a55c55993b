"""Known-issue files: the TOML format and its reader, each defect a KnownIssuesError naming the file and
the entry (the model of an entry: conformance.spec.known_issues).

File format (TOML), one `[[issue]]` table per entry:

    [[issue]]
    id = "vision-8399-cpu-uint8-bicubic"        # unique, used in messages
    op = "resize"                               # glob over op names
    targets = ["cpu"]                           # globs; default ["*"]
    dtypes = ["uint8"]                          # globs; default ["*"]
    modes = ["bicubic*"]                        # globs; default ["*"]
    checks = ["reference"]                      # globs; default ["*"]
    where = { out_width = 1, channels = [3, 4] } # case features (value or list); default: every case
    match = "INTERNAL ASSERT"                   # regex searched in the failure message; default: any
    causes = ["values", "raises"]               # which causes: "values" (a measured difference) and globs over
                                                # the causes of failures with no size ("raises", "shape", "dtype",
                                                # an error's class); default: "values" where a size bound is
                                                # given (a raise has no size), else any; an entry about a
                                                # value check that names only causes without a size is
                                                # enveloped by `match` instead of a bound
    max_abs = 44                                # largest |difference| it explains (the check's max abs diff)
    scale_by = ["value_span"]                   # case features (numbers) multiplying max_abs: the bound of a
                                                # divergence that grows with the content's range, the side, ...
    max_mismatch_fraction = 0.3                 # largest fraction of elements beyond the tolerance it explains
    max_case_fraction = 0.25                    # how often it may fail among the item's cases in scope
    min_case_fraction = 0.3                     # how often at least it fails among cases in scope (deep sweeps)
    max_psnr_gap = 20                           # fidelity: most dB it may lose beyond the reference
    min_psnr = 6                                # PSNR-judged checks: the lowest PSNR it explains
    versions = { torchvision = ">=0.16" }       # PEP 440 specifiers over the imported versions; default: any
    link = "https://github.com/pytorch/vision/issues/8399"
    reason = "why it diverges"
    strict = true                               # false: may or may not reproduce
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path
from typing import cast

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from conformance.spec.known_issues import BOUNDS, MEASURED, KnownIssue, KnownIssuesError
from conformance.spec.tables import check_fields, read_entries

_LIST_FIELDS = ("targets", "dtypes", "modes", "checks", "causes", "scale_by")
_FIELDS = {
    "id",
    "op",
    "link",
    "reason",
    "strict",
    "versions",
    "where",
    "match",
    "min_case_fraction",
    *_LIST_FIELDS,
    *BOUNDS,
}
_LINK_PREFIXES = ("https://", "http://", "docs/")


def _parse_entry(raw: dict, where: str, value_checks: tuple[str, ...]) -> KnownIssue:
    check_fields(raw, _FIELDS, ("id", "link", "reason"), where, KnownIssuesError)
    if not raw["link"].startswith(_LINK_PREFIXES):
        raise KnownIssuesError(f"{where}: link must be an http(s) URL or a docs/ path, got {raw['link']!r}")
    values: dict[str, object] = {k: raw[k] for k in ("id", "link", "reason")}
    op = raw.get("op")
    if isinstance(op, str):
        op = [op]
    if not isinstance(op, list) or not op or not all(isinstance(glob, str) and glob.strip() for glob in op):
        raise KnownIssuesError(f"{where}: 'op' must be an op name or glob, or a non-empty list of them")
    values["op"] = tuple(op)
    for name in _LIST_FIELDS:
        if name in raw:
            items = raw[name]
            if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
                raise KnownIssuesError(f"{where}: {name!r} must be a non-empty list of strings")
            values[name] = tuple(items)
    if "strict" in raw:
        if not isinstance(raw["strict"], bool):
            raise KnownIssuesError(f"{where}: 'strict' must be true or false")
        values["strict"] = raw["strict"]
    versions = raw.get("versions", {})
    if not isinstance(versions, dict):
        raise KnownIssuesError(f"{where}: 'versions' must be a table like {{ torchvision = \">=0.16\" }}")
    for package, spec in versions.items():
        try:
            SpecifierSet(spec)
        except (InvalidSpecifier, TypeError):
            raise KnownIssuesError(f"{where}: invalid version specifier {spec!r} for {package}") from None
    values["versions"] = tuple(sorted(versions.items()))
    scope = raw.get("where", {})
    if not isinstance(scope, dict):
        raise KnownIssuesError(f"{where}: 'where' must be a table like {{ out_width = 1 }}")
    for name, allowed in scope.items():
        if isinstance(allowed, (dict, list)) and (not allowed or isinstance(allowed, dict)):
            raise KnownIssuesError(f"{where}: where.{name} must be a value or a non-empty list of values")
    values["where"] = tuple(sorted((k, tuple(v) if isinstance(v, list) else (v,)) for k, v in scope.items()))
    if "match" in raw:
        try:
            re.compile(raw["match"])
        except (re.error, TypeError) as exc:
            raise KnownIssuesError(f"{where}: 'match' is not a valid regular expression: {exc}") from None
        values["match"] = raw["match"]
    for name in BOUNDS:
        if name in raw:
            value = raw[name]
            fraction = name.endswith("_fraction")
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not value >= 0
                or (fraction and value > 1)
            ):
                limit = "a fraction from 0 to 1" if fraction else "a number >= 0"
                raise KnownIssuesError(f"{where}: {name!r} must be {limit}, got {value!r}")
            values[name] = float(value)
    if "min_case_fraction" in raw:
        value = raw["min_case_fraction"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise KnownIssuesError(
                f"{where}: 'min_case_fraction' must be a fraction above 0 and at most 1, got {value!r}"
            )
        if value > values.get("max_case_fraction", 1.0):  # type: ignore[operator]
            raise KnownIssuesError(
                f"{where}: 'min_case_fraction' {value} is above 'max_case_fraction' {values['max_case_fraction']}"
            )
        values["min_case_fraction"] = float(value)
    if "scale_by" in values and "max_abs" not in values:
        raise KnownIssuesError(f"{where}: 'scale_by' scales max_abs, which the entry does not give")
    _require_envelope(raw, values, where, value_checks)
    return KnownIssue(source=where, **values)  # type: ignore[arg-type]


def _require_envelope(raw: dict, values: dict[str, object], where: str, value_checks: tuple[str, ...]) -> None:
    """Every entry says how far off and how often (or, for non-value checks, which message) it explains."""
    bounded = any(name in values for name in BOUNDS)
    checks = cast("tuple[str, ...]", values.get("checks", ("*",)))
    about_values = any(fnmatch.fnmatchcase(check, pattern) for check in value_checks for pattern in checks)
    # A value check's failure without a size (the cpu raised, so nothing was measured) is enveloped by its
    # message, as an error check's is: an entry naming only such causes needs `match`, not a size bound.
    causes = cast("tuple[str, ...]", values.get("causes", ()))
    unmeasured_only = bool(causes) and MEASURED not in causes and "*" not in causes
    if about_values and not bounded and not unmeasured_only:
        raise KnownIssuesError(
            f"{where}: entry {raw['id']!r} needs an envelope: max_abs, max_mismatch_fraction or "
            f"max_case_fraction (how far off, how often; max_psnr_gap, min_psnr for PSNR-judged "
            f"checks), since it is about a value check ({', '.join(value_checks)})"
        )
    if not bounded and "match" not in values:
        raise KnownIssuesError(
            f"{where}: entry {raw['id']!r} needs an envelope: 'match' (which failure message) "
            f"or a bound (max_abs, max_mismatch_fraction, max_case_fraction)"
        )


def load(path: Path, *, value_checks: tuple[str, ...]) -> list[KnownIssue]:
    """Parse one file; any defect is a KnownIssuesError naming the file and entry.  `value_checks`: the checks
    that judge values (conformance.checks.registry), about which an entry needs an envelope."""
    issues = [_parse_entry(raw, where, value_checks) for raw, where in read_entries(path, "issue", KnownIssuesError)]
    seen: set[str] = set()
    for issue in issues:
        if issue.id in seen:
            raise KnownIssuesError(f"{issue.source}: duplicate id {issue.id!r}")
        seen.add(issue.id)
    return issues
