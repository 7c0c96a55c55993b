"""Known-issues files: parsed strictly, matched precisely."""
import pytest

from conformance.known_issues import KnownIssuesError, load

GOOD = '''
[[issue]]
id = "a"
op = "resize*"
targets = ["cuda:*"]
dtypes = ["uint8"]
modes = ["bicubic*"]
checks = ["cross_device"]
where = { channels = [3, 4], layout = "contiguous" }
match = "differ"
versions = { torch = ">=1.0" }
link = "https://example.org/1"
reason = "r"
'''


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


def test_version_ranges_gate_entries(tmp_path):
    (issue,) = load(write(tmp_path, GOOD.replace('">=1.0"', '"<1.0"')))
    assert not issue.applies_to("resize", "cuda:0", "uint8", "bicubic")
    (issue,) = load(write(tmp_path, GOOD.replace("torch =", "not-a-real-package =")))
    assert not issue.applies_to("resize", "cuda:0", "uint8", "bicubic")


@pytest.mark.parametrize("edit, message", [
    (("reason = \"r\"", ""), "'reason' is required"),
    (("https://example.org/1", "ftp://x"), "link must be an http"),
    (("match = \"differ\"", "match = \"(\""), "not a valid regular expression"),
    (("dtypes = [\"uint8\"]", "dtypes = \"uint8\""), "'dtypes' must be a non-empty list"),
    (("dtypes = [\"uint8\"]", "colour = 1"), "unknown field"),
    (("versions = { torch = \">=1.0\" }", "versions = { torch = \"most recent\" }"), "invalid version specifier"),
    (("id = \"a\"", "id = \"a\"\nstrict = \"yes\""), "'strict' must be true or false"),
    (("[[issue]]", "[[issues]]"), "unknown top-level key"),
    (("op = \"resize*\"", "op = \"resize*"), "not valid TOML"),
])
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

    issues = load(Path(__file__).parents[1] / "cases" / "known_issues.toml")
    assert issues and all(i.link and i.reason for i in issues)


def test_docs_links_point_at_existing_sections():
    import re
    from pathlib import Path

    root = Path(__file__).parents[1]
    for issue in load(root / "cases" / "known_issues.toml"):
        if issue.link.startswith("docs/"):
            path, _, anchor = issue.link.partition("#")
            headings = re.findall(r"^#+ (.+)$", (root / path).read_text(), flags=re.M)
            slugs = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in headings}
            assert anchor in slugs, f"{issue.id}: no section #{anchor} in {path}"
