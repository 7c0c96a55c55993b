"""What a run records of its items and cases, through the store's one record writer: an item's start and end,
each checked example (with its arrays where a report needs them), the worst cases of an operation's
implementations, the outputs a baseline keeps, and the operations themselves (once per worker).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance.checks.baseline import output_key, output_record
from conformance.checks.context import CaseContext
from conformance.checks.evidence import arrays
from conformance.checks.registry import CheckOutcome
from conformance.engine.judgement import Judgement
from conformance.engine.ledger import ItemState
from conformance.spec import known_issues as ki
from conformance.spec.recipes import Case
from conformance.store.outputs import OutputRecorder
from conformance.store.records import RecordWriter
from conformance.store.tally import Phase

KNOWN_ISSUE_ARRAY_ELEMENTS = 1 << 18  # largest array kept for a known issue's picture (a 3x256x341 image)


class CaseRecorder:
    def __init__(self, records: RecordWriter, outputs: OutputRecorder | None) -> None:
        self.records = records
        self.outputs = outputs  # each checked output, for baselines and `compare`
        self._operations: set[str] = set()
        self._worst_written: dict[tuple[str, str, str], tuple[float, str]] = {}  # (op, target, against) -> kept
        self._known_arrays: set[str] = set()  # the known issues whose arrays this process kept (one case each)

    def close(self) -> None:
        if self.outputs is not None:
            self.outputs.flush()
        self.records.close()

    def base(self, state: ItemState) -> dict[str, Any]:
        """The item's fields in every record of it."""
        if not state.base:
            info = state.info
            state.base = self.records.base(info.test, info.spec.name, state.target, info.dtype, info.mode)
        return state.base

    def item_started(
        self, state: ItemState, loaded: Sequence[ki.KnownIssue] = (), applying: Sequence[ki.KnownIssue] = ()
    ) -> None:
        """`loaded`: known-issue entries whose ids this process has not written yet; `applying`: those it has not
        written whole yet, which apply to this item."""
        member = state.spec.member
        if member is not None and member.operation.name not in self._operations:
            self._operations.add(member.operation.name)
            self.records.operation(member.operation.describe())
        if loaded or applying:
            self.records.known_issues([i.id for i in loaded], [i.to_dict() for i in applying])
        state.tally = self.records.item_started(  # the item's one count, which its ledger reads
            self.base(state), state.nodeid, state.check, [i.id for i in state.applicable]
        )

    def item_ended(self, state: ItemState, staleness: ki.Staleness, *, interrupted: bool) -> None:
        self._write_worst(state)
        info = state.info
        notes = [
            {
                "issue": issue.id,
                "op": info.spec.name,
                "target": info.target,
                "dtype": info.dtype,
                "mode": info.mode,
                "in_scope": cases,
                "needed": issue.cases_to_call_fixed(),
                "link": issue.link,
            }
            for issue, cases in staleness.too_few
        ]
        self.records.item_ended(self.base(state), state.nodeid, state.check, interrupted=interrupted, notes=notes)

    def item_verdict(self, state: ItemState, verdict: str, message: str) -> None:
        self.records.item_verdict(self.base(state), state.nodeid, state.check, verdict, message)

    def skipped(self, base: dict[str, Any], nodeid: str, check: str, reason: str) -> None:
        self.records.item_verdict(base, nodeid, check, "skipped", reason)

    def case_started(self, state: ItemState, case: Case, stamp: int = 0) -> None:
        """Before the op runs: a process that dies, or that its watchdog ends, names the case."""
        self.records.case_started(state.nodeid, case.json, stamp, state.info.command_id)

    def resource(self, state: ItemState, case: Case, message: str) -> None:
        self.records.resource(self.base(state), state.nodeid, state.check, state.examples, case.to_dict(), message)

    def output(self, state: ItemState, ctx: CaseContext) -> None:
        """The case's output on this target, for a baseline (once per case and target)."""
        if self.outputs is not None and not self.outputs.has(output_key(ctx)):
            self.outputs.add(*output_record(ctx), plan=state.plan_key[:2])

    def example(
        self,
        state: ItemState,
        case: Case,
        ctx: CaseContext,
        outcome: CheckOutcome,
        judged: Judgement,
        phase: Phase,
        repro: str | None,
        *,
        standing: bool = False,
    ) -> None:
        """One checked example: a row of the examples table; its arrays for the report where it failed (the final,
        shrunk example, or `standing`: a failure that is reported as it is, not shrunk) or is the first example of a
        known issue in this process (the report pictures one case of each; another one's rerun line or case JSON
        reproduces it)."""
        artifact = None
        keep = (phase in (Phase.FINAL, Phase.REPLAY) or standing) and judged.unexpected
        known = judged.issue.id if judged.issue is not None else None
        new_known = known is not None and known not in self._known_arrays and phase is Phase.EXPLORE
        if keep or new_known:
            kept = arrays(ctx)
            # a known issue's picture waits for a case of a readable size (a random draw can be 1080p: 9 MB on
            # every target); a failure's shrunk case is kept whatever its size
            if keep or max((a.size for a in kept.values()), default=0) <= KNOWN_ISSUE_ARRAY_ELEMENTS:
                artifact = self.records.store.save_arrays(state.nodeid, kept)
                if known is not None:
                    self._known_arrays.add(known)
        message = f"{outcome.message} [{judged.outside}]" if judged.outside else outcome.message
        self.records.example(
            phase,
            state.examples,
            case.json,
            judged.verdict,
            outcome,
            message,
            judged.issue.id if judged.issue else None,
            repro,
            artifact,
            envelope=judged.envelope.issue if judged.envelope else None,
            envelope_used=judged.envelope.used if judged.envelope else None,
        )

    def _write_worst(self, state: ItemState) -> None:
        """The item's worst cases, with their arrays, for the cross-library page, which shows the worst per op,
        target and comparison: one written only where it is worse than this process's worst so far (whose
        arrays it replaces)."""
        if state.worst is None:
            return
        for against, kept in state.worst.take().items():
            key = (state.spec.name, state.target.name, against)
            previous = self._worst_written.get(key)
            if previous is not None and kept.value <= previous[0]:
                continue
            artifact = self.records.store.save_arrays(f"{state.nodeid}-worst-{against}", kept.arrays)
            self.records.worst(
                self.base(state), state.nodeid, state.check, against, kept.value, kept.case_json, artifact, kept.extra
            )
            if previous is not None:
                (Path(self.records.run_dir) / previous[1]).unlink(missing_ok=True)
            self._worst_written[key] = (kept.value, artifact)
