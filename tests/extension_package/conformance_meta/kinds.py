"""The `conformance.targets` entry point: every machine has a meta device, and can run a remote server."""

from __future__ import annotations

from conformance.devices.targets import Target
from conformance_meta import MetaTarget
from conformance_meta.remote import RemoteTarget


def targets() -> list[Target]:
    return [
        MetaTarget(
            "meta", "meta", "PyTorch's meta device: device, dtype and shape, no data", virtual=True, by_default=False
        ),
        RemoteTarget("remote", "remote", "the cpu in a server process of its own (out of process)", by_default=False),
    ]
