"""Known issues: divergences we know about, as data with an upstream link.

A known issue is reported, never silently skipped.  Entries are strict by
default: if an entry applies to a test item and none of the item's examples
reproduces it, the item fails and says to delete the entry.  A failing check
that matches an entry does not raise, so hypothesis spends no time shrinking it.
With `where`, strictness counts only the examples whose features match: the
entry must reproduce on at least one of them (none drawn: not exercised).

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
    versions = { torchvision = ">=0.16" }       # PEP 440 specifiers; default: any
    link = "https://github.com/pytorch/vision/issues/8399"
    reason = "why it diverges"
    strict = true                               # false: may or may not reproduce
"""
from __future__ import annotations

import fnmatch
import importlib.metadata
import re
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from conformance.tables import check_fields, read_entries

_LIST_FIELDS = ("targets", "dtypes", "modes", "checks")
_FIELDS = {"id", "op", "link", "reason", "strict", "versions", "where", "match", *_LIST_FIELDS}
_LINK_PREFIXES = ("https://", "http://", "docs/")


class KnownIssuesError(ValueError):
    """A known-issues file that cannot be trusted; named with file and entry."""


@dataclass(frozen=True)
class KnownIssue:
    id: str
    op: str
    link: str
    reason: str
    targets: tuple[str, ...] = ("*",)
    dtypes: tuple[str, ...] = ("*",)
    modes: tuple[str, ...] = ("*",)
    checks: tuple[str, ...] = ("*",)
    versions: tuple[tuple[str, str], ...] = ()
    where: tuple[tuple[str, tuple[object, ...]], ...] = ()
    match: str | None = None
    strict: bool = True
    source: str = ""

    def versions_apply(self) -> bool:
        for package, spec in self.versions:
            try:
                installed = importlib.metadata.version(package)
            except importlib.metadata.PackageNotFoundError:
                return False
            try:
                if Version(installed) not in SpecifierSet(spec):
                    return False
            except InvalidVersion:
                return False
        return True

    def applies_to(self, op: str, target: str, dtype: str, mode: str) -> bool:
        """Whether the entry is about this test item (before looking at checks)."""
        def hit(value: str, patterns: tuple[str, ...]) -> bool:
            return any(fnmatch.fnmatchcase(value, p) for p in patterns)

        return (fnmatch.fnmatchcase(op, self.op) and hit(target, self.targets) and hit(dtype, self.dtypes)
                and hit(mode, self.modes) and self.versions_apply())

    def in_scope(self, features: dict[str, object]) -> bool:
        """Whether a case (by its features) is one this entry is about."""
        return all(features.get(name) in allowed for name, allowed in self.where)

    def covers(self, check: str, message: str, features: dict[str, object]) -> bool:
        """Whether this entry explains one failing check of one case."""
        return (any(fnmatch.fnmatchcase(check, p) for p in self.checks) and self.in_scope(features)
                and (self.match is None or re.search(self.match, message) is not None))

    def to_dict(self) -> dict[str, object]:
        return {"id": self.id, "link": self.link, "reason": self.reason, "strict": self.strict}


def _parse_entry(raw: dict, where: str) -> KnownIssue:
    check_fields(raw, _FIELDS, ("id", "op", "link", "reason"), where, KnownIssuesError)
    if not raw["link"].startswith(_LINK_PREFIXES):
        raise KnownIssuesError(f"{where}: link must be an http(s) URL or a docs/ path, got {raw['link']!r}")
    values: dict[str, object] = {k: raw[k] for k in ("id", "op", "link", "reason")}
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
    return KnownIssue(source=where, **values)  # type: ignore[arg-type]


def load(path: Path) -> list[KnownIssue]:
    """Parse one file; any defect is a KnownIssuesError naming the file and entry."""
    issues = [_parse_entry(raw, where) for raw, where in read_entries(path, "issue", KnownIssuesError)]
    seen: set[str] = set()
    for issue in issues:
        if issue.id in seen:
            raise KnownIssuesError(f"{issue.source}: duplicate id {issue.id!r}")
        seen.add(issue.id)
    return issues
