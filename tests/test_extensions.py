"""Extension points: a package outside conformance (tests/extension_package, put on the path with its entry-point
metadata) adds a target kind, a library, a check and sweep arguments, and `conformance run --targets meta` runs
stock items on its target with the usual items, records, report and rerun lines; nothing under conformance/
names it.  An entry point that does not load is a one-line usage error naming it and its package."""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conformance.store.reader import read_outcomes
from conformance.store.summary_reader import read_summary

ROOT = Path(__file__).parents[1]
PACKAGE = Path(__file__).parent / "extension_package"
QUICK = ["-n", "0", "-p", "no:cacheprovider", "--hypothesis-profile=ci", "--sweep=none"]

# an op whose Python branches on the device: on the meta device it drops a column, as a device-dependent
# branch in a library would; the meta target's invariants (shape against the reference) catch it
DEVICE_BRANCH = """
import numpy as np
import torch

from conformance import OpSpec


def flip(image, params):
    flipped = torch.flip(image, dims=[-1])
    return flipped[..., :-1] if image.device.type == "meta" else flipped


MY_FLIP = OpSpec(name="my_flip", call=flip, reference=lambda image, case: np.flip(image, axis=-1), dtypes=("float32",))
test_my_flip = MY_FLIP.test()
"""


# an op that aborts its process on the meta device: the xdist worker dies mid-item
ABORT_ON_META = """
import os

import numpy as np
import torch

from conformance import OpSpec


def flip(image, params):
    if image.device.type == "meta":
        os.abort()
    return torch.flip(image, dims=[-1])


MY_FLIP = OpSpec(name="my_flip", call=flip, reference=lambda image, case: np.flip(image, axis=-1), dtypes=("float32",))
test_my_flip = MY_FLIP.test()
"""

# an op that is off by one in the remote target's server process (which says so in its environment)
OFF_REMOTELY = """
import os

import numpy as np
import torch

from conformance import OpSpec


def flip(image, params):
    return torch.flip(image, dims=[-1]) + (1 if os.environ.get("CONFORMANCE_META_REMOTE") else 0)


MY_FLIP = OpSpec(name="my_flip", call=flip, reference=lambda image, case: np.flip(image, axis=-1), dtypes=("float32",))
test_my_flip = MY_FLIP.test()
"""


def run(folder: Path, *args: str, path: Path = PACKAGE, **extra: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(path), str(ROOT)]), **extra)
    command = [sys.executable, "-m", "conformance", "run", *QUICK, f"--reports-dir={folder / 'reports'}", *args]
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def test_no_file_under_conformance_names_the_package():
    named = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "conformance").rglob("*")
        if path.is_file()
        and path.suffix in (".py", ".j2", ".toml", ".md", ".js", ".css", ".html")
        and re.search(r"conformance_meta|conformance-meta|MetaTarget", path.read_text(encoding="utf-8"))
    ]
    assert named == []


def test_stock_items_run_on_the_installed_target_kind(tmp_path):
    done = run(
        tmp_path,
        "--run-name=meta",
        "--targets=cpu,meta",
        "-rs",
        "cases/test_normalize.py",
        "cases/test_tone.py",
        "-k",
        "normalize_v2 or equalize_tv1",
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert re.search(r"conformance targets: cpu \[host CPU\], meta \(virtual\) \[PyTorch's meta device", out), out[
        :3000
    ]
    # torch has no meta kernel for bincount (torchvision's equalize): not runnable there, a skip saying why
    assert "not run on the meta device: the op needs data or a kernel a meta tensor does not have" in out, out[-4000:]
    run_dir = tmp_path / "reports" / "meta"
    summary = read_summary(run_dir)
    on_meta = [g for g in summary["groups"] if g["target"] == "meta"]
    checks = {g["check"] for g in on_meta}
    # only the checks that read no values have items there, the installed package's own check among them
    assert {"error", "placement", "invariants", "twin_metadata"} <= checks, checks
    assert not checks & {"reference", "cross_device", "fidelity", "module", "history"}, checks
    assert {g["verdict"] for g in on_meta} <= {"pass", "known_issue", "skipped"}, on_meta
    assert sum(g["verdict"] == "pass" for g in on_meta) >= 10
    environment = json.loads((run_dir / "environment" / "main.json").read_text())
    assert environment["packages"]["conformance-meta"] == "0.1.0"  # the installed library record
    assert any(t["name"] == "meta" and t["virtual"] for t in environment["targets"])
    assert '"target":"meta","virtual":true' in (run_dir / "index.html").read_text()  # the dashboard's column


# alone, or beside the stock suite (pytest's rootdir is then the suite's, and its id for the own module is not a
# path from here: the rerun line names the module from here)
@pytest.mark.parametrize(
    "stock", [["--no-stock"], ["-k", "my_flip"]], ids=["own-cases-alone", "beside-the-stock-suite"]
)
def test_a_failure_on_the_installed_target_has_a_rerun_line_that_names_it(tmp_path, stock):
    cases = tmp_path / "mycases"
    cases.mkdir()
    (cases / "test_my_flip.py").write_text(DEVICE_BRANCH)
    done = run(tmp_path, "--run-name=planted", *stock, "--targets=cpu,meta", "mycases")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-4000:]
    failed = sorted({line.split()[1] for line in out.splitlines() if line.startswith("FAILED ")})
    assert failed and all("[meta-float32-default-" in f for f in failed), out[-4000:]
    assert any(f.endswith("-invariants]") for f in failed), failed  # the shape against the reference
    assert any(f.endswith("-twin_metadata]") for f in failed), failed  # the installed check: against the cpu's
    rerun = next(line for line in out.splitlines() if line.strip().startswith("Rerun: "))
    assert rerun.rstrip().endswith("--targets meta"), rerun
    assert "run 'mycases/test_my_flip.py::test_my_flip[meta-float32-default-" in rerun, rerun
    # the rerun line, as printed, runs that case on that target again and fails again
    args = rerun.split("python -m conformance run ", 1)[1]
    again = run(tmp_path, "--run-name=again", *shlex.split(args))
    assert again.returncode == 1, (again.stdout + again.stderr)[-3000:]
    assert re.search(r"1 failed", again.stdout), again.stdout[-3000:]


def _servers(log: Path) -> list[list[str]]:
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def scratch():
    """A temporary folder short enough for a Unix socket's path (tmp_path is not: 108 bytes at most)."""
    folder = tempfile.mkdtemp(prefix="scratch-")
    yield Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("workers", ["0", "2"])
def test_an_installed_out_of_process_kind_runs_through_its_lifecycle(tmp_path, workers, scratch):
    """The package's `remote` kind runs the op in a server its `start` launches on the controller for every xdist
    worker (with none, each process starts its own on the first case) and its `stop` ends; its items pass."""
    log = tmp_path / "servers.log"
    done = run(
        tmp_path,
        "--run-name=remote",
        "--targets=cpu,remote",
        f"-n{workers}",
        "cases/test_normalize.py",
        "-k",
        "normalize_v2",
        CONFORMANCE_META_SERVER_LOG=str(log),
        TMPDIR=str(scratch),
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    summary = read_summary(tmp_path / "reports" / "remote")
    remote = [g for g in summary["groups"] if g["target"] == "remote"]
    assert {"reference", "cross_device"} <= {g["check"] for g in remote if g["verdict"] == "pass"}, remote
    assert not {g["check"] for g in remote} & {"placement", "module", "history"}, remote  # they need the op here
    started = [pid for event, pid in _servers(log) if event == "started"]
    assert len(started) == 1, _servers(log)  # one for the run: shared by both workers, or the one process's own
    assert sorted(_servers(log)) == sorted([["started", started[0]], ["ended", started[0]]]), _servers(log)
    assert not list(scratch.glob("conformance-remote-*")), list(scratch.iterdir())  # its socket's folder went with it
    environment = json.loads(next((tmp_path / "reports" / "remote" / "environment").glob("*.json")).read_text())
    facts = next(t for t in environment["targets"] if t["name"] == "remote")
    assert (facts["virtual"], facts["named_in_rerun"], facts["table_rank"]) == (False, True, 6.0), facts


def test_a_failure_on_an_installed_out_of_process_kind_is_found_there(tmp_path):
    cases = tmp_path / "mycases"
    cases.mkdir()
    (cases / "test_my_flip.py").write_text(OFF_REMOTELY)
    done = run(tmp_path, "--run-name=off", "--no-stock", "--targets=cpu,remote", "-n2", "mycases")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-4000:]
    failed = sorted({line.split()[1] for line in out.splitlines() if line.startswith("FAILED ")})
    assert failed and all("[remote-float32-default-" in f for f in failed), out[-4000:]
    assert any(f.endswith("-cross_device]") for f in failed), failed
    rerun = next(line for line in out.splitlines() if line.strip().startswith("Rerun: "))
    assert rerun.rstrip().endswith("--targets remote"), rerun


def _crashed_on(run_dir: Path, target: str, virtual: bool) -> None:
    """The run recorded crashed items, each on `target` with the kind's own facts, its case's rerun line naming it."""
    records, _ = read_outcomes(run_dir)
    crashes = [r for r in records if r.get("crash")]
    assert crashes and all(r["target"] == target and r["virtual"] is virtual for r in crashes), crashes
    assert all("repro" in r and r["repro"].endswith(f"--targets {target}") for r in crashes), crashes


def test_a_crashed_item_on_an_installed_kind_is_recorded_with_the_kinds_own_facts(tmp_path):
    """The controller writes a dead worker's record from the item id alone: the target's facts come from the run's
    targets (the meta kind is virtual), never from its name."""
    cases = tmp_path / "mycases"
    cases.mkdir()
    (cases / "test_my_flip.py").write_text(ABORT_ON_META)
    done = run(tmp_path, "--run-name=crash", "--no-stock", "--targets=cpu,meta", "-n2", "mycases", "-k", "invariants")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-4000:]
    _crashed_on(tmp_path / "reports" / "crash", "meta", virtual=True)
    on_meta = [g for g in read_summary(tmp_path / "reports" / "crash")["groups"] if g["target"] == "meta"]
    assert on_meta and all(g["virtual"] for g in on_meta), on_meta  # one group a target, not a second for the crash


def test_a_worker_that_dies_on_an_installed_out_of_process_kind_is_recorded_with_its_facts(tmp_path):
    """The remote kind's client aborts its xdist worker (CONFORMANCE_META_REMOTE_ABORT): the controller records the
    crashed item on `remote` with the kind's facts (not virtual; a rerun line that names it)."""
    cases = tmp_path / "mycases"
    cases.mkdir()
    (cases / "test_my_flip.py").write_text(OFF_REMOTELY)
    done = run(
        tmp_path,
        "--run-name=died",
        "--no-stock",
        "--targets=cpu,remote",
        "-n2",
        "mycases",
        "-k",
        "remote and reference",
        CONFORMANCE_META_REMOTE_ABORT="1",
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-4000:]
    _crashed_on(tmp_path / "reports" / "died", "remote", virtual=False)


def test_sweep_arguments_from_an_installed_package_win(tmp_path):
    blur = ("torchvision.transforms.v2", "GaussianBlur")
    code = f"from conformance.spec import sweep_tables as t\nprint(t.arguments(*{blur!r}))"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PACKAGE), str(ROOT)]))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "{'kernel_size': 5}", done.stderr[-2000:]


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ("meta = conformance_missing:targets", "'meta' in group 'conformance.targets' (package conformance-broken)"),
        ("meta = os:getcwd", "not a conformance.devices.targets.Target"),
    ],
)
def test_an_entry_point_that_does_not_load_is_one_line_naming_it(tmp_path, entry, said):
    broken = tmp_path / "site"
    info = broken / "conformance_broken-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: conformance-broken\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[conformance.targets]\n{entry}\n")
    done = run(tmp_path, "--no-stock", str(ROOT / "cases" / "test_normalize.py"), path=broken)
    out = done.stdout + done.stderr
    assert done.returncode == 4, out[-3000:]
    errors = [line for line in out.splitlines() if line.startswith("ERROR:")]
    assert len(errors) == 1 and "Traceback" not in out, out[-3000:]
    assert said in errors[0], out[-3000:]
