"""The float64 resize reference, checked against hand-worked values and against Pillow."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from conformance.references import resample

PIL_FILTERS = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC}
side = st.integers(1, 40)


def pillow_resize(image: np.ndarray, size: tuple[int, int], mode: str) -> np.ndarray:
    """Pillow's float ('F') resampling: convolution with the filter stretched when downscaling."""
    pil = Image.fromarray(image.astype(np.float32), mode="F")
    filt = Image.Resampling.NEAREST if mode == "nearest-exact" else PIL_FILTERS[mode]
    return np.asarray(pil.resize((size[1], size[0]), filt), dtype=np.float64)


@settings(max_examples=150, deadline=None)
@given(h=side, w=side, oh=side, ow=side, mode=st.sampled_from(["bilinear", "bicubic"]), seed=st.integers(0, 99))
def test_antialias_matches_pillow(h, w, oh, ow, mode, seed):
    image = np.random.default_rng(seed).random((h, w))
    ours = resample.resize(image, (oh, ow), mode, antialias=True)
    np.testing.assert_allclose(ours, pillow_resize(image, (oh, ow), mode), atol=2e-5)


@settings(max_examples=150, deadline=None)
@given(h=side, w=side, oh=side, ow=side, seed=st.integers(0, 99))
def test_nearest_exact_matches_pillow_nearest(h, w, oh, ow, seed):
    """Equal except where a sample lands exactly on a pixel edge: there Pillow's double-precision
    position (e.g. 4.5 * (4/6) = 2.9999999999999996) rounds down, while the reference is exact."""
    image = np.random.default_rng(seed).random((h, w))
    ours = resample.resize(image, (oh, ow), "nearest-exact", antialias=False)
    rows = [(2 * d + 1) * h % (2 * oh) != 0 for d in range(oh)]
    cols = [(2 * d + 1) * w % (2 * ow) != 0 for d in range(ow)]
    keep = np.ix_(rows, cols)
    np.testing.assert_array_equal(ours.astype(np.float32)[keep], pillow_resize(image, (oh, ow), "nearest-exact")[keep])


def test_hand_worked_values():
    row = np.array([[0.0, 1.0]])
    # 2 -> 4 bilinear: src = (dst + .5)/2 - .5 = -.25 (clamped to 0), .25, .75, 1.25 (tap clamped)
    np.testing.assert_allclose(resample.resize(row, (1, 4), "bilinear", False), [[0, 0.25, 0.75, 1]])
    # legacy nearest floors dst * in / out: 2 -> 3 picks 0, 0, 1
    np.testing.assert_array_equal(resample.resize(row, (1, 3), "nearest", False), [[0, 0, 1]])
    # antialiased 4 -> 2 triangle of half-width 2: weights (.75, .75, .25)/1.75 on pixels 0..2
    weights = resample.resampling_matrix(4, 2, "bilinear", True)
    np.testing.assert_allclose(weights[0], [3 / 7, 3 / 7, 1 / 7, 0])
    # cubic A=-0.75, 4 -> 2: first sample at src 0.5, taps -1..2 weigh (-.09375, .59375, .59375, -.09375);
    # tap -1 reads the edge pixel 0, so pixel 0 gets -.09375 + .59375
    np.testing.assert_allclose(resample.resampling_matrix(4, 2, "bicubic", False)[0], [0.5, 0.59375, -0.09375, 0])


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("antialias", [False, True])
def test_rows_sum_to_one_and_constant_images_stay_constant(mode, antialias):
    for n_in, n_out in [(1, 5), (5, 1), (7, 3), (3, 7), (300, 11)]:
        np.testing.assert_allclose(resample.resampling_matrix(n_in, n_out, mode, antialias).sum(axis=1), 1.0)
    flat = np.full((2, 6, 9), 0.3)
    np.testing.assert_allclose(resample.resize(flat, (4, 13), mode, antialias), 0.3)


def test_upscaling_bilinear_is_the_same_with_and_without_antialias():
    for n_in, n_out in [(2, 5), (7, 9), (13, 40)]:
        np.testing.assert_allclose(
            resample.resampling_matrix(n_in, n_out, "bilinear", True),
            resample.resampling_matrix(n_in, n_out, "bilinear", False),
            atol=1e-12,
        )


def test_same_size_is_identity_and_unknown_mode_is_refused():
    np.testing.assert_array_equal(resample.resampling_matrix(4, 4, "bicubic", True), np.eye(4))
    with pytest.raises(ValueError, match="unknown resampling mode"):
        resample.resampling_matrix(3, 4, "lanczos", False)


@pytest.mark.parametrize(
    "h, w, size, max_size, expected",
    [
        (100, 124, 12, None, (12, 14)),
        (124, 100, 12, None, (14, 12)),
        (10, 10, 3, None, (3, 3)),
        (1, 300, 2, 100, (0, 100)),  # the short edge can round to 0: the params strategy avoids it
        (20, 60, 10, 24, (8, 24)),
    ],
)
def test_short_edge_size(h, w, size, max_size, expected):
    assert resample.short_edge_size(h, w, size, max_size) == expected
