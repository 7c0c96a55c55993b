"""A package outside conformance that adds to it through entry points (see conformance_meta-0.1.0.dist-info).

Its target kind is `meta`: PyTorch's meta device carries device, dtype and shape and no data, so an op run there
is a second placement and shape oracle on any machine.  Only the checks that read no values have items on it
(error, placement, invariants' dtype, shape and memory format); an op that needs its data (`.item()`, a copy to
the host) cannot run there, which is a skip with the reason, not a failure.

Its second kind, `remote` (remote.py), runs the op out of process, in a server its lifecycle starts and stops;
kinds.py is the entry point that gives both.

It also adds a library record and a sweep argument (tables.py) and a check (checks.py): one of each extension point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from conformance.devices.placement import is_device_mix_error
from conformance.devices.targets import Target

# a meta kernel that is missing, or an op that reads the data a meta tensor does not have (matched in lower case)
_NO_DATA = ("meta tensor", "meta tensors", "on meta", "'meta'", "meta device", "data-dependent", "data pointer")


@dataclass(frozen=True)
class MetaTarget(Target):
    holds_values: ClassVar[bool] = False

    def not_run_message(self, reason: str) -> str:
        return f"not run on the meta device: {reason}"

    def put(self, value: Any) -> Any:
        return value.to("meta")

    def cannot_run(self, exc: BaseException) -> str | None:
        text = str(exc)
        if is_device_mix_error(text) or not isinstance(exc, (NotImplementedError, RuntimeError)):
            return None  # a device mix is the placement check's finding; other errors are the op's
        if any(marker in text.lower() for marker in _NO_DATA):
            first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
            return f"the op needs data or a kernel a meta tensor does not have: {type(exc).__name__}: {first[:200]}"
        return None
