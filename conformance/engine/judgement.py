"""From one check's outcome to a verdict: pass, warning, known issue (in scope *and* within the entry's
envelope), or a failure raised with a class of its own per check and cause.

Hypothesis tells failures apart by exception class, so a case that fails for one cause and a case
that fails for another are found, shrunk and reported separately instead of one hiding the other.
"""

from __future__ import annotations

from dataclasses import dataclass

from conformance.checks.registry import CheckOutcome, Problem
from conformance.spec.known_issues import KnownIssue
from conformance.store.printable import shortened


class ConformanceFailure(AssertionError):
    """An op diverged: which check, which metric, by how much, and how to rerun it."""

    cause = ""


_FAILURE_CLASSES: dict[tuple[str, str], type[ConformanceFailure]] = {}


def failure_class(check: str, cause: str) -> type[ConformanceFailure]:
    """One exception class per (check, cause), e.g. `InvariantsFailure` for "input mutated"."""
    key = (check, cause)
    if key not in _FAILURE_CLASSES:
        name = "".join(part.title() for part in check.split("_")) + "Failure"
        _FAILURE_CLASSES[key] = type(
            name, (ConformanceFailure,), {"__module__": __name__, "cause": cause, "__doc__": f"{check} failed: {cause}"}
        )
    return _FAILURE_CLASSES[key]


@dataclass(frozen=True)
class EnvelopeUse:
    """How much of one entry's size bounds a failure used (what calibrating envelopes across seeds reads)."""

    issue: str
    used: float


@dataclass
class Judgement:
    verdict: str  # "pass", "warning", "known_issue", "fail", "error"
    issue: KnownIssue | None = None
    outside: str = ""  # why an in-scope failure is not the known issue
    envelope: EnvelopeUse | None = None  # the entry held to (explaining or broken) and how much of it the case used

    @property
    def unexpected(self) -> bool:
        return self.verdict in ("fail", "error")


def judge(outcome: CheckOutcome, issues: list[KnownIssue], features: dict[str, object]) -> Judgement:
    if outcome.passed:
        return Judgement("pass")
    if outcome.warning:
        return Judgement("warning")
    first: Cover | None = None
    for part in outcome.problems():  # a failure of several causes: each must be a known one
        cover = _covering(outcome, part, issues, features)
        if cover.issue is None:
            return Judgement(
                "error" if outcome.check == "error" else "fail", outside=cover.outside, envelope=cover.held
            )
        first = first or cover
    assert first is not None and first.issue is not None
    return Judgement("known_issue", first.issue, envelope=first.held)


@dataclass(frozen=True)
class Cover:
    """What the entries in scope make of one problem: the first that explains it (None: none does) or why the first
    in scope does not, and how much of the size bounds it was held to the failure used."""

    issue: KnownIssue | None
    outside: str = ""
    held: EnvelopeUse | None = None


def _covering(outcome: CheckOutcome, part: Problem, issues: list[KnownIssue], features: dict[str, object]) -> Cover:
    """The first entry that covers this problem (its message and its cause) within its envelope, or why an entry in
    scope does not (and how far outside the first broken envelope the failure is)."""
    outside, held = "", None
    measured = outcome.measured and not outcome.parts  # a combined failure's parts are problems without a size
    for issue in issues:
        if not issue.covers(outcome.check, part.text, features):
            continue
        if not issue.names_cause(part.cause, measured):
            what = "a measured difference" if measured else f"cause {part.cause or 'unnamed'!r}"
            outside = outside or (
                f"outside the envelope of known issue {issue.id}: it covers {', '.join(issue.covered_causes)}, "
                f"not {what} ({issue.link})"
            )
            continue
        found = issue.held(outcome.metrics, outcome.details, features)
        use = EnvelopeUse(issue.id, found.used) if measured and found.used is not None else None
        if not found.broken:
            return Cover(issue, held=use)
        if not outside:
            outside = f"outside the envelope of known issue {issue.id}: {'; '.join(found.broken)} ({issue.link})"
            held = use
    return Cover(None, outside, held)


def failure_message(
    where: str, outcome: CheckOutcome, judged: Judgement, case_json: str, store: str, repro: str, script: str = ""
) -> str:
    """Which check failed and why, by how much, under which tolerance, the line that reruns it and, where one can be
    written, the command that writes a script reproducing it without the harness."""
    message = shortened(outcome.message, f"{store} (the item's record)")  # an op's error may be any length
    lines = [f"{where}: {outcome.check} failed ({outcome.cause or 'failed'})", f"  {outcome.check}: {message}"]
    if judged.outside:
        lines.append(f"    {judged.outside}")
    if outcome.tolerance is not None:
        lines.append(f"    tolerance {outcome.tolerance.name!r}: {outcome.tolerance.reason}")
    lines += [f"  case: {case_json}", f"  store: {store}", f"Rerun: {repro}"]
    if script:
        lines.append(f"Repro script: {script}")
    return "\n".join(lines)


def is_conformance_failure(exc: BaseException) -> bool:
    """A divergence the harness found (hypothesis may group several), not an error of the test itself."""
    nested = getattr(exc, "exceptions", None)  # an exception group: builtin from 3.11, backported before
    if isinstance(nested, (list, tuple)) and nested:
        return all(is_conformance_failure(e) for e in nested)
    return isinstance(exc, ConformanceFailure)


def finding_text(exc: BaseException) -> str:
    """A conformance failure as its message and hypothesis' notes (the drawn case); for several
    distinct failures of one item, each in turn."""
    nested = getattr(exc, "exceptions", None)
    if isinstance(nested, (list, tuple)) and nested:
        parts = [f"{len(nested)} distinct failures:"] + [finding_text(e) for e in nested]
        return "\n\n".join(parts + list(getattr(exc, "__notes__", [])))
    return "\n".join([f"{type(exc).__name__}: {exc}", *getattr(exc, "__notes__", [])])
