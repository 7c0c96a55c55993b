"""An op that ends its process is recorded, and said in a few lines (issue 37, item 10).

With `-n 0` the op runs in pytest's only process: `os._exit` there ended the run mid-line, with no message, no
summary.json and the op's own exit code (0 passed a gate).  Under xdist a crashed worker was recorded, but
faulthandler dumped every thread of it (some 80 lines a crash) on top of xdist's own line.
"""

from group_runs import GroupRun

QUITS = """
import os
import torch

class Quits(torch.nn.Module):
    def forward(self, x):
        os._exit(0)  # the worst exit code it could choose: a gate reads 0 as a pass
"""
ABORTS = """
import os
import torch

class Aborts(torch.nn.Module):
    def forward(self, x):
        os.abort()
"""


def test_an_op_that_exits_the_one_process_is_recorded_as_a_crash_in_an_incomplete_summary(tmp_path):
    with GroupRun(tmp_path, {"quits": QUITS}, "--sweep=quits", "--targets=cpu", "-n", "0") as run:
        run.finish(within=600)
        assert run.process.returncode == 1, run.output[-3000:]  # an item crashed: a failure, whatever the op said
        said = run.lines()[-1]
        assert said.startswith("conformance: pytest exited with code 0 before it wrote its summary"), said
        assert "Quits[cpu-float32-default-error]: recorded as a crash" in said and "marked incomplete" in said, said
        summary = run.summary()
        assert summary["complete"] is False
        assert [(g["check"], g["verdict"]) for g in summary["groups"]] == [("error", "error")], summary["groups"]
        # counted once, as the crash it was: not also as an interrupted item
        assert summary["totals"] == {"error": 1}, summary["totals"]
        assert "interrupted" not in summary and not summary["groups"][0].get("interrupted"), summary
        assert run.left_behind() == []


def test_a_crashed_xdist_worker_is_a_few_lines_not_a_dump_of_its_threads(tmp_path):
    with GroupRun(tmp_path, {"aborts": ABORTS}, "--sweep=aborts", "--targets=cpu", "-n", "2", "-k", "error") as run:
        run.finish(within=600)
        assert run.process.returncode == 1, run.output[-3000:]
        assert "crashed while running" in run.output, run.output[-3000:]
        assert "Fatal Python error" not in run.output and "most recent call first" not in run.output, run.output
        assert len(run.lines()) <= 30, run.output
        assert [g["verdict"] for g in run.summary()["groups"]] == ["error"]
