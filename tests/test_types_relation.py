"""The `types` relation: what a library callable accepts is read from its signature and docstring, the same value is
given in each other accepted encoding where the op's call enters the callable, and a path that differs fails.

The plant is kornia's own adjust_brightness_accumulative (the suite's adjust_brightness_kornia) with a tensor path
that applies the factor twice: the stock suite before the relation (floats only, as every case passes them) passed
it, every item of adjust_brightness_kornia; the relation's items fail it, and pass the real library.
"""

from __future__ import annotations

import enum
from typing import Union

import torch
from case_modules import control_then_plant, library_plant

from conformance.devices.entry import Entry, recording, replacing
from conformance.spec.signatures import accepted, documented_shape, encodings, function_twin

TENSOR_FACTOR_APPLIED_TWICE = library_plant(
    "kornia.enhance.adjust",
    "adjust_brightness_accumulative",
    """
def adjust_brightness_accumulative(image, factor, clip_output=True):
    # the plant: a factor given as a tensor is applied twice; a Python float takes the library's own path
    if isinstance(factor, torch.Tensor):
        factor = factor * 2
    return _real(image, factor, clip_output)
""",
    rebind="kornia.enhance.adjust_brightness_accumulative",
)


def test_a_tensor_path_that_differs_fails_the_stock_suite_and_the_real_library_passes(pytester, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_RELATIONS", "all")
    control_then_plant(
        pytester,
        "tensor-factor-applied-twice",
        TENSOR_FACTOR_APPLIED_TWICE,
        "test_color.py",
        "adjust_brightness_kornia and types",
        "factor as 0-d float32 tensor on the target",
        examples=5,
        check="types",
    )


class Mode(enum.Enum):
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"


def library_function(
    image: torch.Tensor,
    factor: Union[float, torch.Tensor],  # noqa: UP007 - as libraries write it (a string here, as under their `from __future__ import annotations`)
    sigma: tuple[float, float] | torch.Tensor,
    mode: Union[str, Mode] = Mode.BILINEAR,  # noqa: UP007
    size: int = 3,
    flag: bool = True,
    undocumented=0.5,
):
    """A function as kornia writes them.

    Arguments:
        image: the image, of shape :math:`(B, C, H, W)`.
        factor: a number, or a tensor.
        sigma: the standard deviation. A tuple of two floats, or a torch.Tensor of shape :math:`(1, 2)`,
            shared by the batch, or :math:`(B, 2)`, one row per sample.
        mode: how.
    """


def test_what_each_parameter_accepts_is_read_from_annotations_as_written_and_the_docstring():
    found = accepted(library_function)
    assert found["factor"].kinds == {"float", "tensor"} and found["factor"].shape is None
    assert found["sigma"].kinds == {"float", "tuple", "tensor"} and found["sigma"].shape == ("B", "2")
    assert found["mode"].enums == (Mode,) and "str" in found["mode"].kinds
    assert found["size"].kinds == {"int"} and found["flag"].kinds == {"bool"}
    assert not found["undocumented"].declared and found["undocumented"].source == "docstring"


def labels(value, accepts, image_shape=(2, 3, 8, 8), on_accelerator=True):
    return {e.label: e.value for e in encodings(value, accepts, torch.float32, on_accelerator, image_shape)}


def test_each_value_is_given_in_every_other_encoding_its_parameter_accepts_and_no_other():
    found = accepted(library_function)
    factor = labels(0.25, found["factor"])
    assert set(factor) == {"0-d float32 tensor on the target", "0-d float32 tensor on the cpu"}
    assert all(float(v) == 0.25 for v in factor.values())
    assert set(labels(0.25, found["factor"], on_accelerator=False)) == {"0-d float32 tensor on the target"}
    sigma = labels((1.0, 2.0), found["sigma"])
    assert set(sigma) == {"(B, 2) float32 tensor on the target"}
    assert sigma["(B, 2) float32 tensor on the target"].tolist() == [[1.0, 2.0], [1.0, 2.0]]  # one row per sample
    assert labels((1.0, 2.0), found["sigma"], image_shape=(3, 8, 8)) == {}  # no batch size to give an unbatched image
    assert labels("nearest-exact", found["mode"]) == {"enum Mode": Mode.NEAREST_EXACT}
    assert labels(Mode.NEAREST_EXACT, found["mode"]) == {"str": "nearest-exact"}  # the string the library takes
    assert labels(3, found["size"]) == {} and labels(True, found["flag"]) == {}  # an int only; a flag is no type
    assert labels(torch.tensor(0.5), found["factor"]) == {}  # a tensor already: nothing to re-encode


def test_a_documented_shape_is_the_per_sample_one_and_a_class_reads_its_functions_entry():
    assert documented_shape("a tensor :math:`(1, 2)`, shared, or :math:`(B, 2)`, one row per sample") == ("B", "2")
    assert documented_shape("of shape :math:`(*,1,H,W)`.") == ("*", "1", "H", "W")
    assert documented_shape("the kernel size (height, width)") is None
    import kornia.filters

    assert function_twin(kornia.filters.UnsharpMask) is kornia.filters.unsharp_mask
    assert accepted(kornia.filters.BilateralBlur)["sigma_color"].shape == ("B",)


def test_the_first_public_library_callable_is_recorded_and_its_arguments_replaced_where_it_is_entered():
    import kornia.enhance

    def adapter(image, p):  # as a case module calls a library: through an adapter of its own
        return kornia.enhance.adjust_brightness(image, p["factor"], clip_output=False)

    image = torch.zeros(1, 1, 2, 2)
    entries: list[Entry] = []
    with recording(entries):
        adapter(image, {"factor": 0.25})
    (entry,) = entries
    assert entry.name.endswith("adjust_brightness") and entry.arguments["factor"] == 0.25
    assert entry.arguments["clip_output"] is False  # what the callable was entered with
    entered: list[bool] = []
    with replacing(entry, {"factor": torch.tensor(0.5), "clip_output": True}, entered):
        output = adapter(image, {"factor": 0.25})
    assert entered == [True] and output.unique().tolist() == [0.5]  # both replaced (each f_locals read re-syncs)


PLANTED_LIBRARY = """
def public(x):
    return x

def _helper(x):
    return public(x)

class Thing:
    def __init__(self, x):
        self.x = x

    def run(self):
        return public(self.x)
"""


def test_private_helpers_and_methods_are_passed_through_and_a_constructor_is_its_class():
    namespace = {"__name__": "kornia.planted"}
    exec(PLANTED_LIBRARY, namespace)
    thing = namespace["Thing"](1)
    for call, entered in [
        (lambda: namespace["_helper"](1), "public"),
        (thing.run, "public"),
        (lambda: namespace["Thing"](2), "Thing"),
    ]:
        entries: list[Entry] = []
        with recording(entries):
            call()
        assert [e.name for e in entries] == [f"kornia.planted.{entered}"]
    namespace["__name__"] = "elsewhere"  # not a library whose signatures are read
    entries = []
    with recording(entries):
        namespace["public"](1)
    assert entries == []


def test_relations_are_items_by_default_and_the_option_picks_them_or_refuses_a_typo(pytester, monkeypatch):
    from case_modules import copy_cases

    copy_cases(pytester.path / "cases", "test_normalize.py")
    monkeypatch.delenv("CONFORMANCE_RELATIONS")

    def checks(*args: str) -> set[str]:
        result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--targets=cpu", "cases", "--co", "-q", *args)
        return {line.rsplit("-", 1)[1].rstrip("]") for line in result.stdout.lines if line.startswith("cases/")}

    assert {"types", "unbatched"} <= checks()  # the default: every relation
    assert not {"types", "unbatched"} & checks("--relations=none")
    assert "types" in checks("--relations=types") and "unbatched" not in checks("--relations=types")
    monkeypatch.setenv("CONFORMANCE_RELATIONS", "unbatched")
    assert "unbatched" in checks() and "types" not in checks()
    refused = pytester.runpytest_inprocess("-p", "no:cacheprovider", "cases", "--co", "--relations=typos")
    assert refused.ret != 0 and "--relations: unknown relation 'typos'" in refused.stderr.str()
