"""conformance: does an image op give the same answer on every device and build?

Public API for case modules:
  OpSpec          declare an op (call, reference, params, tolerances)
  ModuleOp        an nn.Module op for OpSpec(module=...): build, forward, random params, unmoved promise
  ExpectedError   what an invalid input must raise, for OpSpec(error_modes=...)
  Tolerance, Rule tolerance policies with reasons, scoped by check/dtype/mode/target
  image_recipes   hypothesis strategy of image recipes
  versions        the imported library versions (for `narrowed` strategies and preconditions)

The names are imported on first use (they import torch): the pytest plugin lives in this
package and is loaded into every pytest session, where it must not import torch.
"""
from importlib import import_module
from typing import Any

_PUBLIC = {
    "versions": "conformance.spec.versions", "Rule": "conformance.spec.tolerances", "Tolerance": "conformance.spec.tolerances",
    "Case": "conformance.spec.recipes", "Recipe": "conformance.spec.recipes", "ExpectedError": "conformance.spec.opspec",
    "ModuleOp": "conformance.spec.opspec", "OpSpec": "conformance.spec.opspec", "image_recipes": "conformance.spec.strategies",
    "sides": "conformance.spec.strategies",
}
__all__ = sorted(_PUBLIC)
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'conformance' has no attribute {name!r}")
    module = import_module(_PUBLIC[name])
    return module if name == "versions" else getattr(module, name)
