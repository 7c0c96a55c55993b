"""What a record, a report or a repro script needs to know about a target, as one typed record the target itself
writes (`Target.facts`).  The run's environment keeps each target's facts; readers that have only a name (a
crashed item's id, a record read from a store) look them up there instead of parsing the name.  Imports no torch:
the store and the report read it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

UNKNOWN_RANK = 99.0  # a target whose facts a run did not record (a store from before 0.24.0): sorted last


def target_label(name: str, virtual: bool) -> str:
    """A target's name in messages and tables, marked when it is virtual."""
    return f"{name} (virtual)" if virtual else name


@dataclass(frozen=True)
class ScriptDevice:
    """Where a repro script reruns a target's failure on a real machine."""

    device: str  # the torch device the script uses
    cpu_capability: str = ""  # ATEN_CPU_CAPABILITY for a cpu instruction-set path ("default", "avx2", ...)
    compiled: bool = False
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class TargetFacts:
    """A target as records and readers see it."""

    name: str
    kind: str
    description: str = ""
    virtual: bool = False  # its data and kernels are the cpu's (a virtual device, the meta device)
    compiled: bool = False  # its op runs through torch.compile
    named_in_rerun: bool = True  # a rerun line must name it (`--targets`): the default selection leaves it out
    table_rank: float = UNKNOWN_RANK  # where it sorts in the report's tables (then by name)
    script: ScriptDevice = field(default_factory=lambda: ScriptDevice("cpu"))

    def record_fields(self) -> dict[str, Any]:
        """The target's fields in an outcome record."""
        return {"target": self.name, "virtual": self.virtual}

    def sort_key(self) -> tuple[float, str]:
        return self.table_rank, self.name

    def to_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["script"]["notes"] = list(self.script.notes)
        return found

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TargetFacts:
        """Read back; a field an older run did not record takes the value that claims least (named in a rerun line,
        sorted last, a script on the device of its name)."""
        name = str(data.get("name", "?"))
        script = data.get("script")
        device = (
            ScriptDevice(
                str(script.get("device", name)),
                str(script.get("cpu_capability", "")),
                bool(script.get("compiled", False)),
                tuple(str(n) for n in script.get("notes", ())),
            )
            if isinstance(script, Mapping)
            else ScriptDevice(name)
        )
        return cls(
            name=name,
            kind=str(data.get("kind", name)),
            description=str(data.get("description", "")),
            virtual=bool(data.get("virtual", False)),
            compiled=bool(data.get("compiled", False)),
            named_in_rerun=bool(data.get("named_in_rerun", True)),
            table_rank=float(data.get("table_rank", UNKNOWN_RANK)),
            script=device,
        )


def unrecorded(name: str) -> TargetFacts:
    """A target no run recorded facts for (an item id naming a target the run did not select)."""
    return TargetFacts(name, name, script=ScriptDevice(name))


class FactsBook:
    """The facts of a run's targets by name (from its environment), and what it says of a name it lacks."""

    def __init__(self, facts: Iterable[TargetFacts] = ()) -> None:
        self.by_name = {f.name: f for f in facts}

    @classmethod
    def of_environment(cls, environment: Mapping[str, Any] | None) -> FactsBook:
        listed = (environment or {}).get("targets") or []
        return cls(TargetFacts.from_dict(t) for t in listed if isinstance(t, Mapping))

    def __getitem__(self, name: str) -> TargetFacts:
        return self.by_name.get(name) or unrecorded(name)

    @classmethod
    def of_environments(cls, environments: Iterable[Mapping[str, Any] | None]) -> FactsBook:
        """Of several machines' (a merged run): a name the first machine describes keeps its facts."""
        found: dict[str, TargetFacts] = {}
        for environment in environments:
            for name, facts in cls.of_environment(environment).by_name.items():
                found.setdefault(name, facts)
        return cls(found.values())
