"""Faults never take the run down: each is recorded and the rest of the run goes on."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from report_pages import report_text

from conformance.store.reader import read_outcomes
from conformance.store.summary_reader import read_summary

PLANTED = Path(__file__).with_name("planted_ops.py").read_text()
FAULTY = """
import os, time
import torch
from planted_ops import *

def raising(image, params):
    raise ValueError("planted failure")

def wrong_type(image, params):
    return image.tolist()

def nan_output(image, params):
    return good_resize(image.float(), params) * float("nan")

def hanging(image, params):
    time.sleep(30)

def out_of_memory_when_wide(image, params):
    if image.shape[-1] > 10:
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (planted)")
    return good_resize(image, params)

def aborting(image, params):
    os.abort()

def host_memory_exhausted_when_wide(image, params):
    if image.shape[-1] > 10:
        torch.empty(2**62, dtype=torch.uint8)  # the cpu allocator's RuntimeError, not torch.OutOfMemoryError
    return good_resize(image, params)

test_raising = make_spec("raising", raising, dtypes=("float32",)).test()
test_wrong_type = make_spec("wrong_type", wrong_type, dtypes=("float32",)).test()
test_nan_output = make_spec("nan_output", nan_output, dtypes=("float32",)).test()
test_good = make_spec("good", good_resize, dtypes=("float32",)).test()
"""
QUICK = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--targets=cpu", "--max-examples=10"]


@pytest.fixture
def project(pytester):
    pytester.makepyfile(planted_ops=PLANTED)
    return pytester


def records(project):
    rows, _ = read_outcomes(project.path / "reports" / "latest")
    return [r for r in rows if r.get("kind") == "outcome"]


def summary(project):
    return read_summary(project.path / "reports" / "latest")


def test_raising_wrong_type_and_nan_are_recorded_and_the_run_goes_on(project):
    project.makepyfile(test_faulty=FAULTY)
    result = project.runpytest_inprocess(*QUICK)
    # raising fails its error item, and its other checks skip (nothing to look at); wrong_type's reference
    # item skips (no tensor to compare); nan_output fails its reference and its invariants (NaN is not finite)
    result.assert_outcomes(failed=4, passed=8, skipped=4)
    verdicts = {(r["op"], r["check"], r["verdict"]) for r in records(project) if r.get("phase") == "final"}
    assert ("raising", "error", "error") in verdicts
    assert ("wrong_type", "invariants", "fail") in verdicts
    assert ("nan_output", "reference", "fail") in verdicts
    assert ("nan_output", "invariants", "fail") in verdicts
    assert (project.path / "reports" / "latest" / "index.html").is_file()


def test_a_hang_is_cut_at_the_case_timeout_and_recorded(project):
    project.makepyfile(
        test_faulty=FAULTY + "\ntest_hanging = make_spec('hanging', hanging, dtypes=('float32',)).test()\n"
    )
    start = time.monotonic()
    result = project.runpytest_inprocess(*QUICK, "--max-examples=2", "--case-timeout=0.5", "-k", "hanging or good")
    assert time.monotonic() - start < 25
    result.assert_outcomes(failed=1, passed=4, skipped=3)
    hung = [r for r in records(project) if r["op"] == "hanging" and r["verdict"] == "error"]
    assert hung and "ran longer than the per-case limit of 0.5 s (--case-timeout)" in hung[0]["message"]


def test_out_of_memory_is_a_resource_outcome_and_later_cases_run(project):
    project.makepyfile(
        test_faulty=FAULTY + "\ntest_oom = make_spec('oom', out_of_memory_when_wide, dtypes=('float32',)).test()\n"
    )
    result = project.runpytest_inprocess(*QUICK, "--max-examples=30", "-k", "oom")
    result.assert_outcomes(passed=4)
    oom = [r for r in records(project) if r["op"] == "oom"]
    resource = [r for r in oom if r["verdict"] == "resource"]
    assert resource and "OutOfMemoryError: CUDA out of memory" in resource[0]["message"]
    assert any(r["verdict"] == "pass" and r["example"] > resource[0]["example"] for r in oom)
    assert summary(project)["totals"]["resource"] == len(resource)


def test_a_host_allocation_failure_is_a_resource_outcome_too(project):
    """The cpu allocator raises a RuntimeError ("DefaultCPUAllocator: can't allocate memory"), not
    torch.OutOfMemoryError: it was recorded as the op's error, where docs/ci.md promises `resource`."""
    spec = "make_spec('host_oom', host_memory_exhausted_when_wide, dtypes=('float32',))"
    project.makepyfile(test_faulty=FAULTY + f"\ntest_host_oom = {spec}.test()\n")
    result = project.runpytest_inprocess(*QUICK, "--max-examples=30", "-k", "host_oom")
    result.assert_outcomes(passed=4)
    resource = [r for r in records(project) if r["op"] == "host_oom" and r["verdict"] == "resource"]
    assert resource and "can't allocate memory" in resource[0]["message"]


def test_a_worker_that_aborts_under_xdist_is_recorded_and_the_run_finishes(project):
    project.makepyfile(
        test_faulty=FAULTY + "\ntest_aborting = make_spec('aborting', aborting, dtypes=('float32',)).test()\n"
    )
    result = project.runpytest_subprocess(*QUICK, "-n", "2", "-k", "aborting or good")
    result.assert_outcomes(failed=4, passed=4)  # each of aborting's check items kills its worker
    crash = [r for r in records(project) if r.get("crash")]
    assert {r["check"] for r in crash} == {"error", "placement", "invariants", "reference"}
    assert crash[0]["op"] == "aborting" and crash[0]["target"] == "cpu" and crash[0]["verdict"] == "error"
    assert "worker process died" in crash[0]["message"]
    assert any(r["op"] == "good" and r["verdict"] == "pass" for r in records(project))  # other outcomes kept
    assert "worker process died" in report_text(project.path / "reports" / "latest" / "index.html")  # its card


def test_kill_9_halfway_leaves_an_intact_store_and_a_report_marked_incomplete(project):
    project.makepyfile(test_slow=PLANTED_SLOW)
    reports = project.path / "reports"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            *QUICK,
            "--max-examples=400",
            "--targets=cpu,vcuda:1",
            "test_slow.py",
        ],  # each target's first item runs the slow op 400 times
        cwd=project.path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while True:  # the event: an item has ended and the next one's start is on record (it is running)
            journal = "".join(p.read_text() for p in reports.glob("*/outcomes/*.jsonl"))
            ended = journal.count('"kind":"item_end"')
            if 1 <= ended < journal.count('"kind":"item"'):
                break
            assert process.poll() is None and time.monotonic() < deadline, "no second item started"
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    run = next(p for p in reports.iterdir() if p.is_dir())
    assert not (run / "summary.json").exists()
    done = subprocess.run([sys.executable, "-m", "conformance", "report", str(run)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert 'id="incomplete"' in (run / "index.html").read_text()
    kept = [json.loads(line) for p in (run / "outcomes").glob("*.jsonl") for line in p.read_text().splitlines()[:-1]]
    assert sum(r["kind"] == "item_end" for r in kept) >= 1  # every line but a possibly torn last one parses
    assert (
        subprocess.run([sys.executable, "-m", "conformance", "summary", str(run)], capture_output=True).returncode == 0
    )
    summary = read_summary(run)
    ended_passes = sum(r.get("tally", {}).get("counts", {}).get("pass", 0) for r in kept if r["kind"] == "item_end")
    assert summary["complete"] is False and summary["totals"].get("pass", 0) == ended_passes > 100  # the ended items
    assert summary["interrupted"]  # the item it was running


PLANTED_SLOW = """
import time
from planted_ops import *

def slow_good(image, params):
    time.sleep(0.01)
    return good_resize(image, params)

test_slow = make_spec("slow", slow_good, dtypes=("float32",)).test()
"""


def test_the_ci_profile_gives_identical_cases_and_verdicts_twice(project):
    project.makepyfile(test_faulty=FAULTY)
    seen = []
    for name in ("first", "second"):
        project.runpytest_inprocess(*QUICK, "--run-name", name, "-k", "good or raising")
        rows, _ = read_outcomes(project.path / "reports" / name)
        seen.append(
            [
                (r["nodeid"], r["check"], r["verdict"], json.dumps(r.get("case"), sort_keys=True), r.get("phase"))
                for r in rows
                if r.get("kind") == "outcome"
            ]
        )
    assert seen[0] == seen[1] and len(seen[0]) > 10


def test_virtual_findings_can_be_warnings_for_the_gate(project):
    project.makepyfile(test_faulty=FAULTY)
    args = [
        "-p",
        "no:cacheprovider",
        "--hypothesis-profile=ci",
        "--max-examples=5",
        "--targets=cpu,vcuda:1",
        "-k",
        "raising",
    ]
    failing = project.runpytest_inprocess(*args)
    failing.assert_outcomes(failed=2, skipped=8)  # the error items; the other checks have nothing to look at
    warned = project.runpytest_inprocess(*args, "--virtual-findings=warn", "-rx")
    warned.assert_outcomes(failed=1, xfailed=1, skipped=8)  # the cpu failure still fails the gate
    assert "virtual-target finding, a warning under --virtual-findings=warn: raising on vcuda:1" in warned.stdout.str()


INTERRUPT_IN_FINAL_REPLAY = """
import os, signal
from hypothesis.control import _current_build_context
from conformance.engine.session import ConformanceRun

checked = ConformanceRun.check

def check(self, state, spec, case):
    context = _current_build_context.value
    if context is not None and context.is_final and spec.name == "two_ways":
        os.kill(os.getpid(), signal.SIGTERM)  # lands in hypothesis' last replay of the first of two failures
    return checked(self, state, spec, case)

def pytest_configure(config):
    ConformanceRun.check = check

def pytest_unconfigure(config):
    ConformanceRun.check = checked  # this process runs other tests next
"""
TWO_WAYS = """
from planted_ops import *

def two_ways(image, params):
    raise (ValueError if image.shape[-1] > 20 else TypeError)("planted: two distinct failures")

test_two_ways = make_spec("two_ways", two_ways, dtypes=("float32",)).test()
test_good = make_spec("good", good_resize, dtypes=("float32",)).test()
"""


def test_an_interrupt_in_hypothesis_final_replay_still_stops_the_run(project):
    # hypothesis puts an exception raised while it replays one of two failures into an exception group with
    # the other: pytest alone would count a failed item and run on
    project.makeconftest(INTERRUPT_IN_FINAL_REPLAY)
    project.makepyfile(test_two=TWO_WAYS)
    before = signal.getsignal(signal.SIGTERM)
    ran = project.inline_run(*QUICK, "--max-examples=30", "-k", "two_ways and error or good", no_reraise_ctrlc=True)
    assert ran.ret == pytest.ExitCode.INTERRUPTED
    passed, _skipped, failed = ran.listoutcomes()
    assert (passed, failed) == ([], [])  # the interrupted item is no failure, and nothing ran after it
    assert signal.getsignal(signal.SIGTERM) is before  # the run gave back the handler it replaced
    ended = summary(project)
    assert ended["complete"] is False and ended["interrupted"]


CRASHING_BUILD = """
from planted_ops import *
from conformance import ModuleOp, kornia_parameters

def build(params):
    raise TypeError("__init__() got an unexpected keyword argument 'fill_value' (planted)")

def sample_raises(module, image, params):
    raise RuntimeError("the sampler raised (planted)")

def recipes(dtype):
    return image_recipes(dtype, max_side=20, contents=["noise"], min_batch_dims=1, max_batch_dims=1)

def spec(name, module):
    return OpSpec(name=name, module=module, reference=bilinear_reference, dtypes=("float32",), modes=("bilinear",),
                  params=size_params, recipes=recipes,
                  tolerances=[Rule(Tolerance("float", atol=1e-4, reason="float32"), dtype="float*")])

test_crash_build = spec("crash_build", ModuleOp(build=build, sample=kornia_parameters)).test()
test_crash_sampler = spec(
    "crash_sampler", ModuleOp(build=lambda p: torch.nn.Identity(), sample=sample_raises)
).test()
def reference_raises(image, case):
    raise RuntimeError("the reference raised (planted)")

test_crash_reference = OpSpec(
    name="crash_reference", call=good_resize, reference=reference_raises, dtypes=("float32",), modes=("bilinear",),
    params=size_params, recipes=recipes, tolerances=[Rule(Tolerance("float", atol=1e-4, reason="x"), dtype="float*")],
).test()
def only_on_the_host(image, params):
    from conformance.devices.virtual.state import NotEmulatable

    if image.device.type != "cpu":
        raise NotEmulatable("a kernel the virtual device cannot run (planted)")
    return good_resize(image, params)

test_not_emulatable = make_spec("not_emulatable", only_on_the_host, dtypes=("float32",)).test()
test_good = make_spec("good", good_resize, dtypes=("float32",)).test()
"""


def test_an_item_that_raises_before_any_check_is_an_error_in_every_summary_as_in_pytest(project):
    """A module whose constructor raises (an older release without a keyword) or whose sampler raises is the op's
    error on every target; a reference that raises fails its items in pytest before any check is recorded.  The
    summary, summary.md and the dashboard must say what pytest says (they counted such items as passes)."""
    import xml.etree.ElementTree as ET

    from report_pages import page_data

    project.makepyfile(test_crashing=CRASHING_BUILD)
    result = project.runpytest_inprocess(*QUICK, "--targets=cpu,vcuda:1", "--junitxml=junit.xml")
    failed_in_pytest = set()
    passed_in_pytest = set()
    for case in ET.parse(project.path / "junit.xml").getroot().iter("testcase"):
        failed = case.find("failure") is not None or case.find("error") is not None
        if case.find("skipped") is None:
            (failed_in_pytest if failed else passed_in_pytest).add(case.get("name"))
    assert failed_in_pytest and all(n.startswith("test_crash_") for n in failed_in_pytest)
    assert {n.split("[")[0] for n in failed_in_pytest} == {
        "test_crash_build",
        "test_crash_sampler",
        "test_crash_reference",
    }
    run = project.path / "reports" / "latest"
    summary = read_summary(run)
    by_item = {
        f"test_{g['op']}[{g['target']}-{g['dtype']}-{g['mode']}-{g['check']}]": g["verdict"] for g in summary["groups"]
    }
    assert {n for n, v in by_item.items() if v in ("fail", "error")} == failed_in_pytest
    assert all(by_item.get(n) in ("pass", "skipped", "known_issue", "warning", None) for n in passed_in_pytest)
    assert summary["totals"].get("error", 0) + summary["totals"].get("fail", 0) >= len(failed_in_pytest)
    virtual = [g for g in summary["groups"] if g["op"] == "not_emulatable" and g["target"] == "vcuda:1"]
    assert virtual and {g["verdict"] for g in virtual} == {"skipped"}  # a skip, never an error
    crash = next(g for g in summary["groups"] if g["op"] == "crash_reference" and g["check"] == "reference")
    assert crash["verdict"] == "error"
    built = next(g for g in summary["groups"] if g["op"] == "crash_build" and g["check"] == "error")
    assert built["verdict"] == "error"  # the constructor's TypeError is the op's error, found by the error check
    markdown = (run / "summary.md").read_text()
    assert f"{len(failed_in_pytest)} new failures" in markdown
    data = page_data(run / "index.html")
    assert data["tone"] == "red"
    failures = [n for n in data["new"] if n["kind"] == "failure"]
    assert len(failures) == len(failed_in_pytest)
    assert "raised before any check" in json.dumps(data)
    assert result.parseoutcomes()["failed"] == len(failed_in_pytest)


def test_a_finished_run_whose_summary_was_lost_is_still_a_finished_run(project, capsys):
    """`conformance summary RUN` rebuilds summary.json from the journal; where it was lost it said "the run did not
    finish" of a run that had: the session's end also writes ended.json."""
    from conformance.cli import main as cli

    project.makepyfile(test_faulty=FAULTY)
    project.runpytest_inprocess(*QUICK, "-k", "good")
    run = (project.path / "reports" / "latest").resolve()
    (run / "summary.json").unlink()
    capsys.readouterr()
    assert cli(["summary", str(run)]) == 0
    assert "did not finish" not in capsys.readouterr().out
    assert json.loads((run / "summary.json").read_text())["complete"] is True
