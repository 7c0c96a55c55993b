"""Hypothesis profiles: exploratory locally, deterministic in CI, deep at night.

`dev`       database on (failures are replayed first next time), 100 examples.
`ci`        derandomised: the same cases on every run and machine, no database,
            a fixed budget, no deadline (first CUDA calls are slow).
`thorough`  nightly: thousands of examples, database on.
`baseline`  `python -m conformance baseline`: derandomised, a small fixed case set, no shrinking
            (a baseline records outputs; the verdicts are the ordinary run's job).
Without --hypothesis-profile the plugin picks `ci` when $CI is set, else `dev`.  A profile applies
to conformance spec tests only (config.spec_settings); the plugin never loads one globally.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, Phase, settings

# Image ops are slow next to hypothesis' expectations; that is not a defect of the test.
_SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large]
# The explain phase reruns failures to list "lines only failing cases ran": harness
# lines, not the op's, so it costs time and tells the user nothing.
_PHASES = [p for p in Phase if p is not Phase.explain]
# Our own rerun line (--replay with the case JSON) replaces hypothesis' @reproduce_failure blob.
_COMMON = {"deadline": None, "print_blob": False, "suppress_health_check": _SUPPRESS, "phases": _PHASES}

PROFILES: dict[str, dict[str, Any]] = {
    "dev": dict(max_examples=100, **_COMMON),
    "ci": dict(max_examples=100, derandomize=True, database=None, **_COMMON),
    "thorough": dict(max_examples=2000, **_COMMON),
    "baseline": dict(
        _COMMON, max_examples=12, derandomize=True, database=None, phases=[Phase.explicit, Phase.generate]
    ),
}


def register() -> None:
    for name, values in PROFILES.items():
        settings.register_profile(name, **values)


def check_chosen(config) -> None:
    """--hypothesis-profile naming no registered profile is a usage error (hypothesis' own plugin
    would raise it from its configure hook, an INTERNALERROR)."""
    import pytest
    from hypothesis.errors import InvalidArgument

    chosen = config.getoption("hypothesis_profile", None)
    if not chosen:
        return
    try:
        settings.get_profile(chosen)
    except InvalidArgument:
        raise pytest.UsageError(
            f"--hypothesis-profile: no profile named {chosen!r} is registered (the plugin "
            f"registers {', '.join(PROFILES)}; a project registers its own in conftest.py)"
        ) from None


def default_profile() -> str:
    return "ci" if os.environ.get("CI") else "dev"
