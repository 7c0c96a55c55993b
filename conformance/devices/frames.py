"""Where in the code a call is: the frames of the code under test (a library, the user's op) as opposed to
torch's and this harness's, so that an error or a device mix points a user at their code."""

from __future__ import annotations

import contextlib
import inspect
import os
from pathlib import Path
from types import FrameType

import torch

HARNESS_DIR = str(Path(__file__).resolve().parents[1]) + os.sep  # the conformance package, every layer of it
TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
# Frames that only pass a call along (dispatch, dynamo wrappers, context managers).
PLUMBING = (
    os.path.join(TORCH_DIR, "_ops.py"),
    os.path.join(TORCH_DIR, "utils", "_python_dispatch.py"),
    os.path.join(TORCH_DIR, "_dynamo", ""),
    os.path.join(TORCH_DIR, "_compile.py"),
    contextlib.__file__,
)


def is_plumbing(filename: str) -> bool:
    """A frame of this harness, or one that only passes a call along: never where to point a user."""
    return filename.startswith((HARNESS_DIR, *PLUMBING))


def is_library(filename: str) -> bool:
    """A frame of the code under test (the library or the user's op), not torch or this harness."""
    return not filename.startswith((TORCH_DIR, HARNESS_DIR, contextlib.__file__))


def library_frame(skip: int = 1) -> str:
    """file:line in function of the innermost caller outside torch and this harness (`inspect.currentframe`: the
    public handle on frames)."""
    frame: FrameType | None = inspect.currentframe()
    for _ in range(skip):
        frame = frame.f_back if frame is not None else None
    while frame is not None:
        if is_library(frame.f_code.co_filename):
            return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return "an unknown frame"
