"""An op's odd behaviour is a finding or a skip in a few lines of its own, never the harness's traceback (issue 46,
item 7): an output on the meta device, which holds no data."""

import json
import re

import pytest

from conformance.cli import main
from conformance.report.markdown import summary_markdown
from conformance.store.reader import read_outcomes
from conformance.store.summary_model import Summary

QUICK = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--sweep=none", "--max-examples=3"]
META = """
import numpy as np
import torch
from conformance import OpSpec, Rule, Tolerance

test_meta = OpSpec(
    name="meta_flip", call=lambda image, params: torch.flip(image, dims=[-1]).to("meta"),
    reference=lambda image, case: np.flip(image, axis=-1), dtypes=("float32",),
    tolerances=[Rule(Tolerance("float", atol=1e-6, reason="a flip is exact"))],
).test()
"""


@pytest.mark.usefixtures("virtual_device")
def test_an_output_on_the_meta_device_is_an_invariants_finding_in_a_few_lines(pytester):
    pytester.makepyfile(test_meta=META)
    result = pytester.runpytest_inprocess(*QUICK, "--targets=cpu,vcuda:1")
    out = result.stdout.str()
    # invariants and placement fail on each target; the value checks have nothing to compare and skip
    result.assert_outcomes(failed=4, passed=3, skipped=3)
    assert "NotImplementedError" not in out and "conformance/" not in out, out
    said = "invariants: returned a tensor on the meta device, which holds no data: expected its values on"
    assert out.count(said) == 2, out
    assert len(out.splitlines()) < 150, out
    rows, _ = read_outcomes(pytester.path / "reports" / "latest")
    causes = {(r["target"], r["check"], r.get("cause")) for r in rows if r.get("verdict") == "fail"}
    assert ("vcuda:1", "invariants", "no data") in causes and ("cpu", "invariants", "no data") in causes


OUT_OF_MEMORY = """
import numpy as np
import torch
from conformance import OpSpec, Rule, Tolerance

def out_of_memory(image, params):
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (planted)")

test_oom = OpSpec(
    name="oom", call=out_of_memory, reference=lambda image, case: image, dtypes=("float32",),
    tolerances=[Rule(Tolerance("float", atol=1e-6, reason="exact"))], {extra}
).test()
"""


def test_an_item_whose_every_case_ran_out_of_memory_checked_nothing_and_fails(pytester):
    pytester.makepyfile(test_oom=OUT_OF_MEMORY.format(extra=""))
    result = pytester.runpytest_inprocess(*QUICK, "--targets=cpu")
    result.assert_outcomes(failed=4)  # each check's item: none passes on nothing
    out = result.stdout.str()
    assert result.ret == 1 and "each of its 3 cases ran out of memory on cpu" in out, out
    assert "the reference check checked nothing" in out


def test_a_run_that_checked_nothing_at_all_does_not_pass(pytester):
    pytester.makepyfile(test_oom=OUT_OF_MEMORY.format(extra='precondition=lambda: "not on this machine",'))
    result = pytester.runpytest_inprocess(*QUICK, "--targets=cpu")
    result.assert_outcomes(skipped=4)
    assert result.ret == 1 and "conformance: nothing was checked" in result.stdout.str(), result.stdout.str()


RAW = """
import torch
from conformance import OpSpec, Rule, Tolerance

MESSAGE = "\\x1b[31mRED\\x00\\x07bell " + b"\\xff\\xfe".decode("utf-8", "surrogateescape") + "x" * 10000

def loud(image, params):
    print("\\x1b[32mGREEN\\x1b[0m\\r")
    raise ValueError(MESSAGE)

test_loud = OpSpec(
    name="loud", call=loud, reference=lambda image, case: image, dtypes=("float32",),
    tolerances=[Rule(Tolerance("float", atol=1e-6, reason="exact"))],
).test()
"""


def test_an_ops_control_bytes_are_escaped_and_a_long_message_is_cut_where_the_terminal_shows_them(pytester, tmp_path):
    pytester.makepyfile(test_loud=RAW)
    result = pytester.runpytest_inprocess(*QUICK, "--targets=cpu", "-rA")
    out = "\n".join(result.outlines + result.errlines)
    assert result.ret == 1 and "\\x1b[31mRED\\x00\\x07bell \\udcff\\udcfexxx" in out, out[-3000:]
    assert "\\x1b[32mGREEN\\x1b[0m\\x0d" in out  # what it printed, captured, as pytest shows it
    assert not any(c in out for c in "\x1b\x00\x07\r\udcff"), [c for c in "\x1b\x00\x07\r\udcff" if c in out]
    assert re.search(r"x \[\.\.\. cut here: 9,\d\d\d more characters; the whole message is in .*reports", out)
    assert len(out) < 8000, len(out)
    rows, _ = read_outcomes(pytester.path / "reports" / "latest")
    kept = [r["message"] for r in rows if r.get("verdict") == "error"]
    assert kept and len(kept[0]) > 10000 and "\x1b[31mRED\x00" in kept[0]  # the record keeps it whole
    assert main(["repro", "test_loud.py::test_loud[cpu-float32-default-error]", "-o", str(tmp_path)]) == 0
    (script,) = tmp_path.glob("*.py")
    compile(script.read_text(), str(script), "exec")  # a NUL in its docstring: "source code cannot contain null bytes"


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("raise KeyboardInterrupt", "importing 'stops_at_import' raised KeyboardInterrupt: it cannot be swept"),
        ("import os\nos._exit(5)", "importing 'stops_at_import' ended the process importing it with exit status 5"),
    ],
)
def test_a_sweep_module_that_ends_its_process_at_import_is_one_line_and_a_usage_error(pytester, body, said):
    """It exited 2 with no output and no run folder (KeyboardInterrupt), or 5, pytest's 'no tests collected',
    silently (os._exit): the module is imported in a process of its own first."""
    pytester.makepyfile(test_meta=META, stops_at_import=body)
    result = pytester.runpytest_subprocess(*QUICK[:2], "--sweep=stops_at_import", "--targets=cpu")
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR and f"--sweep: {said}" in err, (result.ret, err)
    assert len(err.strip().splitlines()) == 1 and not (pytester.path / "reports").exists(), err


def test_summary_md_gives_a_repro_command_that_works_copied_from_the_raw_file():
    """It was escaped as Markdown text (`test\\_x`, `\\[cpu-...\\]`): the command copied from the file failed."""
    command = "python -m conformance repro 'mycases/test_my_op.py::test_my_op[cpu-float32-default-reference]' --run r"
    odd = "python -m conformance repro 'x.py::test_a`b[cpu-float32-default-reference]' --run r"  # a backtick in it
    lines = summary_markdown(
        "run",
        {
            "headline": "h",
            "new": [],
            "findings": [],
            "details": [{"script": c, "verdict": "fail"} for c in (command, odd)],
        },
        Summary.from_json({"totals": {}}),
    ).splitlines()
    assert f"- `{command}`" in lines and f"- ``{odd}``" in lines


def test_a_run_without_the_sweep_module_says_nothing_of_the_sweep(pytester):
    """Under `--no-stock mycases/` (or with only some families named) the six 'sweep of ...' header lines printed
    all the same, for a sweep that did not run."""
    pytester.makepyfile(test_meta=META)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--targets=cpu", "--max-examples=2")
    out = result.stdout.str()
    assert "conformance targets: cpu" in out and "sweep of" not in out, out
    rows = json.loads(next((pytester.path / "reports").glob("*/environment/*.json")).read_text())
    assert not rows.get("sweep"), rows.get("sweep")


def test_a_latest_that_is_a_folder_is_left_as_it_is_and_said(pytester):
    """A real folder at reports/latest was left stale, silently: it is never replaced (it may hold someone's data),
    and the run's end says that it does not name this run."""
    pytester.makepyfile(test_meta=META)
    mine = pytester.path / "reports" / "latest" / "mine.txt"
    mine.parent.mkdir(parents=True)
    mine.write_text("my notes")
    out = pytester.runpytest_inprocess(*QUICK, "--targets=cpu").stdout.str()
    assert f"warning: {mine.parent} is a folder, not the link to the newest run: it is left as it is" in out, out
    assert mine.read_text() == "my notes" and not mine.parent.is_symlink()


@pytest.mark.parametrize("asked", ["--help", "--markers"])
def test_help_leaves_no_run_folder(pytester, asked):
    """`python -m conformance run --help` left an empty reports/<timestamp>/ behind."""
    result = pytester.runpytest_inprocess("--conformance", "-p", "no:cacheprovider", asked)
    assert result.ret == 0 and not (pytester.path / "reports").exists(), list(pytester.path.rglob("*"))
