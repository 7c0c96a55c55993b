"""A run stopped as CI stops it, at any moment, ends within 30 s, interrupted (exit 2), with its summary marked
incomplete, every finished item kept, nothing left behind and no traceback (issue 37, items 1, 5 and 10).

Each run is a real process group (launcher, pytest controller, xdist workers, ISA workers) stopped the way GNU
`timeout` stops one: SIGTERM to the command, then to its whole group; a CI cancellation and a container stop
send the same to the group.  The controller gets it up to three times (the group's, and the launcher's forward
of each of its own two): before, a repeat landed while pytest reported the first and escaped as a traceback.
"""

from group_runs import GroupRun

# Quick passes each case; Stalls passes its first cases, then hangs (sleeping, like an op waiting on a device).
STALLING = """
import os, time
import torch

class Quick(torch.nn.Module):
    def forward(self, x):
        return x.clone()

class Stalls(torch.nn.Module):
    def forward(self, x):
        calls = os.environ["STALL_CALLS"]
        with open(calls, "a") as f:
            f.write(".")
        if os.path.getsize(calls) > 3:
            time.sleep(600)
        return x.clone()
"""
QUICK = """
import torch

class Quick(torch.nn.Module):
    def forward(self, x):
        return x.clone()
"""
# A plugin (-p) whose controller pauses as teardown begins (before the ISA workers' folder goes) and says so: the
# stop lands in teardown whatever the machine's speed.
TEARDOWN_PROBE = """
import os, time
import pytest

@pytest.hookimpl(tryfirst=True)
def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        open(os.environ["TEARDOWN_BEGUN"], "w").close()
        time.sleep(5)
"""
WITHIN_S = 30
FEW_LINES = 25  # the conformance section and pytest's KeyboardInterrupt lines


def _ended(run):
    assert run.process.returncode == 2, run.output[-3000:]
    assert "Traceback" not in run.output, run.output[-6000:]
    assert len(run.lines()) <= FEW_LINES, run.output[-6000:]
    assert run.left_behind() == []


def test_a_group_sigterm_mid_item_keeps_finished_items_and_the_running_items_cases(tmp_path):
    calls = tmp_path / "calls"
    with GroupRun(
        tmp_path,
        {"stalling": STALLING},
        "--sweep=stalling",
        "--targets=cpu",
        "-n",
        "2",
        "--case-timeout=300",
        env={"STALL_CALLS": str(calls)},
    ) as run:
        journal = run.run_dir / "outcomes"

        def quick_done_and_stalled() -> bool:
            ended = sum(p.read_text().count('"kind":"item_end"') for p in journal.glob("*.jsonl"))
            return ended >= 3 and calls.exists() and calls.stat().st_size > 3  # Quick's three items; Stalls asleep

        run.wait_for(quick_done_and_stalled, "Quick's items done and Stalls stuck")
        run.stop_like_timeout()
        assert run.finish(within=120) < WITHIN_S, run.output[-3000:]
        _ended(run)
        summary = run.summary()
        assert summary["complete"] is False
        groups = {(g["op"], g["check"]): g for g in summary["groups"]}
        quick = [g for (op, _), g in groups.items() if op.endswith("Quick")]
        assert len(quick) == 4 and all(g["verdict"] == "pass" for g in quick), quick  # error .. history
        stalled = [g for (op, _), g in groups.items() if op.endswith("Stalls")]
        assert len(stalled) == 1 and stalled[0]["verdict"] == "interrupted", stalled
        # the cases it checked before the stop are kept (its worker ends the item, where SIGTERM used to kill it)
        assert stalled[0]["examples"] >= 1, stalled
        assert len(summary["interrupted"]) == 1 and "Stalls" in summary["interrupted"][0], summary["interrupted"]


def test_a_group_sigterm_in_teardown_marks_the_summary_incomplete_and_removes_the_isa_folder(tmp_path):
    begun = tmp_path / "teardown-begun"
    with GroupRun(
        tmp_path,
        {"quick": QUICK, "teardown_probe": TEARDOWN_PROBE},
        "--sweep=quick",
        "--targets=cpu,cpu:default",  # an ISA level: the controller's shared ISA workers and their folder
        "-n",
        "2",
        "-p",
        "teardown_probe",
        env={"TEARDOWN_BEGUN": str(begun)},
    ) as run:
        run.wait_for(begun.exists, "teardown")
        run.stop_like_timeout()
        assert run.finish(within=120) < WITHIN_S, run.output[-3000:]
        _ended(run)
        summary = run.summary()
        assert summary["complete"] is False
        assert [g["verdict"] for g in summary["groups"]] == ["pass"] * 4  # every item had finished: all kept
        assert "marked incomplete" in run.lines()[-1], run.output[-2000:]


def test_ctrl_c_while_the_isa_workers_start_is_a_few_lines_without_a_traceback(tmp_path):
    with GroupRun(tmp_path, {"quick": QUICK}, "--sweep=quick", "--targets=cpu,cpu:default", "-n", "2") as run:
        run.wait_for(lambda: any(run.tmp.glob("conformance-targets-*")), "ISA workers")  # they are importing torch now
        run.stop_like_terminal()
        assert run.finish(within=120) < WITHIN_S, run.output[-3000:]
        _ended(run)
