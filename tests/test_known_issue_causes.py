"""A known-issue entry explains only the causes it names: a size bound says nothing of a raise, a changed shape or
dtype (they have no size, so the bound would hold for them vacuously), and a bound that grows with the content's
range says so (`scale_by`)."""

from functools import partial

from case_modules import control_then_plant

from conformance.checks.registry import CheckOutcome, failed, value_checks
from conformance.engine.judgement import judge
from conformance.spec.issue_files import load as load_file
from conformance.spec.tolerances import Metrics

load = partial(load_file, value_checks=value_checks())

VALUES_ENTRY = """
[[issue]]
id = "hue-rounding"
op = "adjust_hue*"
checks = ["pil", "invariants"]
max_abs = 24
link = "https://example.org/1"
reason = "8-bit rounding"
"""


def entry(tmp_path, text=VALUES_ENTRY, **extra):
    lines = "".join(f"{name} = {value}\n" for name, value in extra.items())
    path = tmp_path / "known_issues.toml"
    path.write_text(text + lines)
    (issue,) = load(path)
    return issue


def measured(check, max_abs):
    metrics = Metrics(float(max_abs), 0.0, 0.1, 1, 10, None, None, None, 0.0)
    return CheckOutcome(check, False, "vs reference: 3 elements differ", metrics=metrics, cause="values")


def test_a_size_bound_explains_a_measured_difference_and_not_a_raise(tmp_path):
    issue = entry(tmp_path)
    assert judge(measured("pil", 3), [issue], {}).verdict == "known_issue"
    raised = CheckOutcome("pil", False, "a PIL image raises OverflowError: out of bounds", cause="raises")
    judged = judge(raised, [issue], {})
    assert judged.verdict == "fail"
    assert "known issue hue-rounding: it covers values, not cause 'raises'" in judged.outside
    shape = CheckOutcome("pil", False, "shape (3, 4, 4) cannot be compared with reference (3, 5, 4)", cause="shape")
    assert judge(shape, [issue], {}).verdict == "fail"


def test_an_entry_that_names_a_cause_explains_it(tmp_path):
    issue = entry(tmp_path, causes='["values", "raises"]')
    raised = CheckOutcome("pil", False, "a PIL image raises OverflowError", cause="raises")
    assert judge(raised, [issue], {}).verdict == "known_issue"
    shape = CheckOutcome("pil", False, "shape differs", cause="shape")
    assert judge(shape, [issue], {}).verdict == "fail"  # a cause it does not name


def test_each_part_of_a_combined_failure_needs_its_cause_named(tmp_path):
    issue = entry(tmp_path, causes='["dtype"]')
    both = failed("invariants", [("dtype", "dtype: returned float32, expected uint8"), ("shape", "shape: (2,)")])
    judged = judge(both, [issue], {})
    assert judged.verdict == "fail" and "not cause 'shape'" in judged.outside
    wider = entry(tmp_path, causes='["dtype", "shape"]')
    assert judge(both, [wider], {}).verdict == "known_issue"


def test_an_entry_without_a_size_bound_explains_what_its_match_selects(tmp_path):
    text = VALUES_ENTRY.replace("max_abs = 24\n", 'match = "OverflowError"\nmax_case_fraction = 1.0\n')
    issue = entry(tmp_path, text)
    raised = CheckOutcome("pil", False, "a PIL image raises OverflowError", cause="raises")
    assert judge(raised, [issue], {}).verdict == "known_issue"


def test_a_bound_scaled_by_the_contents_range(tmp_path):
    issue = entry(tmp_path, scale_by='["value_span"]')
    far = measured("pil", 40)
    assert judge(far, [issue], {"value_span": 2.0}).verdict == "known_issue"  # 40 <= 24 x 2
    judged = judge(far, [issue], {"value_span": 1.0})
    assert judged.verdict == "fail" and "max abs diff 40 > 24 × value_span = 24" in judged.outside
    assert "not a finite number" in judge(far, [issue], {}).outside


PLANT_RAISE = """
import torchvision.transforms._functional_pil as FP
import types

FP._planted_original = types.FunctionType(FP.adjust_hue.__code__, FP.__dict__, "adjust_hue_original")


def planted(img, hue_factor):
    # torchvision 0.18's PIL hue path under NumPy 2 (vision#8536): np.uint8 of a negative shift
    if hue_factor < 0 and img.mode == "RGB":
        raise OverflowError(f"Python integer {int(hue_factor * 255)} out of bounds for uint8")
    return _planted_original(img, hue_factor)


FP.adjust_hue.__code__ = planted.__code__
"""


def test_a_raise_inside_a_values_entrys_scope_fails_the_item(pytester):
    """The stock pil items of adjust_hue are known issues (8-bit HSV rounding, a size bound); a PIL path that raises
    for negative hue factors was counted inside that entry before causes were judged, and fails now."""
    failed_items = control_then_plant(
        pytester,
        "a PIL hue path raising OverflowError for negative factors",
        PLANT_RAISE,
        "test_color.py",
        "adjust_hue_tv2 and uint8 and pil",
        "not cause 'raises'",
        examples=40,
    )
    assert any("adjust_hue_tv2[cpu-uint8-" in line and "pil]" in line for line in failed_items), failed_items


def test_a_judgement_says_how_much_of_the_envelope_a_failure_used(tmp_path):
    """What a calibration across seeds reads: the entry a measured failure was held to and the ratio of its metric to
    the bound (the examples table's `envelope`, `envelope_used`), inside the envelope and outside it."""
    issue = entry(tmp_path, scale_by='["value_span"]')
    inside = judge(measured("pil", 12), [issue], {"value_span": 1.0})
    assert inside.verdict == "known_issue" and inside.envelope is not None
    assert (inside.envelope.issue, inside.envelope.used) == ("hue-rounding", 0.5)
    outside = judge(measured("pil", 36), [issue], {"value_span": 1.0})
    assert outside.verdict == "fail" and outside.envelope is not None and outside.envelope.used == 1.5
    raised = CheckOutcome("pil", False, "a PIL image raises OverflowError", cause="raises")
    assert judge(raised, [issue], {"value_span": 1.0}).envelope is None  # nothing measured
