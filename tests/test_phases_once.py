"""An example's phase is decided once, by the item's ledger, as a `Phase`; the records count what it says counts.

If the records (or the summary) kept their own list of counted phases again, a phase the ledger counts would be
left out of the tally, or one it leaves out counted: these tests compare the two phase by phase.
"""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from conformance.checks.registry import CheckOutcome
from conformance.devices.targets import CPU
from conformance.engine import recorder as recorder_module
from conformance.engine.judgement import Judgement
from conformance.engine.ledger import ItemInfo, ItemState
from conformance.engine.recorder import CaseRecorder
from conformance.spec.tolerances import Metrics, Tolerance
from conformance.store import examples
from conformance.store.records import RecordWriter
from conformance.store.tally import COUNTED_PHASES, Phase

NODE = "cases/test_op.py::test_op[cpu-uint8-m-reference]"
TOLERANCE = Tolerance("t", "one step", atol=1)


def known_outcome() -> CheckOutcome:
    metrics = Metrics(5.0, 1.0, 1.0, 1, 1, None, None, None, 10.0)
    return CheckOutcome("reference", False, "off by 5", metrics, TOLERANCE, cause="values", against="reference")


def item(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[ItemState, CaseRecorder]:
    """An item begun as the session begins one: its ledger and the recorder writing its records."""
    monkeypatch.setattr(recorder_module, "arrays", lambda ctx: {"input": np.zeros(2)})  # no case context here
    spec = SimpleNamespace(name="op", member=None)
    info = ItemInfo(NODE, "test_op", tmp_path, spec, "cpu", "uint8", "m", "reference")
    issue = SimpleNamespace(id="k1")
    state = ItemState(info, CPU, [issue])
    recorder = CaseRecorder(RecordWriter(tmp_path, "gw0", dict), None)
    recorder.item_started(state, [])
    return state, recorder


def test_the_counted_phases_on_disk_are_those_the_phase_value_counts():
    assert set(COUNTED_PHASES) == {p.value for p in Phase if p.counted} == {"explore", "final", "replay", "item"}
    assert [p for p in Phase if not p.counted] == [Phase.SHRINK]
    assert Phase("final") is Phase.FINAL  # a record's phase reads back as the same value


@pytest.mark.parametrize("phase", list(Phase))
def test_the_records_count_an_example_exactly_when_its_phase_counts(tmp_path, phase):
    writer = RecordWriter(tmp_path, "gw0", dict)
    base = writer.base("test_op", "op", CPU, "uint8", "m")
    tally = writer.item_started(base, NODE, "reference", [])
    writer.example(phase, 0, "{}", "known_issue", known_outcome(), "off by 5", "k1", None, None)
    assert (sum(tally.counts.values()), tally.shrunk) == ((1, 0) if phase.counted else (0, 1))
    writer.close()


def test_the_ledger_decides_phases_as_phase_values():
    state = ItemState(SimpleNamespace(), CPU, [])
    assert state.phase(False, False) is Phase.EXPLORE
    assert state.phase(False, True) is Phase.REPLAY
    assert state.phase(True, False) is Phase.SHRINK  # hypothesis reruns the minimal failure as its final example
    state.source = "plan"
    assert state.phase(True, False) is Phase.EXPLORE


def test_what_the_ledger_counts_the_tally_counts_phase_by_phase(tmp_path, monkeypatch):
    state, recorder = item(tmp_path, monkeypatch)
    (issue,) = state.applicable
    judged = Judgement("known_issue", issue)
    phases = [Phase.EXPLORE, Phase.SHRINK, Phase.EXPLORE, Phase.SHRINK, Phase.FINAL, Phase.REPLAY]
    for n, phase in enumerate(phases):
        state.count(judged, [issue], phase)
        case = SimpleNamespace(json=f'{{"n": {n}}}')
        recorder.example(state, case, SimpleNamespace(), known_outcome(), judged, phase, None)
    counted = [p.value for p in phases if p.counted]
    assert state.checked == len(phases) and state.reproduced == {"k1"}  # it explained every case it saw
    assert state.in_scope["k1"] == state.reproductions["k1"] == len(counted)
    assert state.tally.counts == {"known_issue": len(counted)} and state.tally.shrunk == phases.count(Phase.SHRINK)
    recorder.close()
    table, _ = examples.read_table(tmp_path)
    assert table.column("phase").to_pylist() == counted  # written by name, shrinking left out
