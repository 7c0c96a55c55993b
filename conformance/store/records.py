"""The records a run writes, one builder per kind, so their fields are defined in one place.

Journal kinds (one JSON object per line in outcomes/<worker>.jsonl; docs/results.md):
- known_issues: ids of known-issue entries the process loaded, each once, with the first item that loads it;
- known_issue: an entry whole, once per process, before the first item it applies to (older runs embedded
            every entry loaded in the process's first item record);
- item:     an item started: its fields and the known issues that apply to it;
- item_end: the item finished: its tally (counts per verdict, the worst example, known issues seen,
            warnings, ...), known issues that did not reproduce in too few cases to call them fixed;
            an item started and not ended was interrupted;
- outcome:  an item-level verdict (skip, stale known issue, too often), a resource outcome
            (the case's input could not be allocated), or a crash (the worker died in the item);
- operation: an operation and its implementations (libraries, documented defaults), once per worker;
- worst:    an operation implementation's reference item: its worst case against the reference or
            against another library, with the arrays (a window) for the cross-library page.
Each counted example of an item is a row of the examples table (conformance.store.examples); the case a
process is about to run is in outcomes/<worker>.running (the one that killed it, if it dies).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from conformance.devices.facts import TargetFacts
from conformance.store.crashes import crash_record
from conformance.store.example_columns import ExampleRow
from conformance.store.examples import peer_rows
from conformance.store.tally import CountedExample, Phase, Tally
from conformance.store.writer import Store, json_safe


class RecordWriter:
    """Writes this worker's records; the store (and its run folder) is created on first use."""

    def __init__(self, run_dir: Path, worker: str, environment: Callable[[], dict[str, Any]]) -> None:
        self.run_dir, self.worker = run_dir, worker
        self._environment = environment
        self._store: Store | None = None
        self.tally: Tally | None = None  # the running item's

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.run_dir, self.worker, self._environment())
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def base(self, test: str, op: str, target: Any, dtype: str, mode: str) -> dict[str, Any]:
        return {
            "test": test,
            "op": op,
            **target.facts().record_fields(),
            "dtype": dtype,
            "mode": mode,
            "worker": self.worker,
            "pid": os.getpid(),
        }

    def known_issues(self, loaded: Sequence[str], applying: Sequence[dict[str, Any]]) -> None:
        """Known-issue entries, each written once per process: the ids of those loaded (one record), and each entry
        whole the first time it applies to an item (a record each): no record carries a whole file of them."""
        if loaded:
            self.store.append({"kind": "known_issues", "worker": self.worker, "loaded": list(loaded)})
        for entry in applying:
            self.store.append({"kind": "known_issue", "worker": self.worker, "entry": entry})

    def item_started(self, base: dict[str, Any], nodeid: str, check: str, applied: list[str]) -> Tally:
        """Returns the item's tally, its one count: its ledger holds it and adds its known issues' scope."""
        self.tally = Tally()
        self.store.examples.begin_item(base | {"nodeid": nodeid, "check": check})
        self.store.append(
            base | {"kind": "item", "nodeid": nodeid, "check": check, "known_issues_applied": applied}, flush=True
        )
        return self.tally

    def example(
        self,
        phase: Phase | str,
        example: int,
        case_json: str,
        verdict: str,
        outcome: Any,
        message: str,
        known_issue: str | None,
        repro: str | None,
        artifact: str | None,
        *,
        envelope: str | None = None,
        envelope_used: float | None = None,
    ) -> None:
        """One checked example of the running item (a `CheckOutcome` judged `verdict`): a row of the examples
        table and its tally, where its phase (decided by the item's ledger; a name is read as its Phase) counts;
        `envelope`, `envelope_used`: the known issue whose size bounds it was held to, and how much of them it used."""
        phase = Phase(phase)
        if not phase.counted:
            if self.tally is not None:
                self.tally.shrunk += 1
            return
        metrics, tolerance = outcome.metrics, outcome.tolerance
        details = outcome.details if isinstance(outcome.details, dict) else {}
        peers = details.get("peers")
        passed = verdict == "pass"
        cause = None if passed else outcome.cause or None
        detail = None
        if not passed:
            detail = json.dumps(
                json_safe(
                    {
                        "message": message,
                        "traceback": outcome.traceback,
                        "repro": repro,
                        "artifact": artifact,
                        "details": {k: v for k, v in details.items() if k != "peers"} or None,
                        "tolerance": tolerance.to_dict() if tolerance is not None else None,
                        "metrics": None
                        if metrics is None
                        else {
                            "worst_index": list(metrics.worst_index) if metrics.worst_index is not None else None,
                            "worst_actual": metrics.worst_actual,
                            "worst_expected": metrics.worst_expected,
                            "mismatches": metrics.mismatches,
                            "elements": metrics.elements,
                        },
                    }
                ),
                sort_keys=True,
            )
        max_abs, mismatch = (metrics.max_abs, metrics.mismatch_fraction) if metrics is not None else (None, None)
        name, atol = (tolerance.name, tolerance.atol) if tolerance is not None else (None, None)
        self.store.examples.add(
            ExampleRow(
                phase=phase.value,
                example=example,
                case=case_json,
                verdict=verdict,
                against=outcome.against or None,
                cause=cause,
                max_abs=max_abs,
                mae=metrics.mae if metrics is not None else None,
                mismatch_fraction=mismatch,
                psnr=metrics.psnr if metrics is not None else None,
                tolerance=name,
                atol=atol,
                known_issue=known_issue,
                envelope=envelope,
                envelope_used=envelope_used,
                diverges=outcome.diverges,
                behaviour=outcome.behaviour,
                peers=peer_rows(peers),
                detail=detail,
            )
        )
        if self.tally is not None:
            self.tally.add_example(
                CountedExample(
                    verdict=verdict,
                    max_abs=max_abs,
                    mismatch_fraction=mismatch,
                    tolerance=name,
                    atol=atol,
                    allowed_mismatch_fraction=tolerance.max_mismatch_fraction if tolerance is not None else None,
                    known_issue=known_issue,
                    behaviour=outcome.behaviour,
                    diverges=outcome.diverges,
                    cause=cause,
                    message=message,
                    peers=peers,
                )
            )
            self.tally.cover(details)

    def item_ended(
        self,
        base: dict[str, Any] | None,
        nodeid: str,
        check: str,
        *,
        interrupted: bool = False,
        notes: Sequence[dict[str, Any]] = (),
    ) -> None:
        """The item finished (whatever its verdict): its tally; an item started and not ended was interrupted."""
        tally, self.tally = self.tally, None
        record: dict[str, Any] = {"kind": "item_end", "nodeid": nodeid, "worker": self.worker, "check": check}
        if base is not None and tally is not None:
            record.update(base, tally=tally.to_dict())
        if interrupted:
            record["interrupted"] = True
        if notes:
            record["notes"] = list(notes)
        self.store.append(record)
        self.store.item_ended()

    def case_started(self, nodeid: str, case_json: str, stamp: int = 0, command_id: str = "") -> None:
        """Before the op runs: if the process dies, the controller names this case in the crash record (and the
        watchdog, if the op overruns: `stamp`, see `Store.running`), and the item as its rerun line names it."""
        self.store.running(nodeid, case_json, stamp, command_id)

    def operation(self, description: dict[str, Any]) -> None:
        """An operation and its implementations (libraries, documented defaults), once per worker."""
        self.store.append({"kind": "operation", "worker": self.worker, "operation": description})

    def worst(
        self,
        base: dict[str, Any],
        nodeid: str,
        check: str,
        against: str,
        value: float,
        case_json: str,
        artifact: str,
        extra: dict[str, Any],
    ) -> None:
        """An item's worst case against the reference or one other library (the cross-library page)."""
        self.store.append(
            base
            | extra
            | {
                "kind": "worst",
                "nodeid": nodeid,
                "check": check,
                "against": against,
                "max_abs": value,
                "artifact": artifact,
            },
            encoded={"case": case_json},
        )

    def item_verdict(self, base: dict[str, Any], nodeid: str, check: str, verdict: str, message: str) -> None:
        self.store.append(
            base
            | {
                "kind": "outcome",
                "nodeid": nodeid,
                "check": check,
                "verdict": verdict,
                "phase": Phase.ITEM.value,
                "message": message,
            },
            flush=True,
        )

    def resource(
        self, base: dict[str, Any], nodeid: str, check: str, example: int, case: dict[str, Any], message: str
    ) -> None:
        self.store.append(
            base
            | {
                "kind": "outcome",
                "nodeid": nodeid,
                "check": check,
                "verdict": "resource",
                "phase": Phase.EXPLORE.value,
                "example": example,
                "case": case,
                "message": message,
            }
        )

    def crash(
        self,
        nodeid: str,
        message: str,
        case_json: str | None = None,
        *,
        overran: bool = False,
        facts: TargetFacts | None = None,
    ) -> None:
        """An item whose worker process died (conformance.store.crashes.crash_record)."""
        record = crash_record(self.run_dir, nodeid, message, case_json, overran=overran, facts=facts)
        self.store.append(record | {"worker": self.worker, "pid": os.getpid()}, flush=True)
