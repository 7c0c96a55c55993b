"""The standard checks every op gets (the `check_kernel` idea), as a registry (`registry`).

  error           the op raised; in an error mode, it did not raise the named exception class
  placement       output on the input's device; on accelerators also no device mixing, no image data
                  copied between host and device, module tensors follow `.to()`
  invariants      dtype, shape and memory format kept; a finite input gives a finite output; input not mutated
  reference       output against the independent float64 reference
  fidelity        lossy ops: PSNR against the input close to the reference's
  cross_device    an accelerator's output against the cpu's, failing on the side that diverges
  compiled        a compiled target's output against eager on the same device
  batch           a batch's output is its samples' outputs one by one (ops that promise it)
  pil             a function that takes PIL images: one image as a PIL image, against the reference
  module          the op's other form in its library (module class or function) gives the identical output
  history         one module instance, after three earlier inputs, gives what a fresh instance gives
  types           each argument of the library callable the op enters, in every other type its signature accepts,
                  gives the same output
  unbatched       an unbatched image and the same image as a batch of one give the same output
  ambient         under torch.autocast, inference_mode and deterministic algorithms: the plain call's dtype and values
  flags           every other state of each flag and enum: on a device as on the cpu; same_on_batch on one image
  param_gradient  the gradient w.r.t. each float the library accepts as a tensor, against central differences
  ranges          the output inside the ranges the library's docstring gives
  transform_matrix a kornia geometric augmentation's reported matrix, applied to its input, gives its output
  inverse         an op and its inverse by name come back to where they started; a geometric augmentation's inverse()
  axes            a sampled grid displacement is as large in pixels for an image and its transpose
  unmoved         a module left on the cpu keeps its promise with a device input
  sampling        a random module's own sampler on the target
  constant_upload constants copied to the device on every call (a warning)
  gradient        the backward pass against central differences of a float64 function
  gradient_device an accelerator's gradient against the cpu's
  baseline        with --baseline DIR: the output against another build's for the same case

Each is its own pytest item.  They read a `CaseContext` (`context`), which the engine builds, and never call the op:
one that needs another run yields a request (`requests`) that the engine runs and sends back; `peers` is the
cross-library measurement the reference outcome carries; `evidence` what a failure keeps.

Adding a check is one module here with one `register(Check(...))` call: every module of this package is
imported below, so its checks are registered before any item is made.  Another package adds checks with an entry
point in the `conformance.checks` group naming its module (which registers them on import) or a `Check`.
"""

import importlib
import pkgutil

from conformance.checks.registry import Check, register
from conformance.spec.extensions import CHECKS, extensions

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
for _extension in extensions(CHECKS):  # loading a module registers its checks
    if isinstance(_extension.value, Check):
        try:
            register(_extension.value)
        except ValueError as _clash:
            raise _extension.problem(str(_clash)) from None
