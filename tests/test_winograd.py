"""The Winograd F(4x4, 3x3) matrices of the GPU convolution (lc0_rocm/gpu/nn/conv.py) against a direct
cross-correlation in float64, and the construction against the textbook matrices of Lavin & Gray."""

from __future__ import annotations

import numpy as np

from lc0_rocm.gpu.nn.conv import WINO_AT, WINO_BT, WINO_G, winograd_filter, winograd_matrices


def _correlate(d, g):
    return np.array([[(d[i:i + 3, j:j + 3] * g).sum() for j in range(4)] for i in range(4)])


def test_matrices_compute_the_4x4_cross_correlation_of_a_6x6_patch():
    rng = np.random.default_rng(7)
    for _ in range(20):
        d, g = rng.standard_normal((6, 6)), rng.standard_normal((3, 3))
        y = WINO_AT @ ((WINO_G @ g @ WINO_G.T) * (WINO_BT @ d @ WINO_BT.T)) @ WINO_AT.T
        np.testing.assert_allclose(y, _correlate(d, g), atol=1e-12)


def test_construction_on_the_textbook_points_gives_lavin_and_grays_matrices():
    at, g, bt = winograd_matrices((0.0, 1.0, -1.0, 2.0, -2.0))
    np.testing.assert_allclose(at, [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0],
                                    [0, 1, -1, 8, -8, 1]])
    np.testing.assert_allclose(g * np.array([[4], [-6], [-6], [24], [24], [1]]),
                               [[1, 0, 0], [1, 1, 1], [1, -1, 1], [1, 2, 4], [1, -2, 4], [0, 0, 1]], atol=1e-12)
    np.testing.assert_allclose(bt, [[4, 0, -5, 0, 1, 0], [0, -4, -4, 1, 1, 0], [0, 4, -4, -1, 1, 0],
                                    [0, -2, -1, 2, 1, 0], [0, 2, -1, -2, 1, 0], [0, 4, 0, -5, 0, 1]], atol=1e-12)


def test_filter_transform_layout():
    rng = np.random.default_rng(8)
    w = rng.standard_normal((5, 3, 3, 3))
    u = winograd_filter(w)
    assert u.shape == (36, 5, 3)
    np.testing.assert_allclose(u[2 * 6 + 4, 3, 1], (WINO_G @ w[3, 1] @ WINO_G.T)[2, 4], atol=1e-14)
