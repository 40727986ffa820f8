"""gemv.hip (dense layers of 1..8 rows) vs a float64 twin, with bias and activation, fp32 and fp16."""

from __future__ import annotations

import numpy as np
import pytest

from lc0_rocm.activations import ACTIVATION_FUNCTIONS

from gpucheck import assert_close
from nnkit import TOL, Dev

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("m", [1, 3, 8])
@pytest.mark.parametrize("n,k", [(256, 2048), (8192, 256), (37, 136), (1, 8)])
@pytest.mark.parametrize("act,bias", [("none", False), ("mish", True), ("relu", True)])
def test_gemv(gpu, dtype, m, n, k, act, bias):
    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    x = d.rand(rng, (m, k), 1.0)
    w = d.rand(rng, (n, k), 1.0 / np.sqrt(k))
    b = d.rand(rng, n, 0.5) if bias else None
    y = d.nan(m * n)
    d.k.gemv(d.put(x), d.put(w), d.put(b) if bias else None, y, m, n, k, act=act)
    pre = x @ w.T + (b if bias else 0.0)
    want = ACTIVATION_FUNCTIONS[act](pre)
    rtol, atol = TOL[dtype]
    assert_close(d.get(y, (m, n)), want, rtol, 2 * atol, f"gemv m={m} n={n} k={k} {act} {dtype}")


def test_gemv_refuses_bad_shapes(gpu):
    d = Dev(gpu, "f32")
    with pytest.raises(ValueError, match="rows"):
        d.k.gemv(d.nan(9 * 8), d.nan(8), None, d.nan(9), 9, 1, 8)
    with pytest.raises(ValueError, match="k % 8"):
        d.k.gemv(d.nan(12), d.nan(12), None, d.nan(1), 1, 1, 12)
