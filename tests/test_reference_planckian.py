"""The transcribed Planckian table (conformance.references.planckian) checked against its derivation.

The authors derive each blackbody row as their rgbblackbodysampler.m documents: a Planck radiator
sampled at 400-700 nm every 10 nm, integrated against the CIE 1931 2-degree observer, normalised
to Y = 1, taken to CIE L*a*b* (D65 white) with L* set to 50, and back to gamma-encoded sRGB.  Doing
the same here reproduces every published row to its 4 decimals, so a typo in the transcription
(or in a library's copy) is caught by physics, not by comparing two copies of one table.
"""

import numpy as np

from conformance.references.planckian import BLACKBODY_KELVIN, BLACKBODY_RGB, CIED_RGB

# CIE 1931 2-degree colour matching functions x, y, z at 400, 410, ..., 700 nm (CIE 015:2004),
# as tabulated in the authors' rgbblackbodysampler.m
CIE_1931 = np.array(
    [
        [0.01431, 0.000396, 0.06785001],
        [0.04351, 0.00121, 0.2074],
        [0.13438, 0.004, 0.6456],
        [0.2839, 0.0116, 1.3856],
        [0.34828, 0.023, 1.74706],
        [0.3362, 0.038, 1.77211],
        [0.2908, 0.06, 1.6692],
        [0.19536, 0.09098, 1.28764],
        [0.09564, 0.13902, 0.8129501],
        [0.03201, 0.20802, 0.46518],
        [0.0049, 0.323, 0.272],
        [0.0093, 0.503, 0.1582],
        [0.06327, 0.71, 0.07824999],
        [0.1655, 0.862, 0.04216],
        [0.2904, 0.954, 0.0203],
        [0.4334499, 0.9949501, 0.008749999],
        [0.5945, 0.995, 0.0039],
        [0.7621, 0.952, 0.0021],
        [0.9163, 0.87, 0.001650001],
        [1.0263, 0.757, 0.0011],
        [1.0622, 0.631, 0.0008],
        [1.0026, 0.503, 0.00034],
        [0.8544499, 0.381, 0.00019],
        [0.6424, 0.265, 0.00004999999],
        [0.4479, 0.175, 0.00002],
        [0.2835, 0.107, 0.0],
        [0.1649, 0.061, 0.0],
        [0.0874, 0.032, 0.0],
        [0.04677, 0.017, 0.0],
        [0.0227, 0.00821, 0.0],
        [0.01135916, 0.004102, 0.0],
    ]
)
WAVELENGTHS_M = np.arange(400, 701, 10) * 1e-9
D65 = np.array([0.9504, 1.0, 1.0888])  # the white point of the authors' conversions
XYZ_TO_LINEAR_SRGB = np.array(
    [[3.2404542, -1.5371385, -0.4985314], [-0.9692660, 1.8760108, 0.0415560], [0.0556434, -0.2040259, 1.0572252]]
)
DELTA = 6 / 29  # CIE L*a*b* threshold
SECOND_RADIATION_CONSTANT = 6.626176e-34 * 2.99792458e8 / 1.380662e-23  # h c / k, the constants the authors use


def _lab_f(t):
    return np.where(t > DELTA**3, np.cbrt(t), t / (3 * DELTA**2) + 4 / 29)


def _lab_f_inverse(t):
    return np.where(t > DELTA, t**3, 3 * DELTA**2 * (t - 4 / 29))


def blackbody_srgb(kelvin: float) -> np.ndarray:
    """sRGB at L* = 50 of a Planck radiator, as the authors compute it."""
    radiance = 1.0 / (WAVELENGTHS_M**5 * (np.exp(SECOND_RADIATION_CONSTANT / (WAVELENGTHS_M * kelvin)) - 1))
    xyz = radiance @ CIE_1931
    fx, fy, fz = _lab_f(xyz / xyz[1] / D65)
    a, b = 500 * (fx - fy), 200 * (fy - fz)
    fy = (50 + 16) / 116
    linear = XYZ_TO_LINEAR_SRGB @ (_lab_f_inverse(np.array([fy + a / 500, fy, fy - b / 200])) * D65)
    return np.where(linear <= 0.0031308, 12.92 * linear, 1.055 * np.abs(linear) ** (1 / 2.4) - 0.055)


DERIVED = np.stack([blackbody_srgb(kelvin) for kelvin in BLACKBODY_KELVIN])


def test_every_blackbody_row_follows_from_plancks_law_to_its_four_decimals():
    # measured 9.0e-5 at worst: 5e-5 of rounding to 4 decimals plus the conversion matrices' precision
    assert np.abs(DERIVED - BLACKBODY_RGB).max() < 2e-4


def test_a_single_transposed_digit_in_the_table_would_be_caught():
    typo = BLACKBODY_RGB.copy()
    typo[6, 0] = 0.4997  # 0.4979 with two digits swapped
    assert np.abs(DERIVED - typo).max() > 1e-3


def test_the_daylight_rows_run_from_warm_to_cool_like_the_blackbody_ones():
    """No published derivation to redo for CIED here; its shape is checked: red falls and blue rises
    monotonically with temperature, and green stays within 0.44-0.48 as for the blackbody rows."""
    for table in (BLACKBODY_RGB, CIED_RGB):
        assert (np.diff(table[:, 0]) < 0).all() and (np.diff(table[:, 2]) > 0).all()
    assert CIED_RGB[:, 1].min() > 0.44 and CIED_RGB[:, 1].max() < 0.48
