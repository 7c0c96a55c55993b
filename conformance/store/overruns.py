"""What a process was running when its watchdog ended it, and why, for whoever records the item.

A process about to run an op names the item and case in `outcomes/<worker>.running` (`writer.Store.running`).
When an op overruns the case timeout in native code, where it cannot be cut, the process's watchdog
(`conformance.watchdog`) reads that, writes `outcomes/<worker>.overran` (the item and its message) and ends the
process; the xdist controller, which records the item of a worker that died, reads the message from there so the
item is recorded as the timeout it was, not as a crash (and, where a stop the stuck process could not act on
ended it, not at all: the item was interrupted).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from conformance.store.writer import write_atomically

RUNNING = ".running"
OVERRAN = ".overran"


def read_running(path: Path) -> tuple[str, str | None, int] | None:
    """(test id, case JSON or None, stamp) from a `.running` file; None where there is none or it cannot be read."""
    try:
        head, _, rest = path.read_text(encoding="utf-8", errors="replace").partition("\n")
        found = json.loads(head)
        nodeid, stamp = found["nodeid"], found.get("stamp", 0)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    if not isinstance(nodeid, str) or not isinstance(stamp, int):
        return None
    return nodeid, rest.strip() or None, stamp


def running(run_dir: Path, worker: str) -> tuple[str, str | None, int] | None:
    """The item and case `worker` last started, with the stamp of the check it started them for."""
    return read_running(run_dir / "outcomes" / f"{worker}{RUNNING}")


def command_id(run_dir: Path, nodeid: str) -> str | None:
    """The item as its rerun line names it, where that is not pytest's id (the `.running` file that names it)."""
    for path in sorted((run_dir / "outcomes").glob(f"*{RUNNING}")):
        try:
            found = json.loads(path.read_text(encoding="utf-8", errors="replace").partition("\n")[0])
        except (OSError, ValueError):
            continue
        if isinstance(found, dict) and found.get("nodeid") == nodeid and isinstance(found.get("command"), str):
            return found["command"]
    return None


def current_item(run_dir: Path, worker: str, tail: int = 1 << 20) -> str | None:
    """The test id of the item `worker` began last: its journal's last `item` record (written out when an item
    begins, unlike the case, which is named only where the op runs for it)."""
    try:
        with open(run_dir / "outcomes" / f"{worker}.jsonl", "rb") as journal:
            size = journal.seek(0, 2)
            journal.seek(max(0, size - tail))
            lines = journal.read().decode("utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        if '"kind":"item"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("kind") == "item" and isinstance(record.get("nodeid"), str):
            return record["nodeid"]
    return None


@dataclass(frozen=True)
class Ending:
    """What the watchdog left for the item whose process it ended."""

    message: str  # what to record for the item: the timeout ("" after a stop)
    case_json: str | None  # the case it was stuck in, where known
    stopped: bool  # ended after a stop it could not act on: nothing to record, the item was interrupted


def mark(run_dir: Path, worker: str, nodeid: str, ending: Ending) -> None:
    """The watchdog's word, before it ends `worker`: which item, and what to record for it."""
    record = {"nodeid": nodeid, "message": ending.message, "case": ending.case_json, "stopped": ending.stopped}
    write_atomically(run_dir / "outcomes" / f"{worker}{OVERRAN}", json.dumps(record) + "\n")


def ending(run_dir: Path, nodeid: str) -> Ending | None:
    """What the watchdog left for an item whose process it ended; None where the process died of itself."""
    folder = run_dir / "outcomes"
    for path in sorted(folder.glob(f"*{OVERRAN}")) if folder.is_dir() else []:
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(found, dict) and found.get("nodeid") == nodeid and isinstance(found.get("message"), str):
            case = found.get("case")
            return Ending(found["message"], case if isinstance(case, str) else None, found.get("stopped") is True)
    return None
