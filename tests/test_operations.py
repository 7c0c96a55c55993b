"""Operations with several implementations: shared cases, documented defaults, host libraries, the
cross-library measurement and page, and the run order that keeps an operation's items together."""

import json
from pathlib import Path

import pytest
from hypothesis import strategies as st

from conformance import OMIT, PILLOW, TV2, Implementation, Operation, Rule, Tolerance, keywords
from conformance.store.reader import read_outcomes
from conformance.store.summary_reader import read_summary

CASES = """
import numpy as np
import torch
from hypothesis import strategies as st
from conformance import Rule, Tolerance, image_recipes
from conformance.spec.adapters import per_host_image
from conformance import KORNIA, PILLOW, TV2, Implementation, Operation, keywords

EXACT = [Rule(Tolerance("exact", reason="a copy of input pixels"))]
recipes = lambda dtype: image_recipes(dtype, max_side=12, contents=["noise"])

def flip_reference(image, case):
    return image[..., ::-1].copy()

def host_flip(array, params):          # a host library: one H x W x C image at a time
    return array[:, ::-1]

def flip_two_on_one_pixel(image, params):   # a library that strays: +2 on the first pixel
    out = torch.flip(image, dims=[-1]).clone()
    out[..., 0, 0, 0] = (out[..., 0, 0, 0].to(torch.int32) + 2).clamp(0, 255).to(out.dtype)
    return out

FLIP = Operation(name="flip", reference=flip_reference, params=lambda recipe, mode: st.just({}),
                 dtypes=("uint8",), modes=("default",), tolerances=EXACT, recipes=recipes,
                 implementations=[
                     Implementation(library=TV2, call=lambda image, p: torch.flip(image, dims=[-1])),
                     Implementation(library=PILLOW, call=per_host_image(host_flip), host_only="a host library",
                                    spec={"keeps_memory_format": False, "host_transfers": "a host library"}),
                     Implementation(library=KORNIA, call=flip_two_on_one_pixel),
                 ])
globals().update(FLIP.tests())

def fill_reference(image, case):
    return np.full_like(image, case.params["value"])

@st.composite
def fill_params(draw, recipe, mode):
    return {"value": draw(st.integers(0, 255))}

def fill_with_another_default(image, params):   # its documented default is 0; it really uses 7
    return torch.full_like(image, params.get("value", 7))

FILL = Operation(name="fill", reference=fill_reference, params=fill_params, optional=("value",),
                 dtypes=("uint8",), modes=("default",), tolerances=EXACT, recipes=recipes,
                 implementations=[Implementation(library=TV2, call=fill_with_another_default, defaults={"value": 0})])
globals().update(FILL.tests())
"""
# The dev profile draws random cases per test: implementations see the same cases only because they share them.
QUICK = ["-p", "no:cacheprovider", "--hypothesis-profile=dev", "--max-examples=12", "--targets=cpu,vcuda:0"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One run of the module above (pytester is function-scoped, so a plain subprocess)."""
    import subprocess
    import sys

    folder = tmp_path_factory.mktemp("operations")
    (folder / "test_ops.py").write_text(CASES)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "test_ops.py", *QUICK], cwd=folder, capture_output=True, text=True, env=_env()
    )
    return folder, done


def _env():
    import os

    return os.environ | {"PYTHONPATH": str(Path(__file__).parents[1])}


def _records(folder):
    records, _ = read_outcomes(folder / "reports" / "latest")
    return records


def test_implementations_check_the_same_cases_and_a_host_library_runs_on_the_cpu_only(run):
    folder, _ = run
    records = _records(folder)
    cases = {
        op: {
            json.dumps(r["case"]["recipe"], sort_keys=True)
            for r in records
            if r.get("op") == op and r.get("kind") == "outcome" and r.get("phase") == "explore"
        }
        for op in ("flip_tv2", "flip_pil", "flip_kornia")
    }
    assert cases["flip_tv2"] and cases["flip_tv2"] == cases["flip_pil"] == cases["flip_kornia"]
    targets = {(r["op"], r["target"]) for r in records if r.get("kind") == "outcome"}
    assert ("flip_pil", "cpu") in targets and ("flip_pil", "vcuda:0") not in targets
    assert ("flip_tv2", "vcuda:0") in targets


def test_the_reference_check_carries_the_measurement_against_earlier_libraries(run):
    folder, _ = run
    records = _records(folder)
    pil = next(
        r for r in records if r.get("op") == "flip_pil" and r.get("check") == "reference" and r.get("kind") == "outcome"
    )
    assert pil["details"]["peers"]["flip_tv2"] == pil["details"]["peers"]["flip_tv2"] | {
        "library": "torchvision v2",
        "target": "cpu",
        "max_abs": 0.0,
    }
    # a device implementation is compared with the host library's cpu output
    strays = [
        r
        for r in records
        if r.get("op") == "flip_kornia"
        and r.get("check") == "reference"
        and r.get("target") == "vcuda:0"
        and r.get("kind") == "outcome"
    ]
    assert strays and all(r["details"]["peers"]["flip_pil"]["target"] == "cpu" for r in strays)
    assert max(r["details"]["peers"]["flip_tv2"]["max_abs"] for r in strays) == 2.0
    summary = read_summary(folder / "reports" / "latest")
    libraries = [i["library"] for i in summary["operations"]["flip"]["implementations"]]
    assert libraries == ["torchvision v2", "Pillow", "kornia"]


def test_a_library_that_strays_fails_its_reference_check_and_keeps_its_worst_cases(run):
    folder, done = run
    out = done.stdout
    assert "flip_kornia on cpu [uint8, default]: reference failed (values)" in out
    assert "flip_tv2" not in "".join(line for line in out.splitlines() if line.startswith("FAILED"))
    worst = [r for r in _records(folder) if r.get("kind") == "worst" and r["op"].startswith("flip")]
    assert {(r["op"], r["against"]) for r in worst if r["target"] == "cpu"} == {
        ("flip_kornia", "reference"),
        ("flip_kornia", "flip_tv2"),
        ("flip_kornia", "flip_pil"),
    }
    assert all((folder / "reports" / "latest" / r["artifact"]).is_file() and r["max_abs"] == 2.0 for r in worst)
    page = (folder / "reports" / "latest" / "crosslib.html").read_text()
    assert "flip_kornia" in page and "Against the reference: max |d| 2" in page
    assert 'href="crosslib.html"' in (folder / "reports" / "latest" / "index.html").read_text()


def test_a_default_other_than_the_documented_one_fails_where_the_keyword_is_left_out(run):
    folder, done = run
    assert "fill_tv2 on cpu [uint8, default]: reference failed (values)" in done.stdout
    failing = [r for r in _records(folder) if r.get("op") == "fill_tv2" and r.get("verdict") == "fail"]
    assert failing and all(r["case"]["params"].get(OMIT) == ["value"] for r in failing)
    assert all(r["metrics"]["worst_actual"] == 7 and r["metrics"]["worst_expected"] == 0 for r in failing)


def test_an_operations_items_run_together_variant_by_variant(tmp_path):
    import subprocess
    import sys

    (tmp_path / "test_ops.py").write_text(CASES)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "test_ops.py", "--collect-only", "-q", *QUICK],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=_env(),
    )
    ids = [line for line in done.stdout.splitlines() if "::test_" in line]
    flips = [i.split("::")[1].split("[")[0] for i in ids if "test_flip" in i]
    assert flips[:3] == ["test_flip_tv2"] * 3  # cpu's checks first, then each library in the order listed
    assert flips.index("test_flip_pil") < flips.index("test_flip_kornia")
    assert not any("flip_pil[vcuda" in i for i in ids)


def _operation(**changes):
    fields = {
        "name": "op",
        "reference": lambda image, case: image,
        "params": lambda recipe, mode: st.just({"k": 1}),
        "dtypes": ("uint8",),
        "modes": ("m",),
        "tolerances": [Rule(Tolerance("exact", reason="copy"))],
        "implementations": [Implementation(library=TV2, call=lambda image, p: image)],
    }
    return Operation(**(fields | changes))


def test_operations_refuse_what_cannot_mean_anything():
    with pytest.raises(ValueError, match="defaults for \\['sigma'\\], which are not optional"):
        _operation(implementations=[Implementation(library=TV2, call=lambda i, p: i, defaults={"sigma": 1})])
    with pytest.raises(ValueError, match="named alike"):
        _operation(implementations=[Implementation(library=TV2, call=lambda i, p: i)] * 2)
    with pytest.raises(ValueError, match="implements none of its"):
        _operation(implementations=[Implementation(library=TV2, call=lambda i, p: i, dtypes=("float32",))]).specs()
    with pytest.raises(ValueError, match="exactly one of call= or module="):
        _operation(implementations=[Implementation(library=PILLOW)])


def test_left_out_keywords_are_not_passed_and_take_the_documented_default_in_the_reference():
    impl = Implementation(library=TV2, call=lambda i, p: i, defaults={"sigma": lambda p: p["size"] / 4, "fill": 0})
    params = {"size": 8, "sigma": 3.0, "fill": 5, OMIT: ["sigma", "fill"]}
    assert impl.passed(params) == {"size": 8}
    assert impl.effective(params) == {"size": 8, "sigma": 2.0, "fill": 0}
    other = Implementation(library=PILLOW, call=lambda i, p: i)  # no default: called with the drawn value
    assert other.passed(params) == {"size": 8, "sigma": 3.0, "fill": 5}
    assert keywords({"sigma": 2.0, "mode": "b"}, sigma="sigmaX", mode=("interpolation", str.upper), fill=None) == {
        "sigmaX": 2.0,
        "interpolation": "B",
    }


def test_a_crop_that_returns_a_view_keeps_no_layout_of_its_own(virtual_device):
    from conformance.devices.targets import CPU
    from conformance.devices.virtual_target import virtual_targets
    from conformance.engine.cases import CaseCache, check_case
    from conformance.spec.recipes import Case, Recipe

    crop = _operation(
        name="crop",
        reference=lambda image, case: image[..., 1:3, 1:4],
        implementations=[Implementation(library=TV2, call=lambda image, p: image[..., 1:3, 1:4])],
    )
    case = Case("crop_tv2", Recipe(5, 6, channels=3, dtype="uint8", layout="channels_last"), {"k": 1})
    for target in (CPU, virtual_targets(2)[1]):
        found = {o.check: o for o in check_case(crop.specs()[0], case, target, CaseCache(), "m").outcomes}
        assert found["invariants"].passed, found["invariants"].message
    copied = _operation(implementations=[Implementation(library=TV2, call=lambda image, p: image.contiguous().clone())])
    found = {
        o.check: o
        for o in check_case(copied.specs()[0], Case("op_tv2", case.recipe, {"k": 1}), CPU, CaseCache(), "m").outcomes
    }
    assert not found["invariants"].passed and "memory format" in found["invariants"].message


INVALID = """
import numpy as np
import torch
from hypothesis import strategies as st
from conformance import KORNIA, OPENCV, PILLOW, TV1, TV2, Accepted, Implementation, Operation, Rule, Tolerance
from conformance import image_recipes

def gain_params(recipe, mode):
    low, high = {"valid": (0, 2), "negative": (-2, -0.25)}[mode]
    return st.sampled_from([low, high]).map(lambda g: {"gain": float(g)})

def refusing(image, params):
    if params["gain"] < 0:
        raise ValueError("gain must be non-negative")
    return image * params["gain"]

def clamping(image, params):        # documents that a negative gain counts as 0
    return image * max(params["gain"], 0.0)

def silently(image, params):        # returns an image for a negative gain, documenting nothing
    return image * params["gain"]

def wrong_class(image, params):
    if params["gain"] < 0:
        raise TypeError("a negative gain")
    return image * params["gain"]

GAIN = Operation(
    name="gain", reference=lambda image, case: image * case.params["gain"], params=gain_params,
    dtypes=("float32",), modes=("valid",), invalid={"negative": "a negative gain"},
    tolerances=[Rule(Tolerance("float32", atol=1e-6, reason="one product"))],
    recipes=lambda dtype: image_recipes(dtype, max_side=6, contents=["noise"]),
    implementations=[
        Implementation(library=TV2, call=refusing, raises={"negative": ValueError}),
        Implementation(library=TV1, call=refusing),   # declares nothing: must raise some exception
        Implementation(library=KORNIA, call=clamping,
                       accepts={"negative": Accepted("gain < 0 counts as 0 (the library's docs)",
                                                     meaning=lambda p: p | {"gain": 0.0})}),
        Implementation(library=PILLOW, call=silently),
        Implementation(library=OPENCV, call=wrong_class, raises={"negative": ValueError}),
        Implementation(library=TV2, name="gain_no_such", call=refusing, not_applicable={"negative": "no gain"}),
    ],
)
globals().update(GAIN.tests())
"""


def test_every_library_is_held_to_every_invalid_input_and_the_page_says_who_accepts_what(pytester):
    """An error mode belongs to the operation: each implementation raises its declared class, raises anything when it
    declares nothing, documents accepting the input (then its meaning is checked against the reference), or has no
    such input; a library that returns a result where it should refuse fails, and the cross-library page's table of
    invalid inputs shows who refuses what."""
    pytester.makepyfile(test_gain=INVALID)
    recorded = pytester.inline_run(
        "-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=6", "--targets=cpu", "-k", "negative"
    )
    reports = recorded.getreports("pytest_runtest_logreport")
    failed = {r.nodeid.split("::")[1] for r in reports if r.failed}
    assert failed == {"test_gain_pil[cpu-float32-negative-error]", "test_gain_cv2[cpu-float32-negative-error]"}
    out = "\n".join(str(r.longrepr) for r in reports if r.failed)
    assert "returned a result for an invalid input (a negative gain); expected Exception" in out
    assert "raised TypeError; expected ValueError" in out
    collected = {r.nodeid.split("::")[1] for r in reports if r.when == "call"}
    assert "test_gain_kornia[cpu-float32-negative-reference]" in collected  # the documented meaning is checked
    assert not any(n.startswith("test_gain_no_such") for n in collected)
    page = (pytester.path / "reports" / "latest" / "crosslib.html").read_text()
    table = page[page.index('id="refusals"') : page.index("</table>", page.index('id="refusals"'))]
    assert "a negative gain" in table and "accepts (documented)" in table and "n/a" in table
    assert table.count(">raises<") == 2  # v2 (its class) and v1 (any class)
    assert "gain &lt; 0 counts as 0" in table  # what kornia declares, escaped


def test_an_implementation_declares_each_invalid_input_once():
    with pytest.raises(ValueError, match="declared twice"):
        _operation(
            invalid={"bad": "bad"},
            modes=("default", "bad"),
            implementations=[
                Implementation(
                    library=TV2, call=lambda i, p: i, raises={"bad": ValueError}, not_applicable={"bad": "none"}
                )
            ],
        )
    with pytest.raises(ValueError, match="not error modes"):
        _operation(implementations=[Implementation(library=TV2, call=lambda i, p: i, accepts={"nope": None})])


def test_an_error_modes_items_check_fewer_cases_than_the_profile_asks(pytester):
    """An invalid parameter is refused whatever the image: an error mode's variant stops at ERROR_MODE_EXAMPLES cases
    (its items are the harness's bookkeeping around a raise), while the valid variants draw what the profile asks."""
    from conformance.engine.case_sources import ERROR_MODE_EXAMPLES

    pytester.makepyfile(test_gain=INVALID)
    pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--hypothesis-profile=ci", "--max-examples=60", "--targets=cpu", "-k", "gain_tv2"
    )
    summary = read_summary(pytester.path / "reports" / "latest")
    examples = {(g["mode"], g["check"]): g["examples"] for g in summary["groups"] if g["op"] == "gain_tv2"}
    assert 0 < examples[("negative", "error")] <= ERROR_MODE_EXAMPLES < examples[("valid", "error")]


def test_a_dtype_the_imported_release_does_not_take_yet_is_not_drawn_and_the_run_says_so(monkeypatch):
    """torchvision takes uint16 images from 0.20: on an older release its implementations draw no uint16 (a
    release that never documented them failed every uint16 item of the tone and colour families on 0.15.2)."""
    from conformance.spec import versions

    both = {
        "dtypes": ("uint8", "uint16"),
        "implementations": [
            Implementation(library=TV2, call=lambda image, p: image),
            Implementation(library=PILLOW, call=lambda i, p: i),
        ],
    }
    monkeypatch.setattr(versions, "below", lambda package, version: package == "torchvision" and version == "0.20")
    monkeypatch.setattr(versions, "version_of", lambda package: "0.15.2")
    tv2, pil = _operation(**both).specs()
    assert tv2.dtypes == ("uint8",) and "torchvision 0.15.2 < 0.20: no uint16" in tv2.narrowed
    assert pil.dtypes == ("uint8", "uint16") and not pil.narrowed
    monkeypatch.setattr(versions, "below", lambda package, version: False)
    assert _operation(**both).specs()[0].dtypes == ("uint8", "uint16")
