"""`python -m conformance run`: what it collects is pytest's decision, whatever option values look like."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.launch import pytest_command
from conformance.store.summary_reader import read_summary

REPO = Path(__file__).resolve().parents[1]


def test_plugin_option_values_are_joined_so_they_are_never_taken_for_paths():
    args = pytest_command(
        [
            "--reports-dir",
            "reports",
            "--cases-from",
            "reports/x",
            "-k",
            "z",
            "--hypothesis-profile",
            "ci",
            "cases/test_pil.py",
        ]
    )
    assert "--reports-dir=reports" in args and "--cases-from=reports/x" in args
    assert "--hypothesis-profile=ci" in args and args[-1] == "cases/test_pil.py"


@pytest.mark.parametrize(
    "option",
    [
        ["--known-issues", "cases/known_issues.toml"],
        ["--reports-dir", "reports"],
        ["--tolerances", "TMP/tolerances.toml"],
        ["--junitxml", "TMP/junit.xml"],
    ],
)
def test_an_option_value_that_is_an_existing_path_does_not_change_the_suite(option, tmp_path):
    (REPO / "reports").mkdir(exist_ok=True)
    if option[0] == "--reports-dir":
        option = [option[0], str(tmp_path)]
    if option[1].startswith("TMP/"):
        option = [option[0], str(tmp_path / option[1][4:])]
        Path(option[1]).write_text("")  # it exists (a second CI run in the same workspace)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance",
            "run",
            "--co",
            "-q",
            "-p",
            "no:cacheprovider",
            "--targets",
            "cpu",
            "-k",
            "normalize_v1 and reference",
            *option,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    collected = [line for line in result.stdout.splitlines() if "::" in line]
    assert collected and all(line.startswith("cases/test_normalize.py::test_normalize_v1[") for line in collected), (
        result.stdout[-2000:] + result.stderr[-2000:]
    )


@pytest.mark.parametrize("kind", ["a file", "read-only"])
def test_an_unusable_reports_folder_is_a_usage_error(kind, tmp_path):
    import os

    target = tmp_path / "reports"
    if kind == "a file":
        target.write_text("")
    else:
        target.mkdir()
        target.chmod(0o500)
        if os.access(target, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance",
            "run",
            "-q",
            "-p",
            "no:cacheprovider",
            "--targets",
            "cpu",
            "-k",
            "normalize_v1 and reference",
            "--reports-dir",
            str(target),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 4, result.stdout[-1500:] + result.stderr[-1500:]
    assert "--reports-dir: cannot write runs into" in result.stderr and "Traceback" not in result.stderr


def _interrupt_default():
    """The child gets Python's Ctrl-C handler whatever this process inherited: a shell without job control
    starts background jobs with SIGINT ignored, and an ignored SIGINT stays ignored in every child (the run
    then never saw the Ctrl-C and went on to its 5,000 examples: the test that once failed on a fresh clone)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("entry, how", [("cli", "ctrl-c"), ("cli", "sigterm"), ("pytest", "sigterm")])
def test_an_interrupted_run_ends_with_an_incomplete_summary_and_report(entry, how, tmp_path):
    import os
    import signal
    import time

    command = ["-m", "conformance", "run"] if entry == "cli" else ["-m", "pytest", "cases"]
    process = subprocess.Popen(
        [
            sys.executable,
            *command,
            "-q",
            "-p",
            "no:cacheprovider",
            "--targets",
            "cpu",
            "-k",
            "resize and reference",
            "--max-examples",
            "5000",
            "--reports-dir",
            str(tmp_path),
            "--run-name",
            "cut",
        ],
        cwd=REPO,
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_interrupt_default,
    )
    outcomes = tmp_path / "cut" / "outcomes"
    began = time.monotonic()
    while not (
        outcomes.is_dir() and any('"kind":"item"' in p.read_text(errors="replace") for p in outcomes.glob("*.jsonl"))
    ):  # the event: an item is running
        assert process.poll() is None, process.communicate()[0][-2000:]
        assert time.monotonic() - began < 600, "no item started in 10 minutes"
        time.sleep(0.1)
    if how == "ctrl-c":
        os.killpg(process.pid, signal.SIGINT)  # a terminal sends it to the whole process group
    else:
        process.send_signal(signal.SIGTERM)  # CI cancels the process it started
    try:
        output, _ = process.communicate(timeout=300)  # it ends at once; the limit only catches a hang
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail(f"the run had not ended 300 s after the {how}: {process.communicate()[0][-2000:]}")
    assert process.returncode == 2, output[-2000:]
    assert "Traceback" not in output
    summary = read_summary(tmp_path / "cut")
    assert summary["complete"] is False and summary["totals"]
    assert "Incomplete run" in (tmp_path / "cut" / "index.html").read_text()
    assert (tmp_path / "latest").is_symlink()


def test_a_replay_case_for_an_op_no_selected_test_runs_is_a_usage_error():
    case = (
        '{"op":"no_such_op","params":{},"recipe":{"batch":[],"channels":3,"content":"noise","dtype":"float32",'
        '"height":2,"layout":"contiguous","seed":0,"width":2}}'
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance",
            "run",
            "-q",
            "-p",
            "no:cacheprovider",
            "--targets",
            "cpu",
            "-k",
            "normalize_v1 and reference",
            "--replay",
            case,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 4, result.stdout[-1500:]
    assert "--replay: the case is for op 'no_such_op'" in result.stderr


def test_the_clis_own_argument_errors_exit_4_like_pytests():
    for args in (["compare"], ["baseline"], ["timing", "-o", "x.json", "--shapes", "9x9"], ["nonsense"]):
        result = subprocess.run([sys.executable, "-m", "conformance", *args], cwd=REPO, capture_output=True, text=True)
        assert result.returncode == 4, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_an_empty_target_list_is_an_error_like_a_trailing_comma():
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "cases", "--co", "-q", "-p", "no:cacheprovider", "--targets", ""],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 4 and "empty entry in target list" in result.stderr


def test_a_case_whose_input_cannot_be_allocated_is_a_resource_outcome_not_a_harness_error(tmp_path):
    """Recorded as `resource`, in a line; and the item, which then checked nothing, does not pass (issue 46)."""
    case = (
        '{"op":"normalize_v1","params":{"mean":[0.1,0.2,0.3],"std":[1,1,1]},"recipe":{"batch":[],"channels":3,'
        '"content":"noise","dtype":"float32","height":1000000,"layout":"contiguous","seed":0,"width":1000000}}'
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases/test_normalize.py::test_normalize_v1[cpu-float32-valid-reference]",
            "-q",
            "-p",
            "no:cacheprovider",
            "--replay",
            case,
            f"--reports-dir={tmp_path}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stdout[-2000:]
    assert "its one case ran out of memory on cpu (a resource outcome)" in result.stdout
    assert "Traceback" not in result.stdout
    assert json.loads((tmp_path / "latest" / "summary.json").read_text())["totals"]["resource"] == 1


def test_run_uses_every_core_unless_told_otherwise(monkeypatch):
    from conformance import launch

    monkeypatch.setattr(launch, "cores", lambda: 4)
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    assert "-n4" in pytest_command(["-k", "resize"])
    for chosen in (
        ["-n", "0"],
        ["-n2"],
        ["--dist", "no"],
        ["-p", "no:xdist"],
        ["--pdb"],
        ["-s"],
        ["--co"],
        ["--replay", "{}"],
        ["--replay={}"],
    ):
        assert not any(a.startswith("-n") for a in pytest_command(chosen) if a not in chosen), chosen
    monkeypatch.setattr(launch, "cores", lambda: 1)
    assert not any(a.startswith("-n") for a in pytest_command([]))


def test_the_header_says_how_many_workers_run_chose(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "conformance",
            "run",
            "-p",
            "no:cacheprovider",
            "--targets",
            "cpu",
            "-k",
            "normalize_v1 and cpu-float32-valid-reference",
            "--max-examples",
            "3",
            f"--reports-dir={tmp_path}",  # not the checkout's reports/ (nor its `latest`)
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:]
    from conformance.launch import cores

    expected = f"{cores()} pytest-xdist workers (chosen by `python -m conformance run`: one per core"
    assert (expected in result.stdout) == (cores() > 1), result.stdout[:3000]
