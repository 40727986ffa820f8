"""Residual-tower kernels (im2col 3x3, SE pooling, SE/residual output) vs their float64 twins."""

from __future__ import annotations

import numpy as np
import pytest

import nn_twins as twin
from gpucheck import assert_close
from nnkit import BATCHES, TOL, Dev

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
@pytest.mark.parametrize("C", [112, 24])
def test_im2col3x3(gpu, dtype, n, C):
    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    x = d.rand(rng, (n * 64, C))
    cols = d.nan(n * 64 * 9 * C)
    d.k.im2col3x3(d.put(x), cols, n, C)
    assert_close(d.get(cols, (n * 64, 9 * C)), twin.im2col3x3(x, n, C), 0, 0, f"im2col {dtype} n={n} C={C}")


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
def test_se_pool(gpu, dtype, n):
    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    C = 72
    z = d.rand(rng, (n * 64, C), 2.0) + 1.0
    z = z.astype(d.np).astype(np.float64)
    pooled = d.nan(n * C)
    d.k.se_pool(d.put(z), pooled, n, C)
    rtol, atol = TOL[dtype]
    assert_close(d.get(pooled, (n, C)), twin.se_pool(z, n, C), rtol, atol, f"se_pool {dtype} n={n}")


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
@pytest.mark.parametrize("act,with_se", [("relu", True), ("mish", True), ("relu", False), ("mish", False)])
def test_residual(gpu, dtype, n, act, with_se):
    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    C = 40
    z, skip = d.rand(rng, (n * 64, C)), d.rand(rng, (n * 64, C))
    se = d.rand(rng, (n, 2 * C), 2.0) if with_se else None
    zd, sd = d.put(z), d.put(skip)
    d.k.residual(zd, sd, sd, n, C, act, se=d.put(se) if with_se else None)  # in place on skip, like the tower
    rtol, atol = TOL[dtype]
    assert_close(d.get(sd, (n * 64, C)), twin.residual(z, skip, n, C, act, se), rtol, atol,
                 f"residual {act} se={with_se} {dtype} n={n}")
