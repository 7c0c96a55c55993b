"""A spec's defaults (one mode, no params, a tolerance per dtype marked uncalibrated) and its tolerance coverage,
checked when it is declared: a dtype its rules leave out is an error naming the op and the dtype."""

import numpy as np
import pytest
import torch
from hypothesis import find

from conformance import ExpectedError, OpSpec, Rule, Tolerance
from conformance.report import dashboard, markdown, table
from conformance.spec.recipes import DTYPES
from conformance.spec.tolerances import UNCALIBRATED, is_uncalibrated
from conformance.store.summary_model import Summary

EXACT = Tolerance("exact", reason="a flip copies pixels")


def flip_spec(**fields) -> OpSpec:
    fields = {"name": "flip", "dtypes": ("uint8", "float32")} | fields
    return OpSpec(call=lambda image, p: torch.flip(image, dims=[-1]), reference=lambda x, c: np.flip(x, -1), **fields)


def test_defaults_one_mode_no_params_and_an_uncalibrated_tolerance_per_dtype():
    spec = flip_spec()
    assert spec.modes == ("default",) and spec.variant_pairs() == [("uint8", "default"), ("float32", "default")]
    assert find(spec.cases("uint8", "default"), lambda case: True).params == {}
    for dtype in ("uint8", "float32"):
        for check in ("reference", "cross_device", "batch"):
            chosen = spec.tolerance(check, dtype, "default", "vcuda:1")
            assert chosen.name == f"uncalibrated-{dtype}" and is_uncalibrated(chosen.name)
            assert "not measured for this op" in chosen.reason
    assert spec.tolerance("reference", "uint8", "default", "cpu").atol == 1  # one rounding step
    assert flip_spec(tolerances=[]).tolerances == UNCALIBRATED  # an empty list: no rules, the defaults


def test_every_dtype_a_recipe_draws_has_a_default():
    assert {rule.dtype for rule in UNCALIBRATED} == set(DTYPES)
    assert all(rule.check == "*" and rule.mode == "*" and rule.target == "*" for rule in UNCALIBRATED)


def test_rules_that_leave_out_a_dtype_fail_when_the_spec_is_declared_naming_it():
    with pytest.raises(ValueError, match=r"op 'flip': no tolerance rule covers dtype 'float32' \(check 'reference'"):
        flip_spec(tolerances=[Rule(EXACT, dtype="uint8")])
    # a rule for one check only leaves the other uncovered
    with pytest.raises(ValueError, match=r"dtype 'uint8' \(check 'cross_device'"):
        flip_spec(dtypes=("uint8",), tolerances=[Rule(EXACT, check="reference")])
    # rules scoped to some targets do not cover the others
    with pytest.raises(ValueError, match=r"dtype 'uint8'.*every target"):
        flip_spec(dtypes=("uint8",), tolerances=[Rule(EXACT, target="cuda*")])


def test_rules_may_end_with_the_defaults_and_error_modes_need_none():
    spec = flip_spec(tolerances=[Rule(EXACT, dtype="uint8"), *UNCALIBRATED])
    assert spec.tolerance("reference", "uint8", "default", "cpu") is EXACT
    assert spec.tolerance("reference", "float32", "default", "cpu").name == "uncalibrated-float32"
    invalid = {"bad": ExpectedError("an invalid input", ValueError)}
    spec = flip_spec(dtypes=("uint8",), modes=("default", "bad"), error_modes=invalid, tolerances=[Rule(EXACT)])
    assert spec.tolerance_checks("uint8", "bad") == ()
    assert spec.tolerance_checks("uint8", "default") == ("reference", "cross_device")


def _group(op: str, dtype: str, tolerance: str) -> dict:
    worst = {"max_abs": 0.0, "atol": 1, "tolerance": tolerance, "mismatch_fraction": 0.0}
    return {"op": op, "target": "cpu", "virtual": False, "dtype": dtype, "mode": "default", "check": "reference"} | {
        "verdict": "pass",
        "examples": 3,
        "counts": {"pass": 3},
        "known_issues": [],
        "worst": worst,
        "family": "f",
    }


def test_the_report_marks_outcomes_judged_by_a_default():
    summary = Summary.from_json(
        {
            "groups": [_group("flip", "uint8", "uncalibrated-uint8"), _group("blur", "uint8", "uint8-rounding")],
            "totals": {"pass": 6},
        }
    )
    assert dashboard.uncalibrated(summary) == [{"op": "flip", "dtypes": ["uint8"]}]
    model = dashboard.matrix(summary, [])
    worst = {row["op"]: row["cells"]["0"]["checks"][0]["cells"][3] for row in model["rows"]}  # worst |diff| / atol
    assert worst["flip"].endswith("(uncalibrated)") and "uncalibrated" not in worst["blur"]
    data = dashboard.page_data(summary, model, {}, None, [])
    text = markdown.summary_markdown("run", data, summary)
    assert "### Uncalibrated tolerances" in text and "- flip: uint8" in text and "blur" not in text.split("###")[-1]
    assert any("reference: 0 / 1 (uncalibrated)" in line for line in table.format_table(summary, full=True))
    assert any(line.startswith("uncalibrated tolerances") for line in table.format_section(summary))
