"""The `conformance.checks` entry point: a check that reads no values, so it has items on the meta target too."""

from __future__ import annotations

from conformance.checks.context import CaseContext
from conformance.checks.registry import Check, CheckOutcome, compared_with_cpu, failed, register


def check_twin_metadata(ctx: CaseContext) -> CheckOutcome | None:
    """The output's dtype and shape are its twin's (the cpu's) for the same case."""
    twin = ctx.twin
    if twin is None or not ctx.returned_tensor or not twin.returned_tensor:
        return None  # an error on either side is the error check's
    mine, theirs = ctx.run.output, twin.run.output
    problems = []
    if mine.dtype != theirs.dtype:
        problems.append(("dtype", f"dtype {mine.dtype}, the cpu's {theirs.dtype}"))
    if tuple(mine.shape) != tuple(theirs.shape):
        problems.append(("shape", f"shape {tuple(mine.shape)}, the cpu's {tuple(theirs.shape)}"))
    return failed("twin_metadata", problems, against="cpu")


register(
    Check(
        "twin_metadata",
        95,
        "cpu",
        "the output's dtype and shape are the cpu's for the same case (reads no values: runs on a meta device too)",
        compared_with_cpu,
        check_twin_metadata,
    )
)
