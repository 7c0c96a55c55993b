"""The result store survives crashes, stays compact, and summaries do not depend on workers or shrinking."""

import json
import math

import pytest

from conformance.checks.registry import CheckOutcome
from conformance.cli import main as cli
from conformance.spec.tolerances import Metrics, Tolerance
from conformance.store import examples
from conformance.store.aggregate import write_summary
from conformance.store.crashes import last_case_started
from conformance.store.examples import StoreError
from conformance.store.reader import read_outcomes
from conformance.store.records import RecordWriter
from conformance.store.writer import safe_name

TOLERANCE = Tolerance("t", "one step", atol=1)


def base(target="cpu", mode="m"):
    return {
        "test": "test_op",
        "op": "op",
        "target": target,
        "virtual": False,
        "dtype": "uint8",
        "mode": mode,
        "worker": "gw0",
        "pid": 1,
    }


def outcome(check="reference", passed=True, max_abs=0.0):
    return CheckOutcome(
        check,
        passed,
        "" if passed else f"off by {max_abs}",
        against="reference",
        tolerance=TOLERANCE,
        metrics=Metrics(max_abs, 0.0, 0.0 if passed else 1.0, 0 if passed else 1, 1, None, None, None, math.inf),
        cause="" if passed else "values",
    )


def item(writer, check="reference", target="cpu", examples_=(("explore", "pass", 0.0),), mode="m", case="{}"):
    nodeid = f"cases/t.py::test_op[{target}-uint8-{mode}-{check}]"
    writer.item_started(base(target, mode), nodeid, check, [])
    for n, (phase, verdict, max_abs) in enumerate(examples_):
        writer.example(phase, n, case, verdict, outcome(check, verdict == "pass", max_abs), "", None, None, None)
    writer.item_ended(base(target, mode), nodeid, check)
    return nodeid


def test_a_torn_last_journal_line_and_a_torn_examples_batch_are_skipped_and_counted(tmp_path):
    writer = RecordWriter(tmp_path, "gw0", lambda: {"python": "3"})
    item(writer, examples_=[("explore", "pass", 0.0), ("final", "fail", math.inf)])
    writer.store.examples.flush()  # the batch is on disk; the process is killed before it closes its store
    with open(tmp_path / "outcomes" / "gw0.jsonl", "a") as handle:
        handle.write('{"kind": "item", "nodeid": "te')  # killed mid-write
    with open(tmp_path / "examples" / "gw0.arrows", "ab") as handle:
        handle.write(b"\xff\xff\xff\xff\x10\x00")  # and mid-batch
    records, torn = read_outcomes(tmp_path)
    rows = [r for r in records if r.get("source") == "examples"]
    assert torn == 2 and [r["verdict"] for r in rows] == ["pass", "fail"]
    assert rows[1]["metrics"]["max_abs"] == "inf"  # spelled as JSON allows
    assert write_summary(tmp_path, complete=False)["totals"] == {"fail": 1, "pass": 1}


def test_the_examples_table_is_parquet_a_data_tool_reads_with_one_row_per_check_outcome(tmp_path):
    writer = RecordWriter(tmp_path, "gw0", dict)
    case = json.dumps({"op": "op", "recipe": {"seed": 1}, "params": {}})
    for check in ("reference", "cross_device"):
        item(writer, check=check, examples_=[("explore", "pass", 0.5)] * 3, case=case)
    writer.close()
    assert sorted(p.name for p in (tmp_path / "examples").iterdir()) == ["gw0.parquet"]  # the stream became Parquet
    import duckdb

    rows = duckdb.sql(
        f'SELECT "check", max_abs, "case" FROM \'{tmp_path}/examples/*.parquet\' WHERE max_abs > 0.25 ORDER BY "check"'
    ).fetchall()
    assert rows == [("cross_device", 0.5, case)] * 3 + [("reference", 0.5, case)] * 3


def test_shrinking_examples_are_not_counted_and_the_final_one_is(tmp_path):
    writer = RecordWriter(tmp_path, "gw0", dict)
    item(
        writer,
        examples_=[("explore", "pass", 0.0), ("explore", "pass", 0.0), ("shrink", "fail", 9.0), ("final", "fail", 7.0)],
    )
    writer.close()
    (group,) = write_summary(tmp_path, complete=True)["groups"]
    assert group["examples"] == 3 and group["counts"] == {"fail": 1, "pass": 2}
    assert group["verdict"] == "fail" and group["worst"]["max_abs"] == 7.0
    table, _ = examples.read_table(tmp_path)
    assert table.column("phase").to_pylist() == ["explore", "explore", "final"]


def test_summary_is_independent_of_record_order_and_worker_files(tmp_path):
    items = [(t, c) for t in ("cpu", "cuda:0") for c in ("reference", "cross_device")]
    one = tmp_path / "one"
    writer = RecordWriter(one, "main", dict)
    for n, (target, check) in enumerate(items):
        item(writer, check, target, [("explore", "pass", float(n))])
    writer.close()
    two = tmp_path / "two"
    for worker, part in (("gw1", items[::2]), ("gw0", items[1::2][::-1])):
        writer = RecordWriter(two, worker, dict)
        for target, check in part:
            item(writer, check, target, [("explore", "pass", float(items.index((target, check))))])
        writer.close()
    assert write_summary(one, complete=True)["groups"] == write_summary(two, complete=True)["groups"]


def test_the_case_a_process_runs_is_named_in_place_for_a_crash(tmp_path):
    writer = RecordWriter(tmp_path, "gw3", dict)
    writer.case_started("cases/t.py::test_op[cpu-uint8-m-error]", '{"op":"op","n":1}')
    writer.case_started("cases/t.py::test_op[cpu-uint8-m-error]", '{"op":"op","n":2}')
    assert last_case_started(tmp_path, "cases/t.py::test_op[cpu-uint8-m-error]") == '{"op":"op","n":2}'
    assert (tmp_path / "outcomes" / "gw3.running").stat().st_size < 100  # rewritten, never appended
    writer.case_started("cases/t.py::test_op[cpu-uint8-m-reference]", '{"op":"op","n":3,"long":"' + "x" * 300 + '"}')
    writer.case_started("cases/t.py::test_o[cpu-uint8-m-error]", '{"op":"o","n":4}')  # shorter: written over
    assert last_case_started(tmp_path, "cases/t.py::test_o[cpu-uint8-m-error]") == '{"op":"o","n":4}'
    assert last_case_started(tmp_path, "cases/t.py::test_op[cpu-uint8-m-reference]") is None
    writer.close()
    assert last_case_started(tmp_path, "cases/t.py::test_op[cpu-uint8-m-error]") is None  # a closed store ran nothing


def test_file_names_from_hostile_ids_stay_inside_their_folder():
    name = safe_name("test_x[../../etc/passwd-<script>alert('x')</script>]")
    assert "/" not in name and ".." not in name and "<" not in name and "'" not in name


def test_cli_rebuilds_a_summary_after_a_crash(tmp_path, capsys):
    writer = RecordWriter(tmp_path, "gw0", dict)
    item(writer)
    writer.close()
    assert cli(["summary", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[:4] == ["op", "cpu", "uint8", "m"]
    assert "did not finish" in out
    assert json.loads((tmp_path / "summary.json").read_text())["complete"] is False
    assert cli(["summary", str(tmp_path / "nothing")]) == 4


def test_a_store_of_the_older_format_is_a_one_line_error(tmp_path, capsys):
    (tmp_path / "outcomes").mkdir()
    (tmp_path / "outcomes" / "main.jsonl").write_text(
        '{"kind": "case", "id": 0, "case": {}}\n{"kind": "example", "checks": [], "case_id": 0}\n'
    )
    for command in ("summary", "report"):
        assert cli([command, str(tmp_path)]) == 4
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "older conformance (store format 1" in err
    with pytest.raises(StoreError):
        write_summary(tmp_path, complete=True)
