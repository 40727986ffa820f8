"""The fused multi-head attention kernel (smolgen bias inside) vs its float64 twin."""

from __future__ import annotations

import numpy as np
import pytest

import nn_twins as twin
from gpucheck import assert_close
from nnkit import BATCHES, TOL, Dev

pytestmark = pytest.mark.gpu

# (d_model, heads): head depths 16 (small nets), 32 (T82/BT4), 64 (the kernel's maximum), 8, 24
SHAPES = [(128, 8), (256, 8), (128, 2), (64, 8), (192, 8)]


@pytest.mark.parametrize("variant", ["simple", "t128", "auto"])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
@pytest.mark.parametrize("dm,heads", SHAPES)
@pytest.mark.parametrize("smolgen", [True, False])
def test_mha(gpu, dtype, n, dm, heads, smolgen, variant):
    """'auto' is mha_t128 for head depths 8, 16, 24 and 32 and the simple kernel for 64."""
    d = Dev(gpu, dtype)
    if variant == "t128" and dm // heads > 32:
        pytest.skip("mha_t128 serves head depths <= 32 (auto covers 64 with the simple kernel)")
    d.k.mha_variant = variant
    rng = np.random.default_rng()
    qkv = d.rand(rng, (n * 64, 3 * dm), 1.5)
    bias = d.rand(rng, (n, heads, 64, 64), 2.0) if smolgen else None
    out = d.nan(n * 64 * dm)
    d.k.mha(d.put(qkv), n, dm, heads, out, bias=d.put(bias) if smolgen else None)
    rtol, atol = TOL[dtype]
    assert_close(d.get(out, (n * 64, dm)), twin.mha(qkv, n, dm, heads, bias), rtol, atol,
                 f"mha dm={dm} heads={heads} smolgen={smolgen} {dtype} n={n}")


@pytest.mark.parametrize("variant", ["simple", "t128"])
def test_mha_strided_output_and_large_logits(gpu, variant):
    """Output into a wider buffer (ld_out > dm) leaves the other columns alone; logits ~ +-60 stay finite."""
    d = Dev(gpu, "f32")
    d.k.mha_variant = variant
    rng = np.random.default_rng()
    n, dm, heads, ld = 3, 64, 2 if variant == "simple" else 4, 80
    qkv = d.rand(rng, (n * 64, 3 * dm), 6.0)
    out = d.nan(n * 64 * ld)
    d.k.mha(d.put(qkv), n, dm, heads, out, ld_out=ld)
    got = d.get(out, (n * 64, ld))
    # logits of magnitude ~100: float32 rounding of the logits alone moves probabilities by ~1e-5 relative
    assert_close(got[:, :dm], twin.mha(qkv, n, dm, heads), 5e-4, 5e-4, "mha strided")
    assert np.isfinite(got[:, :dm]).all()
    assert np.isnan(got[:, dm:]).all()


def test_mha_rejects_depth_above_64(gpu):
    d = Dev(gpu, "f32")
    with pytest.raises(ValueError, match="depth 128"):
        d.k.mha(d.nan(64 * 3 * 256), 1, 256, 2, d.nan(64 * 256))


def test_mha_t128_refuses_depth_64(gpu):
    d = Dev(gpu, "f32")
    d.k.mha_variant = "t128"
    with pytest.raises(ValueError, match="mha_t128"):
        d.k.mha(d.nan(64 * 3 * 128), 1, 128, 2, d.nan(64 * 128))
