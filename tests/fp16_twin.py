"""A float64 twin of the GPU forward pass of classical towers (conv tower, tanh or WDL value head) in fp16
storage: every product and sum in float64 (the GPU accumulates in fp32, 2^13 times finer than fp16), and
a rounding to float16 exactly where the GPU path stores fp16 (lc0_rocm/gpu/nn/conv.py, heads.py,
layers.py; lc0_rocm/kernels/conv.hip, heads.hip), each rounding point switchable, so that a test can
say which stores move Q and by how much.

Rounding points (`ROUNDINGS`), in the order of the forward pass:
  planes     the expanded input planes (workspace `planes`)
  filters    the 3x3 filters as uploaded: U = G g G^T (Winograd) or g (direct)
  weights    the tower's other weights: conv biases, the SE dense layers
  head_weights  the value head's weights and biases
  wino_v     the input transform V = B^T d B (workspace `wino_v`), from the fp32 values a kernel holds
  wino_m     the 36 GEMMs' products M (workspace `wino_m`), before the output transform
  tower      the tower activations y (the residual skip and the tower output)
  v_emb, v_fc1, v_out   the value head's 1x1 conv, fc1 and fc2 outputs
`Fp16Path.convs` limits the convolution points (filters, wino_v, wino_m) to some convolutions, and
`Fp16Path.input_conv` sets them apart for the input convolution (empty: fp32, as the GPU runs it now).
The SE unit is the fused one (`winograd_out_se`, up to 256 filters: pooling and both dense layers in fp32
registers) or, with `Fp16Path.se = "split"`, the split plan of big batches (and of wider towers): conv2's
output z, the pooled means, the SE hidden layer and the SE output stored (rounded with `tower`), the
block end computed in fp32 from them (`winograd_in_se`).

`conv="direct"` replaces each Winograd convolution by a direct one whose output is stored in fp16 (the
conv output rounded like a GEMM's: after bias and activation), for comparison.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from lc0_rocm import activations
from lc0_rocm.gpu.nn.conv import WINO_AT, WINO_BT, winograd_filter
from lc0_rocm.net.description import Conv, NetDescription
from lc0_rocm.reference import expand_planes

ROUNDINGS = ("planes", "filters", "weights", "wino_v", "wino_m", "tower", "head_weights", "v_emb", "v_fc1", "v_out")


@dataclass(frozen=True)
class Fp16Path:
    """Which stores round to fp16 (`rounded`), and how convolutions run ("winograd" or "direct")."""

    rounded: frozenset = field(default_factory=lambda: frozenset(ROUNDINGS))
    conv: str = "winograd"
    convs: Optional[frozenset] = None  # the 3x3 convolutions (0: input, 1 + 2i / 2 + 2i: block i) whose
    # filters / wino_v / wino_m round; None: all
    input_conv: Optional[frozenset] = None  # which of filters / wino_v / wino_m round in the input
    # convolution (None: as in the others)
    se: str = "fused"  # how SE blocks end: "fused" (winograd_out_se) or "split" (conv.py's plan)

    def without(self, *points: str) -> "Fp16Path":
        unknown = set(points) - set(ROUNDINGS)
        if unknown:
            raise ValueError(f"unknown rounding points {sorted(unknown)}")
        return replace(self, rounded=self.rounded - set(points))


EXACT = Fp16Path(frozenset())
# the fp16 GPU path when Winograd landed: every store above in fp16
WINOGRAD_ALL_FP16 = Fp16Path()
# the fp16 GPU path now: the input convolution's transforms and GEMM in fp32 (conv.py: ConvTowerGpu's wide
# input), the heads in fp32 from the fp16 tower output (heads.py: wide HeadsGpu)
GPU_PATH = replace(WINOGRAD_ALL_FP16.without("head_weights", "v_emb", "v_fc1", "v_out"), input_conv=frozenset())


def _r(x, on: bool):
    return np.asarray(x, dtype=np.float64).astype(np.float16).astype(np.float64) if on else np.asarray(x, np.float64)


class Twin:
    """forward(planes) -> Q (and WDL) of `net` through the fp16 GPU path described by `path`."""

    def __init__(self, net: NetDescription, path: Fp16Path = Fp16Path()):
        if net.tower is None or net.body is not None:
            raise ValueError("the fp16 twin covers classical towers only")
        self.net, self.path = net, path
        self.on = {p: p in path.rounded for p in ROUNDINGS}

    # ------------------------------------------------------------------ convolutions

    @staticmethod
    def _sandwich(left, p):
        """left [a, 6] applied along both leading axes of p [6, 6, R]: left p left^T per R, as two matmuls."""
        r = p.shape[-1]
        t = (left @ p.reshape(6, 6 * r)).reshape(-1, 6, r).transpose(1, 0, 2)  # [6j, a, R]
        return (left @ t.reshape(6, -1)).reshape(-1, left.shape[0], r).transpose(1, 0, 2)  # [a, b, R]

    def _conv_in(self, x, n):
        """V [36, 4n, C] = B^T d B of the 6x6 patches of x [n, 64, C] (float64, not rounded)."""
        c = x.shape[-1]
        xp = np.zeros((n, 12, 12, c))
        xp[:, 1:9, 1:9, :] = x.reshape(n, 8, 8, c)
        p = np.empty((6, 6, n, 4, c))
        for t in range(4):
            r0, f0 = (t >> 1) * 4, (t & 1) * 4
            p[:, :, :, t, :] = xp[:, r0:r0 + 6, f0:f0 + 6, :].transpose(1, 2, 0, 3)
        return self._sandwich(WINO_BT, p.reshape(6, 6, -1)).reshape(36, 4 * n, c)

    def _conv_out(self, m, n):
        """z [n, 64, O] = A^T M A of M [36, 4n, O]."""
        o = m.shape[-1]
        y = self._sandwich(WINO_AT, m.reshape(6, 6, -1)).reshape(4, 4, n, 4, o)
        z = np.zeros((n, 8, 8, o))
        for t in range(4):
            r0, f0 = (t >> 1) * 4, (t & 1) * 4
            z[:, r0:r0 + 4, f0:f0 + 4, :] = y[:, :, :, t, :].transpose(2, 0, 1, 3)
        return z.reshape(n, 64, o)

    def conv3(self, x, conv: Conv, n: int, index: int):
        """z [n, 64, O] = conv(x) + bias in fp32 registers (Winograd: x is the fp32 input the transform
        reads; direct: the output is stored, so rounded after the caller's activation)."""
        on = dict(self.on)
        if self.path.convs is not None and index not in self.path.convs:
            on.update(filters=False, wino_v=False, wino_m=False)
        if index == 0 and self.path.input_conv is not None:
            on.update({p: on[p] and p in self.path.input_conv for p in ("filters", "wino_v", "wino_m")})
        b = _r(conv.b, on["weights"])
        if self.path.conv == "direct":
            w = _r(conv.w, on["filters"])
            xp = np.zeros((n, 10, 10, x.shape[-1]))
            xp[:, 1:9, 1:9, :] = x.reshape(n, 8, 8, -1)
            y = np.zeros((n, 8, 8, w.shape[0]))
            for kh in range(3):
                for kw in range(3):
                    y += xp[:, kh:kh + 8, kw:kw + 8, :] @ w[:, :, kh, kw].T
            return y.reshape(n, 64, -1) + b
        u = _r(winograd_filter(conv.w), on["filters"])  # [36, O, C]
        v = _r(self._conv_in(x, n), on["wino_v"])
        m = _r(np.matmul(v, np.ascontiguousarray(u.transpose(0, 2, 1))), on["wino_m"])  # BLAS needs contiguous
        return self._conv_out(m, n) + b

    def _stored_conv(self, z, act):
        """A direct convolution's output as the GEMM stores it (act applied first); Winograd keeps fp32."""
        z = activations.apply(act, z)
        return _r(z, True) if self.path.conv == "direct" else z

    # ------------------------------------------------------------------ the network

    def tower(self, planes):
        on, t = self.on, self.net.tower
        act = t.activation
        n = len(planes)
        x = _r(expand_planes(planes, np.float64), on["planes"])
        v = self._stored_conv(self.conv3(x, t.input, n, 0), act)  # fp32 in the output transform
        y = _r(v, on["tower"])
        for i, blk in enumerate(t.blocks):
            # Winograd: the output transform writes the next transform from fp32 registers (v); direct: the
            # next convolution reads the stored activations
            src = v if self.path.conv == "winograd" else y
            h = self._stored_conv(self.conv3(src, blk.conv1, n, 1 + 2 * i), act)
            z = self.conv3(h, blk.conv2, n, 2 + 2 * i)
            if self.path.conv == "direct":
                z = _r(z, True)
            if blk.se is not None:
                f = z.shape[-1]
                split = on["tower"] and self.path.se == "split"  # z, pooled, hidden and SE output stored
                s = _r(z.mean(axis=1), split)
                z = _r(z, split)
                w1, b1 = _r(blk.se.fc1.w, on["weights"]), _r(_bias(blk.se.fc1), on["weights"])
                w2, b2 = _r(blk.se.fc2.w, on["weights"]), _r(_bias(blk.se.fc2), on["weights"])
                hid = _r(activations.apply(act, s @ w1.T + b1), split)
                tt = _r(hid @ w2.T + b2, split)
                z = activations.sigmoid(tt[:, :f])[:, None, :] * z + tt[:, None, f:]
            v = activations.apply(act, z + y)
            y = _r(v, on["tower"])
        return y

    def value(self, y):
        """(q, wdl or None) from the tower output y [n, 64, F] (fp16 values as stored)."""
        on, head = self.on, self.net.value
        emb = head.embedding
        n = y.shape[0]
        ew = _r(emb.w[:, :, 0, 0], on["head_weights"])
        e = _r(activations.apply(head.activation, y @ ew.T + _r(emb.b, on["head_weights"])), on["v_emb"])
        flat = e.transpose(0, 2, 1).reshape(n, -1)  # channel-major, as lc0 flattens
        h = _r(activations.apply(head.activation, flat @ _r(head.fc1.w, on["head_weights"]).T
                                 + _r(_bias(head.fc1), on["head_weights"])), on["v_fc1"])
        out = _r(h @ _r(head.fc2.w, on["head_weights"]).T + _r(_bias(head.fc2), on["head_weights"]), on["v_out"])
        if head.wdl:
            p = np.exp(out - out.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            return p[:, 0] - p[:, 2], p
        return np.tanh(out[:, 0]), None

    def forward(self, planes):
        return self.value(self.tower(planes))


def _bias(dense):
    return dense.b if dense.b is not None else np.zeros(dense.n_out)


def q_error(net: NetDescription, planes, path: Fp16Path, ref_q=None) -> np.ndarray:
    """|Q(twin) - Q(float64 reference)| per position."""
    if ref_q is None:
        ref_q = Twin(net, EXACT).forward(planes)[0]
    return np.abs(Twin(net, path).forward(planes)[0] - ref_q)
