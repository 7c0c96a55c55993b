"""Readers of the plugin's options, each malformed value a one-line usage error.

Light on purpose (no torch): the plugin imports this module in every pytest session.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.spec.issue_paths import files_beside, files_in_folder

TARGETS_ENV = "CONFORMANCE_TARGETS"
VIRTUAL_ENV = "CONFORMANCE_VIRTUAL_DEVICES"


MAX_CASE_TIMEOUT_S = 1e6  # 11.6 days: the interval timer takes no more (inf or 1e300 overflowed it on every case)


def case_timeout(config: pytest.Config) -> float:
    """--case-timeout (or CONFORMANCE_CASE_TIMEOUT, default 60 s; 0: none)."""
    value = config.getoption("case_timeout")
    name = "--case-timeout"
    if value is None:
        name, text = "CONFORMANCE_CASE_TIMEOUT", os.environ.get("CONFORMANCE_CASE_TIMEOUT", "60")
        try:
            value = float(text)
        except ValueError:
            raise pytest.UsageError(f"CONFORMANCE_CASE_TIMEOUT: expected seconds, got {text!r}") from None
    if not 0 <= value <= MAX_CASE_TIMEOUT_S:  # NaN fails too
        raise pytest.UsageError(
            f"{name} must be 0 (no limit) or a number of seconds up to {MAX_CASE_TIMEOUT_S:g}, got {value}"
        )
    return float(value)


def virtual_count(config: pytest.Config) -> int | None:
    text = config.getoption("virtual_devices") or os.environ.get(VIRTUAL_ENV)
    if text is None or text == "":
        return None
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit()) or not 0 <= int(digits) <= 16:  # "²" is a digit to isdigit()
        raise pytest.UsageError(f"--virtual-devices: expected a whole number from 0 to 16, got {text!r}")
    return int(text)


def default_issue_files(config: pytest.Config) -> list[Path]:
    """Known-issue files the collected case modules will use, found up front so a broken one is a usage error
    before any test runs (a module's own; a folder's, itself and one level down)."""
    found: set[Path] = set()
    for arg in config.args:
        path = Path(arg.split("::")[0])
        if path.is_file():
            found.update(files_beside(path))
            continue
        for folder in [path, *(p for p in path.glob("*/") if p.is_dir())]:
            found.update(files_in_folder(folder))
    return sorted(found)


@dataclass(frozen=True)
class Option:
    """One command-line option of the plugin, as pytest's `addoption` takes it."""

    name: str
    attrs: dict[str, Any]

    @property
    def takes_value(self) -> bool:
        return self.attrs.get("action", "store") in ("store", "append")


def _option(name: str, **attrs: Any) -> Option:
    return Option(name, attrs)


RELATIONS_ENV = "CONFORMANCE_RELATIONS"  # --relations, where the option is not given

# The plugin's options, declared once: pytest_addoption adds them, and `python -m conformance run` reads which
# take a value (to join `--reports-dir DIR` into `--reports-dir=DIR` before pytest finds its rootdir).
OPTIONS: tuple[Option, ...] = (
    _option(
        "--conformance",
        action="store_true",
        default=False,
        help="set the conformance run up before collection (header, xdist grouping); automatic "
        "when conformance specs are collected or another conformance option is given",
    ),
    _option(
        "--targets",
        default=None,
        metavar="LIST",
        help=f"where ops run: comma list (cpu,cuda:1,cpu+compile), 'default' (all but compiled), 'all', 'gpu', "
        f"'compile'; env {TARGETS_ENV}",
    ),
    _option(
        "--virtual-devices",
        default=None,
        metavar="N",
        help="how many virtual vcuda:N targets exist (0 turns them off; default 2 when no real "
        f"CUDA device is visible); env {VIRTUAL_ENV}",
    ),
    _option(
        "--virtual-findings",
        choices=("fail", "warn"),
        default="fail",
        help="failures on virtual targets fail the gate (default) or are reported as warnings (xfail)",
    ),
    _option(
        "--fail-on-warning",
        action="store_true",
        default=False,
        help="lesser findings (constant_upload, a baseline change inside tolerance) fail their items "
        "instead of being reported as warnings",
    ),
    _option(
        "--group-by",
        choices=("auto", "target", "variant"),
        default="auto",
        help="how items are grouped for pytest-xdist (-n N; loadgroup is used unless --dist is given): "
        "'target' keeps each worker on one device, 'variant' runs an op/dtype/mode on every "
        "target in one worker so drawn cases, inputs and references are shared; auto: 'target' when "
        "two or more real accelerators are selected, else 'variant'",
    ),
    _option(
        "--case-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="per-call time limit for ops; a call past it is an error outcome and the run goes on "
        "(default 60; 0 = none; env CONFORMANCE_CASE_TIMEOUT)",
    ),
    _option(
        "--replay", default=None, metavar="CASE", help="run exactly one saved case: its JSON, or a path to a .json file"
    ),
    _option(
        "--cases-from",
        default=None,
        metavar="RUN",
        help="check exactly the cases an earlier run checked (its run folder), on this run's targets, "
        "instead of drawing new ones; items it has no cases for are skipped",
    ),
    _option(
        "--relations",
        default=None,
        metavar="NAMES",
        help="the relation checks every op gets (types, unbatched, ambient, flags, param_gradient, ranges, "
        f"transform_matrix): 'all' (the default), 'none', or a comma list; env {RELATIONS_ENV}",
    ),
    _option(
        "--baseline",
        default=None,
        metavar="DIR",
        help="compare with a baseline made on another build (python -m conformance baseline): check "
        "exactly its cases, add a 'baseline' check per target (a change beyond tolerance fails, a "
        "bit-level change is a warning) and record this run's outputs for `compare`",
    ),
    _option(
        "--record-outputs",
        default=None,
        metavar="DIR",
        help="record every checked output (digest and array) into DIR (what `baseline` does)",
    ),
    _option(
        "--reports-dir",
        default=None,
        metavar="DIR",
        help="where runs are stored (default: <rootdir>/reports; env CONFORMANCE_REPORTS)",
    ),
    _option("--run-name", default=None, metavar="NAME", help="name of this run's folder (default: a timestamp)"),
    _option(
        "--max-examples",
        type=int,
        default=None,
        metavar="N",
        help="override the hypothesis profile's max_examples for this session (quick smoke runs)",
    ),
    _option(
        "--tolerances",
        default=None,
        metavar="FILE",
        help="tolerance overrides (TOML [[tolerance]] tables, see conformance/spec/overrides.py), "
        "tried before each op's own rules",
    ),
    _option(
        "--sweep",
        default=None,
        metavar="MODULES",
        help="sweep every transform class of these modules with the reference-free checks (cases/test_sweep.py): "
        "comma-separated module names; 'default' (the default) is kornia.augmentation,torchvision.transforms.v2; "
        "'none' sweeps nothing",
    ),
    _option(
        "--shard",
        default=None,
        metavar="K/N",
        help="run part K of N (1-based) of the collected items, split by variant group the same way on every "
        "machine, for a CI matrix; `python -m conformance merge` joins the parts' run folders (docs/ci.md)",
    ),
    _option(
        "--known-issues",
        action="append",
        default=[],
        metavar="FILE",
        help="known-issues TOML file(s); default: the files beside each case module (known_issues/<family>.toml, "
        "known_issues.toml)",
    ),
)


def add_options(parser: pytest.Parser) -> None:
    """The plugin's command-line options (pytest_addoption)."""
    group = parser.getgroup("conformance", "cross-device conformance")
    for option in OPTIONS:
        group.addoption(option.name, **option.attrs)


def value_options() -> set[str]:
    """The options that take a value (the separate-argument form is joined by the CLI)."""
    return {option.name for option in OPTIONS if option.takes_value}


def relations(config: pytest.Config, known: tuple[str, ...]) -> frozenset[str]:
    """--relations (or CONFORMANCE_RELATIONS; default all): the relation checks this run makes items of."""
    text = config.getoption("relations")
    source = "--relations"
    if text is None:
        text, source = os.environ.get(RELATIONS_ENV) or "all", RELATIONS_ENV
    if text.strip() == "all":
        return frozenset(known)
    if text.strip() == "none":
        return frozenset()
    asked = [name.strip() for name in text.split(",")]
    unknown = [name for name in asked if name not in known]
    if unknown or not all(asked):
        raise pytest.UsageError(
            f"{source}: unknown relation {', '.join(map(repr, unknown)) or repr(text)}: give 'all', 'none' or "
            f"names from {', '.join(known)}"
        )
    return frozenset(asked)
