"""A full disk (issue 46, item 7): it once ended a run in 99 INTERNALERROR lines, with summary.json's totals empty
although items ran and a `.index.html.NNNN.tmp` left behind.  Now one line names the file the disk refused and the
run stops there; nothing half-written is left; the summary counts what reached the disk."""

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.store import aggregate
from conformance.store.disk import DiskFull
from conformance.store.writer import write_atomically

ROOT = Path(__file__).parents[1]
OWN_OP = """
import numpy as np
import torch
from conformance import OpSpec, Rule, Tolerance

test_flip = OpSpec(
    name="flip", call=lambda image, params: torch.flip(image, dims=[-1]),
    reference=lambda image, case: np.flip(image, axis=-1), dtypes=("float32",),
    tolerances=[Rule(Tolerance("float", atol=1e-6, reason="a flip is exact"))],
).test()
"""
QUICK = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--targets=cpu", "--sweep=none", "--max-examples=5"]


def test_a_run_that_fills_its_disk_stops_in_one_line_leaving_no_half_written_file(tmp_path):
    (tmp_path / "test_flip.py").write_text(OWN_OP)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(ROOT)}
    pytest_run = " ".join([sys.executable, "-m", "pytest", "-n", "0", *QUICK, "test_flip.py"])
    # 3 KiB a file (`ulimit -f`, what a full disk does to a write): the first item's records fit, the next do not
    done = subprocess.run(
        ["bash", "-c", f"ulimit -f 3; exec {pytest_run}"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    out = done.stdout + done.stderr
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    said = [line for line in out.splitlines() if "the disk is full" in line and "the run stops here" in line]
    assert len(said) == 1 and f"cannot write {tmp_path}" in said[0] and "(File too large)" in said[0], out[-3000:]
    assert done.returncode == pytest.ExitCode.INTERRUPTED, out[-3000:]
    run = next(p for p in (tmp_path / "reports").iterdir() if not p.is_symlink())
    assert not [p for p in run.rglob("*") if p.name.endswith(".tmp")], sorted(run.rglob("*"))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["complete"] is False and summary["totals"].get("pass", 0) > 0, summary["totals"]


def test_a_file_the_disk_refuses_is_removed_and_named(tmp_path, monkeypatch):
    target = tmp_path / "summary.json"

    def half_written(self, text, encoding=None):
        with open(self, "w", encoding=encoding) as stream:
            stream.write(text[:3])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))

    monkeypatch.setattr(Path, "write_text", half_written)
    with pytest.raises(DiskFull, match=rf"^cannot write {target}: the disk is full \(No space left on device\)$"):
        write_atomically(target, "{}")
    assert list(tmp_path.iterdir()) == []


def test_a_summary_the_disk_refuses_is_one_line_at_the_runs_end(pytester, monkeypatch):
    pytester.makepyfile(test_flip=OWN_OP)

    def refused(path, text):
        raise DiskFull(f"cannot write {path}: the disk is full (No space left on device)")

    monkeypatch.setattr(aggregate, "write_atomically", refused)
    result = pytester.runpytest_inprocess(*QUICK)
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out, out[-3000:]
    assert "conformance: cannot write " in out and "summary.json: the disk is full (No space left on device)" in out
    result.assert_outcomes(passed=4)
