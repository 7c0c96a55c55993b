"""`python -m conformance repro` (issue 39, item 4): a failure becomes a script an upstream maintainer runs with torch,
numpy and the library alone.  A planted bug in the library fails the stock suite; its repro, run in an interpreter that
cannot import conformance, prints the difference and exits 1 with the bug there, and 0 with the real library."""

import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
import torch
from case_modules import copy_cases

from conformance.cli import USAGE_ERROR, main
from conformance.report.repro_script import layout_code
from conformance.report.repro_source import render
from conformance.report.repro_trace import public_name
from conformance.spec.loading import load_specs
from conformance.spec.recipes import LAYOUTS, Case, Recipe, apply_layout, materialize

# the library's own bug: posterize keeps one bit more than asked (a conftest for pytest, a module for the script)
PLANT = """
import torchvision.transforms.v2.functional as F

_real = F.posterize


def posterize(inpt, bits):
    return _real(inpt, min(bits + 1, 8))


F.posterize = posterize
"""
FAILING = "cases/test_tone.py::test_posterize_tv2[cpu-uint8-default-reference]"
PASSING = "cases/test_tone.py::test_posterize_tv2[cpu-uint8-default-invariants]"
# a fresh interpreter: no PYTHONPATH, no user site, no current folder (-I), no .pth files (-S: the editable install's
# finder is one), the environment's packages on the path by hand, and conformance refused however it is installed
FRESH = """
import importlib.abc, runpy, sys

class NoHarness(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "conformance" or name.startswith("conformance."):
            raise ModuleNotFoundError("conformance is not installed here", name=name)

sys.meta_path.insert(0, NoHarness())
sys.path[:0] = [p for p in sys.argv[1].split(sys.argv[2]) if p]
try:
    import conformance
except ModuleNotFoundError:
    print("conformance cannot be imported here")
else:
    raise SystemExit("conformance imported: the script's interpreter is not fresh")
if sys.argv[3]:
    import planted_library  # the library under test, with its bug
sys.argv = sys.argv[4:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run_fresh(script: Path, plant: Path | None, cwd: Path) -> subprocess.CompletedProcess:
    paths = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], str(plant or "")})
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    command = [
        sys.executable,
        "-I",
        "-S",
        "-c",
        FRESH,
        os.pathsep.join(paths),
        os.pathsep,
        "1" if plant else "",
        str(script),
    ]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_a_planted_library_bug_gives_a_script_that_reproduces_it_without_the_harness(pytester, tmp_path, capsys):
    copy_cases(pytester.path / "cases", "test_tone.py")
    pytester.makeconftest(PLANT)
    args = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--targets=cpu", "--sweep=none", "--max-examples=10"]
    planted = pytester.runpytest_subprocess(*args, FAILING, PASSING)
    planted.assert_outcomes(failed=1, passed=1)
    out = planted.stdout.str()
    assert f"Repro script: python -m conformance repro '{FAILING}' --run reports/" in out, out[-3000:]
    run = pytester.path / "reports" / "latest"
    summary = (run / "summary.md").read_text()
    assert "### Reproduce without the harness" in summary
    assert f"- `python -m conformance repro '{FAILING}' --run reports/" in summary  # a code span: copied as it is
    cards = "".join(p.read_text() for p in (run / "index_files").glob("*.js"))  # what the failing cell opens to
    assert "python -m conformance repro" in cards  # the failure card's command

    folder = tmp_path / "upstream"
    assert main(["repro", FAILING, "-o", str(folder)]) == 0
    scripts = sorted(folder.glob("*.py"))
    assert [p.suffix for p in sorted(folder.iterdir())] == [".npz", ".py"], list(folder.iterdir())
    text = scripts[0].read_text()
    assert "torchvision.transforms.v2.functional.posterize(x, bits=" in text
    assert "import conformance" not in text and "from conformance" not in text
    compile(text, str(scripts[0]), "exec")

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "planted_library.py").write_text(PLANT)
    reproduced = run_fresh(scripts[0], plant, elsewhere)
    assert "conformance cannot be imported here" in reproduced.stdout, reproduced.stdout + reproduced.stderr
    assert reproduced.returncode == 1, reproduced.stdout + reproduced.stderr
    assert (
        "max abs diff" in reproduced.stdout
        and "REPRODUCED (the reference check, tolerance 'exact')" in reproduced.stdout
    )

    control = run_fresh(scripts[0], None, elsewhere)  # the same script with the real library: within the tolerance
    assert control.returncode == 0, control.stdout + control.stderr
    assert "max abs diff 0 " in control.stdout and "not reproduced here" in control.stdout

    capsys.readouterr()
    assert main(["repro", PASSING, "-o", str(folder)]) == USAGE_ERROR  # a control item: nothing to reproduce
    assert "did not fail" in capsys.readouterr().err
    assert main(["repro", FAILING.replace("reference", "referenc")]) == USAGE_ERROR
    assert f"did you mean {FAILING}?" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argument", "said"),
    [
        ("{not json", "not a case: case is not valid JSON"),
        ("missing.json", "no such case JSON file: missing.json"),
        ("cases/test_tone.py::test_posterize_tv2[cpu-uint8-default-reference]", "is not a run folder"),
        ("neither", "is neither a case JSON nor an item id"),
    ],
)
def test_what_names_no_failure_is_one_line_and_a_usage_error(argument, said, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["repro", argument, "--run", str(tmp_path)]) == USAGE_ERROR
    err = capsys.readouterr().err
    assert said in err and len(err.strip().splitlines()) == 1, err


def test_calls_are_written_as_the_library_code_they_run():
    tone = {s.name: s for s in load_specs([Path(__file__).parents[1] / "cases" / "test_normalize.py"])}
    spec = tone["normalize_v2_module"]
    case = Case(spec.name, Recipe(4, 5, channels=3, dtype="float32", seed=3), {"mean": [0.5], "std": [0.25]})
    x = materialize(case.recipe)
    rendered = render(spec, case, x, None, str(Path(__file__).parents[1] / "cases") + os.sep)
    assert rendered.body == [
        "v0 = torchvision.transforms.v2.Normalize([0.5], std=[0.25]).to(DEVICE)",
        "v1 = v0(x)",
        "return v1",
    ]
    assert rendered.imports == ["import torchvision.transforms.v2"] and not rendered.notes
    assert public_name(torch.nn.functional.interpolate) == ("torch.nn.functional", "torch.nn.functional.interpolate")


def test_an_own_op_written_with_torch_alone_is_inlined(tmp_path):
    (tmp_path / "test_mine.py").write_text(
        textwrap.dedent(
            """
            import torch
            from hypothesis import strategies as st
            from conformance import OpSpec, Rule, Tolerance

            spec = OpSpec(
                name="brighten", call=lambda x, p: (x * p["f"]).clamp(0, 1), reference=lambda image, case: image,
                dtypes=("float32",), modes=("default",), params=lambda recipe, mode: st.just({"f": 1.5}),
                tolerances=[Rule(Tolerance("t", reason="test"))],
            )
            test_brighten = spec.test()
            """
        )
    )
    (spec,) = load_specs([tmp_path / "test_mine.py"])
    case = Case("brighten", Recipe(2, 3, dtype="float32"), {"f": 1.5})
    rendered = render(spec, case, materialize(case.recipe), None, str(tmp_path) + os.sep)
    assert rendered.definitions == ["op = lambda x, p: (x * p['f']).clamp(0, 1)"]
    assert rendered.body == ["return op(x, {'f': 1.5})"] and rendered.imports == []


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_scripts_layout_code_is_the_harnesss_own(layout):
    tensor = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)
    namespace: dict = {}
    exec("def arrange(tensor):\n" + "".join(f"    {line}\n" for line in layout_code(layout)), namespace)
    made, expected = namespace["arrange"](tensor), apply_layout(tensor, layout)
    assert torch.equal(made, expected) and made.stride() == expected.stride()
    assert made.storage_offset() == expected.storage_offset()
