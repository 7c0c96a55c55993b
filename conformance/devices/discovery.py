"""Which targets this process has, and resolving a `--targets` selection against them.

A selection string ("all", "gpu", "vcuda", "cpu,vcuda:1", "cuda", a kind an installed package adds) is resolved
against what this machine actually has; asking for something absent is a usage error that names what exists,
never a silent skip.  Installed packages add target kinds through the `conformance.targets` entry point group: each
names a callable that returns the targets of its kind this machine has (conformance.spec.extensions).
"""

from __future__ import annotations

import torch

from conformance.devices.accelerators import CudaTarget, MpsTarget, XpuTarget
from conformance.devices.compiled_target import compile_targets
from conformance.devices.isa_target import isa_targets
from conformance.devices.targets import CPU, Target, TargetSelectionError
from conformance.devices.virtual import probe
from conformance.devices.virtual_target import virtual_targets
from conformance.spec.extensions import TARGETS, ExtensionError, extensions

SECOND_RUN = "CUDA_VISIBLE_DEVICES= python -m conformance run --targets vcuda"
KEYWORDS = ("default", "all", "gpu", "vcuda", "isa", "compile")


def default_virtual_count(real: list[Target]) -> int:
    """Two virtual devices unless two real accelerators can already show device-index bugs."""
    return 2 if sum(t.is_accelerator for t in real) < 2 else 0


def virtual_unavailable_reason() -> str | None:
    """Why this process offers no vcuda targets, or None.

    Not beside a real CUDA device: vcuda:N shares the name cuda:N with it, so library caches keyed by
    device hand real tensors to virtual runs and back, and bindings that set the real device guard
    fail for an index the GPU lacks.  Not where torch lacks a private API they rest on (the probe)."""
    real_cuda = [t.name for t in _real_targets() if t.kind == "cuda"]
    if real_cuda:
        return (
            f"virtual targets are not offered beside a real CUDA device ({', '.join(real_cuda)}): vcuda:N "
            f"would share the name cuda:N with it (library caches keyed by device would mix real and virtual "
            f"tensors); run them as a second run without the GPU: {SECOND_RUN}"
        )
    return probe.unavailable_reason()


def discover(virtual: int | None = None, isa: bool = True, extended: bool = True) -> list[Target]:
    """Every target visible to this process: cpu, its lower ISA paths, real accelerators, compiled ones, virtual
    ones, then those of the kinds installed packages add (`extended`).

    `virtual`: how many vcuda:N targets to add (None: `default_virtual_count`, or none where
    `virtual_unavailable_reason` gives a reason; asking for some then is an error saying it).  Unless the
    count was asked for, the `default` selection takes only the last, vcuda:1: the op runs on a device
    that is not the current one, so a tensor made on the current device or left on the host meets the
    input as a device mix, which is all vcuda:0 shows too (their 3,207 items of the `ci` suite gave the same
    verdicts), at half the cost; `--targets vcuda` or `all` still name both.
    """
    found = _real_targets()
    reason = virtual_unavailable_reason() if virtual != 0 else None
    if reason is not None and virtual is not None:
        raise TargetSelectionError(f"{virtual} virtual devices were asked for (--virtual-devices): {reason}")
    count = 0 if reason is not None else default_virtual_count(found) if virtual is None else virtual
    virtual_ones = virtual_targets(count, only_last_by_default=virtual is None)
    built_in = found[:1] + (isa_targets() if isa else []) + found[1:] + compile_targets(found) + virtual_ones
    return built_in + (extension_targets({t.name for t in built_in}) if extended else [])


def extension_targets(taken: set[str]) -> list[Target]:
    """The targets of the kinds installed packages add (a name must be new, and not a selection keyword)."""
    added: list[Target] = []
    try:
        for extension in extensions(TARGETS):
            if not callable(extension.value):
                raise extension.problem("is not a callable that returns targets")
            try:
                provided = list(extension.value())
            except Exception as exc:  # noqa: BLE001 - someone else's code: said with its origin, in one line
                raise extension.problem(f"raised {type(exc).__name__}: {exc}") from None
            for target in provided:
                if not isinstance(target, Target):
                    raise extension.problem(f"gave {target!r}, not a conformance.devices.targets.Target")
                if target.name in taken or target.name in KEYWORDS or "-" in target.name:
                    raise extension.problem(
                        f"its target {target.name!r} is already a target or keyword, or holds '-' (it ends test ids)"
                    )
                taken.add(target.name)
                added.append(target)
    except ExtensionError as exc:
        raise TargetSelectionError(str(exc)) from None
    return added


def _real_targets() -> list[Target]:
    found: list[Target] = [CPU]
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            found.append(CudaTarget(f"cuda:{index}", "cuda", torch.cuda.get_device_name(index)))
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        found.append(MpsTarget("mps", "mps", "Apple Metal"))
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        for index in range(xpu.device_count()):
            found.append(XpuTarget(f"xpu:{index}", "xpu", xpu.get_device_name(index)))
    return found


def parse_selection(text: str) -> list[str]:
    """Split a selection string; syntax errors are found without importing devices."""
    tokens = [token.strip() for token in text.split(",")]
    if not text.strip() or any(not token for token in tokens):
        raise TargetSelectionError(f"empty entry in target list {text!r}; use e.g. 'cpu,cuda:0', 'all' or 'gpu'")
    return tokens


def select(text: str, available: list[Target]) -> list[Target]:
    """Resolve a selection against the available targets, keeping their order."""
    by_name = {target.name: target for target in available}
    names = ", ".join(by_name)
    chosen: set[str] = set()
    for token in parse_selection(text):
        if token == "all":
            chosen.update(by_name)
        elif token == "default":  # every target but the compiled ones (they compile each op: opt in) and vcuda:0
            chosen.update(t.name for t in available if t.in_default_selection)
        elif token == "compile":
            chosen.update(t.name for t in available if t.compiled)
        elif token == "gpu":
            accelerators = [t.name for t in available if t.is_accelerator and not t.virtual and not t.compiled]
            if not accelerators:
                raise TargetSelectionError(
                    f"'gpu' selects no target: no real accelerator is visible "
                    f"(available: {names}; virtual ones are selected by 'vcuda')"
                )
            chosen.update(accelerators)
        elif token in by_name:
            chosen.add(token)
        elif token == "isa":
            chosen.update(t.name for t in available if t.cpu_path)
        elif token in {t.kind for t in available}:  # "cuda" means every cuda:N (eager)
            chosen.update(t.name for t in available if t.kind == token and not t.compiled)
        elif (
            token.split(":")[0] == "vcuda"
            and not any(t.virtual for t in available)
            and (reason := virtual_unavailable_reason()) is not None
        ):
            raise TargetSelectionError(f"{token!r}: {reason}")
        else:
            raise TargetSelectionError(
                f"unknown target {token!r} (available: {names}; or {', '.join(repr(k) for k in KEYWORDS)})"
            )
    return [target for target in available if target.name in chosen]
