"""The run order of conformance items (light: the plugin imports it without torch).

pytest collects a case module's items test by test: for each (dtype, mode) variant, each target,
each check.  An operation's implementations are separate tests, so one library's items would all
run before the next library's.  Ordered by variant, then target, then implementation, the
libraries of one operation run back to back on each target: each checks the cases the first one
drew while their inputs, references and the earlier libraries' outputs on that target are still in
the shared cache, so the cross-library measurement reuses those outputs instead of running the
other libraries again (a cpu output that a later target's cross_device check needs is cheaper to
recompute than an accelerator's or a worker process's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def variant_group(nodeid: str, test: str, dtype: str, mode: str, spec: Any) -> tuple[str, str, str, str]:
    """(module, operation, dtype, mode): the items that check the same cases.  An op that is not an
    operation's implementation (or draws cases of its own) is its own operation."""
    member = getattr(spec, "member", None)
    operation = member.operation.name if member is not None and member.shares_cases else test
    return nodeid.split("::")[0], operation, dtype, mode


def operation_order(items: list[Any], spec_of: Callable[[Any], Any], last: frozenset[str] = frozenset()) -> list[Any]:
    """Items sorted by their variant group's first appearance, then by target (in the order targets
    first appear, those named in `last` after the others: their runs are prefetched), then by test, keeping
    pytest's order within a test and target (checks); stable, so the same on every xdist worker.  A group of one
    test keeps pytest's order exactly."""
    first_of_group: dict[tuple[str, str, str, str], int] = {}
    first_of_test: dict[tuple[str, str], int] = {}
    target_rank: dict[str, int] = {}
    keyed = []
    for index, item in enumerate(items):
        params = item.callspec.params
        group = variant_group(item.nodeid, item.originalname, params["dtype"], params["mode"], spec_of(item))
        test = (group[0], item.originalname)
        target = str(item.callspec.params["target"])
        first_of_group.setdefault(group, index)
        first_of_test.setdefault(test, index)
        # prefetching targets last: their workers compute what the other targets' items hand them meanwhile
        target_rank.setdefault(target, len(target_rank) + (1000 if target in last else 0))
        keyed.append((first_of_group[group], target_rank[target], first_of_test[test], index))
    return [items[k[3]] for k in sorted(keyed)]
