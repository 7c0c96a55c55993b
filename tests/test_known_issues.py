"""Known-issues files: parsed strictly, matched precisely."""

from functools import partial

import pytest

from conformance.checks.registry import value_checks
from conformance.spec.issue_files import load as load_file
from conformance.spec.issue_paths import files_in_folder
from conformance.spec.known_issues import KnownIssuesError

load = partial(load_file, value_checks=value_checks())

GOOD = """
[[issue]]
id = "a"
op = "resize*"
targets = ["cuda:*"]
dtypes = ["uint8"]
modes = ["bicubic*"]
checks = ["cross_device"]
where = { channels = [3, 4], layout = "contiguous" }
match = "differ"
max_abs = 40
max_mismatch_fraction = 0.5
max_case_fraction = 0.25
versions = { torch = ">=1.0" }
link = "https://example.org/1"
reason = "r"
"""


def write(tmp_path, text):
    path = tmp_path / "known_issues.toml"
    path.write_text(text)
    return path


def test_a_complete_entry_matches_only_its_scope(tmp_path):
    (issue,) = load(write(tmp_path, GOOD))
    assert issue.strict
    assert issue.applies_to("resize_v1", "cuda:1", "uint8", "bicubic-antialias")
    assert not issue.applies_to("resize", "cpu", "uint8", "bicubic")
    assert not issue.applies_to("resize", "cuda:0", "float32", "bicubic")
    features = {"channels": 3, "layout": "contiguous"}
    assert issue.covers("cross_device", "3 elements differ", features)
    assert not issue.covers("reference", "3 elements differ", features)
    assert not issue.covers("cross_device", "crashed", features)
    assert not issue.covers("cross_device", "3 elements differ", {"channels": 1, "layout": "contiguous"})
    assert issue.applies_to("resize", "cuda:0", "uint8", "bicubic", "cross_device")
    assert not issue.applies_to("resize", "cuda:0", "uint8", "bicubic", "reference")


def _metrics(max_abs, mismatch_fraction):
    from conformance.spec.tolerances import Metrics

    return Metrics(max_abs, 0.0, mismatch_fraction, 0, 100, None, None, None, 0.0)


def test_a_failure_in_scope_but_outside_the_envelope_is_not_the_known_issue(tmp_path):
    from conformance.checks.registry import CheckOutcome
    from conformance.engine.judgement import judge

    (issue,) = load(write(tmp_path, GOOD))
    features = {"channels": 3, "layout": "contiguous"}

    def verdict(max_abs, mismatch):
        outcome = CheckOutcome("cross_device", False, "3 elements differ", metrics=_metrics(max_abs, mismatch))
        return judge(outcome, [issue], features)

    assert verdict(40, 0.5).verdict == "known_issue"
    far = verdict(41, 0.1)
    assert far.verdict == "fail" and "outside the envelope of known issue a: max abs diff 41 > 40" in far.outside
    wide = verdict(2, 0.9)
    assert wide.verdict == "fail" and "90.00% of elements beyond the tolerance > 50.00%" in wide.outside


def test_a_known_issue_reproducing_far_more_often_than_its_envelope_allows_is_a_regression(tmp_path):
    (issue,) = load(write(tmp_path, GOOD))
    assert issue.too_often(3, 10) is None  # 30% of 10 cases: chance explains it
    assert (
        issue.too_often(40, 100) is not None
        and "reproduced in 40 of 100 cases in its scope (40%)" in issue.too_often(40, 100)
        and issue.too_often(40, 100).startswith("outside the envelope of known issue a")
    )
    assert issue.too_often(25, 100) is None


def test_every_entry_needs_an_envelope(tmp_path):
    bare = GOOD.replace("max_abs = 40\nmax_mismatch_fraction = 0.5\nmax_case_fraction = 0.25\n", "")
    with pytest.raises(
        KnownIssuesError, match="needs an envelope: max_abs, max_mismatch_fraction or max_case_fraction"
    ):
        load(write(tmp_path, bare))
    errors_only = bare.replace('checks = ["cross_device"]', 'checks = ["error"]')
    assert load(write(tmp_path, errors_only))[0].match == "differ"  # about an error: the message is its envelope
    with pytest.raises(KnownIssuesError, match="needs an envelope: 'match'"):
        load(write(tmp_path, errors_only.replace('match = "differ"\n', "")))
    unmeasured = bare.replace('match = "differ"\n', 'match = "differ"\ncauses = ["cpu raised, both diverges"]\n')
    (issue,) = load(write(tmp_path, unmeasured))  # a value check's failure with no size: its message bounds it
    assert issue.names_cause("cpu raised, both diverges", measured=False)
    assert not issue.names_cause("values", measured=True)  # a measured difference stays outside it
    with pytest.raises(KnownIssuesError, match="needs an envelope: 'match'"):
        load(write(tmp_path, unmeasured.replace('match = "differ"\n', "")))
    with pytest.raises(KnownIssuesError, match="needs an envelope: max_abs"):
        load(write(tmp_path, unmeasured.replace('"cpu raised, both diverges"', '"values", "cpu raised*"')))


def test_version_ranges_gate_entries(tmp_path):
    (issue,) = load(write(tmp_path, GOOD.replace('">=1.0"', '"<1.0"')))
    assert not issue.applies_to("resize", "cuda:0", "uint8", "bicubic")
    (issue,) = load(write(tmp_path, GOOD.replace("torch =", "not-a-real-package =")))
    assert not issue.applies_to("resize", "cuda:0", "uint8", "bicubic")


@pytest.mark.parametrize(
    "edit, message",
    [
        (('reason = "r"', ""), "'reason' is required"),
        (("https://example.org/1", "ftp://x"), "link must be an http"),
        (('match = "differ"', 'match = "("'), "not a valid regular expression"),
        (('dtypes = ["uint8"]', 'dtypes = "uint8"'), "'dtypes' must be a non-empty list"),
        (('dtypes = ["uint8"]', "colour = 1"), "unknown field"),
        (('versions = { torch = ">=1.0" }', 'versions = { torch = "most recent" }'), "invalid version specifier"),
        (('id = "a"', 'id = "a"\nstrict = "yes"'), "'strict' must be true or false"),
        (("max_abs = 40", "max_abs = -1"), "'max_abs' must be a number >= 0"),
        (("max_case_fraction = 0.25", "max_case_fraction = 1.5"), "'max_case_fraction' must be a fraction from 0 to 1"),
        (("[[issue]]", "[[issues]]"), "unknown top-level key"),
        (('op = "resize*"', 'op = "resize*'), "not valid TOML"),
    ],
)
def test_malformed_files_are_clear_errors_naming_the_entry(tmp_path, edit, message):
    path = write(tmp_path, GOOD.replace(*edit))
    with pytest.raises(KnownIssuesError, match=message) as info:
        load(path)
    assert str(path) in str(info.value)


def test_duplicate_ids_are_refused(tmp_path):
    with pytest.raises(KnownIssuesError, match="duplicate id 'a'"):
        load(write(tmp_path, GOOD + GOOD))


def test_the_shipped_file_is_valid():
    from pathlib import Path

    files = files_in_folder(Path(__file__).parents[1] / "cases")
    issues = [issue for path in files for issue in load(path)]
    assert len(files) > 10 and issues and all(i.link and i.reason for i in issues)
    assert len({i.id for i in issues}) == len(issues)  # no id in two files


def test_docs_links_point_at_existing_sections():
    import re
    from pathlib import Path

    root = Path(__file__).parents[1]
    for issue in (i for path in files_in_folder(root / "cases") for i in load(path)):
        if issue.link.startswith("docs/"):
            path, _, anchor = issue.link.partition("#")
            headings = re.findall(r"^#+ (.+)$", (root / path).read_text(), flags=re.M)
            slugs = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in headings}
            assert anchor in slugs, f"{issue.id}: no section #{anchor} in {path}"


def test_a_failure_of_two_causes_is_known_only_when_an_entry_covers_each(tmp_path):
    """A known cause must not hide a new one in the same outcome (kornia 0.7.4's ImageSequential: an entry for
    a tensor left behind had also absorbed an image copied to the host)."""
    from conformance.checks.registry import failed
    from conformance.engine.judgement import judge

    entries = GOOD.replace('checks = ["cross_device"]', 'checks = ["placement"]').replace('match = "differ"', "")
    entries = entries.replace("max_abs = 40\nmax_mismatch_fraction = 0.5\n", "")
    left = entries.replace('id = "a"', 'id = "left"') + 'match = "left behind"\n'
    copy = entries.replace('id = "a"', 'id = "copy"') + 'match = "image left the device"\n'
    known_left, known_copy = load(write(tmp_path, left + copy))
    features = {"channels": 3, "layout": "contiguous"}
    two = failed("placement", [("left behind", "w left behind on cpu"), ("image copy", "the image left the device")])
    assert judge(two, [known_left], features).verdict == "fail"
    assert judge(two, [known_copy], features).verdict == "fail"
    assert judge(two, [known_left, known_copy], features).verdict == "known_issue"
    one = failed("placement", [("left behind", "w left behind on cpu"), ("left behind", "b left behind on cpu")])
    assert judge(one, [known_left], features).verdict == "known_issue"
