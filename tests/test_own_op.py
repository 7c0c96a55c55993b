"""The README's own-op example, pasted into a file as it stands, runs green with the documented command (and is
marked uncalibrated: it gives no tolerance rules), and a bug planted in its `call` fails the reference check."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).parents[1] / "README.md"
START, END = "<!-- own-op:start -->", "<!-- own-op:end -->"
# what the README says to run, narrowed to two targets, one process and the ci profile's draws
RUN = ["run", "--no-stock", "-n", "0", "-p", "no:cacheprovider", "--hypothesis-profile=ci", "--targets=cpu,vcuda:1"]
RUN += ["--sweep=none"]


def example() -> str:
    """The first Python block between the README's own-op markers."""
    text = README.read_text(encoding="utf-8")
    assert START in text and END in text, f"{README} lost its markers {START} ... {END}"
    found = re.search(r"```python\n(.*?)```", text.split(START, 1)[1].split(END, 1)[0], re.S)
    assert found, "no ```python block between the own-op markers"
    return found[1]


def run(folder: Path, source: str, name: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`python -m conformance run --no-stock mycases/` in `folder` with the module `source`; the run folder."""
    cases = folder / "mycases"
    cases.mkdir(parents=True, exist_ok=True)
    (cases / "test_my_op.py").write_text(source, encoding="utf-8")
    reports = folder / "reports"
    command = [sys.executable, "-m", "conformance", *RUN, f"--reports-dir={reports}", f"--run-name={name}", "mycases"]
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=600)
    return done, reports / name


def test_the_example_is_a_dozen_lines():
    code = [line for line in example().splitlines() if line.strip()]
    assert len(code) <= 15, code


@pytest.mark.usefixtures("virtual_device")
def test_the_readme_example_runs_green_and_a_planted_bug_in_its_call_is_caught(tmp_path):
    source = example()
    done, run_dir = run(tmp_path / "control", source, "control")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    passed = re.search(r"(\d+) passed", out)
    assert passed and int(passed[1]) > 0 and " failed" not in out, out[-3000:]
    assert "uncalibrated tolerances, the dtype defaults" in out  # the run's end says the rules are defaults
    assert "### Uncalibrated tolerances" in (run_dir / "summary.md").read_text()
    assert 'id="uncalibrated"' in (run_dir / "index.html").read_text()

    assert "dims=[-1]" in source
    planted, _ = run(tmp_path / "planted", source.replace("dims=[-1]", "dims=[-2]"), "planted")  # rows, not columns
    out = planted.stdout + planted.stderr
    assert planted.returncode == 1, out[-4000:]
    failed = [line for line in out.splitlines() if line.startswith("FAILED ")]
    assert any("-reference]" in line for line in failed), out[-4000:]
    assert "ReferenceFailure" in out or "reference failed" in out, out[-4000:]
