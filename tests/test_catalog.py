"""Each op family catches a planted wrong implementation; error modes compare exception classes."""

import dataclasses

import torch
import torchvision.transforms.v2.functional as F
from case_modules import case_module

from conformance.devices.targets import CPU
from conformance.devices.virtual_target import virtual_targets
from conformance.engine.cases import CaseCache, check_case
from conformance.spec.opspec import ExpectedError
from conformance.spec.recipes import Case, Recipe

VCUDA1 = virtual_targets(2)[1]


normalize_cases, pil_cases, planckian_cases = (case_module(n) for n in ("test_normalize", "test_pil", "test_planckian"))


def outcomes(spec, case, mode, target=CPU):
    return {o.check: o for o in check_case(spec, case, target, CaseCache(), mode).outcomes}


def replaced(spec, **changes):
    return dataclasses.replace(spec, name="planted", **changes)


NORMALIZE_CASE = Case(
    "planted",
    Recipe(5, 6, channels=3, batch=(2,), dtype="float32", seed=4),
    {"mean": [0.5, 0.25, 0.125], "std": [0.25, 0.5, 0.125]},
)


def test_the_real_normalize_passes_and_one_dividing_by_std_plus_1e3_fails():
    real = outcomes(normalize_cases.NORMALIZE, NORMALIZE_CASE, "valid", VCUDA1)
    upload = real.pop("constant_upload")  # v2 copies mean and std to the device on every call
    assert upload.warning and "host -> device copy of a constant [3] float32 (12 bytes)" in upload.message
    assert all(o.passed for o in real.values()), {k: o.message for k, o in real.items()}
    planted = replaced(
        normalize_cases.NORMALIZE, call=lambda image, p: F.normalize(image, p["mean"], [s + 1e-3 for s in p["std"]])
    )
    reference = outcomes(planted, NORMALIZE_CASE, "valid")["reference"]
    assert not reference.passed and "[tolerance 'float32-ops']" in reference.message


def test_error_modes_record_the_exception_class_and_compare_it_across_devices():
    zero_std = dataclasses.replace(NORMALIZE_CASE, params={"mean": [0.5] * 3, "std": [0.25, 0.0, 0.5]})
    recorded = outcomes(normalize_cases.NORMALIZE, zero_std, "std-zero", VCUDA1)["error"]
    assert recorded.passed
    assert recorded.details == {"raised": "ValueError", "cpu_raised": "ValueError", "expected": "ValueError"}
    assert recorded.message.startswith("raises ValueError: std evaluated to zero")

    def rejects_on_cpu_only(image, params):  # "garbage on one device": inf where the cpu raises
        if image.is_cuda:
            return (image - 0.5) / torch.tensor(params["std"], device=image.device).view(-1, 1, 1)
        return F.normalize(image, params["mean"], params["std"])

    error = outcomes(replaced(normalize_cases.NORMALIZE, call=rejects_on_cpu_only), zero_std, "std-zero", VCUDA1)[
        "error"
    ]
    assert not error.passed and "returned a result for an invalid input (a std of 0 for some channel)" in error.message

    def other_class_on_device(image, params):
        if image.is_cuda:
            raise TypeError("std must be positive")
        return F.normalize(image, params["mean"], params["std"])

    other_class = replaced(normalize_cases.NORMALIZE, call=other_class_on_device)
    error = outcomes(other_class, zero_std, "std-zero", VCUDA1)["error"]
    assert not error.passed and error.message.startswith("raised TypeError; expected ValueError for an invalid input")
    either = dataclasses.replace(
        other_class, error_modes={"std-zero": ExpectedError("a zero std", (ValueError, TypeError))}
    )
    error = outcomes(either, zero_std, "std-zero", VCUDA1)["error"]  # both classes allowed: still not the cpu's
    assert not error.passed and "raised TypeError on vcuda:1 but the cpu raised ValueError" in error.message


PIL_CASE = Case("planted", Recipe(4, 7, channels=3, dtype="float32", content="noise", seed=5), {"mode": "RGB"})


def test_a_pil_conversion_that_rounds_differently_is_caught():
    def saturating_but_truncating(image, params):
        return F.to_pil_image(image.mul(255).clamp(0, 255).to(torch.uint8), mode=params["mode"])

    reference = outcomes(replaced(pil_cases.TO_PIL_V2, call=saturating_but_truncating), PIL_CASE, "RGB")["reference"]
    assert not reference.passed and "max abs diff 1;" in reference.message

    def rounding(image, params):
        return F.to_pil_image(image.mul(255).add(0.5).clamp(0, 255).to(torch.uint8), mode=params["mode"])

    found = outcomes(replaced(pil_cases.TO_PIL_V2, call=rounding), PIL_CASE, "RGB", VCUDA1)
    assert all(o.passed for o in found.values()), {k: o.message for k, o in found.items()}


def test_a_round_trip_that_shifts_a_channel_is_caught():
    case = Case("planted", Recipe(4, 7, channels=3, dtype="uint8", seed=6), {"mode": "RGB"})
    shifted = replaced(
        pil_cases.PIL_TO_TENSOR_V2,
        call=lambda image, p: F.pil_to_tensor(F.to_pil_image(image, mode="RGB")).roll(1, dims=0),
    )
    reference = outcomes(shifted, case, "RGB")["reference"]
    assert not reference.passed and reference.metrics.max_abs > 0
    assert all(o.passed for o in outcomes(pil_cases.PIL_TO_TENSOR_V2, case, "RGB", VCUDA1).values())


def test_a_planckian_table_off_by_one_row_is_caught():
    import kornia

    class OffByOneRow(kornia.augmentation.RandomPlanckianJitter):
        def apply_transform(self, input, params, flags, transform=None):
            rows = self.pl.shape[0]
            return super().apply_transform(input, params | {"idx": (params["idx"] + 1) % rows}, flags, transform)

    case = Case("planted", Recipe(5, 4, channels=3, batch=(2,), dtype="float32", seed=7), {"mode": "blackbody"})
    real = outcomes(planckian_cases.PLANCKIAN, case, "blackbody", VCUDA1)
    assert all(o.passed for o in real.values()), {k: o.message for k, o in real.items()}
    planted = replaced(
        planckian_cases.PLANCKIAN,
        module=dataclasses.replace(
            planckian_cases.PLANCKIAN.module, build=lambda params: OffByOneRow(mode=params["mode"], p=1.0)
        ),
    )
    reference = outcomes(planted, case, "blackbody")["reference"]
    assert not reference.passed and reference.metrics.max_abs > 0.01


def test_ops_missing_from_the_installed_libraries_are_skipped_naming_the_version():
    needs_future = replaced(planckian_cases.PLANCKIAN, requires={"kornia": ">=99"})
    assert needs_future.unmet_requirement().startswith("planted needs kornia>=99; imported kornia 0.")
    absent = replaced(planckian_cases.PLANCKIAN, requires={"no-such-package": ">=1"})
    assert absent.unmet_requirement() == "planted needs no-such-package>=1, which is not installed (or does not import)"
    assert planckian_cases.PLANCKIAN.unmet_requirement() is None
    missing = replaced(planckian_cases.PLANCKIAN, needs=("kornia.augmentation.RandomTimeTravel",))
    assert missing.unmet_requirement().startswith("planted needs kornia.augmentation.RandomTimeTravel, which kornia 0.")
    assert missing.unmet_requirement().endswith(" lacks")
    uninstalled = replaced(planckian_cases.PLANCKIAN, needs=("no_such_package.decoders.decode_jpeg",))
    assert uninstalled.unmet_requirement() == (
        "planted needs no_such_package.decoders.decode_jpeg, and no_such_package is not installed (or does not import)"
    )


def test_a_jpeg_decoder_with_a_shifted_channel_is_caught():
    jpeg_cases = case_module("test_jpeg")
    case = Case("planted", Recipe(9, 11, channels=3, dtype="uint8", content="gradient", seed=8), {"quality": 80})
    real = outcomes(jpeg_cases.DECODE_JPEG, case, "rgb")
    assert all(o.passed for o in real.values()), {k: o.message for k, o in real.items()}
    shifted = replaced(
        jpeg_cases.DECODE_JPEG,
        call=lambda image, params: jpeg_cases._decode_with_torchvision(image, params).roll(1, dims=0),
    )
    found = outcomes(shifted, case, "rgb")
    assert not found["reference"].passed and not found["fidelity"].passed
    assert "PSNR against the input" in found["fidelity"].message


def test_kornias_codec_is_held_to_its_psnr_floor():
    jpeg_cases = case_module("test_jpeg_kornia")
    case = Case(
        "planted", Recipe(16, 16, channels=3, batch=(1,), dtype="float32", content="gradient", seed=9), {"quality": 60}
    )
    real = outcomes(jpeg_cases.JPEG_KORNIA, case, "rgb", VCUDA1)
    assert all(o.passed for o in real.values()), {k: o.message for k, o in real.items()}
    inverted = replaced(jpeg_cases.JPEG_KORNIA, call=lambda image, params: 1 - jpeg_cases._kornia_codec(image, params))
    reference = outcomes(inverted, case, "rgb")["reference"]
    assert not reference.passed and "PSNR" in reference.message
