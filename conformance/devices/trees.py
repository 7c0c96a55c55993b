"""The leaves of an op's arguments and results, without pytree: what the placement log and the virtual device read
on every aten call, where pytree's per-node type registry cost more than most ops on small images."""

from __future__ import annotations

from typing import Any

_NODES = (tuple, list, dict)


def leaves(*values: Any) -> list[Any]:
    """The leaves of an op's arguments or results: what is inside plain tuples, lists and dicts (what aten
    passes), found without pytree's per-node type registry, which cost more than most ops on small images."""
    found: list[Any] = []
    for value in values:
        kind = type(value)
        if kind is tuple or kind is list:
            for item in value:
                if type(item) in _NODES:
                    found.extend(leaves(item))
                else:
                    found.append(item)
        elif kind is dict:
            found.extend(leaves(*value.values()))
        else:
            found.append(value)
    return found


def map_leaves(function: Any, value: Any) -> Any:
    """`value` with `function` applied to each leaf (plain tuples, lists and dicts rebuilt; a structseq or a
    NamedTuple rebuilt by its type)."""
    kind = type(value)
    if kind is tuple or kind is list:
        return kind(
            [map_leaves(function, v) if type(v) in _NODES or isinstance(v, tuple) else function(v) for v in value]
        )
    if kind is dict:
        return {
            k: map_leaves(function, v) if type(v) in _NODES or isinstance(v, tuple) else function(v)
            for k, v in value.items()
        }
    if isinstance(value, tuple) and hasattr(kind, "n_fields"):  # torch.return_types: a structseq
        return kind([map_leaves(function, v) for v in value])
    if isinstance(value, tuple) and hasattr(kind, "_fields"):  # a NamedTuple (kornia's ParamItem)
        return kind(*[map_leaves(function, v) for v in value])
    return function(value)
