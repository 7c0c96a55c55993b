"""Verdicts a CI gate can trust: one planted bug for each way a verdict used to go wrong.

Each test plants a bug the harness once hid or misreported, runs pytest on it as a user
would, and checks the verdict: the failure is found, on its own item, on the side that
diverges, and nothing correct is flagged.
"""

from pathlib import Path

import pytest
from case_modules import copy_cases

from conformance.store.reader import read_outcomes
from conformance.store.summary_reader import read_summary

HERE = Path(__file__).parent
CASES = HERE.parent / "cases"
QUICK = ["-p", "no:cacheprovider", "--hypothesis-profile=ci"]


@pytest.fixture
def project(pytester):
    pytester.makepyfile(
        planted_ops=(HERE / "planted_ops.py").read_text(), planted_placement=(HERE / "planted_placement.py").read_text()
    )
    return pytester


def records(project, run="latest"):
    rows, _ = read_outcomes(project.path / "reports" / run)
    return [r for r in rows if r.get("kind") == "outcome"]


def failed_ids(result) -> set[str]:
    return {line.split(" ", 2)[1] for line in result.stdout.lines if line.startswith("FAILED ")}


def shrunk_cases(project, nodeid: str) -> list[dict]:
    return [r["case"] for r in records(project) if r["nodeid"] == nodeid and r.get("phase") == "final"]


TWO_BUGS = '''
from planted_ops import *

def two_bugs(image, params):
    """Bug 1: writes into its input. Bug 2 (worse, only for wide outputs): +3 on every value."""
    out = good_resize(image, params)
    image[..., 0, 0] = 0 if image[..., 0, 0].ne(0).any() else 1
    return out + 3 if params["size"][1] > 8 else out

test_two_bugs = make_spec("two_bugs", two_bugs, dtypes=("float32",)).test()
'''


def test_two_independent_bugs_in_one_op_are_each_found_shrunk_and_reported(project):
    project.makepyfile(test_cases=TWO_BUGS)
    result = project.runpytest_inprocess(*QUICK, "--max-examples=40", "--targets=cpu")
    base = "test_cases.py::test_two_bugs[cpu-float32-bilinear"
    assert failed_ids(result) == {f"{base}-invariants]", f"{base}-reference]"}
    (mutation,) = shrunk_cases(project, f"{base}-invariants]")
    (values,) = shrunk_cases(project, f"{base}-reference]")
    assert mutation["params"]["size"] == [2, 2]  # shrunk for its own bug: any case shows it
    assert values["params"]["size"][1] == 9  # shrunk for the other: the narrowest output that shows it
    # each check is its own item, so -k selects one
    only = project.runpytest_inprocess(*QUICK, "--max-examples=40", "--targets=cpu", "-k", "reference")
    only.assert_outcomes(failed=1)


TWO_CAUSES = '''
from planted_ops import *

def two_invariant_bugs(image, params):
    """Two causes in one check: always writes into its input; returns float64 for 4-channel images."""
    out = good_resize(image, params)
    image[..., 0, 0] = 0 if image[..., 0, 0].ne(0).any() else 1
    return out.double() if image.shape[-3] == 4 else out

test_two_causes = make_spec("two_causes", two_invariant_bugs, dtypes=("float32",)).test()
'''


def test_two_causes_within_one_check_are_shrunk_separately(project):
    project.makepyfile(test_cases=TWO_CAUSES)
    result = project.runpytest_inprocess(*QUICK, "--max-examples=40", "--targets=cpu", "-k", "invariants")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "2 distinct failures" in out
    finals = [r for r in records(project) if r.get("phase") == "final"]
    messages = " | ".join(r["message"] for r in finals)
    assert "input mutated" in messages and "dtype: returned torch.float64" in messages
    assert {r["case"]["recipe"]["channels"] for r in finals} == {3, 4}  # each minimal for its own cause


def _copy_suite(pytester, *modules: str) -> None:
    copy_cases(pytester.path / "cases", *modules)


def _planted_against_control(pytester, module: str, keyword: str, examples: int, control: dict, plant: str):
    """Run the shipped suite's items as they are (the control), then with `plant` as a conftest: the result."""
    _copy_suite(pytester, module)
    args = [*QUICK, f"--max-examples={examples}", "--targets=cpu", "cases", "-k", keyword]
    pytester.runpytest_inprocess(*args).assert_outcomes(**control)
    pytester.makeconftest(plant)
    return pytester.runpytest_subprocess(*args)  # the plant patches a library: in a process of its own


PLUS_TWO = '''
import torch
import torch.nn.functional

_interpolate = torch.nn.functional.interpolate

def _plus_two(*args, **kwargs):
    """The planted regression: +2 (saturating) on every uint8 interpolate output."""
    out = _interpolate(*args, **kwargs)
    return (out.to(torch.int16) + 2).clamp(0, 255).to(torch.uint8) if out.dtype == torch.uint8 else out

torch.nn.functional.interpolate = _plus_two
import torchvision.transforms.v2.functional._geometry as _geometry
_geometry.interpolate = _plus_two
'''


def test_a_regression_inside_a_broad_known_issue_fails_the_gate(pytester):
    only_v2 = "test_resize and not (v1 or kornia or pil or cv2) and cpu-uint8-bicubic-reference"  # one item
    result = _planted_against_control(
        pytester, "test_resize.py", only_v2, 60, {"xfailed": 1}, PLUS_TWO
    )  # control: the real divergence is known
    result.assert_outcomes(failed=1)
    assert "outside the envelope of known issue vision-8399-uint8-native-bicubic" in result.stdout.str()


def test_a_cpu_only_regression_is_put_on_the_cpu_not_on_the_accelerator(pytester):
    _copy_suite(pytester, "test_resize.py")
    pytester.makeconftest(PLUS_TWO)
    result = pytester.runpytest_subprocess(
        *QUICK,
        "--max-examples=25",
        "--targets=cpu,vcuda:0",
        "cases",
        "-k",
        "test_resize and (uint8-bilinear-reference or uint8-bilinear-cross_device)",
    )
    # the cpu's uint8 kernel is the planted one; vcuda takes the float path and matches the reference
    assert failed_ids(result) == {"cases/test_resize.py::test_resize[cpu-uint8-bilinear-reference]"}
    crossed = [r for r in records(pytester) if r["check"] == "cross_device" and r.get("diverges")]
    assert crossed and {r["diverges"] for r in crossed} == {"cpu"}
    assert all(r["verdict"] == "pass" for r in crossed)


UNMOVED = '''
import torch
from planted_placement import *
from conformance.spec.opspec import ModuleOp

class KeepsItsTableOnTheCpu(BufferGain):
    """Works after .to(); left on the cpu it multiplies a device image by its cpu buffer."""

test_promised = make_gain_spec("promised", module=ModuleOp(build=lambda p: KeepsItsTableOnTheCpu(),
                                                            unmoved="works")).test()
test_allowed = make_gain_spec("allowed", module=ModuleOp(build=lambda p: KeepsItsTableOnTheCpu(),
                                                          unmoved="device-error")).test()
'''


def test_a_module_that_promises_to_work_unmoved_fails_when_it_does_not(project):
    project.makepyfile(test_cases=UNMOVED)
    result = project.runpytest_inprocess(*QUICK, "--max-examples=5", "--targets=cpu,vcuda:1", "-k", "unmoved")
    assert failed_ids(result) == {"test_cases.py::test_promised[vcuda:1-float32-gain-unmoved]"}
    result.assert_outcomes(failed=1, passed=1)
    out = result.stdout.str()
    assert "promises to work when left on the cpu, but raises a device error" in out
    summary = read_summary(project.path / "reports" / "latest")
    rows = {g["op"]: g for g in summary["groups"] if g["check"] == "unmoved"}
    assert rows["allowed"]["behaviours"] == {"raises a device error": 5}
    listed = out.split("modules left on the cpu that broke their promise (unmoved):")[1]
    assert "promised on vcuda:1" in listed and "allowed" not in listed  # a kept promise is not listed
    html = (project.path / "reports" / "latest" / "index.html").read_text()
    assert "Modules left on the cpu" in html and "raises a device error" in html


CPU_SAMPLER = '''
import torch
from planted_placement import *

class CpuSampler(RandomGain):
    """Its sampler builds the gains on the cpu and forward never moves them."""

    def forward(self, image, params=None):
        params = params or self.forward_parameters(image.shape)
        return image * params["gain"].reshape(*image.shape[:-3], 1, 1, 1)

class ComputesOnTheCpu(RandomGain):
    """Samples on the cpu, then quietly does the work there and copies the result back."""

    def forward(self, image, params=None):
        if params is not None:
            return super().forward(image, params)
        gain = self.forward_parameters(image.shape)["gain"]
        return (image.cpu() * gain.reshape(*image.shape[:-3], 1, 1, 1)).to(image.device)

def spec(name, cls):
    return make_gain_spec(name, module=ModuleOp(build=lambda p: cls(), sample=sample_gain))

test_cpu_sampler = spec("cpu_sampler", CpuSampler).test()
test_computes_on_cpu = spec("computes_on_cpu", ComputesOnTheCpu).test()
test_good_sampler = spec("good_sampler", RandomGain).test()
'''


def test_a_sampler_that_builds_its_parameters_on_the_cpu_is_caught_though_replay_hides_it(project):
    project.makepyfile(test_cases=CPU_SAMPLER)
    result = project.runpytest_inprocess(*QUICK, "--max-examples=5", "--targets=cpu,vcuda:1")
    assert failed_ids(result) == {
        "test_cases.py::test_cpu_sampler[vcuda:1-float32-gain-sampling]",
        "test_cases.py::test_computes_on_cpu[vcuda:1-float32-gain-sampling]",
    }
    out = result.stdout.str()
    assert "own sampling" in out and "Expected all tensors to be on the same device" in out
    assert "copy of data derived from the input image" in out


WRONG_TABLE = '''
import kornia.augmentation._2d.intensity.planckian_jitter as planckian

_published = planckian.get_planckian_coeffs

def _slightly_wrong(mode):
    """The planted library bug: every red coefficient 0.5% too high."""
    table = _published(mode).clone()
    table[:, 0] *= 1.005
    return table

planckian.get_planckian_coeffs = _slightly_wrong
'''


def test_a_wrong_number_in_the_librarys_own_table_fails_the_reference(pytester):
    result = _planted_against_control(
        pytester, "test_planckian.py", "float32-blackbody-reference", 10, {"passed": 1}, WRONG_TABLE
    )  # control: the real table is right
    result.assert_outcomes(failed=1)
    assert "reference: vs reference" in result.stdout.str()


TABLE_UPLOAD = '''
import torch
from planted_placement import *

def uploads_a_table(image, params):
    """Right values; an 8x8 constant is built on the host and copied to the device on every call."""
    table = torch.arange(64, dtype=image.dtype).reshape(8, 8)
    return image * (table.to(image.device).mean() / table.mean().item())

def round_trips(image, params):
    """Right values; the image itself goes to the host and back."""
    return image.cpu().mul(1.0).to(image.device)

test_uploads = make_gain_spec("uploads", call=uploads_a_table).test()
test_round_trips = make_gain_spec("round_trips", call=round_trips).test()
'''
ONE_PIXEL = '{"op": "%s", "recipe": {"height": 1, "width": 1, "channels": 3, "dtype": "float32"}, "params": {}}'


def test_a_constant_table_is_not_an_image_copy_but_a_separately_named_finding(project):
    project.makepyfile(
        test_cases="""
import dataclasses
from planted_placement import make_gain_spec

def _spec(name, call):
    return dataclasses.replace(make_gain_spec(name, call=call), reference=lambda image, case: image)
"""
        + TABLE_UPLOAD.replace("make_gain_spec(", "_spec(")
    )
    uploads = project.runpytest_inprocess(
        *QUICK, "--targets=vcuda:1", "-k", "uploads", "--replay", ONE_PIXEL % "uploads"
    )
    uploads.assert_outcomes(
        passed=len(["error", "placement", "invariants", "reference", "cross_device", "constant_upload"])
    )
    out = uploads.stdout.str()
    assert "constant_upload (upload) in 1 cases" in out and "constant [8, 8] float32 (256 bytes)" in out
    assert "warnings summary" not in out  # aggregated at the end of the run, never one pytest warning per item
    verdicts = {r["check"]: r["verdict"] for r in records(project)}
    assert verdicts["placement"] == "pass" and verdicts["constant_upload"] == "warning"
    gated = project.runpytest_inprocess(
        *QUICK,
        "--targets=vcuda:1",
        "-k",
        "uploads and constant_upload",
        "--fail-on-warning",
        "--replay",
        ONE_PIXEL % "uploads",
    )
    gated.assert_outcomes(failed=1)
    assert "fails the gate under --fail-on-warning" in gated.stdout.str()
    # the image itself going to the host is still an image copy, even of a 1x1 image
    trips = project.runpytest_inprocess(
        *QUICK, "--targets=vcuda:1", "-k", "round_trips and placement", "--replay", ONE_PIXEL % "round_trips"
    )
    trips.assert_outcomes(failed=1)
    assert "copy of data derived from the input image" in trips.stdout.str()


HANGING = """
import time
import torch
from planted_ops import *
from conformance.spec.opspec import ExpectedError

def rejects(image, params):
    if params["flag"] == "bad":
        time.sleep(30) if params["how"] == "hang" else None
        raise {"type": TypeError, "value": ValueError}.get(params["how"], ValueError)("bad flag")
    return good_resize(image, {"size": [2, 2]})

def spec(name, how, raises):
    base = make_spec(name, rejects, dtypes=("float32",))
    return dataclasses.replace(base, modes=("bad",), params=lambda recipe, mode: st.just({"flag": "bad", "how": how}),
                               error_modes={"bad": ExpectedError("a bad flag", raises=raises)})

import dataclasses
from hypothesis import strategies as st
test_hangs = spec("hangs", "hang", Exception).test()
test_wrong_class = spec("wrong_class", "type", ValueError).test()
test_right_class = spec("right_class", "value", ValueError).test()
"""


def test_a_hang_or_the_wrong_exception_does_not_satisfy_an_error_mode(project):
    project.makepyfile(test_cases=HANGING)
    result = project.runpytest_inprocess(*QUICK, "--max-examples=2", "--targets=cpu", "--case-timeout=0.3")
    assert failed_ids(result) == {
        "test_cases.py::test_hangs[cpu-float32-bad-error]",
        "test_cases.py::test_wrong_class[cpu-float32-bad-error]",
    }
    out = result.stdout.str()
    assert "ran longer than the per-case limit" in out and "a hang is not the expected Exception" in out
    assert "raised TypeError; expected ValueError" in out
