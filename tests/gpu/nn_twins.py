"""Float64 numpy twins of the network kernels (lc0_rocm/kernels/*.hip other than bias_act), written from
the math in each kernel's header comment and lc0's `src/neural/backends/blas/network_blas.cc`,
independently of the kernel code.

Every function takes and returns plain numpy arrays with the kernel's logical shapes; the kernel tests
compare the GPU result with these on fresh random inputs.
"""

from __future__ import annotations

import math

import numpy as np

from lc0_rocm import activations
from lc0_rocm.encoding.policy_map import ATTENTION_POLICY_GATHER
from lc0_rocm.encoding.pos_encoding import pos_encoding_table


def expand_planes(masks: np.ndarray, values: np.ndarray, pe_map: bool):
    """-> tokens [n*64, 112 (+64)], vec12 [n, 768]."""
    n = masks.shape[0]
    bits = (masks[:, None, :] >> np.arange(64, dtype=np.uint64)[None, :, None]) & np.uint64(1)
    planes = bits.astype(np.float64) * values.astype(np.float64)[:, None, :]  # [n, 64, 112]
    vec12 = planes[:, :, :12].reshape(n, 768)
    if pe_map:
        table = np.broadcast_to(pos_encoding_table().astype(np.float64), (n, 64, 64))
        planes = np.concatenate([planes, table], axis=-1)
    return planes.reshape(n * 64, -1), vec12


def layernorm(x, gamma, beta, eps, bias=None, skip=None, alpha=1.0, act="none", gate_mul=None, gate_add=None):
    v = x.astype(np.float64)
    if bias is not None:
        v = v + bias
    v = activations.apply(act, v)
    if skip is not None:
        v = alpha * v + skip
    mu = v.mean(axis=-1, keepdims=True)
    var = ((v - mu) ** 2).mean(axis=-1, keepdims=True)
    y = (v - mu) / np.sqrt(var + eps) * gamma + beta
    if gate_mul is not None:
        rows = y.shape[0]
        s = np.arange(rows) % 64
        y = y * gate_mul[s] + gate_add[s]
    return y


def gate(x, gate_mul, gate_add):
    s = np.arange(x.shape[0]) % 64
    return x * gate_mul[s] + gate_add[s]


def mha(qkv, n: int, dm: int, heads: int, bias=None):
    """qkv [n*64, 3*dm] -> [n*64, dm]; bias [n, heads, 64, 64] or None."""
    depth = dm // heads
    t = qkv.astype(np.float64).reshape(n, 64, 3, heads, depth).transpose(2, 0, 3, 1, 4)  # [3, n, h, 64, d]
    q, k, v = t[0], t[1], t[2]
    logits = q @ k.transpose(0, 1, 3, 2) / math.sqrt(depth)
    if bias is not None:
        logits = logits + bias
    logits -= logits.max(axis=-1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=-1, keepdims=True)
    o = p @ v  # [n, h, 64, d]
    return o.transpose(0, 2, 1, 3).reshape(n * 64, dm)


def conv3x3(x, w, b, n: int):
    """Direct 3x3 convolution, zero padding 1: x [n*64, C] square-major, w OIHW [O, C, 3, 3] -> [n*64, O]."""
    C = w.shape[1]
    xp = np.zeros((n, 10, 10, C))
    xp[:, 1:9, 1:9, :] = x.reshape(n, 8, 8, C)
    y = np.zeros((n, 8, 8, w.shape[0]))
    for kh in range(3):
        for kw in range(3):
            y += xp[:, kh:kh + 8, kw:kw + 8, :] @ w[:, :, kh, kw].astype(np.float64).T
    return (y + b).reshape(n * 64, w.shape[0])


def winograd_in(x, n: int, C: int, Kp: int):
    """V [36, 4n, Kp]: B^T d B of each 6x6 patch (tile t = tr*2 + tf of board b at row b*4 + t)."""
    from lc0_rocm.gpu.nn.conv import WINO_BT

    xp = np.zeros((n, 12, 12, Kp))
    xp[:, 1:9, 1:9, :C] = x.reshape(n, 8, 8, C)
    V = np.empty((6, 6, n, 4, Kp))
    for t in range(4):
        r0, f0 = (t >> 1) * 4, (t & 1) * 4
        V[:, :, :, t, :] = np.einsum("ai,nijc,bj->abnc", WINO_BT, xp[:, r0:r0 + 6, f0:f0 + 6, :], WINO_BT,
                                             optimize=True)
    return V.reshape(36, 4 * n, Kp)


def winograd_out(M, n: int, C: int):
    """z [n*64, C] = A^T M A per tile (no bias) of M [36, 4n, >= C]."""
    from lc0_rocm.gpu.nn.conv import WINO_AT

    m = M[:, :, :C].reshape(6, 6, n, 4, C)
    z = np.zeros((n, 8, 8, C))
    for t in range(4):
        r0, f0 = (t >> 1) * 4, (t & 1) * 4
        z[:, r0:r0 + 4, f0:f0 + 4, :] = np.einsum("ia,abnc,jb->nijc", WINO_AT, m[:, :, :, t, :], WINO_AT,
                                                              optimize=True)
    return z.reshape(n * 64, C)


def residual(z, skip, n: int, C: int, act: str, se=None):
    v = z.reshape(n, 64, C).astype(np.float64)
    if se is not None:
        g = activations.sigmoid(se[:, :C].astype(np.float64))
        v = g[:, None, :] * v + se[:, None, C:]
    v = v + skip.reshape(n, 64, C)
    return activations.apply(act, v).reshape(n * 64, C)


def attention_policy(qk, n: int, pdm: int, ppo):
    t = qk.astype(np.float64).reshape(n, 64, 2, pdm)
    qp, kp = t[:, :, 0], t[:, :, 1]
    logits = qp @ kp.transpose(0, 2, 1) / math.sqrt(pdm)
    offs = kp[:, 56:64, :] @ ppo.astype(np.float64).T  # [n, w, 4]
    offs = offs[:, :, :3] + offs[:, :, 3:4]
    promo = logits[:, 48:56, 56:64, None] + offs[:, None, :, :]
    flat = np.concatenate([logits.reshape(n, 4096), promo.reshape(n, 192)], axis=1)
    return flat[:, ATTENTION_POLICY_GATHER]


def policy_gather(x, n: int, stride: int, idx):
    return x.reshape(n, stride)[:, idx].astype(np.float64)


def head_outputs(v, n: int, ld_v: int, wdl: bool, m=None, ld_m: int = 1):
    out = np.zeros((n, 5))
    vv = v.reshape(n, ld_v).astype(np.float64)
    if wdl:
        e = np.exp(vv[:, :3] - vv[:, :3].max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
        out[:, :3] = p
        out[:, 3] = p[:, 0] - p[:, 2]
    else:
        out[:, 3] = np.tanh(vv[:, 0])
    if m is not None:
        out[:, 4] = np.maximum(m.reshape(n, ld_m)[:, 0].astype(np.float64), 0)
    return out
