"""conformance: does an image op give the same answer on every device and build?

Public API for case modules:
  OpSpec          declare an op (call, reference, params, tolerances)
  ModuleOp        an nn.Module op for OpSpec(module=...): build, forward, random params, unmoved promise
  ExpectedError   what an invalid input must raise, for OpSpec(error_modes=...)
  Tolerance, Rule tolerance policies with reasons, scoped by check/dtype/mode/target
  image_recipes   hypothesis strategy of image recipes
  versions        the imported library versions (for `narrowed` strategies and preconditions)
"""
from conformance import versions
from conformance.compare import Rule, Tolerance
from conformance.recipes import Case, Recipe
from conformance.spec import ExpectedError, ModuleOp, OpSpec
from conformance.strategies import image_recipes, sides

__all__ = ["Case", "ExpectedError", "ModuleOp", "OpSpec", "versions", "Recipe", "Rule", "Tolerance", "image_recipes", "sides"]
__version__ = "0.1.0"
