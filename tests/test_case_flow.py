"""benchmarks/case_flow.py's counts on a made-up trace: stays, climbs through a callback, returns to a module left."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("case_flow", ROOT / "benchmarks" / "case_flow.py")
assert _spec is not None and _spec.loader is not None
case_flow = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(case_flow)


def test_layers_are_read_from_the_import_contract_top_first():
    ranked = case_flow.layers()
    assert case_flow.layer_of("conformance.engine.session", ranked) < case_flow.layer_of("conformance.checks.x", ranked)
    assert case_flow.layer_of("conformance.checks.values", ranked) < case_flow.layer_of("conformance.spec.a", ranked)
    assert case_flow.layer_of("conformance", ranked) == len(ranked)  # the package's own __init__: in none


def test_a_path_down_and_back_counts_its_climbs_and_returns():
    ranked = case_flow.layers()
    calls = [
        ("conformance.engine.session", None, False),
        ("conformance.engine.session", "conformance.engine.session", False),  # the same stay
        ("conformance.checks.values", "conformance.engine.session", False),
        ("conformance.spec.opspec", "conformance.checks.values", False),
        ("conformance.engine.ledger", "conformance.spec.opspec", False),  # a callback: spec calls up into the engine
        ("conformance.checks.values", "conformance.engine.session", False),  # back to a module left
        ("conformance.spec.opspec", "conformance.checks.values", True),  # a read of the spec's own: back, a read
    ]
    found = case_flow.flow(calls, ranked)
    assert found["calls"] == 7 and found["stays"] == 6 and found["modules"] == 4
    assert found["climbs"] == 1 and found["climbed"] == ["conformance.spec.opspec -> conformance.engine.ledger"]
    assert found["returns"] == 2
    assert found["returns_reads_aside"] == 1  # the read of the spec is not a step of the path
    assert found["path_reads_aside"] == found["path"][:-1]
