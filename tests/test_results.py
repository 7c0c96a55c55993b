"""The result store survives crashes, and summaries do not depend on workers or shrinking."""
import json

from conformance.cli import main as cli
from conformance.results import Store, read_outcomes, safe_name, summarize, write_summary


def record(check="reference", verdict="pass", phase="explore", target="cpu", **extra):
    return {"kind": "outcome", "test": "test_op", "op": "op", "target": target, "virtual": False,
            "dtype": "uint8", "mode": "m", "check": check, "verdict": verdict, "phase": phase,
            "metrics": {"max_abs": extra.pop("max_abs", 0.0)}, "tolerance": {"name": "t", "atol": 1}, **extra}


def test_a_torn_last_line_is_skipped_and_counted(tmp_path):
    store = Store(tmp_path, "gw0", {"python": "3"})
    store.append(record())
    store.append(record(verdict="fail", phase="final", max_abs=float("inf")))
    store.close()
    with open(tmp_path / "outcomes" / "gw0.jsonl", "a") as handle:
        handle.write('{"kind": "outcome", "test": "te')  # killed mid-write
    records, torn = read_outcomes(tmp_path)
    assert len(records) == 2 and torn == 1
    assert records[1]["metrics"]["max_abs"] == "inf"  # standard JSON, no Infinity literal


def test_a_case_shared_by_checks_is_written_once_and_read_back_with_each(tmp_path):
    store = Store(tmp_path, "gw0", {})
    first, second = json.dumps({"seed": 1, "side": 3}), json.dumps({"seed": 2})
    for check, case in (("reference", first), ("cross_device", first), ("reference", second)):
        store.append_example(record(check=check), case)
    store.close()
    lines = (tmp_path / "outcomes" / "gw0.jsonl").read_text().splitlines()
    assert sum('"kind": "case"' in line for line in lines) == 2 and len(lines) == 5
    records, torn = read_outcomes(tmp_path)
    assert torn == 0 and [r["check"] for r in records] == ["reference", "cross_device", "reference"]
    assert [json.loads(r["case"]) if isinstance(r["case"], str) else r["case"] for r in records] == [
        {"seed": 1, "side": 3}, {"seed": 1, "side": 3}, {"seed": 2}]
    assert all("case_id" not in r for r in records)


def test_shrink_phase_examples_are_not_counted():
    summary = summarize([record(), record(), record(verdict="fail", phase="shrink"),
                         record(verdict="fail", phase="final", max_abs=7.0)], None)
    (group,) = summary["groups"]
    assert group["examples"] == 3 and group["counts"] == {"fail": 1, "pass": 2}
    assert group["verdict"] == "fail" and group["worst"]["max_abs"] == 7.0


def test_summary_is_independent_of_record_order_and_worker_files(tmp_path):
    records = [record(target=t, check=c, max_abs=float(i)) for i, (t, c) in
               enumerate([(t, c) for t in ("cpu", "cuda:0") for c in ("reference", "cross_device")])]
    one = tmp_path / "one"
    store = Store(one, "main", {})
    for r in records:
        store.append(r)
    store.close()
    two = tmp_path / "two"
    for worker, part in (("gw1", records[::2]), ("gw0", records[1::2][::-1])):
        store = Store(two, worker, {})
        for r in part:
            store.append(r)
        store.close()
    assert write_summary(one, complete=True)["groups"] == write_summary(two, complete=True)["groups"]


def test_file_names_from_hostile_ids_stay_inside_their_folder():
    name = safe_name("test_x[../../etc/passwd-<script>alert('x')</script>]")
    assert "/" not in name and ".." not in name and "<" not in name and "'" not in name


def test_cli_rebuilds_a_summary_after_a_crash(tmp_path, capsys):
    store = Store(tmp_path, "gw0", {})
    store.append(record())
    store.close()
    assert cli(["summary", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1].split()[:4] == ["op", "cpu", "uint8", "m"]
    assert "did not finish" in out
    assert json.loads((tmp_path / "summary.json").read_text())["complete"] is False
    assert cli(["summary", str(tmp_path / "nothing")]) == 4
