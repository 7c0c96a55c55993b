"""Typos in the user's policy files are errors, not silent no-ops (issue 13, item 9)."""

from pathlib import Path

import pytest

PLANTED = Path(__file__).with_name("planted_ops.py").read_text()
QUICK = ["-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=10", "--targets=cpu"]
CASES = "from planted_ops import *\ntest_good = make_spec('good', good_resize, dtypes=('uint8',)).test()\n"


@pytest.fixture
def project(pytester):
    pytester.makepyfile(planted_ops=PLANTED, test_cases=CASES)
    return pytester


def test_a_tolerance_rule_whose_op_matches_nothing_is_a_usage_error(project):
    (project.path / "tol.toml").write_text('[[tolerance]]\nname = "mine"\nop = "rezise"\natol = 2\nreason = "typo"\n')
    result = project.runpytest_inprocess(*QUICK, "--tolerances=tol.toml")
    assert result.ret == 4
    assert "rule 'mine' (op 'rezise') matches none of the collected ops (good)" in result.stderr.str()


def test_a_misspelt_where_key_fails_the_item_it_applies_to(project):
    (project.path / "known_issues.toml").write_text(
        '[[issue]]\nid = "typo"\nop = "good"\nchecks = ["reference"]\nwhere = { out_widht = 1 }\n'
        'max_abs = 1\nlink = "docs/x.md"\nreason = "a typo in where"\nstrict = false\n'
    )
    result = project.runpytest_inprocess(*QUICK, "-k", "reference")
    assert result.ret == 1
    out = result.stdout.str()
    assert "where or scale_by key(s) 'out_widht' name no feature of this op's cases" in out
