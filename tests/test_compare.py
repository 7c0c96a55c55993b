"""Metrics are taken in float64 and tolerance policies say exactly why they fail."""

import math
import warnings

import numpy as np
import pytest

from conformance.checks.peers import difference
from conformance.spec.tolerances import Rule, Tolerance, measure, pick_tolerance

STRICT = Tolerance("strict", reason="test policy")


def test_uint8_difference_never_wraps():
    actual = np.array([0, 255, 10], dtype=np.uint8)
    expected = np.array([1, 254, 10], dtype=np.uint8)
    assert int((actual - expected).max()) == 255  # what a naive uint8 diff reports
    metrics = measure(actual, expected, STRICT, 255.0)
    assert metrics.max_abs == 1.0
    assert metrics.mismatches == 2


def test_metrics_locate_the_worst_pixel():
    expected = np.zeros((2, 3, 4))
    actual = expected.copy()
    actual[1, 2, 3] = 0.5
    actual[0, 0, 0] = 0.1
    metrics = measure(actual, expected, Tolerance("t", reason="r", atol=0.2), 1.0)
    assert metrics.worst_index == (1, 2, 3)
    assert (metrics.worst_actual, metrics.worst_expected) == (0.5, 0.0)
    assert metrics.mismatches == 1 and metrics.mismatch_fraction == pytest.approx(1 / 24)
    assert metrics.mae == pytest.approx(0.6 / 24)
    assert metrics.psnr == pytest.approx(10 * math.log10(1 / ((0.25 + 0.01) / 24)))


def test_nan_matches_only_nan():
    both = measure(np.array([np.nan, 1.0]), np.array([np.nan, 1.0]), STRICT, 1.0)
    assert both.mismatches == 0 and both.psnr == math.inf
    one = measure(np.array([np.nan, 1.0]), np.array([0.0, 1.0]), STRICT, 1.0)
    assert one.mismatches == 1 and one.max_abs == math.inf


def test_equal_infinities_match_and_opposite_ones_do_not():
    """inf - inf is NaN in float64: an output that is inf where the expected is inf is no difference (it was once
    counted as infinitely far), while -inf against inf, or inf against a number, still is."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from the subtraction reaches a run's summary
        same = measure(np.array([np.inf, -np.inf, 1.0]), np.array([np.inf, -np.inf, 1.0]), STRICT, 1.0)
        assert same.mismatches == 0 and same.max_abs == 0.0
        opposite = measure(np.array([np.inf, 1.0]), np.array([-np.inf, 1.0]), STRICT, 1.0)
        assert opposite.mismatches == 1 and opposite.max_abs == math.inf
        finite = measure(np.array([np.inf, 1.0]), np.array([2.0, 1.0]), STRICT, 1.0)
        assert finite.mismatches == 1 and finite.worst_index == (0,)
        assert difference(np.array([np.inf, 2.0]), np.array([np.inf, 1.0])) == (1.0, 0.5)
        assert difference(np.array([np.inf]), np.array([-np.inf]))[0] == math.inf


def test_violations_name_each_broken_bound():
    tol = Tolerance("t", reason="r", atol=1, max_mismatch_fraction=0.1, max_mae=0.01, min_psnr=60)
    metrics = measure(np.array([0.0, 0.0, 0.0, 5.0]), np.zeros(4), tol, 255.0)
    text = " | ".join(tol.violations(metrics))
    assert "1 of 4 elements (25.00%)" in text and "atol=1" in text
    assert "MAE 1.25 > 0.01" in text and "PSNR" in text


def test_rtol_scales_with_expected():
    tol = Tolerance("t", reason="r", rtol=0.01)
    assert not tol.violations(measure(np.array([100.5]), np.array([100.0]), tol, 1.0))
    assert tol.violations(measure(np.array([1.5]), np.array([1.0]), tol, 1.0))


def test_tolerance_requires_a_reason_and_sane_bounds():
    with pytest.raises(ValueError, match="reason"):
        Tolerance("t", reason=" ")
    with pytest.raises(ValueError, match="out-of-range"):
        Tolerance("t", reason="r", max_mismatch_fraction=2)


def test_first_matching_rule_wins():
    exact, loose = Tolerance("exact", reason="r"), Tolerance("loose", reason="r", atol=1)
    rules = [Rule(exact, mode="nearest*"), Rule(loose, dtype="uint8")]
    assert pick_tolerance(rules, check="reference", dtype="uint8", mode="nearest-exact", target="cpu") is exact
    assert pick_tolerance(rules, check="reference", dtype="uint8", mode="bilinear", target="cpu") is loose
    with pytest.raises(LookupError, match="float32"):
        pick_tolerance(rules, check="reference", dtype="float32", mode="bilinear", target="cpu")
