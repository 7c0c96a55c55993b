"""A swept module of the user's gives the constructor arguments of its own classes (`CONFORMANCE_SWEEP_ARGUMENTS`):
the sweep builds them with those, and a name there that is no class of the module is a usage error."""

import textwrap

import pytest

from conformance.spec import sweep
from conformance.spec.sweep_import import check_importable
from conformance.spec.sweep_tables import SweepModuleError

GAIN = '''
import torch


class Gain(torch.nn.Module):
    """No default for its gain: the sweep cannot build it from nothing."""

    def __init__(self, gain):
        super().__init__()
        self.gain = gain

    def forward(self, x):
        return x * self.gain
'''


def module(pytester, name: str, source: str):
    pytester.makepyfile(**{name: textwrap.dedent(source)})
    pytester.syspathinsert()
    return name


def test_without_arguments_the_class_is_skipped_with_the_reason(pytester):
    name = module(pytester, "own_args_none", GAIN)
    (found,) = sweep.discover(name)
    assert found.reason.startswith("cannot be built with its documented defaults: TypeError")


def test_the_module_s_own_arguments_build_its_class(pytester):
    name = module(pytester, "own_args_given", GAIN + '\nCONFORMANCE_SWEEP_ARGUMENTS = {"Gain": {"gain": 0.5}}\n')
    (found,) = sweep.discover(name)
    assert found.reason == ""
    built = sweep.spec_of(found).module.build({})
    assert built.gain == 0.5


def test_an_argument_entry_may_be_a_function_made_once(pytester):
    source = GAIN + '\nCONFORMANCE_SWEEP_ARGUMENTS = {"Gain": lambda: {"gain": torch.tensor(2.0)}}\n'
    name = module(pytester, "own_args_made", source)
    (found,) = sweep.discover(name)
    build = sweep.spec_of(found).module.build
    assert float(build({}).gain) == 2.0 and build({}).gain is build({}).gain


def test_a_name_that_is_no_class_of_the_module_is_a_usage_error(pytester):
    name = module(pytester, "own_args_typo", GAIN + '\nCONFORMANCE_SWEEP_ARGUMENTS = {"Gian": {"gain": 0.5}}\n')
    with pytest.raises(SweepModuleError, match=r"own_args_typo.CONFORMANCE_SWEEP_ARGUMENTS names \['Gian'\]"):
        check_importable([name], probe=False)


def test_a_run_sweeps_the_class_with_its_arguments(pytester):
    module(pytester, "own_args_run", GAIN + '\nCONFORMANCE_SWEEP_ARGUMENTS = {"Gain": {"gain": 0.5}}\n')
    pytester.makepyfile(
        test_sweep_cases="""
        import os
        from conformance.spec import sweep
        from conformance.spec.handed import SWEEP_ENV
        globals().update(sweep.tests(sweep.parse(os.environ.get(SWEEP_ENV, ""))))
        """
    )
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--hypothesis-profile=ci", "--targets=cpu,vcuda:1", "--sweep=own_args_run"
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) > 0 and not outcomes.get("failed"), result.stdout.str()[-3000:]
    assert "sweep of own_args_run: 1 classes found, 1 swept" in result.stdout.str()
