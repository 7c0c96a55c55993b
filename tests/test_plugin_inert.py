"""The installed plugin must not change pytest runs of other projects (issue 13, item 7).

Its pytest11 entry point loads it into every pytest session in the environment. Like
hypothesis' own plugin, it stays inert until conformance specs are collected or a
conformance option asks for it: no torch import, no hypothesis profile loaded, no xdist
scheduler switched, no thread variables set, nothing in the header, no reports folder.
"""

import json
import os

PROBE = """
import json, os, sys
from hypothesis import given, settings, strategies as st

@given(st.integers())
def test_uses_hypothesis_defaults(x):
    pass

def test_probe(request):
    config = request.config
    found = {
        "torch_imported": "torch" in sys.modules,
        "profile": settings.get_current_profile_name(),
        "deadline_ms": settings().deadline.total_seconds() * 1000 if settings().deadline else None,
        "dist": getattr(config.option, "dist", None),
        "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")},
    }
    with open(os.environ["PROBE_OUT"] + "." + os.environ.get("PYTEST_XDIST_WORKER", "main"), "w") as f:
        json.dump(found, f)
"""


CONTROLLER = """
import json, os

def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):
        with open(os.environ["PROBE_OUT"] + ".controller", "w") as f:
            json.dump({"dist": getattr(session.config.option, "dist", None)}, f)
"""


def _probe(pytester, *args):
    pytester.makepyfile(test_other=PROBE)
    pytester.makeconftest(CONTROLLER)
    out = pytester.path / "probe"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CONFORMANCE_")
        and k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "CI")
    }
    env["PROBE_OUT"] = str(out)
    pytester._monkeypatch.setattr(os, "environ", env)  # the subprocess inherits exactly this
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    found = [json.loads(p.read_text()) for p in sorted(pytester.path.glob("probe.*")) if p.suffix != ".controller"]
    controller = json.loads((pytester.path / "probe.controller").read_text())
    return result, found, controller


def test_an_unrelated_project_sees_no_torch_no_profile_no_header_and_no_reports(pytester):
    result, found, _ = _probe(pytester)
    assert result.ret == 0, result.stdout.str()
    (probe,) = found
    assert probe["torch_imported"] is False
    assert probe["profile"] == "default" and probe["deadline_ms"] == 200
    assert "conformance:" not in result.stdout.str() and "torch-" not in result.stdout.str()  # no header
    assert not (pytester.path / "reports").exists()


def test_an_unrelated_project_keeps_xdists_load_and_its_thread_variables(pytester):
    result, found, controller = _probe(pytester, "-n", "2")
    assert result.ret == 0, result.stdout.str()
    assert found and controller["dist"] == "load"
    assert all(v is None for p in found for v in p["threads"].values())
    assert all(p["torch_imported"] is False for p in found)
    assert not (pytester.path / "reports").exists()


def test_a_bogus_hypothesis_profile_is_a_usage_error_not_an_internal_error(pytester):
    pytester.makepyfile(test_other="def test_ok():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--hypothesis-profile=bogus")
    assert result.ret == 4, result.stdout.str() + result.stderr.str()
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text
    assert "bogus" in text and "profile" in text
