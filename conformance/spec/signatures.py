"""What a library callable accepts for each parameter, read from its own signature (and, where a parameter has no
annotation, from the Args section of its docstring): the domain a relation draws from, so that nothing needs
listing op by op.

`accepted(fn)` gives one `Accepts` per parameter: the kinds its annotation names (float, int, bool, str, tensor,
tuple, list, sequence) and the enum classes it names.  `encodings(value, accepts, ...)` gives the other values of the
same meaning that the parameter accepts: a float as a 0-d tensor, a tuple of numbers as a 1-D tensor, a string as the
enum member of that name and back.  Annotations are read as written (`Union[float, Tensor]`, `float | Tensor`,
strings under `from __future__ import annotations`): an `int` where the annotation names only `float` is not
drawn, because libraries check `isinstance(x, float)` and document it so.
"""

from __future__ import annotations

import enum
import inspect
import re
import sys
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any

import torch

# the words of an annotation that name a kind of value, by the kind
KIND_WORDS = {
    "float": "float",
    "int": "int",
    "bool": "bool",
    "str": "str",
    "Tensor": "tensor",
    "tuple": "tuple",
    "Tuple": "tuple",
    "list": "list",
    "List": "list",
    "Sequence": "sequence",
}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


@dataclass(frozen=True)
class Accepts:
    """What one parameter accepts, as its library declares it."""

    name: str
    kinds: frozenset[str]
    enums: tuple[type[enum.Enum], ...] = ()
    source: str = "annotation"  # or "docstring"
    shape: tuple[str, ...] | None = None  # a tensor's per-sample shape as the docs give it, e.g. ("B", "2")

    @property
    def declared(self) -> bool:
        return bool(self.kinds or self.enums)


@dataclass(frozen=True)
class Encoding:
    """Another value of the same meaning for a parameter, and what it is (for messages): a tensor is made on the
    host and moved to the target by the relation when `on_target`, so the harness's upload is not the op's."""

    label: str  # e.g. "0-d float32 tensor on the target", "enum InterpolationMode", "str"
    value: Any
    on_target: bool = False


def _annotation_text(annotation: Any) -> str:
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation)


def _enums_named(text: str, namespace: dict[str, Any], annotation: Any) -> tuple[type[enum.Enum], ...]:
    """The enum classes an annotation names (resolved in the callable's module where it is a string)."""
    found: list[type[enum.Enum]] = []
    stack = [annotation]
    while stack:
        item = stack.pop()
        if isinstance(item, type) and issubclass(item, enum.Enum):
            found.append(item)
        stack.extend(typing.get_args(item))
    for word in _WORD.findall(text) if isinstance(annotation, str) else ():
        head, *rest = word.split(".")
        value = namespace.get(head)
        for part in rest:
            value = getattr(value, part, None)
        if isinstance(value, type) and issubclass(value, enum.Enum) and value not in found:
            found.append(value)
    return tuple(found)


SECTION_HEADS = ("Args:", "Arguments:", "Parameters:")
_ENTRY = re.compile(r"(\s+)(\w+)\s*(?:\(([^)]*)\))?\s*:")
_SHAPE = re.compile(r"\(([^()]*)\)")
SHAPE_WORDS = frozenset({"B", "N", "C", "H", "W", "*"})


def docstring_entries(fn: Callable[..., Any]) -> dict[str, tuple[str, str]]:
    """Each entry of the docstring's Args section, by name: the type in parentheses after the name (torchvision's
    `img (PIL Image or Tensor): ...`; "" where none) and the entry's whole text."""
    found: dict[str, tuple[str, str]] = {}
    lines = iter((inspect.getdoc(fn) or "").splitlines())
    for line in lines:
        if line.strip() in SECTION_HEADS:
            break
    indent, name = -1, ""
    for line in lines:
        depth = len(line) - len(line.lstrip())
        if line.strip() and (depth == 0 or (indent >= 0 and depth < indent)):
            break  # the next section
        matched = _ENTRY.match(line)
        if matched and (indent < 0 or depth == indent):
            indent, name = depth, matched.group(2)
            found.setdefault(name, (matched.group(3) or "", line))
        elif name in found and line.strip():
            found[name] = (found[name][0], f"{found[name][1]} {line.strip()}")
    return found


def documented_shape(text: str) -> tuple[str, ...] | None:
    """The per-sample tensor shape an entry documents (`(B, 2)`, `(*, 1, H, W)`), as its words, or None."""
    shapes = []
    for group in _SHAPE.findall(text.replace(":math:", "").replace("`", "")):
        words = tuple(w.strip() for w in group.split(",") if w.strip())
        if words and all(w in SHAPE_WORDS or w.isdigit() for w in words) and {"B", "*"} & set(words):
            shapes.append(words)
    return next((w for w in shapes if "B" in w), shapes[0] if shapes else None)


def function_twin(cls: type) -> Callable[..., Any] | None:
    """The function a library's class wraps, by the library's naming (UnsharpMask -> unsharp_mask in its module)."""
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()
    found = getattr(sys.modules.get(cls.__module__), snake, None)
    return found if inspect.isfunction(found) else None


def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    try:
        return inspect.signature(fn)
    except (TypeError, ValueError):
        return None


@cache
def accepted(fn: Callable[..., Any]) -> dict[str, Accepts]:
    """Each named parameter of `fn` (a function, or a class: its constructor) with what it accepts; a tensor's
    documented shape is read from the entry of `fn`'s docstring, else of the function a class wraps.  Read once per
    callable: the result is shared, not to be changed."""
    signature = _signature(fn)
    if signature is None:
        return {}
    owner = fn.__init__ if inspect.isclass(fn) else fn
    namespace = getattr(inspect.unwrap(owner), "__globals__", {})
    documented = docstring_entries(fn)
    twin = function_twin(fn) if inspect.isclass(fn) else None
    twin_documented = docstring_entries(twin) if twin is not None else {}
    found = {}
    for name, parameter in signature.parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        annotation, source = parameter.annotation, "annotation"
        typed, entry = documented.get(name, ("", ""))
        if annotation is parameter.empty:
            annotation, source = typed, "docstring"
        text = _annotation_text(annotation)
        words = (word.rsplit(".", 1)[-1] for word in _WORD.findall(text))
        kinds = frozenset(KIND_WORDS[word] for word in words if word in KIND_WORDS)
        shape = documented_shape(entry) or documented_shape(twin_documented.get(name, ("", ""))[1])
        found[name] = Accepts(name, kinds, _enums_named(text, namespace, annotation), source, shape)
    return found


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def shaped(value: Any, shape: tuple[str, ...], image_shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor | None:
    """`value` as a tensor of the documented per-sample shape for an image of `image_shape` (..., C, H, W): a number
    fills it, a tuple fills its last dimension; None where the shape does not fit the value or the image."""
    leading, (channels, height, width) = image_shape[:-3], image_shape[-3:]
    sizes = {"B": leading[0] if len(leading) == 1 else None, "N": leading[0] if len(leading) == 1 else None}
    sizes.update({"C": channels, "H": height, "W": width})
    dims: list[int] = []
    for word in shape:
        if word == "*":
            dims += leading
        elif word.isdigit() or sizes.get(word) is not None:
            dims.append(int(word) if word.isdigit() else int(sizes[word]))  # type: ignore[arg-type]
        else:
            return None  # a batch size asked of an unbatched image
    base = torch.tensor(value, dtype=dtype)
    if base.dim() == 1 and (not dims or dims[-1] != base.numel()):
        return None
    return base.expand(dims).clone()


def encodings(
    value: Any, accepts: Accepts, float_dtype: torch.dtype, moved: bool, image_shape: tuple[int, ...]
) -> Iterator[Encoding]:
    """The other encodings of `value` that the parameter declares it accepts (none for a tensor, a flag or None).
    A tensor takes the per-sample shape the docs give it, else 0-d for a number and 1-D for a tuple."""
    kinds = accepts.kinds
    numbers = isinstance(value, (tuple, list)) and len(value) > 0 and all(_number(v) for v in value)
    if "tensor" in kinds and (_number(value) or numbers):
        integral = all(isinstance(v, int) for v in (value if numbers else (value,)))
        dtype = torch.int64 if integral else float_dtype
        name = str(dtype).removeprefix("torch.")
        if accepts.shape is not None:
            made = shaped(value, accepts.shape, image_shape, dtype)
            if made is not None:
                yield Encoding(f"({', '.join(accepts.shape)}) {name} tensor on the target", made, on_target=True)
        else:
            named = f"{'1-D' if numbers else '0-d'} {name} tensor"
            yield Encoding(f"{named} on the target", torch.tensor(value, dtype=dtype), on_target=True)
            if moved and not numbers:  # a 0-d cpu tensor mixes with a moved input as a Python number does
                yield Encoding(f"{named} on the cpu", torch.tensor(value, dtype=dtype))
    if isinstance(value, float) and value.is_integer() and "int" in kinds:
        yield Encoding("int", int(value))
    if isinstance(value, int) and not isinstance(value, bool) and "float" in kinds:
        yield Encoding("float", float(value))
    other = list if isinstance(value, tuple) else tuple
    if numbers and kinds & {other.__name__, "sequence"}:
        yield Encoding(other.__name__, other(value))
    if isinstance(value, str):
        for cls in accepts.enums:
            member = next((m for m in cls if value.lower() in (m.name.lower(), str(m.value).lower())), None)
            if member is not None:
                yield Encoding(f"enum {cls.__name__}", member)
    if isinstance(value, enum.Enum):
        if "str" in kinds:  # the member's string value where it has one (torchvision's "nearest-exact")
            yield Encoding("str", value.value if isinstance(value.value, str) else value.name.lower())
        if "int" in kinds and isinstance(value.value, int) and not isinstance(value.value, bool):
            yield Encoding("int", value.value)


def other_states(value: Any, accepts: Accepts) -> Iterator[Encoding]:
    """Every other state of a flag or an enum-valued argument, in the encoding it was given: a bool flipped; each
    other member of the enum a string or member names (a string stays a string, spelt as the given one is)."""
    if isinstance(value, bool):
        if "bool" in accepts.kinds or not accepts.declared:
            yield Encoding(repr(not value), not value)
        return
    for cls in accepts.enums:
        members = list(cls)
        if isinstance(value, cls):
            yield from (Encoding(f"{cls.__name__}.{m.name}", m) for m in members if m is not value)
            return
        if not isinstance(value, str):
            continue
        if any(isinstance(m.value, str) and m.value == value for m in members):
            others = [m.value for m in members if isinstance(m.value, str) and m.value != value]
            yield from (Encoding(repr(other), other) for other in others)
            return
        if any(m.name.lower() == value.lower() for m in members):
            spell = str.lower if value.islower() else str.upper
            others = [spell(m.name) for m in members if m.name.lower() != value.lower()]
            yield from (Encoding(repr(other), other) for other in others)
            return
