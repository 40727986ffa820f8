"""The fused LayerNorm kernel vs its float64 twin, in each way the network uses it."""

from __future__ import annotations

import numpy as np
import pytest

import nn_twins as twin
from gpucheck import assert_close
from nnkit import BATCHES, TOL, Dev

pytestmark = pytest.mark.gpu

# variant -> (rows per position, C, act, bias, skip, gates, in place)
VARIANTS = {
    "embedding": (64, 128, "mish", True, False, True, True),  # PE_DENSE embedding: bias+act+LN+gating
    "residual": (64, 256, "none", True, True, False, False),  # ln1/ln2: bias + alpha*x + skip
    "residual_inplace": (64, 1024, "none", True, True, False, "skip"),  # out aliases skip
    "smolgen": (1, 4096 + 32, "swish", True, False, False, True),  # smolgen ln2 over G values per position
    "odd_width": (64, 200, "relu2", False, True, False, False),
}


@pytest.mark.parametrize("kind", ["layernorm8", "layernorm"])
@pytest.mark.parametrize("dtype", ["f32", "f16"])
@pytest.mark.parametrize("n", BATCHES)
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_layernorm(gpu, dtype, n, variant, kind):
    """Each kernel where it applies (layernorm8: widths that are multiples of 8, aligned buffers)."""
    per, C, act, use_bias, use_skip, use_gate, inplace = VARIANTS[variant]
    d = Dev(gpu, dtype)
    d.k.vector_ln = kind != "layernorm"
    rng = np.random.default_rng()
    rows = n * per
    x = d.rand(rng, (rows, C), 2.0) + d.rand(rng, (1, C), 0.5)  # rows with a common offset
    x = x.astype(d.np).astype(np.float64)
    gamma, beta = 1 + d.rand(rng, C, 0.1), d.rand(rng, C, 0.1)
    gamma, beta = gamma.astype(d.np).astype(np.float64), beta.astype(d.np).astype(np.float64)
    bias = d.rand(rng, C, 0.3) if use_bias else None
    skip = d.rand(rng, (rows, C)) if use_skip else None
    gmul, gadd = (d.rand(rng, (64, C)), d.rand(rng, (64, C))) if use_gate else (None, None)
    alpha, eps = 0.6, 1e-3
    xd = d.put(x)
    sd = d.put(skip) if use_skip else None
    if inplace == "skip":
        out = sd
    elif inplace:
        out = xd
    else:
        out = d.nan(rows * C)
    d.k.layernorm(xd, out, rows, C, d.put(gamma), d.put(beta), eps, bias=d.put(bias) if use_bias else None,
                  skip=sd, alpha=alpha, act=act, gate_mul=d.put(gmul) if use_gate else None,
                  gate_add=d.put(gadd) if use_gate else None)
    want = twin.layernorm(x, gamma, beta, eps, bias=bias, skip=skip, alpha=alpha, act=act, gate_mul=gmul,
                          gate_add=gadd)
    rtol, atol = TOL[dtype]
    assert_close(d.get(out, (rows, C)), want, rtol, atol, f"layernorm {variant} {dtype} n={n}")
