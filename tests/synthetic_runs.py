"""A synthetic run folder: many checked examples, some failures with arrays, written through the same
record writer a run uses.

Used by the report's tests and by benchmarks/report_scale.py; strings can be made hostile.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from conformance.checks.registry import CheckOutcome
from conformance.devices import environment
from conformance.devices.targets import CPU
from conformance.devices.virtual_target import virtual_targets
from conformance.spec.tolerances import Metrics, Tolerance
from conformance.store.aggregate import write_summary
from conformance.store.records import RecordWriter


def _writer(run_dir: Path) -> RecordWriter:
    env = environment.collect([CPU, *virtual_targets(2)]) | {"hypothesis_profile": "ci"}
    return RecordWriter(run_dir, "main", lambda: env)


def _base(op: str, target: str, mode: str) -> dict[str, Any]:
    return {
        "test": f"test_{op}",
        "op": op,
        "target": target,
        "virtual": target.startswith("v"),
        "dtype": "uint8",
        "mode": mode,
        "worker": "main",
        "pid": 1,
    }


def _metrics(max_abs: float, worst: tuple[int, ...] | None = None) -> Metrics:
    return Metrics(
        max_abs, max_abs / 100, 0.001 if max_abs > 1 else 0.0, 1 if max_abs > 1 else 0, 1000, worst, None, None, 40.0
    )


def write_run(
    run_dir: Path,
    *,
    outcomes: int = 200,
    failures: int = 3,
    side: int = 24,
    op: str = "resize",
    message: str = "vs reference: max abs diff 3",
    params: dict[str, Any] | None = None,
    complete: bool = True,
    target: str = "vcuda:1",
) -> Path:
    """`outcomes` passing examples, then `failures` failing ones with arrays, a known issue and a skip."""
    writer = _writer(run_dir)
    rng = np.random.default_rng(0)
    case = json.dumps(
        {
            "op": op,
            "recipe": {"height": side, "width": side, "channels": 3, "dtype": "uint8"},
            "params": params or {"size": [side, side]},
        }
    )
    tolerance = Tolerance("uint8-rounding", "one rounding step", atol=1)
    passed = CheckOutcome("reference", True, metrics=_metrics(0.0), tolerance=tolerance, against="reference")
    for index, mode in enumerate(("bilinear", "bicubic", "nearest")):
        nodeid = f"cases/test_{op}.py::test_{op}[{target}-uint8-{mode}-reference]"
        base = _base(op, target, mode)
        writer.item_started(base, nodeid, "reference", [])
        for i in range(index, outcomes, 3):
            writer.example("explore", i, case, "pass", passed, "", None, None, None)
        writer.item_ended(base, nodeid, "reference")
    for i in range(failures):
        image = rng.integers(0, 256, (3, side, side)).astype(np.float64)
        output = image.copy()
        output[:, side // 2, side // 3] += 3
        artifact = writer.store.save_arrays(
            f"fail-{i}", {"input": image, "reference": image, "output": output, "cpu": image}
        )
        nodeid = f"cases/test_{op}.py::test_{op}[{target}-uint8-mode{i}-reference]"
        base = _base(op, target, f"mode{i}")
        writer.item_started(base, nodeid, "reference", [])
        failed = CheckOutcome(
            "reference",
            False,
            message,
            metrics=_metrics(3.0, (0, side // 2, side // 3)),
            tolerance=tolerance,
            traceback=f"Traceback: {message}",
            cause="values",
            against="reference",
        )
        writer.example(
            "final",
            0,
            case,
            "fail",
            failed,
            message,
            None,
            f"python -m conformance run '{nodeid}' --replay '{{}}'",
            artifact,
        )
        writer.item_ended(base, nodeid, "reference")
    issue = {"id": "known-1", "link": "https://example.org/1", "reason": "a known divergence", "strict": True}
    nodeid = f"cases/test_{op}.py::test_{op}[cpu-uint8-known-cross_device]"
    base = _base(op, "cpu", "known")
    writer.known_issues(["known-1"], [issue])
    writer.item_started(base, nodeid, "cross_device", ["known-1"])
    known = CheckOutcome(
        "cross_device",
        False,
        "vs cpu: off by 40",
        metrics=_metrics(40.0),
        tolerance=tolerance,
        cause="values",
        against="cpu",
    )
    writer.example("explore", 0, case, "known_issue", known, "vs cpu: off by 40", "known-1", None, None)
    writer.item_ended(base, nodeid, "cross_device")
    writer.item_verdict(
        _base(op, "vcuda:0", "skip"),
        f"cases/test_{op}.py::test_{op}[vcuda:0-uint8-skip-error]",
        "error",
        "skipped",
        "not emulatable on a virtual device: nvjpeg",
    )
    writer.close()
    if complete:
        write_summary(run_dir, complete=True)
    return run_dir


def write_operation_run(run_dir: Path, *, operation: str = "blur", library: str = "Pillow", side: int = 20) -> Path:
    """A run of one operation's two implementations (torchvision v2 on cpu and vcuda:0, `library` on the cpu):
    reference outcomes with the cross-library measurement, and the second one's worst cases with arrays."""
    writer = _writer(run_dir)
    first, second = f"{operation}_tv2", f"{operation}_other"
    writer.operation(
        {
            "name": operation,
            "description": f"{operation} <b>described</b>",
            "optional": ["sigma"],
            "implementations": [
                {
                    "op": first,
                    "library": "torchvision v2",
                    "dtypes": ["uint8"],
                    "modes": ["default"],
                    "host_only": "",
                    "defaults": {"sigma": 1.0},
                },
                {
                    "op": second,
                    "library": library,
                    "dtypes": ["uint8"],
                    "modes": ["default"],
                    "host_only": "a host library",
                    "defaults": {},
                },
            ],
        }
    )
    tolerance = Tolerance("uint8-rounding", "one rounding step", atol=1)
    rng = np.random.default_rng(1)
    for op, target, peers in (
        (first, "cpu", None),
        (first, "vcuda:0", None),
        (
            second,
            "cpu",
            {
                first: {
                    "library": "torchvision v2",
                    "target": "cpu",
                    "max_abs": 3.0,
                    "psnr": 35.0,
                    "mismatch_fraction": 0.01,
                }
            },
        ),
    ):
        base = _base(op, target, "default")
        nodeid = f"cases/test_{operation}.py::test_{op}[{target}-uint8-default-reference]"
        writer.item_started(base, nodeid, "reference", [])
        for example in range(5):
            verdict = "fail" if op == second and example == 4 else "pass"
            details = (
                {"peers": peers | ({} if example else {"skipped_peer": {"library": "OpenCV", "skipped": "why"}})}
                if peers
                else None
            )
            outcome = CheckOutcome(
                "reference",
                verdict == "pass",
                "",
                metrics=_metrics(3.0 if verdict == "fail" else 1.0),
                tolerance=tolerance,
                details=details,
                cause="values",
                against="reference",
            )
            writer.example(
                "explore", example, json.dumps({"op": op, "params": {}}), verdict, outcome, "", None, None, None
            )
        if op == second:
            image = rng.integers(0, 256, (3, side, side)).astype(np.float64)
            output = image.copy()
            output[:, 3, 4] += 3
            for against in ("reference", first):
                arrays = {"input": image, "reference": image, "output": output} | (
                    {"peer": image} if against == first else {}
                )
                artifact = writer.store.save_arrays(f"worst-{against}", arrays)
                writer.worst(
                    base,
                    nodeid,
                    "reference",
                    against,
                    3.0,
                    json.dumps({"op": op, "params": {}}),
                    artifact,
                    {"peer_library": "torchvision v2", "peer_target": "cpu"},
                )
        writer.item_ended(base, nodeid, "reference")
    writer.close()
    write_summary(run_dir, complete=True)
    return run_dir
