"""What a library callable's docstring promises about its output's values: the ranges its Returns section gives.

kornia writes "The H channel values are in the range [0, 2pi). S and V are in the range 0..1." (rgb_to_hsv) and
"in :math:`[0, 1]` when ``clip`` is True" (lab_to_rgb).  `output_ranges(fn)` reads each such sentence into an
`OutputRange`: the channels it is about (by their letters in the conversion's target name: H, S, V of "hsv"; None
for the whole output), its bounds (numbers, `pi` and its multiples) with whether the upper one is open, and the
flag values it is stated under.  A relation checks outputs against them; nothing is listed per op.
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any

_NUMBER = r"-?\d+(?:\.\d+)?\s*\*?\s*(?:pi|π)?|-?(?:pi|π)"
_RANGE = re.compile(rf"\[\s*({_NUMBER})\s*,\s*({_NUMBER})\s*([\])])|({_NUMBER})\s*\.\.\s*({_NUMBER})")
_CONDITION = re.compile(r"(when|unless)\s+`*(\w+)`*\s+is\s+(True|False)")
_CHANNELS = re.compile(r"(?:The\s+)?([A-Za-z](?:\s*(?:,|and)\s*[A-Za-z])*)\s+(?:channel\s+values\s+)?are\s+in")


@dataclass(frozen=True)
class OutputRange:
    """One documented range of an output's values."""

    low: float
    high: float
    high_open: bool = False
    channels: tuple[int, ...] | None = None  # indices along the channel dimension (None: every value)
    when: dict[str, bool] = field(default_factory=dict)  # the arguments it is stated under (clip=True)
    text: str = ""  # the sentence, for messages

    def holds_for(self, arguments: dict[str, Any]) -> bool:
        return all(arguments.get(name) is value for name, value in self.when.items())


def _number(text: str) -> float:
    text = text.replace(" ", "").replace("π", "pi")
    if "pi" not in text:
        return float(text)
    factor = text.replace("*", "").removesuffix("pi")
    return math.pi * (float(factor) if factor not in ("", "-") else (-1.0 if factor == "-" else 1.0))


def _returns(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    start = doc.find("Returns:")
    return " ".join(doc[start + len("Returns:") :].split("\n\n")[0].split()) if start >= 0 else ""


def _letters(fn: Callable[..., Any]) -> str:
    """The channel letters of a conversion's target space (rgb_to_hsv, RgbToHsv: "hsv"), else ""."""
    name = getattr(fn, "__name__", "")
    target = name.split("_to_")[-1] if "_to_" in name else (name.split("To")[-1] if "To" in name else "")
    return target.lower() if target.isalpha() else ""


@cache
def output_ranges(fn: Callable[..., Any]) -> tuple[OutputRange, ...]:
    """The ranges the Returns section of `fn`'s docstring gives its output (a sentence each)."""
    letters = _letters(fn)
    found = []
    for sentence in re.split(r"(?<=\.)\s+", _returns(fn)):
        matched = _RANGE.search(sentence.replace(":math:", "").replace("`", ""))
        if matched is None:
            continue
        low, high = (matched[1], matched[2]) if matched[1] is not None else (matched[4], matched[5])
        channels = None
        named = _CHANNELS.search(sentence)
        if named is not None and letters:
            words = re.split(r"\s*(?:,|and)\s*", named[1])
            if not all(len(w) == 1 and w.lower() in letters for w in words):
                continue  # channels this reader cannot place
            channels = tuple(letters.index(w.lower()) for w in words)
        when = {name: (value == "True") == (word == "when") for word, name, value in _CONDITION.findall(sentence)}
        found.append(OutputRange(_number(low), _number(high), matched[3] == ")", channels, when, sentence.strip()))
    return tuple(found)
