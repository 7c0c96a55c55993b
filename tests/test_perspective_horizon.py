"""kornia's half-precision perspective near the warp's horizon (docs/findings.md, "An infinite half-precision grid
position"): the NaN that torch's cpu grid_sample makes of kornia's infinite device-path position is a known issue on
virtual targets, for cases near the horizon only; the same NaN anywhere else still fails."""

from pathlib import Path

import pytest
from case_modules import case_module

from conformance.checks.registry import CheckOutcome, value_checks
from conformance.devices.virtual_target import virtual_targets
from conformance.engine.cases import CaseCache, check_case
from conformance.engine.judgement import judge
from conformance.spec.implementations import OMIT
from conformance.spec.issue_files import load
from conformance.spec.issue_paths import files_beside
from conformance.spec.recipes import Case, Recipe
from conformance.spec.tolerances import Metrics

ENTRY = "torch-cpu-grid-sample-nan-infinite-position-kornia-perspective-half"
perspective = case_module("test_perspective")
SPEC = next(s for s in perspective.PERSPECTIVE.specs() if s.name == "perspective_kornia")


def case(height, width, ends, dtype="bfloat16"):
    start = perspective.corners(height, width)
    params = {"startpoints": start, "endpoints": ends, "interpolation": "bilinear", "fill": 0.0, OMIT: ["fill"]}
    return Case("perspective_kornia", Recipe(height, width, channels=4, dtype=dtype), params)


MINIMAL = case(7, 4, [[1, -2], [3, 2], [4, 5], [-1, 9]])  # the dev draw's NaN, shrunk: one pixel, 4 channels
GENTLE = case(7, 4, [[1, 0], [4, 1], [3, 7], [0, 6]])


def entry():
    files = files_beside(Path(__file__).parents[1] / "cases" / "test_perspective.py")
    issues = [i for path in files for i in load(path, value_checks=value_checks())]
    return next(i for i in issues if i.id == ENTRY)


def test_near_horizon_marks_the_minimal_case_and_not_a_gentle_warp_or_the_identity():
    assert SPEC.case_features(MINIMAL)["near_horizon"] is True
    assert SPEC.case_features(GENTLE)["near_horizon"] is False
    assert SPEC.case_features(case(7, 4, perspective.corners(7, 4)))["near_horizon"] is False


def test_the_entry_is_about_virtual_targets_and_half_dtypes_only():
    issue = entry()
    assert issue.applies_to("perspective_kornia", "vcuda:1", "bfloat16", "bilinear", "invariants")
    assert issue.applies_to("perspective_kornia", "vcuda:0", "float16", "bilinear", "cross_device")
    for target, dtype in (("cuda:0", "bfloat16"), ("cpu", "bfloat16"), ("vcuda:1", "float32")):
        assert not issue.applies_to("perspective_kornia", target, dtype, "bilinear", "invariants")


NAN = CheckOutcome(
    "invariants", False, "non-finite output: 4 of 112 values (first nan at [0, 2, 3])", cause="non-finite"
)
INF = Metrics(float("inf"), float("inf"), 0.42, 47, 112, (0, 2, 3), float("nan"), 0.0, float("-inf"))
NAN_VS_REFERENCE = CheckOutcome(
    "reference",
    False,
    "vs reference: ...; max abs diff inf; worst at [0, 2, 3]: got nan, reference 0",
    INF,
    cause="values",
)


@pytest.mark.parametrize("outcome", [NAN, NAN_VS_REFERENCE], ids=["invariants", "reference"])
def test_a_nan_is_known_near_the_horizon_and_fails_elsewhere(outcome):
    assert judge(outcome, [entry()], {"near_horizon": True}).verdict == "known_issue"
    assert judge(outcome, [entry()], {"near_horizon": False}).verdict == "fail"


def test_a_finite_difference_is_not_this_entry():
    finite = Metrics(2.5, 0.1, 0.42, 47, 112, (0, 2, 3), 2.5, 0.0, 10.0)
    outcome = CheckOutcome(
        "reference", False, "vs reference: ...; worst at [0, 2, 3]: got 2.5, reference 0", finite, cause="values"
    )
    assert judge(outcome, [entry()], {"near_horizon": True}).verdict == "fail"


@pytest.mark.usefixtures("virtual_device")
def test_the_minimal_case_on_a_virtual_target_is_known_or_passes():
    """Every failing check of the real case is covered (a kornia that no longer cancels w to 0 passes)."""
    result = check_case(SPEC, MINIMAL, virtual_targets(2)[1], CaseCache(), "bilinear")
    failing = [o for o in result.outcomes if not o.passed and o.check in ("invariants", "reference", "cross_device")]
    features = SPEC.case_features(MINIMAL)
    assert all(judge(o, [entry()], features).verdict == "known_issue" for o in failing), failing
