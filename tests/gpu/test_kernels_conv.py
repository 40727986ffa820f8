"""Residual-tower kernels vs their float64 twins: the Winograd F(4x4, 3x3) convolution (input transform,
strided-batched GEMM, output transform) against a direct convolution, the output transform's fusions
(bias, skip, activation, SE pooling, the next input transform), the fused SE block end, the split SE
block end's input transform (`winograd_in_se`) and the residual kernel.

Errors are ‖gpu − ref‖ / ‖ref‖ over the whole output: ≤ 1e-5 for fp32 storage, ≤ 1e-2 for fp16 (the
transformed tiles are rounded to fp16 between the steps, as in lc0: about 4e-3 on random data, measured
by the float64 twin with the same roundings).
"""

from __future__ import annotations

import numpy as np
import pytest

import nn_twins as twin
from gpucheck import assert_close, rel_error
from nnkit import BATCHES, TOL, Dev

pytestmark = pytest.mark.gpu

REL = {"f32": 1e-5, "f16": 1e-2}


def _check(got, ref, dtype, what):
    assert not np.isnan(got).any(), f"{what}: {int(np.isnan(got).sum())} NaN (unwritten) outputs"
    err = rel_error(got, ref)
    assert err <= REL[dtype], f"{what}: relative error {err:.2e} > {REL[dtype]:.0e}"


def _conv_weights(d, rng, O, C):
    w = (rng.standard_normal((O, C, 3, 3)) / np.sqrt(9 * C)).astype(d.np).astype(np.float64)
    b = d.rand(rng, (O,), 0.1)
    return w, b


def _upload_filter(d, w, kp, np_):
    from lc0_rocm.gpu.nn.conv import winograd_filter

    u = np.zeros((36, np_, kp))
    u[:, : w.shape[0], : w.shape[1]] = winograd_filter(w)
    return d.put(u)


def _gemm(d):
    from lc0_rocm.gpu.runtime.gemm import Gemm

    if not hasattr(d, "gemm"):
        d.gemm = Gemm(d.gpu)
    return d.gemm


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
@pytest.mark.parametrize("C,O", [(112, 64), (64, 64), (128, 128), (256, 256), (20, 80)])
def test_winograd_conv_matches_direct_convolution(gpu, dtype, n, C, O):
    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    kp, np_ = -(-C // 8) * 8, -(-O // 8) * 8
    x = d.rand(rng, (n * 64, C))
    w, b = _conv_weights(d, rng, O, C)
    V, M, y = d.nan(36 * 4 * n * kp), d.nan(36 * 4 * n * np_), d.nan(n * 64 * O)
    d.k.winograd_in(d.put(x), V, n, C, Kp=kp)
    _check(d.get(V, (36, 4 * n, kp)), twin.winograd_in(x, n, C, kp), dtype, f"winograd_in {dtype} n={n} C={C}")
    _gemm(d).linear(V, _upload_filter(d, w, kp, np_), M, 4 * n, np_, kp, dtype=dtype, batch=36)
    d.k.winograd_out(M, np_, y, n, O, act="relu", bias=d.put(b))
    ref = np.maximum(twin.conv3x3(x, w, b, n), 0)
    _check(d.get(y, (n * 64, O)), ref, dtype, f"winograd conv {dtype} n={n} {C}->{O}")


@pytest.mark.parametrize("n", BATCHES)
def test_wide_input_convolution_in_an_fp16_network(gpu, n):
    """winograd_in32_f16 / fp32 GEMM / winograd_out32_f16 (the input convolution of an fp16 tower): fp16
    planes in (0/1 and a rule-50 count up to 99), V, U and M in fp32, fp16 y and next transform out: y
    within its own fp16 rounding (2^-11 relative) of a direct convolution."""
    d = Dev(gpu, "f16")
    rng = np.random.default_rng()
    C, O = 112, 64
    planes = (rng.random((n * 64, C)) < 0.1).astype(np.float64)
    planes[:, 109] = rng.integers(0, 100, n).repeat(64)  # classical formats: the raw rule-50 ply count
    planes[:, 111] = 1.0
    w = (rng.standard_normal((O, C, 3, 3)) / np.sqrt(9 * C)).astype(np.float16).astype(np.float64)
    b = d.rand(rng, (O,), 0.1)
    V, M = d.nan(36 * 4 * n * C, np.float32), d.nan(36 * 4 * n * O, np.float32)
    y, vnext = d.nan(n * 64 * O), d.nan(36 * 4 * n * O)
    d.k.winograd_in(d.put(planes), V, n, C, Kp=C, wide=True)
    _check(d.get(V, (36, 4 * n, C), np.float32), twin.winograd_in(planes, n, C, C), "f32", f"winograd_in32 n={n}")
    from lc0_rocm.gpu.nn.conv import winograd_filter

    _gemm(d).linear(V, d.put(winograd_filter(w), np.float32), M, 4 * n, O, C, dtype="f32", batch=36)
    d.k.winograd_out(M, O, y, n, O, act="relu", bias=d.put(b), vnext=vnext, wide=True)
    ref = np.maximum(twin.conv3x3(planes, w, b, n), 0)
    got = d.get(y, (n * 64, O))
    err = rel_error(got, ref)
    assert err <= 1e-3, f"wide input convolution n={n}: relative error {err:.2e} > 1e-3"
    _check(d.get(vnext, (36, 4 * n, O)), twin.winograd_in(ref, n, O, O), "f16", f"wide vnext n={n}")


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
@pytest.mark.parametrize("act", ["relu", "mish"])
def test_winograd_out_fusions(gpu, dtype, n, act):
    """z = A^T M A + bias; pooled = mean(z); y = act(z + skip) in place on skip; vnext = input transform of y."""
    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    C, ldm = 64, 72
    M = d.rand(rng, (36, 4 * n, ldm), 0.2)
    bias, skip = d.rand(rng, (C,), 0.1), d.rand(rng, (n * 64, C))
    pooled, vnext, sk = d.nan(n * C), d.nan(36 * 4 * n * C), d.put(skip)
    d.k.winograd_out(d.put(M), ldm, sk, n, C, act=act, bias=d.put(bias), skip=sk, pooled=pooled, vnext=vnext)
    z = twin.winograd_out(M, n, C) + bias
    y = twin.activations.apply(act, z + skip)
    _check(d.get(pooled, (n, C)), z.reshape(n, 64, C).mean(axis=1), dtype, f"pooled {act} {dtype} n={n}")
    got = d.get(sk, (n * 64, C))
    _check(got, y, dtype, f"y {act} {dtype} n={n}")
    _check(d.get(vnext, (36, 4 * n, C)), twin.winograd_in(got, n, C, C), dtype, f"vnext {act} {dtype} n={n}")


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
@pytest.mark.parametrize("C,act", [(64, "relu"), (128, "mish"), (256, "relu"), (36, "relu")])
def test_winograd_out_se(gpu, dtype, n, C, act):
    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    H, ldm = max(C // 8, 4), -(-C // 8) * 8
    M = d.rand(rng, (36, 4 * n, ldm), 0.2)
    bias, skip = d.rand(rng, (C,), 0.1), d.rand(rng, (n * 64, C))
    w1, b1 = d.rand(rng, (H, C), 1 / np.sqrt(C)), d.rand(rng, (H,), 0.1)
    w2, b2 = d.rand(rng, (2 * C, H), 1 / np.sqrt(H)), d.rand(rng, (2 * C,), 0.1)
    sk = d.put(skip)
    vnext = d.nan(36 * 4 * n * C) if C % 8 == 0 else None
    d.k.winograd_out_se(d.put(M), ldm, d.put(bias), sk, sk, n, C, d.put(w1), d.put(b1),
                        d.put(np.ascontiguousarray(w2.T)), d.put(b2), H, act, vnext=vnext)
    z = (twin.winograd_out(M, n, C) + bias).reshape(n, 64, C)
    h = twin.activations.apply(act, z.mean(axis=1) @ w1.T + b1)
    t = h @ w2.T + b2
    y = twin.activations.apply(act, twin.activations.sigmoid(t[:, None, :C]) * z + t[:, None, C:] + skip.reshape(n, 64, C))
    got = d.get(sk, (n * 64, C))
    _check(got, y.reshape(n * 64, C), dtype, f"winograd_out_se {act} {dtype} n={n} C={C}")
    if vnext is not None:
        _check(d.get(vnext, (36, 4 * n, C)), twin.winograd_in(got, n, C, C), dtype, f"se vnext {dtype} n={n} C={C}")


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


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
@pytest.mark.parametrize("C,Kp,act,with_se", [(64, 64, "relu", True), (256, 256, "mish", True),
                                              (36, 40, "relu", True), (64, 64, "mish", False)])
def test_winograd_in_se(gpu, dtype, n, C, Kp, act, with_se):
    """The split SE block end: y = act(sigmoid(se[:C]) * z + se[C:] + skip) in place on skip (as the tower
    calls it), V = the input transform of y (pad channels C..Kp-1 zero); a null se means act(z + skip)."""
    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    z, skip = d.rand(rng, (n * 64, C)), d.rand(rng, (n * 64, C))
    se = d.rand(rng, (n, 2 * C), 2.0) if with_se else None
    sk, V = d.put(skip), d.nan(36 * 4 * n * Kp)
    d.k.winograd_in_se(d.put(z), sk, d.put(se) if with_se else None, sk, V, n, C, act, Kp=Kp)
    y = twin.residual(z, skip, n, C, act, se)
    rtol, atol = TOL[dtype]
    what = f"winograd_in_se {act} se={with_se} {dtype} n={n} C={C}"
    assert_close(d.get(sk, (n * 64, C)), y, rtol, atol, what)
    _check(d.get(V, (36, 4 * n, Kp)), twin.winograd_in(y, n, C, Kp), dtype, f"{what}: V")


@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_winograd_in_se_without_y(gpu, dtype):
    """y None: only the transform is written (skip left as it was)."""
    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    n, C = 7, 64
    z, skip, se = d.rand(rng, (n * 64, C)), d.rand(rng, (n * 64, C)), d.rand(rng, (n, 2 * C), 2.0)
    sk, V = d.put(skip), d.nan(36 * 4 * n * C)
    d.k.winograd_in_se(d.put(z), sk, d.put(se), None, V, n, C, "relu")
    assert np.array_equal(d.get(sk, (n * 64, C)), skip), "winograd_in_se wrote skip without y"
    y = twin.residual(z, skip, n, C, "relu", se)
    _check(d.get(V, (36, 4 * n, C)), twin.winograd_in(y, n, C, C), dtype, f"winograd_in_se y=None {dtype}: V")
