"""What lies outside an op's documented domain: what an invalid input must raise (`ExpectedError`), and a library's
documented acceptance of such an input (`Accepted`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ExpectedError:
    """What an invalid input must raise (OpInfo's ErrorInput): the exception class or classes,
    optionally a regular expression its message must match.  The harness's own timeout and a
    device-mixing error never count as the expected error, whatever the classes."""

    why: str
    raises: type[BaseException] | tuple[type[BaseException], ...]
    match: str | None = None

    @property
    def classes(self) -> tuple[type[BaseException], ...]:
        return self.raises if isinstance(self.raises, tuple) else (self.raises,)

    def describe(self) -> str:
        names = " or ".join(c.__name__ for c in self.classes)
        return names + (f" matching {self.match!r}" if self.match else "")

    def problem(self, raised: type[BaseException], message: str) -> str | None:
        """Why an exception does not meet this expectation, or None."""
        if not issubclass(raised, self.classes):
            return f"raised {raised.__name__}; expected {self.describe()}"
        if self.match is not None and re.search(self.match, message) is None:
            return f"raised {raised.__name__} with a message not matching {self.match!r}"
        return None


ANY_ERROR = ExpectedError("", Exception)


@dataclass(frozen=True)
class Accepted:
    """A library's documented acceptance of an input outside the operation's domain (it clamps, wraps, treats a
    value as another): the library's words and where they are, and, where they say what the input then means, the
    valid params it stands for (`meaning`: params -> params), so the reference is held to that meaning.  Its items
    check that the op returns a result there, finite, with the invariants kept and the same on every target."""

    documentation: str
    meaning: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        if not self.documentation.strip():
            raise ValueError("Accepted(documentation=...) quotes the library's documentation and where it is")


@dataclass(frozen=True)
class Returns:
    """What an op returns where it is not an image tensor of the input's dtype on the input's device: one record, so
    the checks that read an output (placement, invariants, repro scripts) ask one place.

    dtype:  case -> the output's dtype name (`to_dtype`'s, a conversion to float32 of a uint8 image).
    read:   turns a non-tensor output (a PIL image) into a (..., C, H, W) tensor.
    host:   why the output lives on the host whatever the target (a PIL image, encoded bytes): on the cpu, copies
            allowed.
    """

    dtype: Callable[[Any], str] | None = None
    read: Callable[[Any], Any] | None = None
    host: str = ""
