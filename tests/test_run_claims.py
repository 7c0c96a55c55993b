"""Two runs started at once with the same --run-name get a folder each (issue 37, item 2).

The folder was named at start-up and created at the first record, seconds later: two runs started together
both took the free name, and one's examples table overwrote the other's.  A barrier in a planted conftest holds
each run after start-up until both have started, so the two always overlap there.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from conformance.store.examples import read_table
from conformance.store.reader import RunRecords

PLANTED = Path(__file__).with_name("planted_ops.py").read_text()
GOOD = """
from planted_ops import *

test_good = make_spec("good", good_resize, dtypes=("float32",)).test()
"""
BARRIER = """
import os, time
from pathlib import Path

def pytest_collection_finish(session):
    # every run past start-up (its folder named) before either records anything
    folder = Path(os.environ["BARRIER"])
    (folder / f"arrived.{os.getpid()}").touch()
    deadline = time.monotonic() + 120
    while len(list(folder.glob("arrived.*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
"""
ARGS = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--targets=cpu", "--max-examples=10", "-n", "0"]


def test_two_runs_started_at_once_with_one_run_name_get_a_complete_folder_each(pytester):
    pytester.makepyfile(planted_ops=PLANTED, test_good=GOOD)
    pytester.makeconftest(BARRIER)
    barrier = pytester.mkdir("barrier")
    env = dict(os.environ, BARRIER=str(barrier))
    command = [sys.executable, "-m", "pytest", *ARGS, "--run-name", "same", "test_good.py"]
    runs = [
        subprocess.Popen(command, cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=300)[0].decode(errors="replace") for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    reports = pytester.path / "reports"
    folders = sorted(p.name for p in reports.iterdir() if p.is_dir() and not p.is_symlink())
    assert folders == ["same", "same-2"], outputs
    seen = []
    for name in folders:
        records = list(RunRecords(reports / name))
        items = [r["nodeid"] for r in records if r["kind"] == "item"]
        assert len(items) == len(set(items)) == 4, f"{name}: items {items}"  # each item once: one run's
        tallied = sum(sum(r["tally"]["counts"].values()) for r in records if r["kind"] == "item_end")
        table, torn = read_table(reports / name)
        assert table.num_rows == tallied > 0 and torn == 0, name  # every example of the run, none lost
        assert json.loads((reports / name / "summary.json").read_text())["complete"] is True
        seen.append(sorted(items))
    assert seen[0] == seen[1]


def test_a_run_that_records_nothing_gives_its_claimed_folder_back(pytester):
    pytester.makepyfile(planted_ops=PLANTED, test_good=GOOD)
    start = time.monotonic()
    result = pytester.runpytest_inprocess(*ARGS, "--run-name", "nothing", "--co", "test_good.py")
    assert result.ret == 0 and time.monotonic() - start < 60
    assert not (pytester.path / "reports" / "nothing").exists()
