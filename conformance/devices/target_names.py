"""What a target's name alone says, for the code that has only the name (a crashed item's id, a record) and must
not import torch: whether a rerun line has to name the target."""

from __future__ import annotations

from dataclasses import dataclass

COMPILED_SUFFIX = "+compile"  # `<device>+compile`: conformance.devices.compiled_target.compile_targets


BUILT_IN_KINDS = ("cpu", "cuda", "mps", "xpu", "vcuda")  # in table order; an installed package's kinds follow


def kind_of(target_name: str) -> str:
    return target_name.removesuffix(COMPILED_SUFFIX).partition(":")[0]


HELD_BACK = ("vcuda:0",)  # discovery's default selection takes vcuda:1 alone (conformance.devices.discovery)


def named_in_rerun(target_name: str) -> bool:
    """Whether a rerun line must name the target (`--targets`): the ones the default selection leaves out, which
    are compiled targets, vcuda:0 and the kinds installed packages add (the same as `Target.in_default_selection`
    says of a discovered target, which tests/test_rerun_line.py holds)."""
    return (
        target_name.endswith(COMPILED_SUFFIX) or kind_of(target_name) not in BUILT_IN_KINDS or target_name in HELD_BACK
    )


def table_order(target_name: str) -> tuple[float, str]:
    """Where a target sorts in the report's tables: by kind, the cpu's instruction-set paths after the cpu."""
    kind = kind_of(target_name)
    rank = BUILT_IN_KINDS.index(kind) if kind in BUILT_IN_KINDS else len(BUILT_IN_KINDS)
    cpu_path = kind == "cpu" and ":" in target_name
    return rank + (0.5 if cpu_path else 0), target_name


VIRTUAL_KINDS = ("vcuda",)  # `vcuda:N`: conformance.devices.targets.virtual_targets


def is_virtual_name(target_name: str) -> bool:
    """Whether a target name is a virtual device's (for a record that has only the name: a crashed item's)."""
    return target_name.partition(":")[0] in VIRTUAL_KINDS


@dataclass(frozen=True)
class ScriptDevice:
    """Where a repro script reruns a target's failure on a real machine."""

    device: str  # the torch device the script uses
    cpu_capability: str = ""  # ATEN_CPU_CAPABILITY for a cpu instruction-set path ("default", "avx2", ...)
    compiled: bool = False
    notes: tuple[str, ...] = ()


def script_device(target_name: str) -> ScriptDevice:
    """The real device a repro script runs a target's case on: an instruction-set path is the cpu with that
    capability, a virtual device the CUDA device of its index, an installed package's kind its own name."""
    base, compiled = target_name.removesuffix(COMPILED_SUFFIX), target_name.endswith(COMPILED_SUFFIX)
    kind, _, index = base.partition(":")
    if kind == "cpu" and index:
        return ScriptDevice("cpu", index, compiled)
    if kind in VIRTUAL_KINDS:
        device = f"cuda:{index}"
        note = (
            f"Found on the virtual device {base} (CPU data that reports a CUDA device, device rules enforced): "
            f"the script runs on {device}, which needs a CUDA machine."
        )
        return ScriptDevice(device, "", compiled, (note,))
    return ScriptDevice(base, "", compiled)
