"""kornia's side of the blur family: `RandomGaussianBlur` with replayed parameters, and the kernels its helpers build
(kornia.filters.get_gaussian_kernel1d / get_gaussian_kernel2d) against a float64 sampled Gaussian, normalised.
cases/test_blur.py has the blur functionals of every library (kornia's gaussian_blur2d among them).

RandomGaussianBlur draws one sigma per image (on the cpu, in float32), replayed on every target; its output is
gaussian_blur2d's, so it shares that function's reference and tolerances.

The kernel helpers get a sigma tensor made on the target in the target image's dtype; the image itself is not blurred:
it only gives that tensor its device, dtype and batch (one kernel per image).  kornia's docs: "device: This value will
be used if sigma is an int or float" (likewise dtype), so with a tensor sigma the kernel follows sigma's device and
dtype, and device=/dtype= are left out in some draws: on a virtual device the placement check then catches a helper
whose default builds the kernel on the cpu, and the invariants check one that returns the default dtype.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from conformance import (
    Case,
    ExpectedError,
    Gradient,
    ModuleOp,
    OpSpec,
    Recipe,
    Rule,
    Tolerance,
    image_recipes,
    kornia_parameters,
)
from conformance.references import filters
from conformance.spec.case_pieces import BLUR_FLOAT32, BLUR_FLOAT64, BLUR_KERNELS, exception_class, kernels_fitting

SIGMA_STEPS = (10, 300)  # sigma in [0.10, 3.00] in steps of 0.01, as the functionals' cases
HALF_AND_DOUBLE = ("float16", "bfloat16", "float32", "float64")
KORNIA_ERROR = exception_class("kornia.core.exceptions.BaseError", Exception)  # an older kornia: plain exceptions


def kornia_kernel_size(kernel_size: list[int]) -> tuple[int, int]:
    """kornia documents (kH, kW): the (kx, ky) pair reversed."""
    return int(kernel_size[1]), int(kernel_size[0])


# -- kornia's RandomGaussianBlur: one sigma per image, drawn once on the cpu and replayed ------------
# "Expected input of [torch.bfloat16, torch.float16, torch.float32, torch.float64]": float64 gets the float32 sigma
RANDOM_DTYPES = ("float32", "float64")  # float16: the functional's items (the module output is gaussian_blur2d's)
RANDOM_ERRORS = {
    "even-kernel": ExpectedError("an even kernel size (documented: 'the forward pass raises')", KORNIA_ERROR),
    "kernel-too-large": ExpectedError(
        "a kernel radius reaching an image side (documented: 'a smaller image raises a ValueError')",
        ValueError,
        match="cannot filter an image this small",
    ),
    "p-out-of-range": ExpectedError("a probability p outside [0, 1]", Exception),  # undeclared: a known issue
}


@st.composite
def random_blur_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """A (kx, ky) kernel fitting the image and the documented sampling range (low, high) of sigma; an error mode
    makes one of them invalid, or adds a p just outside [0, 1]."""
    kx, ky = draw(st.sampled_from(kernels_fitting(recipe.width))), draw(st.sampled_from(kernels_fitting(recipe.height)))
    low = draw(st.integers(*SIGMA_STEPS), label="sigma_low")
    high = draw(st.integers(low, SIGMA_STEPS[1]), label="sigma_high")
    params: dict[str, Any] = {"kernel_size": [kx, ky], "sigma_range": [low / 100, high / 100]}
    if mode in ("even-kernel", "kernel-too-large"):  # one axis one tap longer, or as long as 2 sides + 1
        axis = draw(st.integers(0, 1), label="invalid_axis")
        longer = [
            k + 1 if mode == "even-kernel" else 2 * side + 1 for k, side in ((kx, recipe.width), (ky, recipe.height))
        ]
        params["kernel_size"] = [longer[0] if axis == 0 else kx, longer[1] if axis == 1 else ky]
    elif mode == "p-out-of-range":
        params["p"] = draw(st.sampled_from((1 + 1 / 64, -1 / 64)), label="p")  # just outside [0, 1]
    return params


def random_blur_reference(image: np.ndarray, case: Case, sampled: dict[str, torch.Tensor]) -> np.ndarray:
    """Each image blurred with its own sampled sigma on both axes (as RandomGaussianBlur documents)."""
    sigmas = sampled["sigma"].double().numpy()
    return np.stack(
        [
            filters.gaussian_blur(one, case.params["kernel_size"], float(s))
            for one, s in zip(image, sigmas, strict=False)
        ]
    )


def sigma_bounds(params: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """The documented range, as float32 (kornia samples sigma in float32: a range of 0.1..0.1 gives 0.1f)."""
    low, high = (float(np.float32(v)) for v in params["sigma_range"])
    return {"sigma": (low, high)}


def _build_random(params: dict[str, Any]) -> torch.nn.Module:
    import kornia

    return kornia.augmentation.RandomGaussianBlur(
        kornia_kernel_size(params["kernel_size"]), tuple(params["sigma_range"]), p=params.get("p", 1.0)
    )


RANDOM_GAUSSIAN_BLUR = OpSpec(
    name="random_gaussian_blur_kornia",
    description="kornia.augmentation.RandomGaussianBlur(p=1) with replayed parameters",
    module=ModuleOp(build=_build_random, sample=kornia_parameters, bounds=sigma_bounds, unmoved="works"),
    reference=random_blur_reference,
    dtypes=RANDOM_DTYPES,
    modes=("default", *RANDOM_ERRORS),
    variants=[(d, "default") for d in RANDOM_DTYPES] + [("float32", m) for m in RANDOM_ERRORS],
    error_modes=RANDOM_ERRORS,
    params=random_blur_params,
    mode_recipes=lambda dtype, mode: image_recipes(
        dtype, channels=(3, 1, 4, 2), min_batch_dims=1, max_batch_dims=1, max_side=48 if mode == "default" else 16
    ),
    tolerances=[Rule(BLUR_FLOAT32, dtype="float32"), Rule(BLUR_FLOAT64, dtype="float64")],  # the functionals'
    features=lambda case: {"kernel_x": case.params["kernel_size"][0], "kernel_y": case.params["kernel_size"][1]},
    keeps_memory_format=False,
    needs=("kornia.augmentation.RandomGaussianBlur",),
    gradient=Gradient(dtypes=("float32",)),
)
test_random_gaussian_blur_kornia = RANDOM_GAUSSIAN_BLUR.test()


# -- kornia's kernel builders: get_gaussian_kernel1d / get_gaussian_kernel2d ----------------------------
def sampled_gaussian(size: int, sigma: float) -> np.ndarray:
    """`size` taps of exp(-d^2 / 2 sigma^2), d = i - (size - 1) / 2 (half-integers for an even size), normalised;
    sigma 0: the unit impulse, split between the two middle taps of an even window (kornia's documented limit)."""
    squared = (np.arange(size, dtype=np.float64) - (size - 1) / 2) ** 2
    squared -= squared.min()  # the nearest tap weighs 1: the same kernel once normalised, and no 0 / 0
    weights = (squared == 0).astype(np.float64) if sigma == 0 else np.exp(-squared / (2.0 * sigma * sigma))
    return weights / weights.sum()


SIGMA_64THS = st.integers(0, 192).map(lambda n: n / 64)  # 0 to 3 in 1/64: exact in float16 and bfloat16


@st.composite
def kernel_params(draw: st.DrawFn, recipe: Recipe, mode: str, axes: int) -> dict[str, Any]:
    """One kernel per image of the batch (sigma of shape (B, axes)); sizes odd, or any with force_even; device= and
    dtype= given in some draws only (with a tensor sigma the docs say they are unused).  "kernel-size": an even (no
    force_even), 0 or negative size on one axis."""
    force_even = mode == "default" and draw(st.booleans(), label="force_even")
    sizes = st.integers(1, 11) if force_even else st.sampled_from(BLUR_KERNELS)
    kernel = [draw(sizes, label="kernel") for _ in range(axes)]
    if mode == "kernel-size":
        kernel[draw(st.integers(0, axes - 1))] = draw(st.sampled_from((4, 2, 0, -1)), label="bad_size")
    rows = max(1, math.prod(recipe.batch))
    sigma = [[draw(SIGMA_64THS, label="sigma") for _ in range(axes)] for _ in range(rows)]
    if mode == "sigma-negative":
        sigma[0][0] = -draw(st.integers(1, 192)) / 64
    return {"kernel_size": kernel, "sigma": sigma, "force_even": force_even, "pass_device": draw(st.booleans())}


def _kernel_call(axes: int) -> Callable[[torch.Tensor, dict[str, Any]], torch.Tensor]:
    def call(image: torch.Tensor, p: dict[str, Any]) -> torch.Tensor:
        """The image only gives the sigma tensor its device and dtype (filled there, no host copy)."""
        from kornia.filters import get_gaussian_kernel1d, get_gaussian_kernel2d

        rows = [torch.stack([torch.full((), s, dtype=image.dtype, device=image.device) for s in r]) for r in p["sigma"]]
        sigma = torch.stack(rows)
        placed = {"device": image.device, "dtype": image.dtype} if p["pass_device"] else {}
        if axes == 1:
            return get_gaussian_kernel1d(p["kernel_size"][0], sigma, p["force_even"], **placed)
        return get_gaussian_kernel2d(tuple(p["kernel_size"]), sigma, p["force_even"], **placed)

    return call


def kernel_reference(axes: int) -> Callable[[np.ndarray, Case], np.ndarray]:
    def reference(image: np.ndarray, case: Case) -> np.ndarray:
        """One sampled Gaussian per row of sigma; 2-D: kernel_size (ky, kx), sigma (sy, sx), the outer product."""
        ks, rows = case.params["kernel_size"], case.params["sigma"]
        if axes == 1:
            return np.stack([sampled_gaussian(ks[0], r[0]) for r in rows])
        return np.stack([np.outer(sampled_gaussian(ks[0], r[0]), sampled_gaussian(ks[1], r[1])) for r in rows])

    return reference


KERNEL_ERRORS = {
    "kernel-size": ExpectedError("an even (without force_even), 0 or negative kernel size", KORNIA_ERROR),
    "sigma-negative": ExpectedError("a negative sigma (gaussian_blur2d refuses it)", Exception),  # a known issue
}
# Measured on every size 1-11 (force_even) with every sigma of the 1/64 grid (1d) and on 11 x 193 (ky, kx) pairs (2d)
# against sampled_gaussian.  kornia computes half-precision kernels in float32 and rounds once (its docs); the 2d
# kernel is the product of two rounded 1d kernels, rounded.
KERNEL_TOLERANCES = {
    1: [
        Tolerance(
            "float16-kernel1d",
            rtol=4.95e-4,
            atol=6e-8,
            reason="one rounding to float16: half an ulp, 2^-11 = 4.88e-4 relative (2^-24 absolute among subnormals), "
            "plus float32's 2e-6; measured 4.81e-4",
        ),
        Tolerance(
            "bfloat16-kernel1d",
            rtol=3.95e-3,
            atol=1e-40,
            reason="one rounding to bfloat16: 2^-8 = 3.91e-3 relative (absolute below its normals), plus float32's "
            "2e-6; measured 3.74e-3",
        ),
    ],
    2: [
        Tolerance(
            "float16-kernel2d",
            rtol=1.5e-3,
            atol=6e-8,
            reason="the product of two float16-rounded taps, rounded: 3 x 2^-11 = 1.46e-3 relative (2^-24 absolute "
            "among subnormals); measured 1.07e-3",
        ),
        Tolerance(
            "bfloat16-kernel2d",
            rtol=1.2e-2,
            atol=1e-40,
            reason="the product of two bfloat16-rounded taps, rounded: 3 x 2^-8 = 1.17e-2 relative; measured 9.14e-3",
        ),
    ],
}
FLOAT32_KERNEL = Tolerance(
    "float32-kernel",
    rtol=1e-5,
    atol=1e-30,
    reason="exp(-x) with x <= 87 (float32's normal range) carries x's relative rounding 6e-8 times x, 5.2e-6, plus "
    "the normalisation's few ulps: 1e-5; taps under 1e-30 weigh nothing in a blur; measured 2.07e-6",
)
FLOAT64_KERNEL = Tolerance(
    "float64-kernel",
    rtol=1e-13,
    atol=1e-300,
    reason="as float32's, in float64: x <= 745 times 1.1e-16 is 8.3e-14; measured 6.6e-16",
)


def _kernel_spec(axes: int) -> OpSpec:
    return OpSpec(
        name=f"gaussian_kernel{axes}d_kornia",
        description=f"kornia.filters.get_gaussian_kernel{axes}d with a sigma tensor on the target (the image input "
        "only gives that tensor its device, dtype and batch)",
        call=_kernel_call(axes),
        reference=kernel_reference(axes),
        dtypes=HALF_AND_DOUBLE,
        modes=("default", *KERNEL_ERRORS),
        variants=[(d, "default") for d in HALF_AND_DOUBLE] + [("float32", m) for m in KERNEL_ERRORS],
        error_modes=KERNEL_ERRORS,
        params=partial(kernel_params, axes=axes),
        recipes=partial(image_recipes, channels=(1,), max_side=3, max_batch_dims=1, contents=["constant"]),
        tolerances=[
            Rule(KERNEL_TOLERANCES[axes][0], dtype="float16"),
            Rule(KERNEL_TOLERANCES[axes][1], dtype="bfloat16"),
            Rule(FLOAT32_KERNEL, dtype="float32"),
            Rule(FLOAT64_KERNEL, dtype="float64"),
        ],
        keeps_memory_format=False,  # a kernel, not an image: no layout to keep
        needs=(f"kornia.filters.get_gaussian_kernel{axes}d",),
    )


GAUSSIAN_KERNEL1D = _kernel_spec(1)
GAUSSIAN_KERNEL2D = _kernel_spec(2)
test_gaussian_kernel1d_kornia = GAUSSIAN_KERNEL1D.test()
test_gaussian_kernel2d_kornia = GAUSSIAN_KERNEL2D.test()
