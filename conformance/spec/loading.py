"""Loading case modules by path (outside pytest): for timings, ISA worker processes and benchmarks."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from conformance.spec.opspec import OpSpec


def load_specs(case_paths: list[Path]) -> list[OpSpec]:
    """The OpSpecs of the case modules under these paths (files, or folders of test_*.py), in name order."""
    files = [f for p in case_paths for f in ([p] if p.is_file() else sorted(p.glob("test_*.py")))]
    specs: list[OpSpec] = []
    for path in files:
        folder = str(path.parent.resolve())
        if folder not in sys.path:
            sys.path.insert(0, folder)
        module_spec = importlib.util.spec_from_file_location(f"conformance_cases_{path.stem}", path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        specs.extend(
            obj.conformance_spec
            for name, obj in sorted(vars(module).items())
            if name.startswith("test_") and hasattr(obj, "conformance_spec")
        )
    return specs
