"""A repro script never reports its own crash as the bug (issue 46, item 7): an own op whose function is named `call`
(as docs/adding-an-op.md names it) once replaced the script's `call(x)`, which then raised TypeError and printed
"REPRODUCED ... reference raised TypeError" for a correct op.  The script's names never collide with the op's, and an
error of the script's own lines (a name it lacks, the op called as it cannot be) is exit 4, "SCRIPT FAILED", never 1."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from conformance.cli import main
from conformance.report.repro_names import script_names
from conformance.report.repro_source import render
from conformance.spec.loading import load_specs
from conformance.spec.recipes import Case, Recipe, materialize

# right unless the run plants a bug (one added to every value); raises its own TypeError where asked
OWN_OP = """
import os

import numpy as np
import torch

from conformance import OpSpec, Rule, Tolerance


def call(image, params):
    if os.environ.get("OWN_OP_RAISES"):
        raise TypeError("the op's own TypeError")
    return torch.flip(image, dims=[-1]) + (1 if os.environ.get("OWN_OP_PLANTED") else 0)


test_my_flip = OpSpec(
    name="my_flip", call=call, reference=lambda image, case: np.flip(image, axis=-1), dtypes=("float32",),
    tolerances=[Rule(Tolerance("float", atol=1e-6, reason="a flip is exact"))],
).test()
"""
ITEM = "test_own.py::test_my_flip[cpu-float32-default-reference]"
QUICK = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--targets=cpu", "--sweep=none", "--max-examples=5"]


def run_script(script: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "OWN_OP"))}
    return subprocess.run(
        [sys.executable, str(script)], env={**clean, **env}, capture_output=True, text=True, timeout=300
    )


def test_an_own_op_named_call_reproduces_as_itself_and_the_scripts_own_errors_are_exit_4(
    pytester, tmp_path, monkeypatch
):
    pytester.makepyfile(test_own=OWN_OP)
    monkeypatch.setenv("OWN_OP_PLANTED", "1")
    pytester.runpytest_inprocess(*QUICK, ITEM).assert_outcomes(failed=1)
    monkeypatch.delenv("OWN_OP_PLANTED")
    assert main(["repro", ITEM, "-o", str(tmp_path)]) == 0
    (script,) = tmp_path.glob("*.py")
    text = script.read_text()
    assert text.count("def call(") == 1 and "def call_(image, params):" in text, text
    assert "return call_(x, {})" in text

    planted = run_script(script, OWN_OP_PLANTED="1")
    assert planted.returncode == 1 and "REPRODUCED (the reference check" in planted.stdout, planted.stdout
    correct = run_script(script)  # the op is right without the plant: nothing to reproduce
    assert correct.returncode == 0 and "not reproduced here" in correct.stdout, correct.stdout + correct.stderr
    raising = run_script(script, OWN_OP_RAISES="1")  # a TypeError of the op's own code is the op's behaviour
    assert raising.returncode == 1 and "reference raised TypeError" in raising.stdout, raising.stdout

    for broken, error in (("return call_(x)", "TypeError"), ("return no_such_name(x, {})", "NameError")):
        script.write_text(text.replace("return call_(x, {})", broken))
        done = run_script(script)
        assert done.returncode == 4, done.stdout + done.stderr
        assert "REPRODUCED" not in done.stdout and f"SCRIPT FAILED, not the op: {error}" in done.stdout, done.stdout
    script.write_text(text.replace("    import torch\n", "    import torch\n    import no_such_library\n", 1))
    missing = run_script(script)
    assert missing.returncode == 3 and "cannot run here: No module named 'no_such_library'" in missing.stdout


def test_the_ops_own_names_are_renamed_where_the_script_binds_them_otherwise(tmp_path):
    (tmp_path / "test_mine.py").write_text(
        textwrap.dedent(
            """
            import numpy as DATA
            import numpy as np
            from conformance import OpSpec, Rule, Tolerance

            def main(image, params):
                return image + float(DATA.float32(0)) + float(np.float32(0))

            spec = OpSpec(name="mine", call=main, reference=lambda image, case: image, dtypes=("float32",),
                          tolerances=[Rule(Tolerance("t", reason="test"))])
            test_mine = spec.test()
            """
        )
    )
    (spec,) = load_specs([tmp_path / "test_mine.py"])
    case = Case("mine", Recipe(2, 3, dtype="float32"), {})
    rendered = render(spec, case, materialize(case.recipe), None, str(tmp_path) + os.sep)
    assert {"main", "DATA", "np"} <= script_names().keys()
    assert rendered.imports == ["import numpy as DATA_", "import numpy as np"]  # np is the script's own numpy
    (definition,) = rendered.definitions
    assert definition.startswith("def main_(image, params):") and "DATA_.float32" in definition
    assert rendered.body == ["return main_(x, {})"] and rendered.own == ["main_"]
