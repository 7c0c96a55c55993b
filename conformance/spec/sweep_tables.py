"""What the device sweep builds each transform class with, and why it leaves a class out.

Tables, not code: a class missing here is built with the arguments its own module gives in
`CONFORMANCE_SWEEP_ARGUMENTS` (a user's module: the package cannot know its classes), else with its documented
defaults; a container is built with a few members of its own library (an intensity, a geometric and a flip
augmentation), so the code that runs members, draws their parameters and moves them along runs too.  kornia's
modules beside kornia.augmentation have their tables in sweep_kornia_tables.py; the function form of each
deterministic class (for the `module` check) is in sweep_functions.py.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from typing import Any

import torch

from conformance.spec import sweep_kornia_tables as kornia_tables
from conformance.spec.extensions import SWEEP_ARGUMENTS, extensions
from conformance.spec.sweep_functions import FUNCTIONS
from conformance.spec.sweep_kornia_tables import BATCH_OF_ONE, CHANNELS, NAMED_BY_MODULE

__all__ = [
    "ARGUMENTS",
    "BATCH_OF_ONE",
    "CHANNELS",
    "CONTAINERS",
    "DEVICE_RANDOM",
    "FUNCTIONS",
    "NAMED_BY_MODULE",
    "OWN_ARGUMENTS",
    "SKIPS",
    "UNBATCHED",
    "SweepModuleError",
    "arguments",
    "own_arguments",
]


class Arguments(Mapping[str, dict[str, Any]]):
    """Constructor arguments by qualified class name; an entry given as a function (one that makes a library's
    object, e.g. a kornia colour map) is made on first read, once."""

    def __init__(self, *tables: Mapping[str, dict[str, Any] | Callable[[], dict[str, Any]]]) -> None:
        self._given = {key: value for table in tables for key, value in table.items()}
        self._made: dict[str, dict[str, Any]] = {}

    def __getitem__(self, key: str) -> dict[str, Any]:
        if key not in self._made:
            given = self._given[key]
            self._made[key] = given() if callable(given) else given
        return self._made[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._given)

    def __len__(self) -> int:
        return len(self._given)


# Constructor arguments for classes that have no defaults for them (documented examples where there are).
_ARGUMENTS: dict[str, dict[str, Any]] = {
    "kornia.augmentation.CenterCrop": {"size": 8},
    "kornia.augmentation.RandomCrop": {"size": (8, 8)},
    "kornia.augmentation.RandomResizedCrop": {"size": (8, 8)},
    "kornia.augmentation.Resize": {"size": (8, 8)},
    "kornia.augmentation.LongestMaxSize": {"max_size": 8},
    "kornia.augmentation.SmallestMaxSize": {"max_size": 8},
    "kornia.augmentation.PadTo": {"size": (40, 40)},
    "kornia.augmentation.Normalize": {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)},
    "kornia.augmentation.Denormalize": {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)},
    "kornia.augmentation.RandomAffine": {"degrees": 15.0},
    "kornia.augmentation.RandomRotation": {"degrees": 15.0},
    "kornia.augmentation.RandomShear": {"shear": 10.0},
    "kornia.augmentation.RandomTranslate": {"translate_x": (-0.1, 0.1), "translate_y": (-0.1, 0.1)},
    "kornia.augmentation.RandomMotionBlur": {"kernel_size": 3, "angle": 15.0, "direction": 0.5},
    "kornia.augmentation.RandomGaussianBlur": {"kernel_size": (3, 3), "sigma": (0.1, 2.0)},
    "kornia.augmentation.RandomRotation90": {"times": (0, 3)},
    # kornia's docstring example
    "kornia.augmentation.RandomFisheye": {
        "center_x": torch.tensor([-0.3, 0.3]),
        "center_y": torch.tensor([-0.3, 0.3]),
        "gamma": torch.tensor([0.9, 1.0]),
    },
    "torchvision.transforms.v2.CenterCrop": {"size": 8},
    "torchvision.transforms.v2.RandomCrop": {"size": 8},
    "torchvision.transforms.v2.RandomResizedCrop": {"size": 8},
    "torchvision.transforms.v2.Resize": {"size": 8},
    "torchvision.transforms.v2.FiveCrop": {"size": 8},
    "torchvision.transforms.v2.TenCrop": {"size": 8},
    "torchvision.transforms.v2.Pad": {"padding": 2},
    "torchvision.transforms.v2.Normalize": {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)},
    "torchvision.transforms.v2.RandomRotation": {"degrees": 15.0},
    "torchvision.transforms.v2.RandomAffine": {"degrees": 15.0},
    "torchvision.transforms.v2.ColorJitter": {"brightness": 0.5, "contrast": 0.5, "saturation": 0.5, "hue": 0.1},
    "torchvision.transforms.v2.RandomPosterize": {"bits": 4},
    "torchvision.transforms.v2.RandomSolarize": {"threshold": 0.5},
    "torchvision.transforms.v2.RandomAdjustSharpness": {"sharpness_factor": 2.0},
    "torchvision.transforms.v2.GaussianBlur": {"kernel_size": 3},
    "torchvision.transforms.v2.ScaleJitter": {"target_size": (64, 64)},  # smaller ones can round to 0 pixels
    "torchvision.transforms.v2.RandomShortestSize": {"min_size": 8},
    "torchvision.transforms.v2.RandomZoomOut": {"side_range": (1.0, 2.0)},
    "torchvision.transforms.v2.RandomResize": {"min_size": 8, "max_size": 16},
}


def _installed() -> list[Mapping[str, Any]]:
    """The tables installed packages add (`conformance.sweep_arguments`): qualified class name -> arguments."""
    tables = []
    for extension in extensions(SWEEP_ARGUMENTS):
        table = extension.value
        if not isinstance(table, Mapping) or not all(isinstance(k, str) and "." in k for k in table):
            raise extension.problem("is not a mapping of qualified class names ('package.module.Class') to arguments")
        tables.append(table)
    return tables


ARGUMENTS = Arguments(_ARGUMENTS, kornia_tables.ARGUMENTS, *_installed())  # an installed package's entries win
OWN_ARGUMENTS = "CONFORMANCE_SWEEP_ARGUMENTS"  # a swept module's {class name: arguments} for its own classes


class SweepModuleError(ValueError):
    """A module named for the sweep (or a default one) that does not import, or whose own arguments name no class
    of it: a usage error, said in one line."""


@cache
def own_arguments(module_name: str) -> Arguments:
    """The arguments a swept module gives for its classes (`CONFORMANCE_SWEEP_ARGUMENTS = {"Blur": {"sigma": 1.0}}`;
    a value may be a function that makes them), checked against its classes so that a misspelt name is said."""
    module = importlib.import_module(module_name)
    table = getattr(module, OWN_ARGUMENTS, {})
    if not isinstance(table, Mapping):
        raise SweepModuleError(f"--sweep: {module_name}.{OWN_ARGUMENTS} must map class names to arguments")
    unknown = sorted(str(name) for name in table if not inspect.isclass(getattr(module, str(name), None)))
    if unknown:
        raise SweepModuleError(f"--sweep: {module_name}.{OWN_ARGUMENTS} names {unknown}: not classes of the module")
    return Arguments(table)


def arguments(module_name: str, name: str) -> dict[str, Any]:
    """What the sweep builds a class with: its own module's entry, else the package's table, else nothing."""
    own = own_arguments(module_name)
    return own[name] if name in own else ARGUMENTS.get(f"{module_name}.{name}", {})


# Why a class is not swept, by name pattern (first match).
SKIPS: tuple[tuple[Callable[[str], bool], str], ...] = (
    (lambda n: "Base" in n or n.startswith("_") or n == "Transform", "an abstract base class"),
    (lambda n: n.endswith("3D"), "3-D (volumes): the sweep draws images"),
    (lambda n: n == "VideoSequential", "a container of video frames (5-D): the sweep draws images"),
    (lambda n: n.endswith(("Dispather", "Dispatcher")), "a dispatcher of several inputs: the sweep draws one image"),
    (
        lambda n: (
            n.endswith(("Sequential", "Dispather", "Dispatcher"))
            or n in ("Compose", "RandomApply", "RandomChoice", "RandomOrder")
        ),
        "a container with no members chosen for it (CONTAINERS)",
    ),
    (
        lambda n: (
            n in ("RandomMixUpV2", "RandomCutMixV2", "RandomMosaic", "RandomTransplantation", "PatchMix")
            or n in ("MixUp", "CutMix", "SanitizeBoundingBoxes", "ClampBoundingBoxes", "ClampKeyPoints")
            or n in ("SanitizeKeyPoints", "SetClampingMode", "RandomIoUCrop")
        ),
        "mixes samples or needs labels, boxes or masks beside the image",
    ),
    (
        lambda n: (
            n in ("ToImage", "ToPILImage", "PILToTensor", "ToPureTensor", "ToTensor", "ConvertBoundingBoxFormat")
            or n
            in (
                "Lambda",
                "LinearTransformation",
                "Identity",
                "ToDtype",
                "ConvertImageDtype",
                "UniformTemporalSubsample",
            )
        ),
        "a conversion, a wrapper or a user-supplied function: nothing of its own to sweep",
    ),
    (
        lambda n: n in ("JPEG", "RandomJPEG"),
        "JPEG needs uint8 (torchvision) or a codec (covered by cases/test_jpeg.py and test_jpeg_kornia.py)",
    ),
    (lambda n: n in ("FiveCrop", "TenCrop"), "returns a tuple of crops, not an image"),
    *kornia_tables.SKIPS,
)


def _member(qualified: str, p: float | None, **arguments: Any) -> torch.nn.Module:
    module_name, name = qualified.rsplit(".", 1)
    cls = getattr(importlib.import_module(module_name), name)
    if p is not None and "p" in inspect.signature(cls).parameters:
        arguments["p"] = p
    built: torch.nn.Module = cls(**arguments)
    return built


def _members(library: str, p: float | None) -> list[torch.nn.Module]:
    """An intensity, a geometric and a flip augmentation; `p`: each member's probability (None: its default)."""
    if library == "kornia":
        return [
            _member("kornia.augmentation.ColorJiggle", p, brightness=0.1, contrast=0.1, saturation=0.1, hue=0.05),
            _member("kornia.augmentation.RandomAffine", p, degrees=15.0),
            _member("kornia.augmentation.RandomHorizontalFlip", p),
        ]
    return [
        _member("torchvision.transforms.v2.ColorJitter", p, brightness=0.1, contrast=0.1, saturation=0.1, hue=0.05),
        _member("torchvision.transforms.v2.RandomAffine", p, degrees=15.0),
        _member("torchvision.transforms.v2.RandomHorizontalFlip", p),
    ]


Container = Callable[[type, float | None], torch.nn.Module]  # (class, members' p) -> the container

CONTAINERS: dict[str, Container] = {
    "kornia.augmentation.AugmentationSequential": lambda c, p: c(*_members("kornia", p), data_keys=["input"]),
    "kornia.augmentation.ImageSequential": lambda c, p: c(*_members("kornia", p), random_apply=2),
    "kornia.augmentation.PatchSequential": lambda c, p: c(
        *_members("kornia", p), grid_size=(2, 2), patchwise_apply=False
    ),
    "torchvision.transforms.v2.Compose": lambda c, p: c(_members("torchvision", p)),
    "torchvision.transforms.v2.RandomApply": lambda c, p: c(
        _members("torchvision", p), **({} if p is None else {"p": p})
    ),
    "torchvision.transforms.v2.RandomChoice": lambda c, p: c(_members("torchvision", p)),
    "torchvision.transforms.v2.RandomOrder": lambda c, p: c(_members("torchvision", p)),
}

# torchvision transforms that draw with the device's generator (image-sized noise; AugMix its Dirichlet mixing
# weights): their outputs differ between devices by design (no cross_device items), and alone a sample draws
# other noise (no batch items).  A virtual device draws with the cpu's generator and cannot show it: the first
# real GPU run did (AugMix, 2026-11-26).
DEVICE_RANDOM = {
    f"torchvision.transforms.v2.{name}" for name in ("GaussianNoise", "RandomErasing", "ElasticTransform", "AugMix")
}

# Classes whose batch is not its samples one by one by design: no `batch` items (why, by class).
UNBATCHED: dict[str, str] = {
    "torchvision.transforms.v2.AugMix": "draws each sample's mixing weights for the whole batch at once (a Dirichlet "
    "draw of batch rows): a sample alone draws other weights, and torchvision has no way to replay them",
    **{qualified: f"swept with batches of one: {why}" for qualified, why in BATCH_OF_ONE.items()},
}
