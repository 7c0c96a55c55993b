"""conformance: does an image op give the same answer on every device and build?

The public API for case modules (every name a case module needs, importable from here):
  OpSpec          declare an op (call, reference, params, tolerances)
  ModuleOp        an nn.Module op for OpSpec(module=...): build, forward, random params, unmoved promise
  Counterpart     the op's other form in its library (the module class of a function, or the function of a
                  module), for OpSpec(counterpart=...) or Implementation(counterpart=...): the `module` and
                  `history` checks; module_class(dotted, arguments) makes one from a library's class
  ExpectedError   what an invalid input must raise, for OpSpec(error_modes=...)
  Accepted        a library's documented acceptance of an invalid input, for Implementation(accepts=...)
  Returns         what an op returns where it is not an image tensor of the input's dtype, for OpSpec(returns=...)
  Operation, Implementation, keywords, OMIT
                  one operation implemented by several libraries (conformance.spec.operations, .implementations)
  TV2, TV1, TVIO, KORNIA, PILLOW, OPENCV, TORCHCODEC
                  the libraries' names for Implementation(library=...)
  TORCHVISION_PIL torchvision's words on PIL input, for OpSpec(pil_input=...) (the `pil` check)
  Tolerance, Rule tolerance policies with reasons, scoped by check/dtype/mode/target
  UNCALIBRATED    the per-dtype default rules, marked uncalibrated in the report (`tolerances=[..., *UNCALIBRATED]`)
  Gradient        an op's promise that it is differentiable, for OpSpec(gradient=...) or Operation(gradient=...)
  kornia_parameters
                  a kornia augmentation's sampler, for ModuleOp(sample=...): parameters drawn once, replayed
  Case, Recipe, CONTENTS, materialize, peak, to_float64
                  cases and image recipes, their pixels, and the value of white in a dtype
  fills, stored_fill
                  a warp's fill drawn in the image's range, and as an image of a dtype holds it
  image_recipes, empty_recipes, sides
                  hypothesis strategies of image recipes (and of images with no pixels) and sizes
  batched, per_host_image, pillow_image_op
                  adapters for libraries that take images one at a time, on the host
  versions        the imported library versions (for `narrowed` strategies and preconditions)

The names are imported on first use (they import torch): the pytest plugin lives in this package and is
loaded into every pytest session, where it must not import torch.  The layers behind them are described
in docs/architecture.md.
"""

from importlib import import_module
from typing import Any

_PUBLIC = {
    "versions": "conformance.spec.versions",
    **dict.fromkeys(("Rule", "Tolerance", "UNCALIBRATED"), "conformance.spec.tolerances"),
    **dict.fromkeys(("Case", "Recipe", "CONTENTS", "materialize", "peak", "to_float64"), "conformance.spec.recipes"),
    **dict.fromkeys(("Accepted", "ExpectedError", "Returns"), "conformance.spec.domain"),
    "OpSpec": "conformance.spec.opspec",
    **dict.fromkeys(("ModuleOp", "Counterpart", "module_class"), "conformance.spec.forms"),
    "Operation": "conformance.spec.operations",
    **dict.fromkeys(("fills", "stored_fill"), "conformance.spec.fills"),
    "Gradient": "conformance.spec.gradients",
    "kornia_parameters": "conformance.spec.sampled",
    **dict.fromkeys(("Implementation", "keywords", "OMIT"), "conformance.spec.implementations"),
    **dict.fromkeys(
        ("TV2", "TV1", "TVIO", "KORNIA", "PILLOW", "OPENCV", "TORCHCODEC", "TORCHVISION_PIL"),
        "conformance.spec.libraries",
    ),
    **dict.fromkeys(("empty_recipes", "image_recipes", "sides"), "conformance.spec.strategies"),
    **dict.fromkeys(("batched", "per_host_image", "pillow_image_op"), "conformance.spec.adapters"),
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the installed distribution's, never a second copy to keep in step
        return import_module("conformance.spec.versions").harness_version()
    if name not in _PUBLIC:
        raise AttributeError(f"module 'conformance' has no attribute {name!r}")
    module = import_module(_PUBLIC[name])
    return module if name == "versions" else getattr(module, name)
