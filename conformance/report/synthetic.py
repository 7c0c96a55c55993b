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


def write_operation_run(run_dir: Path, *, operation: str = "blur", library: str = "Pillow", side: int = 20) -> Path:
    """A run of one operation's two implementations (torchvision v2 on cpu and vcuda:0, `library` on the cpu):
    reference outcomes with the cross-library measurement, and the second one's worst cases with arrays."""
    env = environment.collect([CPU, *virtual_targets(2)]) | {"hypothesis_profile": "ci"}
    store = Store(run_dir, "main", env)
    first, second = f"{operation}_tv2", f"{operation}_other"
    store.append({"kind": "operation", "worker": "main", "operation": {
        "name": operation, "description": f"{operation} <b>described</b>", "optional": ["sigma"],
        "implementations": [
            {"op": first, "library": "torchvision v2", "dtypes": ["uint8"], "modes": ["default"], "host_only": "",
             "defaults": {"sigma": 1.0}},
            {"op": second, "library": library, "dtypes": ["uint8"], "modes": ["default"], "host_only": "a host library",
             "defaults": {}}]}})
    tolerance = {"name": "uint8-rounding", "atol": 1, "rtol": 0, "max_mismatch_fraction": 0.0}
    rng = np.random.default_rng(1)
    for op, target, peers in ((first, "cpu", None), (first, "vcuda:0", None),
                              (second, "cpu", {first: {"library": "torchvision v2", "target": "cpu", "max_abs": 3.0,
                                                       "psnr": 35.0, "mismatch_fraction": 0.01}})):
        base = {"test": f"test_{op}", "op": op, "target": target, "virtual": target.startswith("v"), "dtype": "uint8",
                "mode": "default", "worker": "main", "pid": 1}
        nodeid = f"cases/test_{operation}.py::test_{op}[{target}-uint8-default-reference]"
        for example in range(5):
            verdict = "fail" if op == second and example == 4 else "pass"
            details = {"peers": peers | ({} if example else {"skipped_peer": {"library": "OpenCV", "skipped": "why"}})} \
                if peers else None
            record = base | {"kind": "outcome", "nodeid": nodeid, "check": "reference", "verdict": verdict,
                             "phase": "explore", "example": example, "tolerance": tolerance,
                             "metrics": {"max_abs": 3.0 if verdict == "fail" else 1.0}}
            store.append(record | ({"details": details} if details else {}))
        if op == second:
            image = rng.integers(0, 256, (3, side, side)).astype(np.float64)
            output = image.copy()
            output[:, 3, 4] += 3
            for against in ("reference", first):
                arrays = {"input": image, "reference": image, "output": output} | ({"peer": image} if against == first else {})
                artifact = store.save_arrays(f"worst-{against}", arrays)
                store.append(base | {"kind": "worst", "nodeid": nodeid, "check": "reference", "against": against,
                                     "max_abs": 3.0, "artifact": artifact, "peer_library": "torchvision v2",
                                     "peer_target": "cpu", "case": {"op": op, "params": {}}})
    store.close()
    write_summary(run_dir, complete=True)
    return run_dir
