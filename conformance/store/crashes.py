"""The record of an item whose worker process died (or whose watchdog ended it), written by another process than
the one that ran it: the item's id and the run's recorded facts of its target are all there is to go on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conformance.devices.facts import FactsBook, TargetFacts
from conformance.spec.item_ids import parse_item_id
from conformance.store.overruns import RUNNING, command_id, read_running
from conformance.store.reader import load_environment
from conformance.store.repro_command import rerun_line


def crash_record(
    run_dir: Path,
    nodeid: str,
    message: str,
    case_json: str | None = None,
    *,
    overran: bool = False,
    facts: TargetFacts | None = None,
) -> dict[str, Any]:
    """Its test id tells the op, target, dtype, mode and check; `facts` (the run's, for the target its id names;
    else those the run's environment recorded) what a record says of the target; the case it was checking (if
    recorded) makes it replayable.  `overran`: its watchdog ended it, and `message` says why (a timeout)."""
    parsed = parse_item_id(nodeid)
    test = parsed.test if parsed else nodeid.rpartition("::")[2]
    target, dtype, mode, check = parsed[2:] if parsed else ("?", "?", "?", "?")
    if facts is None or facts.name != target:
        facts = FactsBook.of_environment(load_environment(run_dir))[target]
    record: dict[str, Any] = {
        "kind": "outcome",
        "nodeid": nodeid,
        "test": test,
        "op": test.removeprefix("test_"),
        **facts.record_fields(),
        "dtype": dtype,
        "mode": mode,
        "check": check,
        "verdict": "error",
        "phase": "item",
        "crash": True,
        "message": message if overran else f"the worker process died while running this item: {message}",
    }
    if overran:
        record["cause"] = "timeout"
    if case_json is not None:
        record["case_json"] = case_json
        record["repro"] = rerun_line(command_id(run_dir, nodeid) or nodeid, case_json, facts)
        record["message"] += f"\nthe case it was checking: {case_json}\nRerun: {record['repro']}"
    return record


def last_case_started(run_dir: Path, nodeid: str) -> str | None:
    """The case a (dead) worker was running for this item: its `outcomes/<worker>.running` file."""
    folder = run_dir / "outcomes"
    for path in sorted(folder.glob(f"*{RUNNING}")) if folder.is_dir() else []:
        found = read_running(path)
        if found is not None and found[0] == nodeid:
            return found[1]
    return None
