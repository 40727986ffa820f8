"""The numpy CPU reference forward pass: the truth every other backend is checked against.

One function per network layer, mirroring lc0's CPU forward pass (`src/neural/backends/blas/network_blas.cc:
BlasComputation::ComputeBlocking`) step by step, batched and
vectorised: activations are kept square-major, [N, 64 squares, channels] (NHWC; square = rank·8 +
file in the side-to-move frame), 3×3 convolutions are im2col + one BLAS matmul, attention is batched
matmul. Everything runs in the dtype asked for (float32 like lc0's CPU backends, or float64 as an
error-free yardstick); weights are cast once per `Reference` object.

Entry points: `Reference(net, dtype).forward(planes)` (reuses prepared weights across calls) and the
one-shot `forward(net, planes, dtype)`. Both return `NetOutputs` (raw policy logits [N, 1858], WDL
probabilities or None, Q, D, moves-left or None) with arrays of the requested dtype.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from . import activations
from .encoding.outputs import NetOutputs
from .encoding.packed import NUM_PLANES, PackedPlanes
from .encoding.policy_map import ATTENTION_POLICY_GATHER, CONV_POLICY_GATHER_SQUARE_MAJOR
from .encoding.pos_encoding import pos_encoding_table
from .net.description import (
    AttentionBody,
    AttentionPolicyHead,
    ClassicalPolicyHead,
    Conv,
    ConvPolicyHead,
    ConvTower,
    Dense,
    EncoderLayer,
    LayerNorm,
    MovesLeftHead,
    MultiHeadAttention,
    NetDescription,
    ValueHead,
)

# --------------------------------------------------------------------------------------------
# Input


def expand_planes(planes: PackedPlanes, dtype=np.float32) -> np.ndarray:
    """Packed planes → dense square-major input [N, 64, 112] (lc0's `network_blas.cc: EncodePlanes`)."""
    bits = (planes.masks[:, None, :] >> np.arange(64, dtype=np.uint64)[None, :, None]) & np.uint64(1)
    return bits.astype(dtype) * planes.values.astype(dtype)[:, None, :]


# --------------------------------------------------------------------------------------------
# Basic operations


def layer_norm(x: np.ndarray, ln: LayerNorm) -> np.ndarray:
    """Per-token LayerNorm over the last axis, population variance."""
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = np.mean(xc * xc, axis=-1, keepdims=True)
    var += x.dtype.type(ln.eps)
    np.sqrt(var, out=var)
    xc /= var
    xc *= ln.gamma.astype(x.dtype, copy=False)
    xc += ln.beta.astype(x.dtype, copy=False)
    return xc


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax (x is overwritten)."""
    x -= x.max(axis=axis, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=axis, keepdims=True)
    return x


class Reference:
    """The reference network evaluator for one net in one dtype (weights cast and reshaped once)."""

    def __init__(self, net: NetDescription, dtype=np.float32):
        self.net = net
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float32, np.float64):
            raise ValueError(f"reference dtype must be float32 or float64, not {self.dtype}")
        self._cache: dict[tuple, tuple] = {}

    # ----------------------------------------------------------------------------------------
    # weight preparation (cached by array identity; the cache keeps the source array alive)

    def _prep(self, key: str, arr: np.ndarray, make) -> np.ndarray:
        k = (key, id(arr))
        hit = self._cache.get(k)
        if hit is None:
            hit = (arr, make(arr))
            self._cache[k] = hit
        return hit[1]

    def _w(self, arr: Optional[np.ndarray]) -> Optional[np.ndarray]:
        if arr is None:
            return None
        if arr.dtype == self.dtype:
            return arr
        return self._prep("cast", arr, lambda a: np.ascontiguousarray(a, dtype=self.dtype))

    def _wt(self, arr: np.ndarray) -> np.ndarray:
        """[out, in] → contiguous [in, out] (so every matmul is a plain row-major GEMM)."""
        return self._prep("t", arr, lambda a: np.ascontiguousarray(a.T, dtype=self.dtype))

    # ----------------------------------------------------------------------------------------
    # dense / conv

    def dense(self, x: np.ndarray, layer: Dense, act: str = "none") -> np.ndarray:
        """y = act(x @ Wᵀ + b) over the last axis of x (any leading shape)."""
        lead = x.shape[:-1]
        y = x.reshape(-1, x.shape[-1]) @ self._wt(layer.w)
        if layer.b is not None:
            y += self._w(layer.b)
        y = activations.apply(act, y)
        return y.reshape(*lead, layer.n_out)

    def conv(self, x: np.ndarray, layer: Conv, act: str = "none") -> np.ndarray:
        """Square-major convolution: x [N, 64, C] → act(conv(x) + b) [N, 64, O]; k = 1 or 3, zero padding."""
        n, _, c = x.shape
        k = layer.kernel
        if k == 1:
            wmat = self._prep("c1", layer.w, lambda w: np.ascontiguousarray(w[:, :, 0, 0].T, dtype=self.dtype))
            y = x.reshape(n * 64, c) @ wmat
        elif k == 3:
            wmat = self._prep(
                "c3", layer.w, lambda w: np.ascontiguousarray(w.transpose(2, 3, 1, 0).reshape(9 * c, -1), dtype=self.dtype)
            )
            padded = np.zeros((n, 10, 10, c), dtype=x.dtype)
            padded[:, 1:9, 1:9, :] = x.reshape(n, 8, 8, c)
            cols = np.empty((n, 8, 8, 3, 3, c), dtype=x.dtype)
            for kh in range(3):
                for kw in range(3):
                    cols[:, :, :, kh, kw, :] = padded[:, kh : kh + 8, kw : kw + 8, :]
            y = cols.reshape(n * 64, 9 * c) @ wmat
        else:
            raise ValueError(f"unsupported convolution kernel size {k}")
        y += self._w(layer.b)
        y = activations.apply(act, y)
        return y.reshape(n, 64, layer.n_out)

    # ----------------------------------------------------------------------------------------
    # conv tower

    def residual_block(self, x: np.ndarray, block, act: str) -> np.ndarray:
        y = self.conv(x, block.conv1, act)
        z = self.conv(y, block.conv2)
        if block.se is not None:
            f = z.shape[-1]
            s = z.mean(axis=1)  # [N, F], per-channel mean over the 64 squares
            h = self.dense(s, block.se.fc1, act)
            t = self.dense(h, block.se.fc2)
            gamma = activations.sigmoid(t[:, :f])
            beta = t[:, f:]
            z *= gamma[:, None, :]
            z += beta[:, None, :]
        z += x
        return activations.apply(act, z)

    def conv_tower(self, x: np.ndarray, tower: ConvTower) -> np.ndarray:
        x = self.conv(x, tower.input, tower.activation)
        for block in tower.blocks:
            x = self.residual_block(x, block, tower.activation)
        return x

    # ----------------------------------------------------------------------------------------
    # attention body

    def embedding_tokens(self, planes: np.ndarray, body: AttentionBody, tower_out: Optional[np.ndarray]) -> np.ndarray:
        """The per-square token fed to the embedding dense (the PE_MAP / PE_DENSE embedding of `ComputeBlocking`)."""
        n = planes.shape[0]
        if body.embedding == "tower":
            if tower_out is None:
                raise ValueError("attention body with embedding 'tower' but the net has no conv tower")
            return tower_out
        if body.embedding == "pe_map":
            table = np.broadcast_to(pos_encoding_table().astype(self.dtype), (n, 64, 64))
            return np.concatenate([planes, table], axis=-1)
        if body.embedding == "pe_dense":
            vec = planes[:, :, :12].reshape(n, 64 * 12)  # index square·12 + plane
            pos = self.dense(vec, body.preproc).reshape(n, 64, -1)
            return np.concatenate([planes, pos], axis=-1)
        raise ValueError(f"unknown attention-body embedding {body.embedding!r}")

    def smolgen_bias(self, x: np.ndarray, mha: MultiHeadAttention, global_w: np.ndarray) -> np.ndarray:
        """Smolgen attention bias [N, heads, 64, 64] (the smolgen part of `network_blas.cc: ForwardEncoderLayer`)."""
        sg = mha.smolgen
        n = x.shape[0]
        c = self.dense(x, sg.compress).reshape(n, -1)  # [N, 64·hc], index square·hc + k
        u = layer_norm(self.dense(c, sg.dense1, sg.activation), sg.ln1)
        v = layer_norm(self.dense(u, sg.dense2, sg.activation), sg.ln2)
        v = v.reshape(n * mha.heads, -1)  # [N·H, g]
        bias = v @ self._wt(global_w)  # [N·H, 4096], index query·64 + key
        return bias.reshape(n, mha.heads, 64, 64)

    def attention(self, x: np.ndarray, mha: MultiHeadAttention, global_w: Optional[np.ndarray]) -> np.ndarray:
        """Multi-head self-attention over the 64 tokens incl. smolgen and the output projection."""
        n = x.shape[0]
        h, depth = mha.heads, mha.depth

        def split(t):  # [N, 64, dm] → [N, H, 64, depth]
            return t.reshape(n, 64, h, depth).transpose(0, 2, 1, 3)

        q = split(self.dense(x, mha.q))
        k = split(self.dense(x, mha.k))
        v = split(self.dense(x, mha.v))
        logits = np.matmul(q, k.transpose(0, 1, 3, 2))
        logits *= x.dtype.type(1.0 / math.sqrt(depth))
        if mha.smolgen is not None:
            if global_w is None:
                raise ValueError("smolgen layer without the global smolgen weights")
            logits += self.smolgen_bias(x, mha, global_w)
        probs = softmax(logits)
        o = np.matmul(probs, v)  # [N, H, 64, depth]
        o = o.transpose(0, 2, 1, 3).reshape(n, 64, h * depth)
        return self.dense(o, mha.out)

    def encoder_layer(self, x: np.ndarray, layer: EncoderLayer, alpha: float, global_w: Optional[np.ndarray]) -> np.ndarray:
        """x1 = LN1(x + α·MHA(x)); x = LN2(x1 + α·FFN(x1))."""
        a = x.dtype.type(alpha)
        o = self.attention(x, layer.mha, global_w)
        o *= a
        o += x
        x1 = layer_norm(o, layer.ln1)
        f = self.dense(x1, layer.ffn.dense1, layer.ffn.activation)
        f = self.dense(f, layer.ffn.dense2)
        f *= a
        f += x1
        return layer_norm(f, layer.ln2)

    def attention_body(self, planes: np.ndarray, body: AttentionBody, tower_out: Optional[np.ndarray]) -> np.ndarray:
        tokens = self.embedding_tokens(planes, body, tower_out)
        t = self.dense(tokens, body.emb, body.activation)
        if body.emb_ln is not None:
            t = layer_norm(t, body.emb_ln)
        if body.gate_mult is not None and body.gate_add is not None:
            t *= self._w(body.gate_mult)
            t += self._w(body.gate_add)
        if body.emb_ffn is not None:
            hdn = self.dense(t, body.emb_ffn.dense1, body.emb_ffn.activation)
            hdn = self.dense(hdn, body.emb_ffn.dense2)
            hdn *= t.dtype.type(body.alpha)
            hdn += t
            t = layer_norm(hdn, body.emb_ffn_ln)
        global_w = self._w(body.smolgen_global)
        for layer in body.encoders:
            t = self.encoder_layer(t, layer, body.alpha, global_w)
        return t

    # ----------------------------------------------------------------------------------------
    # policy heads

    def attention_policy(self, tokens: np.ndarray, head: AttentionPolicyHead) -> np.ndarray:
        """64×64 from/to logits + promotions, gathered to 1858 raw logits (the attention policy of
        `ComputeBlocking`; map: `src/neural/tables/attention_policy_map.h`)."""
        n = tokens.shape[0]
        p = self.dense(tokens, head.embedding, head.embedding_activation)
        for layer in head.encoders:
            p = self.encoder_layer(p, layer, 1.0, None)
        qp = self.dense(p, head.wq)
        kp = self.dense(p, head.wk)
        pdm = qp.shape[-1]
        logits = np.matmul(qp, kp.transpose(0, 2, 1))  # [N, from, to]
        logits *= p.dtype.type(1.0 / math.sqrt(pdm))
        offs = kp[:, 56:64, :] @ self._wt(head.ppo)  # [N, to-file w, piece c], not scaled
        offs = offs[:, :, :3] + offs[:, :, 3:4]  # queen, rook, bishop each + the shared offset
        promo = logits[:, 48:56, 56:64, None] + offs[:, None, :, :]  # [N, from-file y, w, c]
        flat = np.concatenate([logits.reshape(n, 4096), promo.reshape(n, 192)], axis=1)
        return flat[:, ATTENTION_POLICY_GATHER]

    def conv_policy(self, x: np.ndarray, head: ConvPolicyHead) -> np.ndarray:
        y = self.conv(x, head.conv1, head.activation)
        z = self.conv(y, head.conv2)  # [N, 64, 80]
        n = z.shape[0]
        return z.reshape(n, 64 * z.shape[-1])[:, CONV_POLICY_GATHER_SQUARE_MAJOR]

    def classical_policy(self, x: np.ndarray, head: ClassicalPolicyHead) -> np.ndarray:
        y = self.conv(x, head.conv, head.activation)  # [N, 64, PC]
        flat = y.transpose(0, 2, 1).reshape(y.shape[0], -1)  # channel·64 + square (NCHW)
        return self.dense(flat, head.fc)

    def policy_head(self, x: np.ndarray) -> np.ndarray:
        head = self.net.policy
        if isinstance(head, AttentionPolicyHead):
            return self.attention_policy(x, head)
        if isinstance(head, ConvPolicyHead):
            return self.conv_policy(x, head)
        if isinstance(head, ClassicalPolicyHead):
            return self.classical_policy(x, head)
        raise ValueError(f"unknown policy head {type(head).__name__}")

    # ----------------------------------------------------------------------------------------
    # value and moves-left heads

    def _head_embedding(self, x: np.ndarray, embedding, act: str) -> np.ndarray:
        """Conv body: 1×1 conv + act, flattened channel-major; attention body: dense + act, square-major."""
        n = x.shape[0]
        if isinstance(embedding, Conv):
            y = self.conv(x, embedding, act)
            return y.transpose(0, 2, 1).reshape(n, -1)
        return self.dense(x, embedding, act).reshape(n, -1)

    def value_head(self, x: np.ndarray, head: ValueHead):
        """(wdl probabilities or None, q, d)."""
        v = self._head_embedding(x, head.embedding, head.activation)
        h = self.dense(v, head.fc1, head.activation)
        out = self.dense(h, head.fc2)
        if head.wdl:
            wdl = softmax(out.copy())
            return wdl, wdl[:, 0] - wdl[:, 2], wdl[:, 1].copy()
        q = np.tanh(out[:, 0])
        return None, q, np.zeros_like(q)

    def moves_left_head(self, x: np.ndarray, head: MovesLeftHead) -> np.ndarray:
        m = self._head_embedding(x, head.embedding, head.activation)
        h = self.dense(m, head.fc1, head.activation)
        return activations.relu(self.dense(h, head.fc2)[:, 0])

    # ----------------------------------------------------------------------------------------
    # whole network

    def forward(self, planes: PackedPlanes) -> NetOutputs:
        net = self.net
        x = expand_planes(planes, self.dtype)
        if x.shape[1:] != (64, NUM_PLANES):
            raise ValueError(f"bad input shape {x.shape}")
        tower_out = self.conv_tower(x, net.tower) if net.tower is not None else None
        if net.body is not None:
            feats = self.attention_body(x, net.body, tower_out)
        elif tower_out is not None:
            feats = tower_out
        else:
            raise ValueError("net has neither a conv tower nor an attention body")
        policy = self.policy_head(feats)
        wdl, q, d = self.value_head(feats, net.value)
        mlh = self.moves_left_head(feats, net.moves_left) if net.moves_left is not None else None
        return NetOutputs(policy=np.ascontiguousarray(policy), wdl=wdl, q=q, d=d, mlh=mlh)


def forward(net: NetDescription, planes: PackedPlanes, dtype=np.float32) -> NetOutputs:
    """One-shot reference evaluation of a batch (see `Reference` to reuse prepared weights)."""
    return Reference(net, dtype).forward(planes)
