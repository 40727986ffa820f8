"""conv_small.hip's filter layout (`direct_filter`) and tap order, checked on the host: the kernel's
arithmetic written out in numpy (a thread's four output channels, W[group, c, tap, r], the neighbour of
square s at tap t = (rank + t // 3 - 1, file + t % 3 - 1), 0 off the board) against the float64 reference
convolution (`lc0_rocm.reference.Reference.conv`). The GPU runs of the same kernel are
tests/gpu/test_conv_nets_gpu.py's."""

from __future__ import annotations

import numpy as np
import pytest

from lc0_rocm.gpu.nn.conv_small import direct_filter
from lc0_rocm.gpu.nn.kernels import CONV_SMALL_LDS, CONV_SMALL_THREADS, conv_small_shape
from lc0_rocm.net.description import Conv
from lc0_rocm.reference import Reference


def kernel_arithmetic(x: np.ndarray, W: np.ndarray, bias: np.ndarray, n_out: int) -> np.ndarray:
    """x [N, 64, C] -> [N, 64, n_out] the way conv_small_impl sums (float64)."""
    n, _, c = x.shape
    xs = np.concatenate([x, np.zeros((n, 1, c))], axis=1)  # slot 64: the off-board tap
    out = np.zeros((n, 64, W.shape[0] * 4))
    for s in range(64):
        rank, file = divmod(s, 8)
        for tap in range(9):
            r, f = rank + tap // 3 - 1, file + tap % 3 - 1
            src = r * 8 + f if 0 <= r < 8 and 0 <= f < 8 else 64
            # W[g, c, tap, r] -> [c, g*4 + r]
            w = W[:, :, tap, :].transpose(1, 0, 2).reshape(c, -1)
            out[:, s, :] += xs[:, src, :] @ w
    return out[:, :, :n_out] + bias


@pytest.mark.parametrize("n_in,n_out", [(112, 64), (64, 64), (32, 80), (24, 10)])
def test_direct_filter_layout_is_the_reference_convolution(n_in, n_out):
    rng = np.random.default_rng(n_in * 1000 + n_out)
    w = rng.standard_normal((n_out, n_in, 3, 3)).astype(np.float32)
    b = rng.standard_normal(n_out).astype(np.float32)
    conv = Conv(w=w, b=b)
    x = rng.standard_normal((3, 64, n_in))
    W = direct_filter(w)
    assert W.dtype == np.float32 and W.shape == (-(-n_out // 4), n_in, 9, 4)
    if n_out % 4:
        assert not W.reshape(-1, n_in, 9, 4)[-1, :, :, n_out % 4:].any()  # pad filters are 0
    got = kernel_arithmetic(x, W.astype(np.float64), b.astype(np.float64), n_out)
    want = Reference(None, np.float64).conv(x, conv)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("C,H,size", [(112, 0, 2), (112, 0, 4), (64, 32, 2), (128, 64, 4), (128, 256, 4), (8, 8, 2)])
def test_launch_shape_fits_the_lds_and_splits_evenly(C, H, size):
    for n in (1, 7, 16, 64):
        G, Q, CK, wsz, shared = conv_small_shape(n, C, 64, H, size)
        assert G * Q * 64 == CONV_SMALL_THREADS and C % CK == 0 and CK % Q == 0
        assert wsz >= max(G * CK * 36, CONV_SMALL_THREADS * 4, H * C // 8) and wsz % 4 == 0
        assert shared == (4 * C + wsz) * 4 + C * 65 * size <= CONV_SMALL_LDS
    assert conv_small_shape(1, C, 64, H, size)[0] == 1 and conv_small_shape(256, C, 64, H, size)[0] == 4
