"""What a target's name alone says, for the code that has only the name (a crashed item's id, a record) and must
not import torch: whether a rerun line has to name the target."""

from __future__ import annotations

COMPILED_SUFFIX = "+compile"  # `<device>+compile`: conformance.devices.targets.compile_targets


def named_in_rerun(target_name: str) -> bool:
    """Whether a rerun line must name the target (`--targets`): the default selection leaves compiled targets out."""
    return target_name.endswith(COMPILED_SUFFIX)
