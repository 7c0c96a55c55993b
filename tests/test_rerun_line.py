"""One rerun-line builder (conformance.store.repro_command.rerun_line) for a failure's message and a crashed item's
record: both name a target the default selection leaves out (the crash record once omitted `--targets`)."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

from conformance.devices.compiled_target import compile_targets
from conformance.devices.targets import CPU
from conformance.devices.virtual_target import virtual_targets
from conformance.store.reader import read_outcomes
from conformance.store.records import RecordWriter
from conformance.store.repro_command import rerun_line

ROOT = Path(__file__).parents[1]
CASE = '{"op":"x","params":{},"recipe":{"height":1,"width":1}}'
COMPILED = compile_targets([CPU])[0].facts()


def test_the_rerun_line_names_a_compiled_target_only():
    eager = rerun_line("cases/test_x.py::test_x[cpu-uint8-default-reference]", CASE, CPU.facts())
    compiled = rerun_line("cases/test_x.py::test_x[cpu+compile-uint8-default-compiled]", CASE, COMPILED)
    assert shlex.split(eager)[:4] == ["python", "-m", "conformance", "run"] and "--targets" not in eager
    assert shlex.split(compiled)[-2:] == ["--targets", "cpu+compile"]
    assert shlex.split(compiled)[5:7] == ["--replay", CASE]


def test_a_crashed_item_on_a_compiled_target_gets_the_same_rerun_line(tmp_path):
    nodeid = "cases/test_x.py::test_x[cpu+compile-uint8-default-compiled]"
    writer = RecordWriter(tmp_path, "gw0", lambda: {"python": "3"})
    writer.crash(nodeid, "worker 'gw0' crashed", CASE, facts=COMPILED)
    writer.store.close()
    rows, _ = read_outcomes(tmp_path)
    crashed = next(r for r in rows if r.get("crash"))
    assert crashed["repro"] == rerun_line(nodeid, CASE, COMPILED)
    assert shlex.split(crashed["repro"])[-2:] == ["--targets", "cpu+compile"]  # what the line says, not only how
    assert crashed["message"].endswith(f"Rerun: {crashed['repro']}")


def test_a_rerun_line_names_exactly_the_targets_the_default_selection_leaves_out(monkeypatch):
    """What a target's facts say (a crashed item's record reads them by the name in its id) agrees with the
    `default` selection."""
    from conformance.devices import discovery
    from conformance.devices.accelerators import CudaTarget
    from conformance.devices.compiled_target import compile_targets
    from conformance.devices.isa_target import IsaTarget
    from conformance.devices.targets import CPU, Target

    gpu = CudaTarget("cuda:0", "cuda", "a GPU")
    monkeypatch.setattr(discovery, "_real_targets", lambda: [CPU, gpu])
    monkeypatch.setattr(discovery, "virtual_unavailable_reason", lambda: None)
    monkeypatch.setattr(discovery, "isa_targets", lambda: [IsaTarget("cpu:avx2", "cpu", level="avx2")])
    monkeypatch.setattr(discovery, "compile_targets", compile_targets)
    installed = Target("npu:0", "npu", "an installed kind", by_default=False)
    monkeypatch.setattr(discovery, "extension_targets", lambda taken: [installed])
    found = discovery.discover(None)
    default = {t.name for t in discovery.select("default", found)}
    assert {t.name for t in found} >= {"cpu", "cpu:avx2", "cuda:0", "cuda:0+compile", "vcuda:0", "vcuda:1", "npu:0"}
    named = {target.name for target in found if target.facts().named_in_rerun}
    assert named == {"cpu+compile", "cuda:0+compile", "vcuda:0", "npu:0"}  # the kinds and ids the default leaves out
    assert named == {target.name for target in found} - default


def test_the_rerun_line_of_vcuda_0_collects_its_item(tmp_path):
    """vcuda:0 is left out of the default selection: its rerun line names it, or the item id collects nothing."""
    nodeid = "cases/test_normalize.py::test_normalize_v2[vcuda:0-float32-valid-reference]"
    words = shlex.split(rerun_line(nodeid, CASE, virtual_targets(2, only_last_by_default=True)[0].facts()))
    assert words[-2:] == ["--targets", "vcuda:0"]
    command = [sys.executable, *words[1:5], *words[-2:], "--co", "-q", "-p", "no:cacheprovider"]  # without --replay
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and nodeid in done.stdout, (done.stdout + done.stderr)[-2000:]


# an own op whose reference is planted off by one: every case fails its reference check
OWN_FAILING = """
import numpy as np
import torch
from conformance import OpSpec, Rule, Tolerance

test_off = OpSpec(
    name="off", call=lambda image, params: torch.flip(image, dims=[-1]),
    reference=lambda image, case: np.flip(image, axis=-1) + 1, dtypes=("float32",),
    tolerances=[Rule(Tolerance("float", atol=1e-6, reason="a flip is exact"))],
).test()
"""


def test_the_printed_lines_work_pasted_where_the_run_was_started_with_the_cases_elsewhere(tmp_path):
    """`--no-stock /elsewhere/mycases` from another folder: pytest ids the module from its rootdir (or from the
    folder itself), which names nothing from here; the Rerun and Repro script lines once exited 4 pasted there."""
    here, cases = tmp_path / "work", tmp_path / "elsewhere" / "mycases"
    here.mkdir()
    cases.mkdir(parents=True)
    (cases / "test_off.py").write_text(OWN_FAILING)
    quick = ["-n", "0", "-p", "no:cacheprovider", "--hypothesis-profile=ci", "--targets=cpu", "--sweep=none"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "conformance", "run", "--no-stock", str(cases), *quick, "--max-examples=3"]
    done = subprocess.run(command, cwd=here, env=env, capture_output=True, text=True, timeout=600)
    lines = {k: v for k, _, v in (line.partition(": ") for line in done.stdout.splitlines()) if v}
    assert done.returncode == 1 and "Rerun" in lines and "Repro script" in lines, done.stdout[-3000:]
    for said, wanted in (("Rerun", 1), ("Repro script", 0)):  # the case fails again; the script is written
        pasted = subprocess.run(
            ["bash", "-c", lines[said]], cwd=here, env=env, capture_output=True, text=True, timeout=600
        )
        assert pasted.returncode == wanted, f"{said}: {lines[said]}\n{pasted.stdout[-2000:]}{pasted.stderr[-2000:]}"
    assert len(list(here.glob("repro_off-*.py"))) == 1


def test_a_crash_record_names_the_item_as_its_failures_rerun_lines_do(tmp_path):
    nodeid = "test_x.py::test_x[cpu-uint8-default-reference]"
    command_id = "/elsewhere/mycases/test_x.py::test_x[cpu-uint8-default-reference]"
    writer = RecordWriter(tmp_path, "gw0", lambda: {"python": "3"})
    writer.case_started(nodeid, CASE, command_id=command_id)
    writer.crash(nodeid, "worker 'gw0' crashed", CASE, facts=CPU.facts())
    writer.store.close()
    rows, _ = read_outcomes(tmp_path)
    crashed = next(r for r in rows if r.get("crash"))
    assert crashed["repro"] == rerun_line(command_id, CASE, CPU.facts())
