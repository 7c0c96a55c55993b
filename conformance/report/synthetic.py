"""A synthetic run folder: many outcome records, some failures with arrays.

Used by the report's tests and by benchmarks/report_scale.py; strings can be made hostile.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from conformance import environment
from conformance.results import Store, write_summary
from conformance.targets import CPU, virtual_targets


def write_run(run_dir: Path, *, outcomes: int = 200, failures: int = 3, side: int = 24, op: str = "resize",
              message: str = "vs reference: max abs diff 3", params: dict[str, Any] | None = None,
              complete: bool = True, target: str = "vcuda:1") -> Path:
    """`outcomes` pass records, then `failures` fail records with arrays, a known issue and a skip."""
    env = environment.collect([CPU, *virtual_targets(2)]) | {"hypothesis_profile": "ci"}
    store = Store(run_dir, "main", env)
    rng = np.random.default_rng(0)
    base = {"test": f"test_{op}", "op": op, "target": target, "virtual": target.startswith("v"), "dtype": "uint8",
            "worker": "main", "pid": 1}
    case = {"op": op, "recipe": {"height": side, "width": side, "channels": 3, "dtype": "uint8"},
            "params": params or {"size": [side, side]}}
    metrics = {"max_abs": 0.0, "mae": 0.0, "mismatch_fraction": 0.0, "psnr": None}
    tolerance = {"name": "uint8-rounding", "reason": "one rounding step", "atol": 1, "rtol": 0,
                 "max_mismatch_fraction": 0.0}
    for i in range(outcomes):
        mode = ("bilinear", "bicubic", "nearest")[i % 3]
        store.append(base | {"kind": "outcome", "nodeid": f"cases/test_{op}.py::test_{op}[{target}-uint8-{mode}]",
                             "mode": mode, "check": "reference", "verdict": "pass", "phase": "explore",
                             "example": i, "case": case, "metrics": metrics, "tolerance": tolerance})
    for i in range(failures):
        image = rng.integers(0, 256, (3, side, side)).astype(np.float64)
        output = image.copy()
        output[:, side // 2, side // 3] += 3
        artifact = store.save_arrays(f"fail-{i}", {"input": image, "reference": image, "output": output, "cpu": image})
        nodeid = f"cases/test_{op}.py::test_{op}[{target}-uint8-mode{i}]"
        store.append(base | {
            "kind": "outcome", "nodeid": nodeid, "mode": f"mode{i}", "check": "reference", "verdict": "fail",
            "phase": "final", "example": 0, "case": case, "message": message,
            "metrics": {"max_abs": 3.0, "mae": 0.01, "mismatch_fraction": 0.001, "psnr": 40.0,
                        "worst_index": [0, side // 2, side // 3]},
            "tolerance": tolerance, "repro": f"python -m pytest '{nodeid}' --replay '{{}}'", "artifact": artifact,
            "traceback": f"Traceback: {message}"})
    issue = {"id": "known-1", "link": "https://example.org/1", "reason": "a known divergence", "strict": True}
    store.append(base | {"kind": "outcome", "nodeid": f"cases/test_{op}.py::test_{op}[cpu-uint8-known]", "target": "cpu",
                         "virtual": False, "mode": "known", "check": "cross_device", "verdict": "known_issue",
                         "phase": "explore", "example": 0, "case": case, "message": "vs cpu: off by 40",
                         "metrics": {"max_abs": 40.0}, "tolerance": tolerance, "known_issue": issue})
    store.append(base | {"kind": "outcome", "nodeid": f"cases/test_{op}.py::test_{op}[vcuda:0-uint8-skip]",
                         "target": "vcuda:0", "mode": "skip", "check": "-", "verdict": "skipped", "phase": "item",
                         "message": "not emulatable on a virtual device: nvjpeg"})
    store.close()
    if complete:
        write_summary(run_dir, complete=True)
    return run_dir
