"""Placement bugs in small ops of their own, each next to its correct version.

Every op multiplies channel c of a float image by GAINS[c]; only where the gain
tensor lives differs.  The shapes come from real bugs: a helper that builds a
tensor without device= (kornia#2837), a module that keeps a tensor as a plain
attribute so `.to()` leaves it behind (kornia#2791), and a transform that
round-trips the image through the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st

from conformance import OpSpec, Rule, Tolerance, image_recipes
from conformance.spec.opspec import ModuleOp

GAINS = (0.5, 1.0, 0.25)


def _gains(channels: int, device: torch.device | str | None = None) -> torch.Tensor:
    """On the host, or filled on the device (no host copy per call)."""
    if device is None:
        return torch.tensor(GAINS[:channels]).view(-1, 1, 1)
    return torch.stack([torch.full((), gain, device=device) for gain in GAINS[:channels]]).view(-1, 1, 1)


# -- functions ----------------------------------------------------------------------------
def gain_without_device(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """Bug: the helper builds its tensor on the default device (the cpu)."""
    return image * _gains(image.shape[-3])


def gain_with_device(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    return image * _gains(image.shape[-3], device=image.device)


def gain_via_host(image: torch.Tensor, params: dict[str, Any]) -> torch.Tensor:
    """Bug: right values, but the image goes to the host and back on every call."""
    return (image.cpu() * _gains(image.shape[-3])).to(image.device)


# -- modules -------------------------------------------------------------------------------
class PlainAttributeGain(torch.nn.Module):
    """Bug: a plain tensor attribute, which Module.to() does not move."""

    def __init__(self) -> None:
        super().__init__()
        self.gains = _gains(3)

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return image * self.gains


class StaleDeviceGain(torch.nn.Module):
    """Bug: the table is made on the default CUDA device at construction and kept as a plain
    attribute, so after .to('cuda:1') it is still on cuda:0."""

    def __init__(self) -> None:
        super().__init__()
        self.gains = _gains(3, device="cuda" if torch.cuda.is_available() else "cpu")

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return image * self.gains


class BufferGain(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("gains", _gains(3))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return image * self.gains


class RandomGain(torch.nn.Module):
    """A random augmentation: one gain per image, drawn per call unless `params` are given."""

    def forward_parameters(self, batch_shape: torch.Size) -> dict[str, torch.Tensor]:
        return {"gain": torch.rand(batch_shape[:-3] or (1,))}

    def forward(self, image: torch.Tensor, params: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        params = params or {k: v.to(image.device) for k, v in self.forward_parameters(image.shape).items()}
        gain = params["gain"].reshape(*image.shape[:-3], 1, 1, 1) if image.dim() > 3 else params["gain"].view(1, 1, 1)
        return image * gain


# -- specs ---------------------------------------------------------------------------------
def gain_reference(image: np.ndarray, case, sampled=None) -> np.ndarray:
    gains = np.asarray(GAINS[: image.shape[-3]]).reshape(-1, 1, 1)
    if sampled is not None:
        return image * sampled["gain"].double().numpy().reshape(*image.shape[:-3], 1, 1, 1)
    return image * gains


def no_params(recipe, mode):
    return st.just({})


def make_gain_spec(name: str, call=None, module: ModuleOp | None = None) -> OpSpec:
    return OpSpec(
        name=name,
        call=call,
        module=module,
        reference=gain_reference,
        dtypes=("float32",),
        modes=("gain",),
        params=no_params,
        recipes=lambda dtype: image_recipes(dtype, channels=[3], max_side=24),
        tolerances=[Rule(Tolerance("float32", atol=1e-6, rtol=1e-6, reason="one float32 multiply"))],
    )


def sample_gain(module: RandomGain, image: torch.Tensor, params: dict[str, Any]) -> dict[str, torch.Tensor]:
    return module.forward_parameters(image.shape)


def random_gain_spec(replay: bool) -> OpSpec:
    return make_gain_spec(
        "random_gain", module=ModuleOp(build=lambda params: RandomGain(), sample=sample_gain if replay else None)
    )
