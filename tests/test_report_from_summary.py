"""The report shows the summary the run wrote (summary.json), never one of its own: one summary, one idea of
whether the run was complete.  A run without one gets it written first, marked incomplete unless the session's
end was recorded; a summary.json that cannot be shown is a one-line error and is left as it is."""

import json

import pytest
from report_pages import page_data
from synthetic_runs import write_run

from conformance.cli import main as cli
from conformance.report.build import build_report
from conformance.report.merge import merge_runs
from conformance.store.aggregate import SUMMARY_SCHEMA, summarize
from conformance.store.reader import ENDED, RunRecords, load_environment
from conformance.store.summary_file import FLAT_SCHEMA, pack, unpack
from conformance.store.summary_reader import SummaryError


def _summary(run):
    """summary.json as its readers see it (flat groups)."""
    return unpack(json.loads((run / "summary.json").read_text()))


def _write(run, summary) -> str:
    """summary.json as the harness writes it; returns its text."""
    text = json.dumps(pack(summary))
    (run / "summary.json").write_text(text)
    return text


def test_the_report_draws_the_written_summary_not_a_recount(tmp_path):
    run = write_run(tmp_path / "run", outcomes=30, failures=0)
    planted = _summary(run)
    planted["totals"] = {"known_issue": 54, "pass": 987_600}  # no record says so: only summary.json
    planted["complete"] = False
    planted["interrupted"] = ["cases/test_planted.py::test_planted[cpu-uint8-m-reference]"]
    for group in planted["groups"]:
        if group["mode"] == "bilinear":
            group["counts"], group["verdict"] = {"fail": 4_321}, "fail"
    written = _write(run, planted)
    index = build_report(run)
    data, html = page_data(index), index.read_text()
    assert (
        data["headline"] == "Incomplete run: 1 new failure so far; 54 cases in 1 known issue; 987,654 checked outcomes"
    )
    assert [n["text"] for n in data["new"]] == ["resize [uint8, bilinear] on vcuda:1: reference fail"]
    assert 'id="incomplete"' in html and "test_planted[cpu-uint8-m-reference]" in html
    assert "987,600 pass" in (run / "summary.md").read_text()
    assert (run / "summary.json").read_text() == written  # read, never rewritten


def test_a_merged_runs_report_shows_what_the_merge_wrote(tmp_path):
    a = write_run(tmp_path / "a", outcomes=5, failures=1, target="cuda:0")
    b = write_run(tmp_path / "b", outcomes=6, failures=1, target="cuda:0")
    merge_runs([a, b], tmp_path / "merged", labels=["h100", "a100"])
    merged = tmp_path / "merged"
    summary = _summary(merged)
    summary["torn_lines"] = 7  # the merge counts lines torn in its inputs: the merged journal has none
    _write(merged, summary)
    assert cli(["report", str(merged)]) == 0
    assert "7 torn record line(s) were skipped" in (merged / "index.html").read_text()
    assert _summary(merged)["machines"] == ["h100", "a100"]  # the merge's own fields are kept


@pytest.mark.parametrize("lost", ["missing", "torn", "only the complete word"])
def test_a_run_without_a_summary_gets_the_one_conformance_summary_writes(lost, tmp_path):
    run = write_run(tmp_path / "run", outcomes=10, failures=1, complete=False)
    records = RunRecords(run)
    expected = json.loads(json.dumps(summarize(records, load_environment(run), torn=records.torn, complete=False)))
    if lost == "torn":
        (run / "summary.json").write_text('{"schema": "conformance.summ')
    elif lost == "only the complete word":
        (run / "summary.json").write_text('{"complete": false}')
    html = build_report(run).read_text()
    assert _summary(run) == expected and expected["complete"] is False  # no session end on record: incomplete
    assert 'id="incomplete"' in html


def test_a_lost_summary_of_a_run_that_ended_is_the_one_its_session_wrote(tmp_path):
    run = write_run(tmp_path / "run", outcomes=10, failures=1)
    written = _summary(run)
    (run / ENDED).write_text('{"complete": true}\n')  # what the session's end writes beside summary.json
    (run / "summary.json").unlink()
    assert "Incomplete run" not in build_report(run).read_text()
    assert _summary(run) == written


def test_a_lost_merged_summary_is_rebuilt_marked_incomplete(tmp_path):
    a = write_run(tmp_path / "a", outcomes=5, failures=0, target="cuda:0")
    b = write_run(tmp_path / "b", outcomes=6, failures=0, target="cuda:0")
    merge_runs([a, b], tmp_path / "merged", labels=["h100", "a100"])
    (tmp_path / "merged" / "summary.json").unlink()  # a merge writes no session end: what it said is not known
    assert 'id="incomplete"' in build_report(tmp_path / "merged").read_text()
    assert _summary(tmp_path / "merged")["complete"] is False


def _groups(summary, change):
    summary["groups"][0] = change(summary["groups"][0])
    return summary


def _variants(summary, change):
    written = pack(summary)
    written["variants"] = change(written["variants"])
    return written


MALFORMED = {  # on the groups as readers see them, written flat (schema /2, still read) unless packed
    "another schema": lambda s: s | {"schema": "conformance.summary/1"},
    "variants not a list": lambda s: _variants(s, lambda v: {"0": v[0]}),
    "a variant without checks": lambda s: _variants(s, lambda v: [{k: x for k, x in v[0].items() if k != "checks"}]),
    "no schema": lambda s: {k: v for k, v in s.items() if k != "schema"},
    "not an object": lambda s: [s],
    "groups not a list": lambda s: s | {"groups": {"0": s["groups"][0]}},
    "a group without a verdict": lambda s: _groups(s, lambda g: {k: v for k, v in g.items() if k != "verdict"}),
    "a group that is not an object": lambda s: _groups(s, lambda g: "pass"),
    "counts that are not numbers": lambda s: _groups(s, lambda g: g | {"counts": {"pass": "many"}}),
    "totals that are not numbers": lambda s: s | {"totals": {"pass": None}},
    "complete that is not a flag": lambda s: s | {"complete": "yes"},
    "interrupted that is not a list": lambda s: s | {"interrupted": "all"},
}


@pytest.mark.parametrize("how", sorted(MALFORMED))
def test_a_malformed_summary_is_a_one_line_error_and_is_left_as_it_is(how, tmp_path, capsys):
    run = write_run(tmp_path / "run", outcomes=10, failures=1)
    text = json.dumps(MALFORMED[how](_summary(run) | {"schema": FLAT_SCHEMA}))
    (run / "summary.json").write_text(text)
    assert cli(["report", str(run)]) == 4
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert str(run / "summary.json") in err and f"python -m conformance summary {run}" in err
    assert (run / "summary.json").read_text() == text and not (run / "index.html").exists()
    with pytest.raises(SummaryError):
        build_report(run)


def test_the_summary_command_mends_what_the_report_refused(tmp_path, capsys):
    run = write_run(tmp_path / "run", outcomes=10, failures=1)
    (run / "summary.json").write_text(json.dumps(_summary(run) | {"schema": "conformance.summary/1"}))
    assert cli(["report", str(run)]) == 4
    assert cli(["summary", str(run)]) == 0  # the command the error names
    assert cli(["report", str(run)]) == 0
    assert _summary(run)["schema"] == SUMMARY_SCHEMA and _summary(run)["complete"] is True


def test_the_report_command_says_when_it_wrote_the_summary(tmp_path, capsys):
    run = write_run(tmp_path / "run", outcomes=5, failures=0)
    assert cli(["report", str(run)]) == 0
    assert "summary:" not in capsys.readouterr().out  # the run's own: nothing new to say
    (run / "summary.json").unlink()
    assert cli(["report", str(run)]) == 0
    assert f"summary: {run / 'summary.json'} (the run had none: written from its records)" in capsys.readouterr().out
