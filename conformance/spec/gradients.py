"""An op's promise that its output is differentiable in its input, as data (`OpSpec.gradient`).

The `gradient` check (conformance.checks.gradients) holds the op's backward pass to it on every target:
the vector-Jacobian product for a random cotangent, projected on random directions, against central
differences of an independent float64 function; `gradient_device` holds an accelerator's gradient to the
cpu's.  Tolerances are relative: an error is measured in units of the gradient's own size (see
`DEFAULT_RULES`), so one number fits images of every size and ops of every scale.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from conformance.spec.tolerances import Rule, Tolerance

ESTIMATES = ("reference", "forward")

DEFAULT_RULES: tuple[Rule, ...] = (
    Rule(
        Tolerance(
            "gradient-float64",
            "float64 backward against float64 central differences (step 1e-6): rounding leaves about 1e-10 of "
            "the gradient's norm; 1e-7 leaves room for sums over large images",
            atol=1e-7,
        ),
        check="gradient",
        dtype="float64",
    ),
    Rule(
        Tolerance(
            "gradient-float32",
            "a float32 backward sums float32 products: about 1e-6 of the gradient's norm measured on resize, "
            "warps and blur; 1e-4 is far below what a wrong or missing term gives (0.1 and more)",
            atol=1e-4,
        ),
        check="gradient",
    ),
    Rule(
        Tolerance(
            "gradient-device",
            "the same float32 backward on two devices: summation order differs (atomics on GPUs), about 1e-6 "
            "of the largest gradient element; a device-only wrong term is of the order of the element itself",
            atol=1e-4,
        ),
        check="gradient_device",
    ),
)


@dataclass(frozen=True, kw_only=True)
class Gradient:
    """What an op promises about its backward pass.

    dtypes:     the input dtypes checked (floating only: an integer image has no gradient).
    modes:      the modes checked (None: every mode that is not an error mode).
    estimate:   what the backward is checked against: "reference" (central differences of the op's float64
                reference: the default) or "forward" (of the op's own forward in float64 on the cpu, for an
                op whose reference is not differentiable, e.g. libjpeg's quantisation; `why` says so).  Never
                the library's own autograd.
    why:        the reason for an estimate other than the reference.
    step:       the central-difference step, in the input's units (0..1 images).  Output elements whose
                one-sided differences disagree (a clamp, a rounding or a max switching inside the step) are
                left out of the cotangent: the gradient is not defined there.
    tolerances: rules tried before DEFAULT_RULES (check "gradient" or "gradient_device").
    """

    dtypes: Sequence[str] = ("float32", "float64")
    modes: Sequence[str] | None = None
    estimate: str = "reference"
    why: str = ""
    step: float = 1e-6
    tolerances: Sequence[Rule] = ()

    def __post_init__(self) -> None:
        if self.estimate not in ESTIMATES:
            raise ValueError(f"Gradient(estimate={self.estimate!r}): one of {ESTIMATES}")
        if self.estimate != "reference" and not self.why.strip():
            raise ValueError("Gradient(estimate='forward') needs why= (why the reference cannot be differentiated)")
        if not 0 < self.step < 0.1:
            raise ValueError(f"Gradient(step={self.step}): a small positive step")
        if any(d in ("uint8", "int64", "bool") for d in self.dtypes):
            raise ValueError(f"Gradient(dtypes={tuple(self.dtypes)}): floating dtypes only")

    def covers(self, dtype: str, mode: str) -> bool:
        return dtype in self.dtypes and (self.modes is None or mode in self.modes)

    def rules(self) -> tuple[Rule, ...]:
        return (*self.tolerances, *DEFAULT_RULES)
