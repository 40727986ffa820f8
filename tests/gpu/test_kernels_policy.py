"""Policy and value-head kernels (attention policy with promotions, map gather, head outputs) vs twins."""

from __future__ import annotations

import numpy as np
import pytest

import nn_twins as twin
from gpucheck import assert_close
from nnkit import BATCHES, TOL, Dev

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("split", [True, False], ids=["split", "whole"])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
@pytest.mark.parametrize("pdm", [64, 100, 136])  # 100, 136: partial last chunks of the walks over pdm
def test_attention_policy(gpu, dtype, n, pdm, split):
    """Both kernels (16 blocks per position, or one) at every batch size."""
    from lc0_rocm.encoding.policy_map import ATTENTION_POLICY_MAP

    d = Dev(gpu, dtype)
    d.k.policy_split_below = 10**9 if split else 0
    rng = np.random.default_rng()
    qk = d.rand(rng, (n * 64, 2 * pdm))
    ppo = d.rand(rng, (4, pdm))
    out = d.nan(n * 1858, np.float32)
    d.k.attention_policy(d.put(qk), n, pdm, d.put(ppo), d.put(np.asarray(ATTENTION_POLICY_MAP), np.int32), out)
    rtol, atol = TOL["f32"] if dtype == "f32" else (1e-4, 1e-4)  # float output: only accumulation error
    assert_close(d.get(out, (n, 1858), np.float32), twin.attention_policy(qk, n, pdm, ppo), rtol, atol,
                 f"attention_policy pdm={pdm} {dtype} n={n}")


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
def test_policy_gather_conv_map(gpu, dtype, n):
    from lc0_rocm.encoding.policy_map import CONV_POLICY_GATHER_SQUARE_MAJOR

    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    x = d.rand(rng, (n, 64 * 80))
    idx = CONV_POLICY_GATHER_SQUARE_MAJOR
    out = d.nan(n * 1858, np.float32)
    d.k.policy_gather(d.put(x), 64 * 80, d.put(idx, np.int32), out, n)
    assert_close(d.get(out, (n, 1858), np.float32), twin.policy_gather(x, n, 64 * 80, idx), 0, 0, "policy_gather")


@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
@pytest.mark.parametrize("wdl,with_m", [(True, True), (True, False), (False, False)])
def test_head_outputs(gpu, dtype, n, wdl, with_m):
    d = Dev(gpu, dtype)
    rng = np.random.default_rng()
    v = d.rand(rng, (n, 8), 3.0)
    m = d.rand(rng, (n, 8), 30.0) if with_m else None
    out = d.nan(n * 5, np.float32)
    d.k.head_outputs(d.put(v), 8, wdl, out, n, m=d.put(m) if with_m else None, ld_m=8)
    assert_close(d.get(out, (n, 5), np.float32), twin.head_outputs(v, n, 8, wdl, m, 8), 2e-6, 2e-6,
                 f"head_outputs wdl={wdl} m={with_m} {dtype} n={n}")
