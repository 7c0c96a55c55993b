"""The records a run writes, one builder per kind, so their fields are defined in one place.

Kinds (one JSON object per line in outcomes/<worker>.jsonl; read back by conformance.results):
- item:     an item started; the known-issue entries it loaded and those that apply to it;
- example:  one checked case of one item: phase, the check's verdict and metrics, the case;
- outcome:  an item-level verdict (skip, stale known issue, too often), a resource outcome
            (the case's input could not be allocated), or a crash (the worker died in the item);
- item_end: the item finished (one started and not ended was interrupted);
- case_started: the case an item is about to check (the one that killed a worker, if it dies);
- operation: an operation and its implementations (libraries, documented defaults), once per worker;
- worst:    an operation implementation's reference item: its worst case against the reference or
            against another library, with the arrays (a window) for the cross-library page.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from conformance.item_ids import parse_item_id


class RecordWriter:
    """Writes this worker's records; the store (and its run folder) is created on first use."""

    def __init__(self, run_dir: Path, worker: str, environment: Callable[[], dict[str, Any]]) -> None:
        self.run_dir, self.worker = run_dir, worker
        self._environment = environment
        self._store: Any = None

    @property
    def store(self) -> Any:
        if self._store is None:
            from conformance.results import Store

            self._store = Store(self.run_dir, self.worker, self._environment())
        return self._store

    @property
    def opened(self) -> bool:
        return self._store is not None

    def close(self) -> None:
        if self._store is not None:
            self._store.close()

    def base(self, test: str, op: str, target: Any, dtype: str, mode: str) -> dict[str, Any]:
        return {"test": test, "op": op, "target": target.name, "virtual": target.virtual, "dtype": dtype,
                "mode": mode, "worker": self.worker, "pid": os.getpid()}

    def item_started(self, nodeid: str, loaded: dict[str, Any], applied: list[str]) -> None:
        self.store.append({"kind": "item", "nodeid": nodeid, "worker": self.worker,
                           "known_issues_loaded": loaded, "known_issues_applied": applied})

    def item_ended(self, nodeid: str) -> None:
        """The item finished (whatever its verdict): an item started and not ended was interrupted."""
        self.store.append({"kind": "item_end", "nodeid": nodeid, "worker": self.worker})

    def case_started(self, nodeid: str, case_json: str) -> None:
        """Before the op runs: if the process dies, the controller names this case in the crash record."""
        self.store.append({"kind": "case_started", "nodeid": nodeid, "worker": self.worker, "case": case_json})

    def operation(self, description: dict[str, Any]) -> None:
        """An operation and its implementations (libraries, documented defaults), once per worker."""
        self.store.append({"kind": "operation", "worker": self.worker, "operation": description})

    def worst(self, base: dict[str, Any], nodeid: str, check: str, against: str, value: float, case_json: str,
              artifact: str, extra: dict[str, Any]) -> None:
        """An item's worst case against the reference or one other library (the cross-library page)."""
        self.store.append(base | extra | {"kind": "worst", "nodeid": nodeid, "check": check, "against": against,
                                          "max_abs": value, "artifact": artifact}, encoded={"case": case_json})

    def item_verdict(self, base: dict[str, Any], nodeid: str, check: str, verdict: str, message: str) -> None:
        self.store.append(base | {"kind": "outcome", "nodeid": nodeid, "check": check, "verdict": verdict,
                                  "phase": "item", "message": message})

    def resource(self, base: dict[str, Any], nodeid: str, check: str, example: int, case: dict[str, Any],
                 message: str) -> None:
        self.store.append(base | {"kind": "outcome", "nodeid": nodeid, "check": check, "verdict": "resource",
                                  "phase": "explore", "example": example, "case": case, "message": message})

    def example(self, base: dict[str, Any], nodeid: str, phase: str, example: int, entry: dict[str, Any],
                case_json: str, repro: str | None, artifact: str | None) -> None:
        record = base | {"kind": "example", "nodeid": nodeid, "phase": phase, "example": example, "checks": [entry]}
        if repro is not None:
            record["repro"] = repro
        if artifact is not None:
            record["artifact"] = artifact
        self.store.append_example(record, case_json)

    def crash(self, nodeid: str, message: str, case_json: str | None = None) -> None:
        """An item whose worker process died: its test id tells the op, target, dtype, mode and check;
        the case it was checking (if recorded) makes it replayable."""
        parsed = parse_item_id(nodeid)
        test = parsed.test if parsed else nodeid.rpartition("::")[2]
        target, dtype, mode, check = parsed[2:] if parsed else ("?", "?", "?", "?")
        record = {
            "kind": "outcome", "nodeid": nodeid, "test": test, "op": test.removeprefix("test_"), "target": target,
            "virtual": target.startswith("vcuda"), "dtype": dtype, "mode": mode, "worker": self.worker,
            "pid": os.getpid(), "check": check, "verdict": "error", "phase": "item", "crash": True,
            "message": f"the worker process died while running this item: {message}"}
        if case_json is not None:
            import shlex

            record["case_json"] = case_json  # ("case" is the reader's, for example records)
            record["repro"] = f"python -m pytest {shlex.quote(nodeid)} --replay {shlex.quote(case_json)}"
            record["message"] += f"\nthe case it was checking: {case_json}\nRerun: {record['repro']}"
        self.store.append(record)


def last_case_started(run_dir: Path, nodeid: str) -> str | None:
    """The case a (dead) worker last started for this item, read from the run's outcome files."""
    import json

    found = None
    for path in sorted((run_dir / "outcomes").glob("*.jsonl")) if (run_dir / "outcomes").is_dir() else []:
        if path.is_symlink():
            continue
        with path.open(encoding="utf-8", errors="replace") as lines:
            for line in lines:
                if '"case_started"' not in line or nodeid not in line:
                    continue
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if record.get("kind") == "case_started" and record.get("nodeid") == nodeid:
                    found = record.get("case")
    return found
