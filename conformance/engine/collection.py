"""What the collected items must hold for a run to mean something: a --replay case for an op that some
selected test runs, a --baseline that shares an op with them, --tolerances rules that match a collected
op.  Otherwise every item would be skipped, or a policy would apply to nothing, and a gate would pass on
nothing: the plugin makes a problem a usage error, and a warning a pytest warning."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

from conformance.engine.session import ConformanceRun


@dataclass(frozen=True)
class CollectionProblem:
    message: str
    warning: bool = False  # on a -k/-m/node-id selection, which may leave an op out on purpose


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
