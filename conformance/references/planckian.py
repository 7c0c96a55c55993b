"""Planckian jitter, from the published data: the authors' illuminant table, transcribed here.

Source: S. Zini, A. Gomez-Villa, M. Buzzelli, B. Twardowski, A. D. Bagdanov, J. van de Weijer,
"Planckian Jitter: countering the color-crippling effects of color jitter on self-supervised
training", ICLR 2023; table `pl` in planckianTransforms.py of the authors' repository
https://github.com/TheZino/PlanckianJitter (the paper kornia's RandomPlanckianJitter cites).
Each row is the sRGB colour of an illuminant at L* = 50; the jitter multiplies red by R/G and
blue by B/G and keeps green.  The blackbody rows are Planck radiators at 3000 K to 15000 K in
steps of 500 K (the defaults of the authors' rgbblackbodysampler.m: 400-700 nm every 10 nm,
CIE 1931 observer); the CIED rows are CIE daylight illuminants.

The reference never reads the library's own table: a wrong number there must fail the check
(tests/test_verdicts.py plants one, tests/test_reference_planckian.py re-derives the blackbody rows
from Planck's law to check this transcription).
"""

from __future__ import annotations

import numpy as np

# (R, G, B) per row, 4 decimals as published
BLACKBODY_RGB = np.array(
    [
        [0.6743, 0.4029, 0.0013],
        [0.6281, 0.4241, 0.1665],
        [0.5919, 0.4372, 0.2513],
        [0.5623, 0.4457, 0.3154],
        [0.5376, 0.4515, 0.3672],
        [0.5163, 0.4555, 0.4103],
        [0.4979, 0.4584, 0.4468],
        [0.4816, 0.4604, 0.4782],
        [0.4672, 0.4619, 0.5053],
        [0.4542, 0.4630, 0.5289],
        [0.4426, 0.4638, 0.5497],
        [0.4320, 0.4644, 0.5681],
        [0.4223, 0.4648, 0.5844],
        [0.4135, 0.4651, 0.5990],
        [0.4054, 0.4653, 0.6121],
        [0.3980, 0.4654, 0.6239],
        [0.3911, 0.4655, 0.6346],
        [0.3847, 0.4656, 0.6444],
        [0.3787, 0.4656, 0.6532],
        [0.3732, 0.4656, 0.6613],
        [0.3680, 0.4655, 0.6688],
        [0.3632, 0.4655, 0.6756],
        [0.3586, 0.4655, 0.6820],
        [0.3544, 0.4654, 0.6878],
        [0.3503, 0.4653, 0.6933],
    ]
)
BLACKBODY_KELVIN = np.arange(3000, 15001, 500)

CIED_RGB = np.array(
    [
        [0.5829, 0.4421, 0.2288],
        [0.5510, 0.4514, 0.2948],
        [0.5246, 0.4576, 0.3488],
        [0.5021, 0.4618, 0.3941],
        [0.4826, 0.4646, 0.4325],
        [0.4654, 0.4667, 0.4654],
        [0.4502, 0.4681, 0.4938],
        [0.4364, 0.4692, 0.5186],
        [0.4240, 0.4700, 0.5403],
        [0.4127, 0.4705, 0.5594],
        [0.4023, 0.4709, 0.5763],
        [0.3928, 0.4713, 0.5914],
        [0.3839, 0.4715, 0.6049],
        [0.3757, 0.4716, 0.6171],
        [0.3681, 0.4717, 0.6281],
        [0.3609, 0.4718, 0.6380],
        [0.3543, 0.4719, 0.6472],
        [0.3480, 0.4719, 0.6555],
        [0.3421, 0.4719, 0.6631],
        [0.3365, 0.4719, 0.6702],
        [0.3313, 0.4719, 0.6766],
        [0.3263, 0.4719, 0.6826],
        [0.3217, 0.4719, 0.6882],
    ]
)

TABLES = {"blackbody": BLACKBODY_RGB, "CIED": CIED_RGB}


def gains(mode: str) -> np.ndarray:
    """(rows, 3) per-channel multipliers: R/G, 1, B/G, computed in float32 from the published rows
    as the jitter computes them (the table is float32 data), then widened to float64."""
    rgb = TABLES[mode].astype(np.float32)
    ratios = np.stack([rgb[:, 0] / rgb[:, 1], np.ones(len(rgb), np.float32), rgb[:, 2] / rgb[:, 1]], axis=1)
    return ratios.astype(np.float64)


def planckian_jitter(image: np.ndarray, mode: str, rows: np.ndarray) -> np.ndarray:
    """(B, 3, H, W) in float64: clamp to [0, 1], scale red and blue by the row's gains, clamp again."""
    selected = gains(mode)[np.asarray(rows, dtype=np.int64)][:, :, None, None]
    return np.clip(np.clip(image, 0, 1) * selected, 0, 1)
