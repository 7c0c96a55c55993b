"""What a run ran on: library versions, devices, driver, TF32 and CPU capability.

Numerics differ by build and settings, so every run records them next to
its outcomes, and the terminal header prints them.
"""

from __future__ import annotations

import os
import platform
import warnings
from typing import Any

import torch

from conformance.devices.compiled_target import COMPILE_BUDGET_S
from conformance.devices.facts import target_label
from conformance.devices.targets import Target
from conformance.devices.torch_private import cuda_driver_version
from conformance.spec import sweep, versions
from conformance.spec.libraries import LIBRARIES
from conformance.spec.versions import harness_version

PACKAGES = tuple(library.package for library in LIBRARIES)
UNDER_TEST = tuple(library.package for library in LIBRARIES if library.under_test)  # files shown in the header


def _tf32_settings() -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the old flags are deprecated in newer torch
        settings: dict[str, Any] = {"float32_matmul_precision": torch.get_float32_matmul_precision()}
        try:
            settings["cuda_matmul_allow_tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
            settings["cudnn_allow_tf32"] = bool(torch.backends.cudnn.allow_tf32)
        except (AttributeError, RuntimeError):
            pass
    return settings


def _cuda_info() -> dict[str, Any]:
    info: dict[str, Any] = {"compiled_with": torch.version.cuda, "available": torch.cuda.is_available()}
    if info["available"]:
        info["driver_api"] = cuda_driver_version()
        info["cudnn"] = torch.backends.cudnn.version()
        info["devices"] = [
            {
                "index": i,
                "name": torch.cuda.get_device_name(i),
                "capability": ".".join(map(str, torch.cuda.get_device_capability(i))),
            }
            for i in range(torch.cuda.device_count())
        ]
    return info


def collect(targets: list[Target]) -> dict[str, Any]:
    """A JSON-able snapshot of everything that can change an op's numbers."""
    return {
        "conformance": harness_version(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "machine": platform.node(),
        "packages": {name: versions.installed(name).version for name in PACKAGES},
        "imported": {name: versions.installed(name).to_dict() for name in PACKAGES},
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_threads": torch.get_num_threads(),
        "tf32": _tf32_settings(),
        "cuda": _cuda_info(),
        "targets": [target.to_dict() for target in targets],
    }


def sweep_coverage(requested: str) -> dict[str, Any]:
    """The device sweep's coverage (found, swept, skipped by reason, per module) for the run's record."""
    return sweep.coverage(sweep.parse(requested))


def header_lines(env: dict[str, Any]) -> list[str]:
    """The few lines pytest prints at the top of a conformance session."""
    pkgs = env["packages"]
    version_text = " ".join(f"{k}-{v}" for k, v in pkgs.items() if v and k not in ("pytest", "pytest-xdist"))
    cuda = env["cuda"]
    cuda_line = f"cuda build {cuda['compiled_with'] or 'none'}"
    if cuda.get("available"):
        cuda_line += f", driver API {cuda.get('driver_api')}, cudnn {cuda.get('cudnn')}"
    targets = ", ".join(f"{target_label(t['name'], t['virtual'])} [{t['description']}]" for t in env["targets"])
    tf32 = ", ".join(f"{k}={v}" for k, v in env["tf32"].items())
    imported = env.get("imported", {})
    files = ", ".join(
        f"{name} {os.path.dirname(info['file'])}"
        for name in UNDER_TEST
        if (info := imported.get(name)) and info.get("file")
    )
    lines = [
        f"conformance: {version_text}",
        f"conformance: imported from {files}" if files else "conformance: imported from (unknown)",
        f"conformance: {cuda_line}; cpu capability {env['cpu_capability']}; tf32: {tf32}",
        f"conformance targets: {targets}",
    ]
    compiled = [t["name"] for t in env["targets"] if t.get("compiled")]
    if compiled:
        lines.append(
            f"conformance: {', '.join(compiled)}: torch.compile (Inductor, dynamic shapes) once per op and process, "
            f"reused by every case of the op; a compile budget of {COMPILE_BUDGET_S:.0f} s an op and process (past it, "
            f"its further cases are skipped; the total is printed at the end); virtual devices are not compile targets"
        )
    lines += [
        f"conformance: warning: {name} imports as {info['version']} from {info['file']}, but pip's metadata "
        f"says {info['metadata']}"
        for name, info in imported.items()
        if versions.Installed(name, info.get("version"), info.get("file"), info.get("metadata")).mismatch
    ]
    return lines
