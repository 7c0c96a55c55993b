"""One rerun-line builder (conformance.store.repro_command.rerun_line) for a failure's message and a crashed item's
record: both name a target the default selection leaves out (the crash record once omitted `--targets`)."""

import shlex

from conformance.store.reader import read_outcomes
from conformance.store.records import RecordWriter
from conformance.store.repro_command import rerun_line

CASE = '{"op":"x","params":{},"recipe":{"height":1,"width":1}}'


def test_the_rerun_line_names_a_compiled_target_only():
    eager = rerun_line("cases/test_x.py::test_x[cpu-uint8-default-reference]", CASE, "cpu")
    compiled = rerun_line("cases/test_x.py::test_x[cpu+compile-uint8-default-compiled]", CASE, "cpu+compile")
    assert shlex.split(eager)[:4] == ["python", "-m", "conformance", "run"] and "--targets" not in eager
    assert shlex.split(compiled)[-2:] == ["--targets", "cpu+compile"]
    assert shlex.split(compiled)[5:7] == ["--replay", CASE]


def test_a_crashed_item_on_a_compiled_target_gets_the_same_rerun_line(tmp_path):
    nodeid = "cases/test_x.py::test_x[cpu+compile-uint8-default-compiled]"
    writer = RecordWriter(tmp_path, "gw0", lambda: {"python": "3"})
    writer.crash(nodeid, "worker 'gw0' crashed", CASE)
    writer.store.close()
    rows, _ = read_outcomes(tmp_path)
    crashed = next(r for r in rows if r.get("crash"))
    assert crashed["repro"] == rerun_line(nodeid, CASE, "cpu+compile")
    assert crashed["message"].endswith(f"Rerun: {crashed['repro']}")
