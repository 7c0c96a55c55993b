"""The plugin end to end, as a user runs it: pytest in a fresh folder with a small case module."""

import json
import shlex
from pathlib import Path

import pytest

from conformance.store.reader import read_outcomes
from conformance.store.summary_reader import read_summary

PLANTED = Path(__file__).with_name("planted_ops.py").read_text()
QUICK = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=15", "--targets=cpu"]


@pytest.fixture
def project(pytester):
    pytester.makepyfile(planted_ops=PLANTED)
    return pytester


def write_cases(pytester, **ops):
    lines = ["from planted_ops import *"]
    lines += [f"test_{name} = make_spec({name!r}, {call}).test()" for name, call in ops.items()]
    pytester.makepyfile(test_cases="\n".join(lines))


def run(pytester, *args):
    return pytester.runpytest_inprocess(*QUICK, *args)


def summary(pytester):
    return read_summary(pytester.path / "reports" / "latest")


def test_a_planted_bug_fails_with_the_check_the_metric_and_a_rerun_line(project):
    write_cases(project, shifted="shifted_resize")
    result = run(project)
    assert result.ret == 1
    result.assert_outcomes(failed=2, passed=6)  # the reference items of both dtypes; error, placement, invariants pass
    out = result.stdout.str()
    assert "shifted on cpu [uint8, bilinear]: reference failed (values)" in out
    assert "reference: vs reference: " in out and "max abs diff" in out and "tolerance 'uint8'" in out
    rerun = next(line for line in result.stdout.lines if "Rerun: python -m conformance run" in line)
    assert "test_cases.py::test_shifted[cpu-uint8-bilinear-reference]" in rerun

    # The printed line reruns exactly that case, once.
    args = shlex.split(rerun.split("Rerun: ", 1)[1])[4:]  # after "python -m conformance run"
    again = project.runpytest_inprocess("-p", "no:cacheprovider", *args)
    assert again.ret == 1
    again.assert_outcomes(failed=1)
    records, _ = read_outcomes(project.path / "reports" / "latest")
    replayed = [r for r in records if r.get("phase") == "replay"]
    assert [r["check"] for r in replayed] == ["reference"]


def test_a_replay_case_can_come_from_a_file_and_bad_ones_are_usage_errors(project):
    write_cases(project, good="good_resize")
    case = {"op": "good", "recipe": {"height": 3, "width": 4, "dtype": "uint8"}, "params": {"size": [5, 2]}}
    (project.path / "case.json").write_text(json.dumps(case))
    result = run(project, "--replay", "case.json")
    result.assert_outcomes(passed=4, skipped=4)  # the float32 items skip: the case is uint8
    for bad, message in [
        ("{oops", "not valid JSON"),
        ("missing.json", "neither a JSON case nor"),
        ('{"op": "good", "recipe": {"height": -1, "width": 1}}', "non-negative integers"),
    ]:
        result = run(project, "--replay", bad)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert message in result.stderr.str() and "Traceback" not in result.stderr.str()


def test_every_outcome_is_stored_and_summarised(project):
    write_cases(project, good="good_resize", sprinkled="sprinkled_resize, dtypes=('uint8',)")
    result = run(project)
    result.assert_outcomes(passed=11, failed=1, skipped=0)  # 4 checks x (good: 2 dtypes, sprinkled: 1)
    data = summary(project)
    assert data["schema"] == "conformance.summary/3" and data["complete"]
    groups = {(g["op"], g["dtype"], g["check"]): g for g in data["groups"]}
    assert groups[("good", "uint8", "reference")]["examples"] == 15
    assert groups[("good", "uint8", "reference")]["verdict"] == "pass"
    failing = groups[("sprinkled", "uint8", "reference")]
    # the planned case that failed (drawn by the variant's first item), and hypothesis' shrunk minimal case
    assert failing["verdict"] == "fail" and failing["counts"]["fail"] == 2
    assert data["environment"]["packages"]["torch"]
    assert "conformance summary" in result.stdout.str()
    artifacts = list((project.path / "reports" / "latest" / "artifacts").glob("*.npz"))
    assert len(artifacts) == 1  # only the final (shrunk) failure keeps arrays


def test_known_issues_turn_failures_into_xfails_and_flag_stale_entries(project):
    write_cases(project, shifted="shifted_resize", good="good_resize")
    (project.path / "known_issues.toml").write_text("""
[[issue]]
id = "shift"
op = "shifted"
checks = ["reference"]
max_abs = 255
link = "https://example.org/shift"
reason = "planted shift"

[[issue]]
id = "stale"
op = "good"
dtypes = ["float32"]
checks = ["reference", "invariants"]
max_abs = 1
min_case_fraction = 1
link = "https://example.org/stale"
reason = "fixed long ago"

[[issue]]
id = "elsewhere"
op = "good"
targets = ["cuda*"]
max_case_fraction = 1
link = "https://example.org/x"
reason = "matches nothing"
""")
    result = run(project)
    # shifted's reference items xfail; good's float32 invariants item passes and its reference item, the
    # last of the cell the entry lists, says the entry is stale (one failure, not one per listed check)
    result.assert_outcomes(xfailed=2, passed=13, failed=1)
    out = result.stdout.str()
    assert "FAILED test_cases.py::test_good[cpu-float32-bilinear-reference]" in out
    assert "unexpected pass: known issue stale (https://example.org/stale) did not reproduce" in out
    assert "delete the entry" in out
    assert "known issues applying to no item of this run (1): elsewhere" in out
    assert "known issues matching no failure in this run's draws (1): stale" in out
    data = summary(project)
    shifted = [g for g in data["groups"] if g["op"] == "shifted" and g["check"] == "reference"]
    assert all(g["verdict"] == "known_issue" and g["known_issues"] == ["shift"] for g in shifted)
    assert data["unused_known_issues"] == ["elsewhere"]
    narrowed = run(project, "-k", "good")  # a selection leaves most entries out: no warnings about them
    assert "applying to no item" not in narrowed.stdout.str()


def test_a_known_issue_is_written_once_per_process_and_keeps_the_arrays_of_its_first_case_only(project):
    """The journal names every entry loaded by id once, and holds an entry whole once, before the first item it
    applies to (never a whole file in one record); a known issue's arrays are kept for its first case only (the
    one the report pictures), not again on each target."""
    write_cases(project, shifted="shifted_resize", good="good_resize")
    (project.path / "known_issues.toml").write_text(
        '[[issue]]\nid = "shift"\nop = "shifted"\nchecks = ["reference"]\nmax_abs = 255\n'
        'link = "https://example.org/shift"\nreason = "planted shift"\n\n'
        '[[issue]]\nid = "elsewhere"\nop = "good"\ntargets = ["cuda*"]\nmax_case_fraction = 1\n'
        'link = "https://example.org/x"\nreason = "matches nothing"\n'
    )
    run(project, "--targets=cpu,vcuda:1").assert_outcomes(xfailed=4, passed=36)
    folder = project.path / "reports" / "latest"
    lines = (folder / "outcomes" / "main.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["loaded"] for r in records if r["kind"] == "known_issues"] == [["shift", "elsewhere"]]
    assert [r["entry"]["id"] for r in records if r["kind"] == "known_issue"] == ["shift"]
    assert not any("known_issues_loaded" in r for r in records) and max(map(len, lines)) < 2000
    assert summary(project)["unused_known_issues"] == ["elsewhere"]
    rows, _ = read_outcomes(folder)
    kept = [r for r in rows if r.get("known_issue") and r.get("artifact")]
    assert len(kept) == 1 and kept[0]["known_issue"]["reason"] == "planted shift"  # of 4 items on 2 targets
    assert len(list((folder / "artifacts").glob("*.npz"))) == 1


def test_a_strict_entry_unseen_in_too_few_cases_is_a_note_not_an_unexpected_pass(project):
    """Judged with the sample size: an entry reproducing in at least a quarter of its cases (the default) is
    called fixed after 25 cases in its scope without a reproduction; a handful is a note."""
    write_cases(project, good="good_resize")
    (project.path / "known_issues.toml").write_text(
        '[[issue]]\nid = "unseen"\nop = "good"\ndtypes = ["float32"]\nchecks = ["reference"]\nmax_abs = 1\n'
        'link = "https://example.org/unseen"\nreason = "no longer seen"\n'
    )
    few = run(project, "--max-examples=5")
    few.assert_outcomes(passed=8)
    assert "notes: 1 strict known issue did not reproduce in 1 cells" in few.stdout.str()
    (note,) = summary(project)["notes"]
    assert note["issue"] == "unseen" and 0 < note["in_scope"] <= 5 and note["needed"] == 25
    many = run(project, "--max-examples=40")
    many.assert_outcomes(passed=7, failed=1)
    assert "unexpected pass: known issue unseen" in many.stdout.str() and "chance of seeing none" in many.stdout.str()


def test_a_strict_entry_is_not_called_fixed_for_failures_an_earlier_entry_explained(project):
    """Two entries cover the same failures; the first in the file explains each one, so the second had no case in
    which to show: its cases are out of its scope for the stale rule (seed 4 of five dev runs once failed so)."""
    write_cases(project, shifted="shifted_resize")
    (project.path / "known_issues.toml").write_text(
        '[[issue]]\nid = "broad"\nop = "shifted"\nchecks = ["reference"]\nmax_abs = 255\n'
        'link = "https://example.org/broad"\nreason = "planted shift"\n\n'
        '[[issue]]\nid = "narrow"\nop = "shifted"\nchecks = ["reference"]\nmax_abs = 255\n'
        'link = "https://example.org/narrow"\nreason = "the same shift, listed second"\n'
    )
    result = run(project, "--max-examples=40")
    result.assert_outcomes(xfailed=2, passed=6)
    assert "unexpected pass" not in result.stdout.str()
    scope = {g["dtype"]: g["issue_scope"] for g in summary(project)["groups"] if g["check"] == "reference"}
    for dtype, issues in scope.items():
        (cases, explained), narrow = issues["broad"], issues["narrow"]
        assert explained >= 20 and narrow == [cases - explained, 0], (dtype, issues)  # the cases the shift left equal


@pytest.mark.parametrize(
    "args, message",
    [
        (["--targets=cuda:5"], "unknown target 'cuda:5' (available: cpu"),
        (["--targets=gpu"], "no real accelerator is visible"),
        (["--virtual-devices=two"], "--virtual-devices: expected a whole number from 0 to 16"),
        (["--virtual-devices=\u00b2"], "--virtual-devices: expected a whole number from 0 to 16, got '\u00b2'"),
        (["--case-timeout=inf"], "--case-timeout must be 0 (no limit) or a number of seconds up to 1e+06, got inf"),
        (["--case-timeout=1e300"], "--case-timeout must be 0 (no limit) or a number of seconds up to 1e+06"),
        (["--case-timeout=nan"], "--case-timeout must be 0 (no limit) or a number of seconds up to 1e+06"),
        (["--sweep=exits_at_import"], "--sweep: cannot import 'exits_at_import' (SystemExit: 3)"),
        (["--max-examples=0"], "--max-examples must be at least 1"),
        (["--known-issues=nope.toml"], "no such file 'nope.toml'"),
        (["--sweep=no_such_pkg.transforms"], "--sweep: cannot import 'no_such_pkg.transforms' (ModuleNotFoundError"),
    ],
)
def test_bad_options_are_one_line_usage_errors(project, args, message):
    write_cases(project, good="good_resize")
    project.makepyfile(exits_at_import="import sys\nsys.exit(3)\n")  # a sweep module that exits when imported
    project.syspathinsert()
    result = project.runpytest_inprocess("-p", "no:cacheprovider", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str() and "Traceback" not in result.stderr.str()


def test_a_broken_known_issues_file_is_a_usage_error_naming_it(project):
    write_cases(project, good="good_resize")
    (project.path / "known_issues.toml").write_text('[[issue]]\nid = "x"\nop = "good"\n')
    result = run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "known_issues.toml [[issue]] #1: field 'link' is required" in result.stderr.str()


@pytest.mark.parametrize("args", [[], ["-k", "good and uint8"], ["-n", "2"]])
def test_a_known_issue_for_an_op_no_case_module_defines_is_a_usage_error_naming_it(project, args):
    """A typo in `op` applied to nothing, silently (and the end-of-run line saying so is left out under -k): the ops
    are known at collection, whatever -k selects, and under xdist too."""
    write_cases(project, good="good_resize")
    (project.path / "known_issues.toml").write_text(
        '[[issue]]\nid = "typo"\nop = "god"\nchecks = ["error"]\nmatch = "x"\nlink = "https://example.org/x"\n'
        'reason = "x"\n[[issue]]\nid = "fine"\nop = "go*"\nchecks = ["error"]\nmatch = "y"\nstrict = false\n'
        'link = "https://example.org/y"\nreason = "y"\n'
    )
    result = project.runpytest_subprocess(*QUICK, *args) if args[:1] == ["-n"] else run(project, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = result.stderr.str() + result.stdout.str()  # under xdist the controller's exit says it on stdout
    assert "id='typo': op 'god' (did you mean 'good'?)" in said and "'fine'" not in said and "Traceback" not in said


@pytest.mark.parametrize("args", [[], ["-n", "2"]])
def test_a_known_issues_file_given_from_elsewhere_naming_no_collected_op_is_a_usage_error(project, args, tmp_path):
    """A --known-issues file outside every case folder speaks of every collected module: a typo in it is refused in
    one line too (it used to be judged only beside case modules, so the run went on, with the stock file replaced)."""
    write_cases(project, good="good_resize")
    elsewhere = tmp_path / "elsewhere" / "ki.toml"
    elsewhere.parent.mkdir()
    elsewhere.write_text(
        '[[issue]]\nid = "typo"\nop = "no_such_op_anywhere"\nchecks = ["error"]\nmatch = "x"\n'
        'link = "https://example.org/x"\nreason = "x"\n'
    )
    extra = ["--known-issues", str(elsewhere)]
    result = project.runpytest_subprocess(*QUICK, *args, *extra) if args else run(project, *extra)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = result.stderr.str() + result.stdout.str()
    assert "id='typo': op 'no_such_op_anywhere'" in said and "Traceback" not in said
    lines = [line for line in said.splitlines() if "no_such_op_anywhere" in line]
    assert len(lines) == 1, lines


def test_non_conformance_tests_are_left_alone(pytester):
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "reports").exists()


def test_targets_and_reports_folder_come_from_the_environment_too(project, monkeypatch):
    write_cases(project, good="good_resize")
    monkeypatch.setenv("CONFORMANCE_TARGETS", "cuda:9")
    result = project.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "unknown target 'cuda:9'" in result.stderr.str()
    monkeypatch.setenv("CONFORMANCE_TARGETS", "cpu")
    monkeypatch.setenv("CONFORMANCE_REPORTS", str(project.path / "elsewhere"))
    result = project.runpytest_inprocess("-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=3")
    result.assert_outcomes(passed=8)
    assert (project.path / "elsewhere" / "latest" / "summary.json").is_file()


PLACEMENT = Path(__file__).with_name("planted_placement.py").read_text()


def test_virtual_targets_run_by_default_and_catch_placement_bugs_end_to_end(project):
    project.makepyfile(planted_placement=PLACEMENT)
    project.makepyfile(
        test_gains="""
import torchvision.io
from planted_placement import *
from conformance.spec.opspec import ModuleOp

test_plain_attribute = make_gain_spec("plain_attribute", module=ModuleOp(build=lambda p: PlainAttributeGain())).test()
test_buffer = make_gain_spec("buffer", module=ModuleOp(build=lambda p: BufferGain())).test()

def nvjpeg_only(image, params):
    if image.is_cuda:
        torchvision.io.decode_jpeg(torch.zeros(8, dtype=torch.uint8), device=image.device)
    return gain_with_device(image, params)

test_nvjpeg = make_gain_spec("nvjpeg", call=nvjpeg_only).test()
"""
    )
    result = project.runpytest_inprocess(
        "-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=5", "test_gains.py", "-rs"
    )
    out = result.stdout.str()
    header = next(line for line in out.splitlines() if line.startswith("conformance targets: "))
    # by default one virtual target, vcuda:1: the current device is another (vcuda:0 runs when asked for)
    assert header.startswith("conformance targets: cpu [host CPU], ") and "vcuda:0 (virtual)" not in header
    assert "vcuda:1 (virtual) [virtual: cpu data and kernels, cuda device rules; not the current device" in header
    isa = header.count("cpu:")  # lower cpu instruction-set levels: error, reference, cross_device per op
    # plain_attribute's placement item fails on vcuda:1; its other checks have nothing to look at there (the
    # op raised in every case) and skip saying so; nvjpeg's 6 vcuda items skip as not emulatable; the two module
    # ops' history items pass on the cpu and buffer's on vcuda:1
    result.assert_outcomes(passed=22 + 9 * isa, failed=1, skipped=13)
    assert "plain_attribute on vcuda:1 (virtual) [float32, gain]: placement failed (device mix)" in out
    assert "the error check applied to none of the 5 cases" in out
    assert "placement: DeviceMixError: Expected all tensors to be on the same device" in out
    assert "PlainAttributeGain.gains (a plain tensor attribute on cpu" in out
    assert (
        "SKIPPED [6] " in out
        and "not emulatable on a virtual device: image::decode_jpegs_cuda has no CPU kernel" in out
    )
    data = summary(project)
    rows = {(g["op"], g["target"], g["check"]): g for g in data["groups"]}
    assert rows[("plain_attribute", "vcuda:1", "placement")]["verdict"] == "fail"
    assert rows[("plain_attribute", "vcuda:1", "placement")]["virtual"] is True
    assert rows[("buffer", "vcuda:1", "placement")]["verdict"] == "pass"
    assert {t for (op, t, _), g in rows.items() if op == "nvjpeg" and g["verdict"] == "skipped"} == {"vcuda:1"}
    assert rows[("buffer", "vcuda:1", "unmoved")]["behaviours"] == {"raises a device error": 5}
    assert "vcuda:1 (virtual)" in out.split("conformance summary")[1]


def test_virtual_targets_can_be_turned_off_or_multiplied(project):
    write_cases(project, good="good_resize")
    result = project.runpytest_inprocess("-p", "no:cacheprovider", "--collect-only", "-q", "--virtual-devices=0")
    assert "vcuda" not in result.stdout.str()
    result = project.runpytest_inprocess("-p", "no:cacheprovider", "--collect-only", "-q", "--virtual-devices=3")
    assert "test_good[vcuda:2-uint8-bilinear-cross_device]" in result.stdout.str()
    result = project.runpytest_inprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    assert "test_good[vcuda:1-uint8-bilinear-cross_device]" in result.stdout.str()
    assert "[vcuda:0-" not in result.stdout.str()  # by default only the device that is not the current one
    result = project.runpytest_inprocess("-p", "no:cacheprovider", "--collect-only", "-q", "--targets=default,vcuda")
    assert "test_good[vcuda:0-uint8-bilinear-cross_device]" in result.stdout.str()


def test_an_op_needing_a_newer_library_is_skipped_naming_the_installed_version(project):
    project.makepyfile(
        test_cases="""
import dataclasses
from planted_ops import *
test_future = dataclasses.replace(make_spec("future", good_resize), requires={"torchvision": ">=99"}).test()
"""
    )
    result = run(project, "-rs")
    result.assert_outcomes(skipped=8)
    assert "future needs torchvision>=99; imported torchvision 0." in result.stdout.str()
    groups = summary(project)["groups"]
    assert {g["verdict"] for g in groups} == {"skipped"}


def test_every_session_writes_the_html_report_and_junitxml_still_works(project):
    write_cases(project, sprinkled="sprinkled_resize, dtypes=('uint8',)")
    result = run(project, "--junitxml=junit.xml")
    result.assert_outcomes(failed=1, passed=3)
    latest = project.path / "reports" / "latest"
    assert "report: " in result.stdout.str() and (latest / "index.html").is_file()
    assert "sprinkled [uint8, bilinear] on cpu: reference fail" in (latest / "index.html").read_text()
    junit = (project.path / "junit.xml").read_text()
    assert junit.count("<testcase") == 4 and junit.count("<failure") == 1  # one testcase per item
    assert "reference failed (values)" in junit and "--replay" in junit  # the finding and its rerun line
    assert summary(project)["schema"] == "conformance.summary/3"


def test_a_known_failure_costs_no_shrinking(project):
    """Hypothesis shrinks only what raises; a failure a known issue explains does not raise."""
    write_cases(project, shifted="shifted_resize")
    run(project, "--run-name=unknown", "-k", "reference").assert_outcomes(failed=2)
    (project.path / "known_issues.toml").write_text(
        '[[issue]]\nid = "shift"\nop = "shifted"\nchecks = ["reference"]\nmax_abs = 255\n'
        'link = "https://example.org/shift"\nreason = "planted"\n'
    )
    run(project, "--run-name=known", "-k", "reference").assert_outcomes(xfailed=2)
    phases = {
        name: [r["phase"] for r in read_outcomes(project.path / "reports" / name)[0] if r.get("kind") == "outcome"]
        for name in ("unknown", "known")
    }
    shrunk = {
        name: sum(g.get("shrunk", 0) for g in read_summary(project.path / "reports" / name)["groups"])
        for name in ("unknown", "known")
    }
    assert shrunk["unknown"] > 0 and "final" in phases["unknown"]  # without the entry hypothesis minimises it
    assert set(phases["known"]) == {"explore"} and shrunk["known"] == 0  # with it: each explored once, none shrunk


def test_an_op_that_no_selected_target_runs_is_skipped_cleanly(project):
    # a host library runs on the cpu only: with the cpu left out, pytest gives its test an empty parameter set
    project.makepyfile(
        test_cases="""
import dataclasses
from planted_ops import *
test_host = dataclasses.replace(make_spec("host", good_resize), host_only="a host library").test()
test_good = make_spec("good", good_resize, dtypes=("float32",)).test()
"""
    )
    result = project.runpytest_inprocess(*QUICK[:-1], "--targets=vcuda:0")
    assert result.ret == 0 and "INTERNALERROR" not in result.stdout.str()
    result.assert_outcomes(passed=6, skipped=1)  # good's items on vcuda:0; host's one empty-set skip
    compiled = project.runpytest_inprocess(*QUICK[:-1], "--targets=cpu+compile", "-rs")
    compiled.assert_outcomes(passed=5, skipped=2)  # host: one skip a variant, with the reason
    assert "not compiled: a host library (torch.compile compiles torch code only)" in compiled.stdout.str()


@pytest.mark.parametrize("args, captured", [((), False), (("--log-level=INFO",), True)])
def test_pytest_log_capture_is_left_out_of_a_conformance_run_unless_asked_for(project, args, captured):
    write_cases(project, good="good_resize")
    seen = {}

    class Probe:
        def pytest_sessionstart(self, session):
            seen["capture"] = session.config.pluginmanager.get_plugin("logging-plugin") is not None

    result = project.runpytest_inprocess(*QUICK, "--max-examples=3", *args, plugins=[Probe()])
    assert result.ret == 0
    assert seen == {"capture": captured}
