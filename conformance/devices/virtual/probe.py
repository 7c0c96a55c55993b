"""Does this torch still have what the virtual device is built on?

The virtual device rests on private torch APIs that may change in any release.  Rather than
fail inside an op (an error blamed on the library under test), target discovery asks
`unavailable_reason()` once: every private entry point must exist, and a small self-test must
behave, or no vcuda target is offered and the reason is said.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch

from conformance.devices import torch_private
from conformance.devices.virtual import facade, rules, tensor

# Every private entry point the virtual device calls or replaces, by its dotted path.
VIRTUAL_APIS: tuple[str, ...] = (
    *(path for path in torch_private.PRIVATE_APIS if path != "torch._C._cuda_getDriverVersion"),
    *(f"torch.cuda.{name}" for name in facade.PRIVATE_ANSWERS),  # replaced while a target is active
    *(f"torch.ops.aten.{name}" for name in rules.USED_NAMES),
)


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


def _values_survive_an_op() -> None:
    x = tensor.to_virtual(torch.arange(4.0), torch.device("cuda:1"))
    with facade.virtual_cuda(2):
        total = (x * 2).sum()
        _expect(total.device == torch.device("cuda:1") and total.item() == 12.0, f"got {total!r}")


def _factories_land_on_the_device() -> None:
    with facade.virtual_cuda(2):
        data = torch.tensor([1.0], device="cuda:1")
        with torch.cuda.device(1):
            zeros = torch.zeros(1, device="cuda")
    _expect(isinstance(data, tensor.VirtualTensor), f"torch.tensor(device='cuda:1') gave {data!r}")
    _expect(zeros.device == torch.device("cuda:1"), f"torch.zeros under torch.cuda.device(1) is on {zeros.device}")


def _modules_move_whole() -> None:
    module = torch.nn.Linear(2, 1)
    with facade.virtual_cuda(2):
        module.to("cuda:1")
        out = module(tensor.to_virtual(torch.ones(1, 2), torch.device("cuda:1")))
    weight = module.weight
    _expect(
        type(weight) is not torch.Tensor
        and isinstance(getattr(weight, "_inner", None), torch.Tensor)
        and weight.device == torch.device("cuda:1")
        and out.device == torch.device("cuda:1"),
        f"the weight became {type(weight).__name__} on {weight.device} without its data",
    )


# (what is tested, the private entry points it rests on, the test)
SELF_TESTS: tuple[tuple[str, str, Callable[[], None]], ...] = (
    ("an aten op on a virtual tensor", "__torch_dispatch__ on a wrapper subclass", _values_survive_an_op),
    ("factories with device=", "lift through dispatch, torch.cuda._exchange_device", _factories_land_on_the_device),
    ("Module.to('cuda:1')", "Module._apply swapping a traceable wrapper subclass", _modules_move_whole),
)


@functools.cache
def unavailable_reason() -> str | None:
    """Why virtual targets cannot run with this torch, or None (asked once per process)."""
    missing = torch_private.missing(VIRTUAL_APIS)
    if missing:
        return (
            f"virtual targets are off: torch {torch.__version__} lacks {', '.join(missing)}, which the "
            f"virtual device needs (see conformance/devices/virtual/probe.py)"
        )
    for what, rests_on, test in SELF_TESTS:
        try:
            test()
        except Exception as exc:  # noqa: BLE001 - any failure means the device cannot be trusted
            return (
                f"virtual targets are off: with torch {torch.__version__} the virtual device's self-test "
                f"failed for {what} ({rests_on}): {type(exc).__name__}: {exc}"
            )
    return None
