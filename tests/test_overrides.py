"""Tolerance overrides (--tolerances): a user's policy applies first; a bad file is a usage error."""

from pathlib import Path

import pytest

from conformance.spec import overrides
from conformance.store.reader import read_outcomes

PLANTED = Path(__file__).with_name("planted_ops.py").read_text()
BRIGHTER_CORNER = """
from planted_ops import *

def brighter_corner(image, params):
    out = good_resize(image, params)
    out[..., 0, 0] = (out[..., 0, 0].int() + 2).clamp(max=255).to(out.dtype)
    return out

test_sprinkled = make_spec("sprinkled", brighter_corner, dtypes=("uint8",)).test()
"""
LOOSER = """
[[tolerance]]
name = "our-gpu-policy"
op = "sprinkled"
check = "reference"
dtype = "uint8"
atol = 3
reason = "our accelerator's fixed-point path: +2 on one pixel, plus one rounding step: measured max 3"
"""


def test_a_valid_file_gives_rules_tried_in_order(tmp_path):
    path = tmp_path / "tolerances.toml"
    path.write_text(LOOSER + '\n[[tolerance]]\nname = "all"\nop = "*"\nrtol = 1e-3\nreason = "anything"\n')
    rules = overrides.load(path)
    assert [rule.tolerance.name for _, rule in rules] == ["our-gpu-policy", "all"]
    assert overrides.pick(rules, "sprinkled", "reference", "uint8", "bilinear", "cpu").atol == 3
    assert overrides.pick(rules, "sprinkled", "cross_device", "uint8", "bilinear", "cpu").name == "all"
    assert overrides.pick([], "sprinkled", "reference", "uint8", "bilinear", "cpu") is None


@pytest.mark.parametrize(
    "text, message",
    [
        ("[[tolerance]]\nname = 'x'\nop = 'a'\n", "[[tolerance]] #1: field 'reason' is required"),
        (
            "[[tolerance]]\nname = 'x'\nop = 'a'\nreason = 'r'\natol = 'two'\n",
            "field 'atol' must be a number, got 'two'",
        ),
        ("[[tolerance]]\nname = 'x'\nop = 'a'\nreason = 'r'\natol = -1\n", "negative or out-of-range bound"),
        ("[[tolerance]]\nname = 'x'\nop = 'a'\nreason = 'r'\ntargets = ['cuda:0']\n", "unknown field(s) ['targets']"),
        ("[[tolerance]]\nname = 'x'\nop = 'a'\nreason = 'r'\nmax_mismatch_fraction = 2\n", "out-of-range"),
        ("[tolerance]\nname = 'x'\n", "must be an array of tables"),
        ("[[tolerances]]\n", "unknown top-level key(s) ['tolerances']"),
        ("[[tolerance]\n", "not valid TOML"),
    ],
)
def test_a_malformed_file_is_a_one_line_error_naming_the_entry(tmp_path, text, message):
    path = tmp_path / "tolerances.toml"
    path.write_text(text)
    with pytest.raises(overrides.OverridesError) as raised:
        overrides.load(path)
    assert message in str(raised.value) and str(path) in str(raised.value) and "\n" not in str(raised.value)


def test_an_override_decides_the_verdict_and_is_recorded_end_to_end(pytester):
    pytester.makepyfile(planted_ops=PLANTED, test_cases=BRIGHTER_CORNER)
    quick = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=10", "--targets=cpu"]
    pytester.runpytest_inprocess(*quick).assert_outcomes(failed=1, passed=3)  # +2 on one pixel breaks atol=1
    (pytester.path / "tolerances.toml").write_text(LOOSER)
    pytester.runpytest_inprocess(*quick, "--tolerances=tolerances.toml").assert_outcomes(passed=4)
    records, _ = read_outcomes(pytester.path / "reports" / "latest")
    used = {r["tolerance"]["name"] for r in records if r.get("check") == "reference" and r.get("kind") == "outcome"}
    assert used == {"our-gpu-policy"}
    broken = pytester.runpytest_inprocess(*quick, "--tolerances=missing.toml")
    assert broken.ret == pytest.ExitCode.USAGE_ERROR
    assert "--tolerances: missing.toml: cannot read" in broken.stderr.str() and "Traceback" not in broken.stderr.str()
