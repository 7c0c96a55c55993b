"""The timing gate's rule, its files and its charts (the gate's accuracy is a benchmark:
benchmarks/timing_gate.py, not a timed test)."""

import json

import pytest

from conformance.report.charts import timing_charts
from conformance.store.timings import Timing, TimingsError, compare, read, write


def timing(op="normalize_v2", seconds=1e-4, calibration=5e-5, shape="1x3x224x224"):
    return Timing(op, "cpu", "float32", "valid", shape, seconds, calibration, 0.1, seconds / calibration)


def test_a_slowdown_is_judged_against_the_calibration_op_not_the_clock():
    before = [timing(), timing("resize")]
    busier = [timing(seconds=2e-4, calibration=1e-4), timing("resize", seconds=2e-4, calibration=1e-4)]
    flagged, pairs = compare(before, busier)  # the whole machine twice as slow: nothing flagged
    assert flagged == [] and len(pairs) == 2
    slower = [timing(seconds=2e-4), timing("resize")]
    flagged, _ = compare(before, slower)
    assert [s.after.op for s in flagged] == ["normalize_v2"] and flagged[0].factor == pytest.approx(2.0)
    assert "2.00x slower" in flagged[0].describe()


def test_timings_round_trip_and_damage_is_an_error(tmp_path):
    path = tmp_path / "timings.json"
    write(path, [timing()], {"torch": "x"})
    assert read(path) == [timing()]
    path.write_text(path.read_text()[:-30])
    with pytest.raises(TimingsError, match="truncated"):
        read(path)
    path.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(TimingsError, match="not a timings file"):
        read(path)
    path.write_text(json.dumps({"format": "conformance-timings/1", "timings": [{"op": "x"}]}))
    with pytest.raises(TimingsError, match="not a timings record"):
        read(path)


def test_charts_escape_hostile_names():
    (chart,) = timing_charts([timing(op="<script>alert(1)</script>")])
    assert "<script>" not in str(chart["svg"]) and "&lt;script&gt;" in str(chart["svg"])
    assert str(chart["svg"]).startswith("<svg")


def test_a_run_with_timings_shows_a_chart_per_op(tmp_path):
    from synthetic_runs import write_run

    from conformance.report.build import build_report

    run = write_run(tmp_path / "run", outcomes=10, failures=0)
    write(run / "timings.json", [timing(), timing(shape="1x3x16x16", seconds=2e-5), timing("resize")], {})
    page = build_report(run).read_text()
    assert "Time per call" in page and page.count("<svg") == 2  # normalize_v2 and resize
    (run / "timings.json").write_text("{")  # a damaged file: the report is still built, without charts
    assert "Time per call" not in build_report(run).read_text()
