"""The layers are checked, not hoped for: the import contract in pyproject.toml (import-linter) holds for the
package, and an upward import planted in a copy of it fails the contract, naming the modules involved."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
LINT_IMPORTS = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess:
    if not Path(LINT_IMPORTS).exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    return subprocess.run(
        [LINT_IMPORTS, "--no-cache"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )


def test_the_package_keeps_its_layer_contract():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "BROKEN" not in result.stdout


def _planted(tmp_path: Path, module: str, line: str) -> subprocess.CompletedProcess:
    """lint-imports on a copy of the package with `line` appended to `module` (a path under conformance/)."""
    shutil.copytree(ROOT / "conformance", tmp_path / "conformance", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    planted = tmp_path / "conformance" / module
    planted.write_text(planted.read_text() + f"\n{line}\n")
    return _lint(tmp_path)


def test_an_upward_import_breaks_the_contract_naming_both_modules(tmp_path):
    result = _planted(
        tmp_path, "spec/recipes.py", "import conformance.engine.session  # the declarative API reaching up"
    )
    assert result.returncode != 0
    assert "conformance.spec is not allowed to import conformance.engine" in result.stdout
    assert "conformance.spec.recipes -> conformance.engine.session" in result.stdout


def test_a_check_that_calls_the_op_itself_breaks_the_contract(tmp_path):
    """Checks yield requests; the engine runs them (conformance.engine.check_runs): an op call from checks/ fails."""
    result = _planted(
        tmp_path, "checks/batch.py", "from conformance.devices.calls import run_op  # calling the op again"
    )
    assert result.returncode != 0
    assert "Checks never call the op" in result.stdout and "BROKEN" in result.stdout
    assert "conformance.checks.batch -> conformance.devices.calls" in result.stdout


# what differs per kind of target is the target's own (a method or attribute): no module outside devices/ tests a
# target's name or type (issue 40's grep, kept) or reads what kind it is (issue 48: `.virtual`, `.compiled`,
# `.cpu_path`, an ISA `level`, `.is_accelerator`: a check asks what it can do, e.g. `moves_inputs`); a record or
# report reads the target's facts (conformance.devices.facts)
TARGET_TESTS = re.compile(
    r'startswith\("(vcuda|cpu:)|IsaTarget|getattr\(targ|getattr\(t, "level"|endswith\("\+compile"\)'
    r"|\b(target|t|run\.targets\[[^]]+\])\.(virtual|compiled|cpu_path|level|is_accelerator)\b(?!\.)"
)


def test_no_module_outside_devices_tests_a_targets_name_or_type():
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in sorted((ROOT / "conformance").rglob("*.py"))
        if "devices" not in path.relative_to(ROOT / "conformance").parts[:1]
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if TARGET_TESTS.search(line)
    ]
    assert found == []
