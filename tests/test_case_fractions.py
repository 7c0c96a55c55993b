"""benchmarks/case_fractions.py --headroom: which `max_case_fraction` keeps room over what seed runs drew (the
judgement docs/calibration/case_fractions.md and the removal of eight fractions rest on)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENTRY = """
[[issue]]
id = "{id}"
op = "resize"
dtypes = ["uint8"]
checks = ["reference"]
max_abs = 3
max_case_fraction = 0.25
link = "docs/findings.md"
reason = "r"
"""


@pytest.fixture
def fractions():
    spec = importlib.util.spec_from_file_location("case_fractions", ROOT / "benchmarks" / "case_fractions.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def group(issue: str, in_scope: int, explained: int, target: str = "cpu") -> dict:
    return {
        "op": "resize",
        "target": target,
        "dtype": "uint8",
        "mode": "bicubic",
        "issue_scope": {issue: [in_scope, explained]},
    }


def verdicts(fractions, monkeypatch, tmp_path, runs: dict[str, list[dict]], capsys) -> dict[str, str]:
    """The verdict column of --headroom, per entry, over fake run folders holding `runs`' groups."""
    issues = tmp_path / "known_issues.toml"
    issues.write_text("".join(ENTRY.format(id=name) for name in ("roomy", "crowded", "unseen")), encoding="utf-8")
    monkeypatch.setattr(fractions, "read_summary", lambda run: {"groups": runs[run.name]})
    fractions.headroom(issues, [tmp_path / name for name in runs])
    rows = [line.split("|") for line in capsys.readouterr().out.splitlines()[2:]]
    return {row[1].strip().strip("`"): row[-2].strip() for row in rows}


def test_an_entry_keeps_its_fraction_only_where_every_cell_has_room(fractions, monkeypatch, tmp_path, capsys):
    runs = {
        # roomy: 5% of 100 cases in each run, far below 0.25.  crowded: no run near the gate's test (p = 0.15
        # and 0.051), but its cells' 99.9% upper bounds (0.65, 0.67) pass 0.25
        "seed-1": [group("roomy", 100, 5), group("crowded", 25, 9)],
        "seed-2": [group("roomy", 100, 4), group("crowded", 30, 12, target="cpu:default")],
    }
    found = verdicts(fractions, monkeypatch, tmp_path, runs, capsys)
    assert found == {"roomy": "room", "crowded": "**no room**", "unseen": "not measured here"}


def test_one_run_near_the_gates_test_costs_the_room_even_when_the_pool_is_low(fractions, monkeypatch, tmp_path, capsys):
    low = [group("roomy", 200, 10), group("crowded", 200, 10)]
    runs = {f"seed-{n}": list(low) for n in range(1, 5)}
    # 7 of 12 against 0.25: p = 0.014, though the pooled cell (47 of 812) has its upper bound at 0.09
    runs["seed-5"] = [group("roomy", 200, 10), group("crowded", 12, 7)]
    found = verdicts(fractions, monkeypatch, tmp_path, runs, capsys)
    assert found["roomy"] == "room" and found["crowded"] == "**no room**"


def test_wilson_bounds_bracket_the_share(fractions):
    for explained, cases in [(0, 10), (3, 10), (10, 10), (50, 1000)]:
        share = explained / cases
        assert fractions.wilson(explained, cases) <= share <= fractions.wilson(explained, cases, upper=True)
    assert fractions.wilson(0, 0) == 0.0 and fractions.wilson(0, 0, upper=True) == 1.0
    assert fractions.wilson(5, 100, z=3.09, upper=True) > fractions.wilson(5, 100, upper=True)  # 99.9% is wider
