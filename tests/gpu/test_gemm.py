"""hipBLASLt GEMMs of T82/BT4 layer shapes vs numpy float64: y = x·Wᵀ (+ b) (relu|gelu), fp16 and fp32.

Fresh random inputs every run, outputs NaN-poisoned first. Error = ‖y − ref‖ / ‖ref‖ over checked rows
(all rows up to M=1024; 512 random rows at M=16384, with the whole output checked for NaN):
≤ 1e-3 for fp16 storage (fp32 accumulation), ≤ 1e-5 for fp32 (true fp32: TF32 would give ~3e-4).
"""

from __future__ import annotations

import numpy as np
import pytest

from gpucheck import rel_error

pytestmark = pytest.mark.gpu

NK = [(768, 768), (2304, 768), (1024, 768), (768, 1024), (1024, 1024), (3072, 1024), (1536, 1024), (1024, 1536)]
BATCHES = [1, 16, 256]  # M = 64 * batch (64 squares per position)
LIMIT = {"f16": 1e-3, "f32": 1e-5}
NP = {"f16": np.float16, "f32": np.float32}


@pytest.fixture(scope="module")
def gemm(gpu):
    from lc0_rocm.gpu.runtime.gemm import Gemm

    g = Gemm(gpu)
    yield g
    g.close()


def _gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def _run(gpu, gemm, m, n, k, dtype, act="none", with_bias=False, check_rows=None):
    from lc0_rocm.gpu.runtime.memory import DeviceBuffer

    rng = np.random.default_rng()
    t = NP[dtype]
    x = rng.standard_normal((m, k), dtype=np.float32).astype(t)
    w = (rng.standard_normal((n, k), dtype=np.float32) / np.sqrt(k)).astype(t)
    b = rng.standard_normal(n, dtype=np.float32).astype(t)
    xd, wd, yd = (DeviceBuffer.allocate(gpu, a) for a in (x.nbytes, w.nbytes, m * n * x.itemsize))
    bd = DeviceBuffer.allocate(gpu, b.nbytes) if with_bias else None
    xd.upload(x)
    wd.upload(w)
    if with_bias:
        bd.upload(b)
    yd.fill_byte(0xFF)
    gemm.linear(xd, wd, yd, m, n, k, bias=bd, act=act, dtype=dtype)
    y = yd.to_numpy(t, (m, n))
    assert not np.isnan(y).any(), f"{int(np.isnan(y).sum())} output elements unwritten (NaN)"
    rows = np.arange(m) if check_rows is None or check_rows >= m else np.sort(rng.choice(m, check_rows, replace=False))
    ref = x[rows].astype(np.float64) @ w.astype(np.float64).T
    if with_bias:
        ref += b.astype(np.float64)
    if act == "relu":
        ref = np.maximum(ref, 0)
    elif act == "gelu":
        ref = _gelu(ref)
    return rel_error(y[rows], ref)


@pytest.mark.parametrize("dtype", ["f16", "f32"])
@pytest.mark.parametrize("batch", BATCHES)
def test_gemm_layer_shapes(gpu, gemm, batch, dtype):
    m = 64 * batch
    errors = {}
    for n, k in NK:
        errors[(n, k)] = _run(gpu, gemm, m, n, k, dtype, check_rows=512 if m > 1024 else None)
    bad = {nk: e for nk, e in errors.items() if not e <= LIMIT[dtype]}
    assert not bad, f"M={m} {dtype}: rel errors over {LIMIT[dtype]}: {bad}"


@pytest.mark.parametrize("dtype", ["f16", "f32"])
@pytest.mark.parametrize("act,with_bias", [("none", True), ("relu", True), ("gelu", True), ("relu", False)])
def test_gemm_epilogues(gpu, gemm, act, with_bias, dtype):
    err = _run(gpu, gemm, 1024, 1536, 1024, dtype, act=act, with_bias=with_bias)
    assert err <= LIMIT[dtype], f"{act} bias={with_bias} {dtype}: rel error {err:.3g}"


def test_gemm_algo_choice_is_cached_on_disk(gpu, gemm):
    from lc0_rocm.gpu.runtime.gemm import TUNE_MIN_M, Gemm

    m = TUNE_MIN_M  # tuned (smaller GEMMs take the heuristic's first choice)
    _run(gpu, gemm, m, 768, 768, "f16", check_rows=512)  # made (and tuned, if there was a choice) here
    candidates, ms = gemm.plan_info(m, 768, 768, "f16")
    fresh = Gemm(gpu)  # another process start: same disk cache
    try:
        assert _run(gpu, fresh, m, 768, 768, "f16", check_rows=512) <= LIMIT["f16"]
        again, ms_again = fresh.plan_info(m, 768, 768, "f16")
        assert again == 0, "the second start re-timed candidates instead of reading the cache"
        if candidates:
            assert ms_again == ms
        _run(gpu, fresh, 64, 768, 768, "f16")
        assert fresh.plan_info(64, 768, 768, "f16") == (0, None), "a small GEMM was tuned"
    finally:
        fresh.close()


def test_gemm_rejects_misaligned_and_short_buffers(gpu, gemm):
    from lc0_rocm.gpu.runtime.hiperr import GemmError
    from lc0_rocm.gpu.runtime.memory import DeviceBuffer

    buf = DeviceBuffer.allocate(gpu, 1 << 20)
    with pytest.raises(GemmError, match=r"not 16-byte aligned.*m=64 n=64 k=64"):
        gemm.linear(buf.view(2, 8192), buf, buf, 64, 64, 64)
    with pytest.raises(GemmError, match=r"y holds 100 bytes"):
        gemm.linear(buf, buf, buf.view(0, 100), 64, 64, 64)
    with pytest.raises(GemmError, match="unsupported epilogue"):
        gemm.linear(buf, buf, buf, 64, 64, 64, act="mish")
