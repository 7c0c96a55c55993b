"""The pytest plugin's collection hooks (conformance.plugin registers this module): the run order that keeps a
variant's items together, this run's shard of them (--shard), and the collection's checks: a run that collects
nothing, or whose options apply to nothing it collected, is a usage error."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.plugin import STATE
from conformance.spec.item_ids import parse_item_id


def spec_of(obj: Any) -> Any:
    """The OpSpec behind a test function or item (`OpSpec.test()` sets it); None for any other test."""
    return getattr(getattr(obj, "function", obj), "conformance_spec", None)


SHARD = pytest.StashKey[Any]()  # --shard's split of this process's collection (conformance.engine.shards)


@pytest.hookimpl(trylast=True)  # after -k, -m and --lf chose: a shard is a part of what they left
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """The items of one operation's implementations run together, variant by variant, so each
    library checks the cases the first one drew while its inputs and outputs are still cached.
    Under --shard, only this shard's variant groups stay; the others are deselected."""
    from conformance.engine import shards
    from conformance.engine.ordering import operation_order

    run = config.stash[STATE].run
    slots = [n for n, item in enumerate(items) if spec_of(item) is not None]
    if slots:
        last = frozenset(name for name, target in run.targets.items() if target.prefetches) if run else frozenset()
        ordered = operation_order([items[n] for n in slots], spec_of, last)
        for slot, item in zip(slots, ordered, strict=False):
            items[slot] = item
    if run is not None and run.cfg.shard is not None:
        config.stash[SHARD] = shards.take(config, items, run.cfg.shard, run.run_dir, spec_of)


def pytest_report_collectionfinish(config: pytest.Config) -> list[str]:
    """The shard's line, after the collection (under xdist, the controller says it: `shards.announce`)."""
    return [config.stash[SHARD].line()] if SHARD in config.stash else []


@pytest.hookimpl(tryfirst=True)  # an xdist worker writes its ops before xdist tells the controller it collected
def pytest_collection_finish(session: pytest.Session) -> None:
    """A --replay case for an op no selected test runs, a --baseline that shares no op with the selected specs,
    a --tolerances rule for no collected op, or a known-issue entry for an op no case module defines is a usage
    error (every item would be skipped, or a policy would apply to nothing, and a gate would pass on nothing).  An
    xdist worker leaves it to the controller, which sees every worker's collection (and the ops it wrote)."""
    run = session.config.stash[STATE].run
    if run is None:  # not a conformance run: nothing imported (the collection module imports torch)
        return
    from conformance.engine.collection import defined_ops, judge, write_defined_ops

    workerinput = getattr(session.config, "workerinput", None)
    if workerinput is not None:
        write_defined_ops(run.run_dir / "outcomes", str(workerinput.get("workerid")))
        return
    if not session.items:
        session.config.stash[STATE].nothing_collected = True  # its run folder is removed at the session's end
        raise pytest.UsageError(_nothing_to_run(session.config))
    collected = {spec.name for item in session.items if (spec := spec_of(item)) is not None}
    if SHARD in session.config.stash:  # judged on the whole collection, not on this shard's part
        collected = set(session.config.stash[SHARD].ops)
    judge(session.config, run, collected, defined_ops() if collected else None)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist's: unknown where it is not installed
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """On the xdist controller: the checks of `pytest_collection_finish`, on the ids a worker collected (a
    usage error is an exit with pytest's usage-error code: raising inside xdist's loop is an internal error)."""
    from conformance.engine.collection import judge, read_defined_ops
    from conformance.engine.shards import announce

    state = node.config.stash.get(STATE, None)
    if state is None or state.run is None or state.collection_checked:
        return
    state.collection_checked = True
    shard = announce(node.config, state.run.run_dir) if state.run.cfg.shard is not None else None
    if not ids:
        state.nothing_collected = True  # its run folder is removed at the session's end
        pytest.exit(_nothing_to_run(node.config), returncode=pytest.ExitCode.USAGE_ERROR)
    collected = {parsed.test.removeprefix("test_") for nodeid in ids if (parsed := parse_item_id(nodeid)) is not None}
    if shard is not None:
        collected = set(shard.ops)
    try:
        worker = str(getattr(node, "workerinput", {}).get("workerid", ""))
        defined = read_defined_ops(state.run.run_dir / "outcomes", worker) if collected else None
        judge(node.config, state.run, collected, defined)
    except pytest.UsageError as exc:
        pytest.exit(str(exc), returncode=pytest.ExitCode.USAGE_ERROR)


def _nothing_to_run(config: pytest.Config) -> str:
    """The one line of a run that collected no item (a gate must not pass on nothing): where it looked, and the
    selection that left nothing."""
    where = ", ".join(str(a) for a in config.args) or str(config.invocation_params.dir)
    chosen = [
        f"{flag} {value!r}"
        for flag, value in (
            ("-k", config.option.keyword),
            ("-m", config.option.markexpr),
            ("--shard", config.option.shard),
        )
        if value
    ]
    return f"no items to run: nothing collected from {where}" + (f" with {' and '.join(chosen)}" if chosen else "")
