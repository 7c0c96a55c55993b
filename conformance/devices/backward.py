"""The op's vector-Jacobian product on one target: the input made a leaf that requires grad, the op called
as `calls.run_op` calls it, then the backward pass with a given cotangent.  What happens is data, as for
the forward call (an `OpRun` whose output is the input's gradient).

Why a walker of its own for virtual devices: PyTorch's autograd engine asks the CUDA driver about every
device's streams before it runs a graph whose tensors report `cuda:N`, and without a driver that fails
("hasPrimaryContext expects a valid device index") before any backward formula runs.  `vjp_by_walking`
calls the graph's nodes themselves, in dependency order, from this thread, doing what the engine does
between nodes (sum a gradient broadcast to a larger shape back to the input's, cast to its dtype, refuse
a gradient on another device than the input it belongs to).  So every backward formula runs as it does
on a real GPU, under the virtual device rules and the placement log; only the engine's stream handling
is not exercised.  Real targets use the engine (`torch.autograd.grad`).
"""

from __future__ import annotations

from typing import Any

import torch

from conformance.devices import calls
from conformance.devices.placement import MIXED_DEVICE_MESSAGE
from conformance.devices.runs import OpRun
from conformance.devices.targets import Target
from conformance.spec.opspec import OpSpec, Sampled
from conformance.spec.recipes import Case


def run_vjp(
    spec: OpSpec,
    tensor: torch.Tensor,
    case: Case,
    target: Target,
    sampled: Sampled | None,
    cotangent: torch.Tensor,
    *,
    timeout_s: float = 0.0,
) -> OpRun:
    """The gradient of <op(tensor), cotangent> with respect to `tensor` (a host cotangent, put on the
    target before the call), in `run.output`; a failure of the forward or the backward is `run.error`."""
    leaf = tensor.detach().requires_grad_(True)  # the recipe's layout kept: backward sees the strides users have
    walk = target.backward_by_walking
    # on the target before the call: put inside it, the harness's own upload would be logged as the op's
    placed: torch.Tensor = target.put(cotangent)

    def backward(output: Any) -> torch.Tensor:
        if not isinstance(output, torch.Tensor):
            raise RuntimeError(f"the op returned {type(output).__name__}, not a tensor to differentiate")
        seed = placed.to(output.dtype)
        if output is leaf:  # an op that returns its input as it is (a resize to the same size)
            return seed
        if output.grad_fn is None:
            raise RuntimeError("the op's output has no autograd graph to its input (it was computed without grad)")
        if walk:
            with torch.no_grad():  # as the engine runs a backward that creates no graph of its own
                return vjp_by_walking(output, seed, leaf)
        (found,) = torch.autograd.grad(output, leaf, seed, allow_unused=True)
        if found is None:
            raise RuntimeError("the op's output does not depend on its input in the autograd graph")
        return found

    with torch.enable_grad():
        return calls.run_op(spec, leaf, case, target, sampled, timeout_s=timeout_s, then=backward)


def vjp_by_walking(output: torch.Tensor, cotangent: torch.Tensor, leaf: torch.Tensor) -> torch.Tensor:
    """The gradient reaching `leaf` from `output` seeded with `cotangent`, by calling each node of the
    autograd graph once all the gradients flowing into it are summed (see the module docstring)."""
    root: Any = output.grad_fn
    waiting: dict[Any, int] = {}  # node -> edges into it not yet delivered
    pending, seen = [root], {root}
    while pending:
        node = pending.pop()
        for following, _ in node.next_functions:
            if following is None:
                continue
            waiting[following] = waiting.get(following, 0) + 1
            if following not in seen:
                seen.add(following)
                pending.append(following)
    inputs: dict[Any, list[torch.Tensor | None]] = {root: [None] * len(root._input_metadata)}
    inputs[root][output.output_nr] = cotangent
    ready, found = [root], None
    while ready:
        node = ready.pop()
        grads = inputs.pop(node)
        if hasattr(node, "variable"):  # AccumulateGrad: a leaf
            if node.variable is leaf:
                found = grads[0]
            continue
        for index, ((following, slot), grad) in enumerate(_call_node(node, grads)):
            if grad is not None:
                grad = _as_the_engine_delivers(following, slot, grad, index)
                buffer = inputs.setdefault(following, [None] * len(following._input_metadata))
                held = buffer[slot]
                buffer[slot] = grad if held is None else held + grad
            else:
                inputs.setdefault(following, [None] * len(following._input_metadata))
            waiting[following] -= 1
            if waiting[following] == 0:
                ready.append(following)
    if found is None:
        raise RuntimeError("the op's output does not depend on its input in the autograd graph")
    return found


def _call_node(node: Any, grads: list[torch.Tensor | None]) -> list[tuple[tuple[Any, int], torch.Tensor | None]]:
    """(edge, gradient) for each edge of the node that leads somewhere.  A C++ node returns one gradient per
    edge; a Python autograd.Function one per argument of its forward, tensors or not: the arguments that
    need a gradient are, in order, the ones with an edge."""
    if hasattr(node, "_forward_cls"):
        grads = [  # the engine's default for a Function: a gradient that never arrived is zeros
            g if g is not None else torch.zeros(m.shape, dtype=m.dtype, device=m.device)
            for g, m in zip(grads, node._input_metadata, strict=True)
        ]
        produced = node.apply(*grads)
        produced = produced if isinstance(produced, tuple) else (produced,)
        wanted = [g for g, need in zip(produced, node.needs_input_grad, strict=False) if need]
        edges = [edge for edge in node.next_functions if edge[0] is not None]
        return [(edge, wanted[n] if n < len(wanted) else None) for n, edge in enumerate(edges)]
    produced = node(*grads)
    produced = produced if isinstance(produced, tuple) else (produced,)
    return [(edge, g) for edge, g in zip(node.next_functions, produced, strict=False) if edge[0] is not None]


def _as_the_engine_delivers(node: Any, slot: int, grad: torch.Tensor, index: int) -> torch.Tensor:
    expected = node._input_metadata[slot]
    if tuple(grad.shape) != tuple(expected.shape):
        grad = grad.sum_to_size(expected.shape)
    if grad.device != expected.device:
        raise RuntimeError(
            f"{MIXED_DEVICE_MESSAGE}: a backward formula ({type(node).__name__}'s producer) returned a gradient "
            f"on {grad.device} for an input on {expected.device} (the engine: invalid gradient at index {index})"
        )
    return grad if grad.dtype == expected.dtype else grad.to(expected.dtype)
