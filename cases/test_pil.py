"""Tensor <-> PIL conversion (`to_dtype` moved to cases/test_dtype.py, with the other dtype conversions).

Tensor -> PIL (v2 `to_pil_image` and `ToPILImage`, v1 `to_pil_image`) on every target: an
accelerator tensor must convert exactly like its CPU copy.  Reference: the documented
meaning, float in [0, 1] scaled to 0..255, rounded half up and saturated as
`torchvision.utils.save_image` does it; uint8 and mode "F" pass through unchanged.
PIL -> tensor (`pil_to_tensor`, `ToImage`, v1 `to_tensor`) as round trips, which must be exact.

Tensor -> PIL error modes (the docs: "a torch.*Tensor of shape C x H x W", modes by channel count "4 channels ->
RGBA, 3 -> RGB, 2 -> LA, 1 -> determined by the data type"): a batch, 5 channels, a uint16 or bfloat16 tensor
without a mode, a mode that does not fit the channel count, and a uint16 tensor with an explicit 8-bit mode (which
returns the raw bytes reinterpreted: a known issue).
PIL input: these ops are the conversions themselves (a PIL image is their output or their input by definition), so
the `pil` item (TORCHVISION_PIL) does not apply.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import torch
import torchvision.transforms.functional as F_v1
import torchvision.transforms.v2 as T_v2
import torchvision.transforms.v2.functional as F_v2
from hypothesis import strategies as st

from conformance import (
    Case,
    Counterpart,
    ExpectedError,
    ModuleOp,
    OpSpec,
    Recipe,
    Returns,
    Rule,
    Tolerance,
    image_recipes,
)

PIL_CHANNELS = {"L": 1, "LA": 2, "RGB": 3, "RGBA": 4, "F": 1}
UINT8_MODES = ("L", "LA", "RGB", "RGBA")
FITTING = dict(zip((1, 2, 3, 4), UINT8_MODES, strict=True))  # the 8-bit mode of each channel count
HOST = "a PIL image lives in host memory"
# tensor -> PIL: what each invalid input raises (torchvision 0.29, Pillow 13), and the channels drawn for it
TO_PIL_ERRORS = {
    "batch": ExpectedError("a batch (B, C, H, W)", ValueError, match="2/3 dimensional"),
    "five-channels": ExpectedError("5 channels (PIL modes hold 1 to 4)", ValueError, match="> 4 channels"),
    "uint16-input": ExpectedError("a uint16 tensor and no mode", TypeError, match="uint16 is not supported"),
    "bfloat16-input": ExpectedError("a bfloat16 tensor (numpy has none)", TypeError, match="BFloat16"),
    "mode-mismatch": ExpectedError(
        "a mode for another channel count", ValueError, match="Incorrect mode|Only modes .* are supported"
    ),
    # no class declared: it returns the tensor's bytes reinterpreted (a known issue)
    "uint16-with-mode": ExpectedError("a uint16 tensor with an 8-bit mode (LA, RGB, RGBA)", Exception),
}
ERROR_CHANNELS = {"batch": (1, 3, 4), "five-channels": (5,), "uint16-with-mode": (2, 3, 4)}
TO_PIL_ERROR_VARIANTS = [
    ("uint8", "batch"),
    ("uint8", "five-channels"),
    ("uint16", "uint16-input"),
    ("bfloat16", "bfloat16-input"),
    ("uint8", "mode-mismatch"),
    ("uint16", "uint16-with-mode"),
]


def pil_recipes(dtype: str, mode: str, contents: tuple[str, ...] | None = None) -> st.SearchStrategy[Recipe]:
    """One image (PIL has no batch), with the channel count the PIL mode needs; an error mode's own shapes."""
    if mode in TO_PIL_ERRORS:
        batch = (1, 2) if mode == "batch" else (0, 0)
        return image_recipes(
            dtype,
            channels=ERROR_CHANNELS.get(mode, (1, 2, 3, 4)),
            min_batch_dims=batch[0],
            max_batch_dims=batch[1],
            max_side=32,
        )
    return image_recipes(dtype, channels=(PIL_CHANNELS[mode],), max_batch_dims=0, max_side=64, contents=contents)


@st.composite
def pil_params(draw: st.DrawFn, recipe: Recipe, mode: str) -> dict[str, Any]:
    """The PIL mode: the test mode itself; for an error mode, no mode or the one that fits (where that does not
    matter), a mode for another channel count (mode-mismatch), the fitting 8-bit mode (uint16-with-mode)."""
    fitting = FITTING.get(recipe.channels)
    if mode in PIL_CHANNELS:
        return {"mode": mode}
    if mode == "mode-mismatch":
        return {"mode": draw(st.sampled_from([m for m in UINT8_MODES if m != fitting]), label="pil_mode")}
    if mode == "uint16-with-mode":
        return {"mode": fitting}
    if mode in ("batch", "bfloat16-input"):
        return {"mode": draw(st.sampled_from([None, fitting]), label="pil_mode")}
    return {"mode": None}


def no_params(recipe: Recipe, mode: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.just({"mode": mode})


def pil_as_tensor(image: Any) -> torch.Tensor:
    """A PIL image as a C x H x W tensor, read with numpy (independent of torchvision)."""
    array = np.asarray(image)
    array = array[..., None] if array.ndim == 2 else array
    return torch.from_numpy(array.transpose(2, 0, 1).copy())  # PIL's array is read-only: copy it


def saved_like_save_image(image: np.ndarray) -> np.ndarray:
    """float in [0, 1] -> 0..255: x * 255 + 0.5, saturated, truncated (round half up)."""
    return np.floor(np.clip(image * 255 + 0.5, 0, 255))


def to_pil_reference(image: np.ndarray, case: Case) -> np.ndarray:
    if case.params["mode"] == "F" or case.recipe.dtype == "uint8":
        return image
    return saved_like_save_image(image)


def pil_output_dtype(case: Case) -> str:
    return "float32" if case.params["mode"] == "F" else "uint8"


EXACT = [
    Rule(
        Tolerance(
            "exact",
            reason="a conversion: each output value is determined; any difference is a "
            "rounding, saturation or channel-order difference",
        )
    )
]
TO_PIL_VARIANTS = (
    [(d, m) for d in ("uint8", "float32") for m in UINT8_MODES] + [("float32", "F")] + TO_PIL_ERROR_VARIANTS
)


def _to_pil_spec(name: str, description: str, **how: Any) -> OpSpec:
    return OpSpec(
        name=name,
        description=description,
        reference=to_pil_reference,
        dtypes=("uint8", "float32", "uint16", "bfloat16"),
        modes=(*PIL_CHANNELS, *TO_PIL_ERRORS),
        variants=TO_PIL_VARIANTS,
        params=pil_params,
        error_modes=TO_PIL_ERRORS,
        tolerances=EXACT,
        mode_recipes=pil_recipes,
        returns=Returns(dtype=pil_output_dtype, read=pil_as_tensor, host=HOST),
        needs=(description.split(" ")[0],),
        **how,
    )


TO_PIL_V2 = _to_pil_spec(
    "to_pil_image_v2",
    "torchvision.transforms.v2.functional.to_pil_image",
    call=lambda image, params: F_v2.to_pil_image(image, mode=params["mode"]),
)
TO_PIL_V2_MODULE = _to_pil_spec(
    "to_pil_image_v2_module",
    "torchvision.transforms.v2.ToPILImage",
    module=ModuleOp(build=lambda params: T_v2.ToPILImage(mode=params["mode"]), unmoved="works"),
    counterpart=Counterpart(
        name="torchvision.transforms.v2.functional.to_pil_image",
        call=lambda image, params: F_v2.to_pil_image(image, mode=params["mode"]),
    ),
)
TO_PIL_V1 = _to_pil_spec(
    "to_pil_image_v1",
    "torchvision.transforms.functional.to_pil_image (v1)",
    call=lambda image, params: F_v1.to_pil_image(image, mode=params["mode"]),
)


# -- PIL -> tensor, as round trips from the tensor on the target ---------------------------------
def identity(image: np.ndarray, case: Case) -> np.ndarray:
    return image


def divided_by_255(image: np.ndarray, case: Case) -> np.ndarray:
    return image if case.params["mode"] == "F" else image / 255


def _round_trip_spec(
    name: str, description: str, from_pil, module: str | None, reference=identity, tolerances=EXACT, output_dtype=None
) -> OpSpec:
    """`description` is the dotted name of the PIL -> tensor function (skipped where the library lacks it);
    `module` the dotted name of its class, called on the same PIL image (the counterpart; None for v1's, which are
    plain callables, not nn.Modules)."""

    def call(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
        return from_pil(F_v2.to_pil_image(image, mode=params["mode"]))

    def build(params: dict[str, Any]) -> torch.nn.Module:
        assert module is not None
        where, _, class_name = module.rpartition(".")
        return getattr(importlib.import_module(where), class_name)()

    def forward(converter: torch.nn.Module, image: torch.Tensor, params: dict[str, Any], sampled: Any) -> Any:
        return converter(F_v2.to_pil_image(image, mode=params["mode"])).as_subclass(torch.Tensor)

    return OpSpec(
        name=name,
        description=f"{description}(to_pil_image(x)): a uint8 or 'F' round trip",
        call=call,
        reference=reference,
        dtypes=("uint8", "float32"),
        modes=tuple(PIL_CHANNELS),
        variants=[("uint8", m) for m in UINT8_MODES] + [("float32", "F")],
        params=no_params,
        tolerances=tolerances,
        mode_recipes=pil_recipes,
        returns=Returns(dtype=output_dtype, host=HOST),
        needs=(description, "torchvision.transforms.v2.functional.to_pil_image"),
        counterpart=None if module is None else Counterpart(name=module, module=ModuleOp(build=build, forward=forward)),
    )


PIL_TO_TENSOR_V2 = _round_trip_spec(
    "pil_to_tensor_v2",
    "torchvision.transforms.v2.functional.pil_to_tensor",
    F_v2.pil_to_tensor,
    "torchvision.transforms.v2.PILToTensor",
)
TO_IMAGE_V2 = _round_trip_spec(
    "to_image_v2",
    "torchvision.transforms.v2.functional.to_image",
    lambda pil: F_v2.to_image(pil).as_subclass(torch.Tensor),
    "torchvision.transforms.v2.ToImage",
)
PIL_TO_TENSOR_V1 = _round_trip_spec(
    "pil_to_tensor_v1", "torchvision.transforms.functional.pil_to_tensor", F_v1.pil_to_tensor, None
)
TO_TENSOR_V1 = _round_trip_spec(
    "to_tensor_v1",
    "torchvision.transforms.functional.to_tensor",
    F_v1.to_tensor,
    None,
    reference=divided_by_255,
    output_dtype=lambda case: "float32",
    tolerances=[
        Rule(
            Tolerance(
                "float32-division",
                atol=1.2e-7,
                rtol=0,
                reason="k / 255 computed in float32: within one ulp (1.2e-7 at 1.0) of the exact "
                "value; measured max 3.0e-8 over 300 cases per mode",
            )
        )
    ],
)


test_to_pil_image_v2 = TO_PIL_V2.test()
test_to_pil_image_v2_module = TO_PIL_V2_MODULE.test()
test_to_pil_image_v1 = TO_PIL_V1.test()
test_pil_to_tensor_v2 = PIL_TO_TENSOR_V2.test()
test_to_image_v2 = TO_IMAGE_V2.test()
test_pil_to_tensor_v1 = PIL_TO_TENSOR_V1.test()
test_to_tensor_v1 = TO_TENSOR_V1.test()
