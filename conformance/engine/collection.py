"""What the collected items must hold for a run to mean something: a --replay case for an op that some
selected test runs, a --baseline that shares an op with them, --tolerances rules that match a collected
op.  Otherwise every item would be skipped, or a policy would apply to nothing, and a gate would pass on
nothing: the plugin makes a problem a usage error, and a warning a pytest warning."""

from __future__ import annotations

import difflib
import fnmatch
import json
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.engine.session import ConformanceRun
from conformance.spec.issue_paths import modules_spoken_of
from conformance.spec.opspec import SOURCES

# A case module whose ops depend on options (the device sweep's on --sweep) names their globs here; known-issue
# entries whose op those globs cover are not held to this run's ops.
OPTIONAL_OPS = "CONFORMANCE_OPTIONAL_OPS"
TYPO_SIMILARITY = 0.8  # difflib's ratio above which an op name that matches nothing is taken for a misspelt one


@dataclass(frozen=True)
class CollectionProblem:
    message: str
    warning: bool = False  # on a -k/-m/node-id selection, which may leave an op out on purpose


def defined_ops() -> dict[str, Any]:
    """What this process's case modules define, as JSON-able data: every op (selected or not) with its module, the
    case modules imported, and the op globs each module defines only under some options."""
    modules = {}
    for module in list(sys.modules.values()):
        path = Path(str(getattr(module, "__file__", None) or ""))
        if path.name.startswith("test_") and path.suffix == ".py":
            modules[str(path.resolve())] = list(getattr(module, OPTIONAL_OPS, ()))
    sources = {op: str(Path(source).resolve()) for op, source in SOURCES.items()}
    return {"ops": {op: source for op, source in sources.items() if source in modules}, "modules": modules}


def unknown_known_issue_ops(run: ConformanceRun, defined: Mapping[str, Any]) -> CollectionProblem | None:
    """A known-issue entry whose op matches no op it speaks of would apply to nothing, silently (a typo, or an op
    renamed or removed).  A file beside case modules speaks of those modules (a family's file of its own module,
    known_issues.toml of its folder's); a file given with --known-issues, wherever it lies, of every collected case
    module.  Judged only where every case module it speaks of was imported (a run of one file of a folder sees only
    that file's ops); the message names the closest op where one is spelt almost alike."""
    ops: dict[str, str] = defined.get("ops", {})
    modules: dict[str, list[str]] = defined.get("modules", {})
    explicit = set(run.issues.explicit_files)
    case_modules = set(ops.values()) | {module for module, optional in modules.items() if optional}
    folders = {Path(source).parent for source in case_modules}  # what an explicit file speaks of
    unknown = []
    for path in run.issues.files_in_use([Path(module) for module in modules]):
        spoken = (
            [p for folder in folders for p in folder.glob("test_*.py")]
            if path in explicit
            else modules_spoken_of(path.resolve())
        )
        beside = {str(p.resolve()) for p in spoken}
        if not beside or not beside <= set(modules):
            continue
        mine = [op for op, source in ops.items() if source in beside]
        optional = [glob for module in beside for glob in modules[module]]
        for entry in run.issues.entries([path]):
            for op_glob in entry.op:
                if any(fnmatch.fnmatchcase(op_glob, glob) for glob in optional):
                    continue
                if any(fnmatch.fnmatchcase(op, op_glob) for op in mine):
                    continue
                close = difflib.get_close_matches(op_glob, mine, n=1, cutoff=TYPO_SIMILARITY)
                unknown.append(
                    f"{path} [[issue]] id={entry.id!r}: op {op_glob!r}"
                    + (f" (did you mean {close[0]!r}?)" if close else "")
                )
    if not unknown:
        return None
    return CollectionProblem(f"known issues naming an op that no collected case module defines: {'; '.join(unknown)}")


def write_defined_ops(folder: Path, worker: str) -> None:
    """A worker's defined ops, for the xdist controller (which imports no case module) to judge."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{worker}.defined.json").write_text(json.dumps(defined_ops()), encoding="utf-8")


def read_defined_ops(folder: Path, worker: str) -> dict[str, Any] | None:
    """A worker's defined ops (every worker collects the same modules), or None."""
    try:
        found = json.loads((folder / f"{worker}.defined.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def collection_problem(run: ConformanceRun, collected: set[str], selected: bool) -> CollectionProblem | None:
    """`collected`: the op names of the collected conformance items; `selected`: the user narrowed the run."""
    if run.replay is not None and collected and run.replay.op not in collected:
        return CollectionProblem(
            f"--replay: the case is for op {run.replay.op!r}, which none of the selected tests runs "
            f"({', '.join(sorted(collected))})"
        )
    unmatched = [
        f"{rule.tolerance.name!r} (op {pattern!r})"
        for pattern, rule in run.cfg.overrides
        if collected and not any(fnmatch.fnmatchcase(op, pattern) for op in collected)
    ]
    if unmatched:  # a rule whose op pattern matches no collected op is a typo, not a policy
        return CollectionProblem(
            f"--tolerances: rule {', '.join(unmatched)} matches none of the collected ops "
            f"({', '.join(sorted(collected))})",
            warning=selected,
        )
    baseline = run.cache.baseline
    if baseline is None:
        return None
    recorded = {key.op for key in baseline.index}
    if collected and not collected & recorded:
        return CollectionProblem(
            f"--baseline {baseline.folder.parent}: it holds ops {', '.join(sorted(recorded))}, none of which "
            f"this run collects ({', '.join(sorted(collected))}): a baseline from another op set"
        )
    return None


def judge(config: pytest.Config, run: ConformanceRun, collected: set[str], defined: Any) -> None:
    """A collection problem is a usage error; on a -k/-m/node-id selection some are warnings.  `collected`: the
    collected ops (under --shard, of the whole collection: a rule or a replayed case for another shard's op is
    no typo); `defined`: the ops the case modules define (`defined_ops`), None where unknown."""
    selected = bool(config.option.keyword or config.option.markexpr or any("::" in a for a in config.args))
    problem = collection_problem(run, collected, selected)
    if problem is None and defined is not None:
        problem = unknown_known_issue_ops(run, defined)
    if problem is not None and problem.warning:
        warnings.warn(pytest.PytestWarning(problem.message), stacklevel=2)
    elif problem is not None:
        raise pytest.UsageError(problem.message)
