"""expand_planes / copy_columns / gate kernels vs their float64 numpy twins (tests/gpu/nn_twins.py)."""

from __future__ import annotations

import numpy as np
import pytest

import nn_twins as twin
from gpucheck import assert_close
from nnkit import BATCHES, TOL, Dev

pytestmark = pytest.mark.gpu


def _planes(rng, n):
    masks = rng.integers(0, 2**63, size=(n, 112), dtype=np.uint64) * np.uint64(2) + rng.integers(
        0, 2, size=(n, 112), dtype=np.uint64)
    masks[:, 104:108] = np.where(rng.random((n, 4)) < 0.5, np.uint64(2**64 - 1), np.uint64(0))
    values = np.where(rng.random((n, 112)) < 0.7, 1.0, rng.uniform(0, 99, (n, 112))).astype(np.float32)
    return masks, values


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
@pytest.mark.parametrize("mode", ["plain", "pe_map", "pe_dense"])
def test_expand_planes(gpu, dtype, n, mode):
    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    masks, values = _planes(rng, n)
    pe_map = mode == "pe_map"
    ld = 184 if pe_map else 120  # padding columns after the written ones must stay untouched
    out = d.nan(n * 64 * ld)
    vec12 = d.nan(n * 768) if mode == "pe_dense" else None
    d.k.expand_planes(d.put(masks, np.uint64), d.put(values, np.float32), out, n, ld, pe_map=pe_map, vec12=vec12)
    got = d.get(out, (n * 64, ld))
    want, want_vec = twin.expand_planes(masks, values.astype(d.np), pe_map)
    cols = want.shape[1]
    rtol, atol = TOL[dtype]
    assert_close(got[:, :cols], want, rtol, atol, f"expand_planes {mode} {dtype} n={n}")
    assert np.isnan(got[:, cols:]).all(), "expand_planes wrote into padding columns"
    if vec12 is not None:
        assert_close(d.get(vec12, (n, 768)), want_vec, rtol, atol, "expand_planes vec12")


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
def test_copy_columns(gpu, dtype, n):
    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    rows, width, ld, col0 = n * 64, 12, 128, 112
    src = d.rand(rng, (rows, width))
    dst = d.nan(rows * ld)
    d.k.copy_columns(d.put(src), dst, rows, width, ld, col0)
    got = d.get(dst, (rows, ld))
    assert_close(got[:, col0:col0 + width], src, 0, 0, "copy_columns")
    assert np.isnan(got[:, :col0]).all() and np.isnan(got[:, col0 + width:]).all()


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
def test_gate(gpu, dtype, n):
    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    C = 96
    x = d.rand(rng, (n * 64, C))
    mul, add = d.rand(rng, (64, C)), d.rand(rng, (64, C))
    xd = d.put(x)
    d.k.gate(xd, d.put(mul), d.put(add), n * 64, C)
    rtol, atol = TOL[dtype]
    assert_close(d.get(xd, (n * 64, C)), twin.gate(x, mul, add), rtol, atol, f"gate {dtype} n={n}")
