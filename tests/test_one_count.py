"""An item's counted cases are counted once, in its tally: its ledger holds that tally and reads the known issues'
scope and the warnings from it (pytest's verdict, the terminal's warnings), and its end record writes the same
object (the summary), so the two cannot disagree."""

import json
from types import SimpleNamespace

import numpy as np

from conformance.checks.registry import CheckOutcome
from conformance.devices.targets import CPU
from conformance.engine import recorder as recorder_module
from conformance.engine.judgement import Judgement
from conformance.engine.ledger import ItemInfo, ItemState, shown_warnings
from conformance.engine.recorder import CaseRecorder
from conformance.spec import known_issues as ki
from conformance.store.aggregate import write_summary
from conformance.store.records import RecordWriter
from conformance.store.tally import MAX_WARNING_MESSAGES, Phase, Tally

NODE = "cases/test_op.py::test_op[cpu-uint8-m-reference]"


def begin(tmp_path, monkeypatch, issues=()):
    monkeypatch.setattr(recorder_module, "arrays", lambda ctx: {"input": np.zeros(2)})  # no case context here
    spec = SimpleNamespace(name="op", member=None)
    state = ItemState(ItemInfo(NODE, "test_op", tmp_path, spec, "cpu", "uint8", "m", "reference"), CPU, list(issues))
    recorder = CaseRecorder(RecordWriter(tmp_path, "gw0", dict), None)
    recorder.item_started(state, [])
    return state, recorder


def check(state, recorder, n, outcome, judged, scoped=(), phase=Phase.EXPLORE):
    """What the session does with one checked case: the ledger, then the record."""
    state.examples += phase.counted
    state.count(judged, list(scoped), phase)
    recorder.example(state, SimpleNamespace(json=f'{{"n": {n}}}'), SimpleNamespace(), outcome, judged, phase, None)


def item_end(tmp_path):
    lines = (tmp_path / "outcomes" / "gw0.jsonl").read_text().splitlines()
    (ended,) = [r for r in map(json.loads, lines) if r["kind"] == "item_end"]
    return ended["tally"]


def test_the_ledger_holds_the_tally_its_records_write(tmp_path, monkeypatch):
    state, recorder = begin(tmp_path, monkeypatch)
    assert isinstance(state.tally, Tally) and state.tally is recorder.records.tally
    recorder.close()


def test_known_issue_scope_is_counted_once_and_written_without_a_merge(tmp_path, monkeypatch):
    one, two = SimpleNamespace(id="k1"), SimpleNamespace(id="k2")
    state, recorder = begin(tmp_path, monkeypatch, [one, two])
    failed = CheckOutcome("reference", False, "off by 5", cause="values", against="reference")
    passed = CheckOutcome("reference", True, against="reference")
    check(state, recorder, 0, failed, Judgement("known_issue", one), [one, two])
    check(state, recorder, 1, passed, Judgement("pass"), [one])
    check(state, recorder, 2, failed, Judgement("known_issue", one), [one], Phase.SHRINK)  # not counted
    assert state.in_scope == {"k1": 2, "k2": 1} and state.reproductions == {"k1": 1, "k2": 0}
    staleness = ki.Staleness()
    recorder.item_ended(state, staleness, interrupted=False)
    written = item_end(tmp_path)
    assert written["issue_scope"] == {"k1": [2, 1], "k2": [1, 0]} == state.tally.to_dict()["issue_scope"]
    assert written["counts"] == {"known_issue": 1, "pass": 1} and written["shrunk"] == 1
    recorder.close()
    (group,) = write_summary(tmp_path, complete=True)["groups"]
    assert group["issue_scope"] == {"k1": [2, 1], "k2": [1, 0]}


def test_warnings_pytest_shows_are_the_tallys_and_the_record_keeps_the_first_few(tmp_path, monkeypatch):
    state, recorder = begin(tmp_path, monkeypatch)
    messages = ["a", "b", "a", "c", "d", "e", "a"]
    for n, message in enumerate(messages):
        outcome = CheckOutcome("reference", False, message, cause="soft", warning=True)
        check(state, recorder, n, outcome, Judgement("warning"))
    shown = shown_warnings(state)
    assert len(shown) == len(set(messages)) and shown[0].endswith("in 3 of 7 cases: a")  # every message, for pytest
    recorder.item_ended(state, ki.Staleness(), interrupted=False)
    kept = dict(list({m: messages.count(m) for m in messages}.items())[:MAX_WARNING_MESSAGES])
    assert item_end(tmp_path)["warnings"] == kept == {"a": 3, "b": 1, "c": 1}  # the first few, with all their cases
    assert item_end(tmp_path)["counts"] == {"warning": len(messages)}
    recorder.close()
    (group,) = write_summary(tmp_path, complete=True)["groups"]
    assert group["warnings"] == kept and group["counts"] == {"warning": len(messages)}


def test_a_summary_group_keeps_the_first_warnings_of_its_items_in_order():
    group = Tally()
    for written in ({"warnings": {"a": 1, "b": 2}}, {"warnings": {"c": 1, "d": 4, "a": 1}}, {"warnings": {"b": 1}}):
        group.merge(written)
    assert group.warnings == {"a": 2, "b": 3, "c": 1}


def test_what_the_relations_tried_is_kept_per_item_and_merged_into_its_group():
    item = Tally()
    item.cover({"callable": "kornia.color.hsv.rgb_to_hsv", "tried": ["eps: 0-d tensor", "eps: int"], "peers": {}})
    item.cover({"callable": "kornia.color.hsv.rgb_to_hsv", "tried": ["eps: 0-d tensor"], "message": "not kept"})
    written = item.to_dict()
    assert written["covered"] == {"callable": ["kornia.color.hsv.rgb_to_hsv"], "tried": ["eps: 0-d tensor", "eps: int"]}
    group = Tally()
    group.merge(written)
    group.merge({"counts": {"pass": 1}, "covered": {"tried": ["eps: bool"], "unknown": ["dropped"]}})
    assert group.covered_lists()["tried"] == ["eps: 0-d tensor", "eps: bool", "eps: int"]
    assert "unknown" not in group.covered_lists()
    many = Tally()
    many.cover({"tried": [f"argument {i}" for i in range(100)]})
    assert len(many.covered_lists()["tried"]) == 24  # what was tried, not an inventory
