"""Baselines and `compare`: a change on another build is found, sized and put on the right op.

One planted op's output moves by an amount inside its tolerance, then by one beyond it; the
other op stays put.  Each run is compared with a baseline made before the change."""

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from report_pages import report_text

from conformance.store.reader import read_outcomes
from conformance.suite.stock import NO_STOCK

HERE = Path(__file__).parent
TARGETS = "--targets=cpu,vcuda:0"
SERIAL = ("-n", "0")  # a few dozen cases: xdist workers would cost more to start than they save
CASES = """
import os
from planted_ops import *

def drifting(image, params):
    out = good_resize(image, params)
    plant = os.environ.get("PLANT", "")
    if plant == "inside":
        return out + 2e-6  # every value changes, far inside atol 1e-4
    if plant == "beyond":
        return out + 0.01
    return out

test_drifting = make_spec("drifting", drifting, dtypes=("float32",)).test()
test_steady = make_spec("steady", good_resize, dtypes=("float32",)).test()
"""


@pytest.fixture
def project(pytester, monkeypatch):
    pytester.makepyfile(planted_ops=(HERE / "planted_ops.py").read_text(), test_cases=CASES)
    monkeypatch.setenv("PLANT", "")
    return pytester


@pytest.fixture(scope="module")
def made_once(tmp_path_factory):
    """The unchanged build's baseline, made once for the module (each test gets its own copy)."""
    folder = tmp_path_factory.mktemp("baseline")
    (folder / "planted_ops.py").write_text((HERE / "planted_ops.py").read_text())
    (folder / "test_cases.py").write_text(CASES)
    env = {k: v for k, v in os.environ.items() if k != "PLANT"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance",
            "baseline",
            NO_STOCK,
            "-o",
            "base",
            "test_cases.py",
            TARGETS,
            "--no-timing",
            *SERIAL,
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder / "base"


@pytest.fixture
def base(project, made_once):
    return Path(shutil.copytree(made_once, project.path / "base"))


def conformance(project, *args):
    """`python -m conformance` in the project; `run` and `baseline` take its test_cases.py alone (--no-stock)."""
    if args[:1] in (("run",), ("baseline",)):
        args = (args[0], NO_STOCK, *args[1:])
    return project.run(sys.executable, "-m", "conformance", *args)


def baseline(project, name="base", *extra):
    result = conformance(project, "baseline", "-o", name, "test_cases.py", TARGETS, "--no-timing", *SERIAL, *extra)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    return project.path / name


def run_against(project, base, name):
    return conformance(
        project,
        "run",
        "test_cases.py",
        TARGETS,
        "--baseline",
        str(base),
        "--run-name",
        name,
        "-p",
        "no:cacheprovider",
        *SERIAL,
    )


def baseline_outcomes(project, run):
    rows, _ = read_outcomes(project.path / "reports" / run)
    return [r for r in rows if r.get("kind") == "outcome" and r.get("check") == "baseline"]


def compare_json(project, base, run):
    out = project.path / f"{run}.json"
    result = conformance(project, "compare", str(base), str(project.path / "reports" / run), "--json", str(out))
    return result, json.loads(out.read_text())


def test_an_identical_rerun_reports_no_change(project, base):
    assert run_against(project, base, "same").ret == 0
    verdicts = {o["verdict"] for o in baseline_outcomes(project, "same")}
    assert verdicts == {"pass"}
    result, found = compare_json(project, base, "same")
    assert result.ret == 0
    assert found["changes"] == [] and found["outputs"]["compared"] > 20


def test_a_change_inside_tolerance_is_information_on_that_op_only(project, base, monkeypatch):
    monkeypatch.setenv("PLANT", "inside")
    assert run_against(project, base, "inside").ret == 0  # information, not a failure
    changed = [o for o in baseline_outcomes(project, "inside") if o["verdict"] != "pass"]
    assert changed and {(o["op"], o["verdict"]) for o in changed} == {("drifting", "warning")}
    assert "inside tolerance" in changed[0]["message"]
    result, found = compare_json(project, base, "inside")
    assert result.ret == 0
    assert {(c["op"], c["severity"]) for c in found["changes"]} == {("drifting", "bit_level")}
    assert all(2e-6 * 0.5 < c["metrics"]["max_abs"] < 2e-6 * 2 for c in found["changes"])  # the size is reported


def test_a_change_beyond_tolerance_fails_on_that_op_only(project, base, monkeypatch):
    monkeypatch.setenv("PLANT", "beyond")
    result = run_against(project, base, "beyond")
    assert result.ret == 1
    failed = {line.split(" ", 2)[1] for line in result.stdout.lines if line.startswith("FAILED ")}
    assert {f for f in failed if f.endswith("-baseline]")} == {
        "test_cases.py::test_drifting[cpu-float32-bilinear-baseline]",
        "test_cases.py::test_drifting[vcuda:0-float32-bilinear-baseline]",
    }
    assert not any("steady" in f for f in failed)
    page = report_text(project.path / "reports" / "beyond" / "index.html")  # with what its cells open to
    assert "Changed since the baseline" in page and "baseline output" in page  # the baseline's picture
    result, found = compare_json(project, base, "beyond")
    assert result.ret == 1
    assert {(c["op"], c["severity"]) for c in found["changes"]} == {("drifting", "changed")}
    assert "changed beyond tolerance" in result.stdout.str()


def test_cases_on_one_side_only_are_listed(project, base):
    assert (
        conformance(
            project,
            "run",
            "test_cases.py",
            "--targets=cpu",
            "--baseline",
            str(base),
            "--run-name",
            "cpu_only",
            "-p",
            "no:cacheprovider",
            *SERIAL,
        ).ret
        == 0
    )
    result, found = compare_json(project, base, "cpu_only")
    assert result.ret == 0
    missing = {(c["target"], c["severity"]) for c in found["changes"]}
    assert missing == {("vcuda:0", "only_in_baseline")}


# -- bad input: one line, exit 4, nothing unpickled -------------------------------------------------
def _one_line_error(result, *words):
    err = result.stderr.str().strip()
    assert result.ret == 4, result.stdout.str() + err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in err, err


def test_a_truncated_index_is_a_one_line_error(project, base):
    index = sorted((base / "outputs").glob("*.jsonl"))[0]  # one per process (xdist workers: gw0.jsonl, ...)
    index.write_text(index.read_text()[:-40])
    _one_line_error(conformance(project, "compare", str(base), str(base)), index.name, "truncated")
    result = run_against(project, base, "x")
    assert result.ret == 4 and "--baseline" in result.stderr.str() and "Traceback" not in result.stderr.str()


def test_a_truncated_array_file_is_a_one_line_error(project, base, monkeypatch):
    monkeypatch.setenv("PLANT", "inside")
    run_against(project, base, "inside")
    (shard,) = (base / "outputs").glob("*.npz")
    shard.write_bytes(shard.read_bytes()[:200])
    _one_line_error(conformance(project, "compare", str(base), str(project.path / "reports" / "inside")), shard.name)


class _Planted:
    def __reduce__(self):
        return (Path.touch, (Path("unpickled"),))


def test_a_pickled_array_is_refused_not_loaded(project, base, monkeypatch):
    monkeypatch.setenv("PLANT", "inside")
    run_against(project, base, "inside")
    (shard,) = (base / "outputs").glob("*.npz")
    names = np.load(shard).files
    with zipfile.ZipFile(shard, "w") as archive:  # every array replaced by a pickled object array
        for name in names:
            with archive.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array(member, np.array([_Planted()], dtype=object), allow_pickle=True)
    _one_line_error(
        conformance(project, "compare", str(base), str(project.path / "reports" / "inside")), "allow_pickle"
    )
    assert not (project.path / "unpickled").exists()


def test_a_baseline_of_another_op_set_is_a_one_line_error(project):
    steady = baseline(project, "steady_only", "-k", "steady")
    drifting = baseline(project, "drifting_only", "-k", "drifting")
    _one_line_error(conformance(project, "compare", str(steady), str(drifting)), "no op in common")
    result = conformance(
        project,
        "run",
        "test_cases.py",
        TARGETS,
        "--baseline",
        str(steady),
        "-k",
        "drifting",
        "-p",
        "no:cacheprovider",
        *SERIAL,
    )
    assert result.ret == 4 and "another op set" in result.stdout.str() + result.stderr.str()


def test_a_baseline_made_with_other_case_parameters_is_a_one_line_error(project, base):
    other = project.path / "reseeded"
    (other / "outputs").mkdir(parents=True)
    for path in (base / "outputs").iterdir():
        text = path.read_bytes()
        if path.suffix == ".jsonl":
            text = text.replace(b'\\"seed\\":', b'\\"seed\\":1')  # every case drawn with another seed
        (other / "outputs" / path.name).write_bytes(text)
    _one_line_error(conformance(project, "compare", str(base), str(other)), "no case in common")
