"""Versions come from the imported module, not from pip's metadata: skips, known-issue ranges and the
header all use what actually runs."""

import subprocess
import sys
import textwrap


def _fake_package(root, module_version: str, metadata_version: str) -> None:
    (root / "fakepkg").mkdir()
    (root / "fakepkg" / "__init__.py").write_text(f"__version__ = {module_version!r}\n")
    info = root / f"fakepkg-{metadata_version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fakepkg\nVersion: {metadata_version}\n")


def test_the_imported_version_wins_over_the_metadata_and_a_mismatch_is_flagged(tmp_path):
    _fake_package(tmp_path, "2.0", "1.0")
    script = textwrap.dedent("""
        from conformance import versions
        found = versions.installed("fakepkg")
        print(found.version, found.metadata, found.mismatch, found.file.endswith("fakepkg/__init__.py"))
        print(versions.satisfies("fakepkg", ">=2"), versions.below("fakepkg", "2"))
        print(versions.unmet("op", {"fakepkg": ">=3"}))
        print(versions.missing("op", ("fakepkg.nothing_here",)))
        print(versions.installed("torch").mismatch)  # 2.15.0+cu132 vs 2.15.0: a local label, not another release
    """)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env={"PYTHONPATH": str(tmp_path), "PATH": ""}
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "2.0 1.0 True True"
    assert lines[1] == "True False"
    assert lines[2] == "op needs fakepkg>=3; imported fakepkg 2.0"
    assert lines[3] == "op needs fakepkg.nothing_here, which fakepkg 2.0 lacks"
    assert lines[4] == "False"


def test_a_build_number_pip_records_beyond_the_modules_version_is_the_same_release():
    """opencv-python-headless 5.0.0.93 imports as cv2 5.0.0: every clean install's header warned of a mismatch."""
    from conformance.spec.versions import Installed

    def mismatch(version, metadata):
        return Installed("p", version, "f", metadata).mismatch

    assert not mismatch("5.0.0", "5.0.0.93") and not mismatch("2.15.0+cu132", "2.15.0")
    assert mismatch("5.0.1", "5.0.0.93") and mismatch("2.0", "1.0") and mismatch("0.9.0rc1", "0.9.0")


def test_the_header_names_imported_versions_files_and_disagreements():
    from conformance.devices.environment import header_lines

    env = {
        "packages": {"torch": "2.15.0+cu132", "kornia": "0.7.3"},
        "cuda": {"compiled_with": None},
        "cpu_capability": "AVX2",
        "tf32": {},
        "targets": [],
        "imported": {
            "torch": {"version": "2.15.0+cu132", "file": "/site/torch/__init__.py", "metadata": "2.15.0"},
            "kornia": {"version": "0.7.3", "file": "/old/kornia/__init__.py", "metadata": "0.9.0"},
        },
    }
    lines = header_lines(env)
    assert "conformance: torch-2.15.0+cu132 kornia-0.7.3" in lines
    assert "conformance: imported from torch /site/torch, kornia /old/kornia" in lines
    warnings = [line for line in lines if "warning" in line]
    assert warnings == [
        "conformance: warning: kornia imports as 0.7.3 from /old/kornia/__init__.py, but pip's metadata says 0.9.0"
    ]
