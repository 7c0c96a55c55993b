"""The `flags` relation: each other state of every flag and enum-valued argument, read from the library callable's
signature, keeps the op's promises.

The plant is kornia's RandomSolarize with `same_on_batch` accepted and silently ignored when it samples: the suite's
cases build it with the default (False), so before the relation every RandomSolarize item passed the plant; the
relation builds it with True and gives it one image repeated, and fails it, and passes the real library.
"""

from __future__ import annotations

import enum

from case_modules import control_then_plant

from conformance.spec.signatures import Accepts, other_states

SAME_ON_BATCH_IGNORED = """
import kornia.augmentation as K

_real = K.RandomSolarize.forward_parameters

def forward_parameters(self, batch_shape):
    # the plant: the flag is kept on the module but each sample draws its own factor
    kept, self.same_on_batch = self.same_on_batch, False
    try:
        return _real(self, batch_shape)
    finally:
        self.same_on_batch = kept

K.RandomSolarize.forward_parameters = forward_parameters
"""


def test_a_flag_silently_ignored_fails_the_stock_suite_and_the_real_library_passes(pytester, monkeypatch):
    monkeypatch.setenv("CONFORMANCE_RELATIONS", "all")
    control_then_plant(
        pytester,
        "same-on-batch-ignored",
        SAME_ON_BATCH_IGNORED,
        "test_sweep.py",
        "sweep_kornia_RandomSolarize",
        "same_on_batch=True on one image repeated: sample 1",
        examples=10,
        sweep="kornia.augmentation",
        check="flags",
    )


class Mode(enum.Enum):
    NEAREST = "nearest"
    BILINEAR = "bilinear"


class Numbered(enum.Enum):
    NEAREST = 0
    BILINEAR = 1


def labels(value, accepts):
    return [(state.label, state.value) for state in other_states(value, accepts)]


def test_each_other_state_of_a_flag_or_enum_is_given_in_the_encoding_it_was_given():
    assert labels(True, Accepts("flag", frozenset({"bool"}))) == [("False", False)]
    assert labels(False, Accepts("flag", frozenset())) == [("True", True)]  # no annotation: a bool is a flag
    assert labels(True, Accepts("scale", frozenset({"float"}))) == []  # a bool where only a float is declared
    by_value = Accepts("mode", frozenset({"str"}), (Mode,))
    assert labels("nearest", by_value) == [("'bilinear'", "bilinear")]
    assert labels(Mode.BILINEAR, by_value) == [("Mode.NEAREST", Mode.NEAREST)]
    by_name = Accepts("mode", frozenset({"str", "int"}), (Numbered,))
    assert labels("bilinear", by_name) == [("'nearest'", "nearest")]
    assert labels("BILINEAR", by_name) == [("'NEAREST'", "NEAREST")]
    assert labels("lanczos", by_value) == [] and labels(1.5, by_value) == []
