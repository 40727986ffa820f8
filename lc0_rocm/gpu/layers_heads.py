"""GPU value and moves-left heads (lc0-facts §4.4.4, §4.4.5), finished by heads.hip into float32
(W, D, L, Q, M) per position.

Both heads are: per-square embedding (1x1 conv for conv bodies, dense for attention bodies) + act,
flatten, fc1 + act, fc2. Our activations are square-major, so the flatten is free; for conv bodies
lc0 flattens channel-major, which is absorbed into fc1 by permuting its columns once at build time.
Narrow widths are padded to 8 with zero weights. Workspace buffers used: v_emb, v_fc1, v_out, m_emb,
m_fc1, m_out.
"""

from __future__ import annotations

import numpy as np

from ..net.description import Conv, MovesLeftHead, ValueHead
from .layers import Context, Linear, pad_rows, pad_vec, round_up
from .layers_conv import conv_matrix
from .memory import DeviceBuffer


class FlatHeadGpu:
    """embedding + act -> flatten -> fc1 + act -> fc2 (rows padded to 8); output in workspace `<tag>_out`."""

    def __init__(self, ctx: Context, head, tag: str):
        self.ctx, self.tag = ctx, tag
        emb = head.embedding
        if isinstance(emb, Conv):
            ew, eb, channel_major = conv_matrix(emb), emb.b, True
        else:
            ew, eb, channel_major = emb.w, emb.b, False
        c = ew.shape[0]
        cp = round_up(c)
        self.emb = Linear(ctx, pad_rows(ew, cp), pad_vec(_b(eb, c), cp), act=head.activation)
        hidden = head.fc1.n_out
        w1 = head.fc1.w.reshape(hidden, c, 64).transpose(0, 2, 1) if channel_major else head.fc1.w.reshape(hidden, 64, c)
        w1p = np.zeros((hidden, 64, cp), dtype=np.float32)
        w1p[:, :, :c] = w1
        self.fc1 = Linear(ctx, w1p.reshape(hidden, 64 * cp), _b(head.fc1.b, hidden), act=head.activation)
        self.n_out = head.fc2.n_out
        self.ld = round_up(self.n_out)
        self.fc2 = Linear(ctx, pad_rows(head.fc2.w, self.ld), pad_vec(_b(head.fc2.b, self.n_out), self.ld))
        b = ctx.max_batch
        ctx.ws.request(f"{tag}_emb", b * 64 * cp)
        ctx.ws.request(f"{tag}_fc1", b * hidden)
        ctx.ws.request(f"{tag}_out", b * self.ld)

    def __call__(self, feats: DeviceBuffer, n: int) -> DeviceBuffer:
        ws, t = self.ctx.ws, self.tag
        self.emb(feats, ws[f"{t}_emb"], n * 64)
        self.fc1(ws[f"{t}_emb"], ws[f"{t}_fc1"], n)
        self.fc2(ws[f"{t}_fc1"], ws[f"{t}_out"], n)
        return ws[f"{t}_out"]


def _b(b, n: int) -> np.ndarray:
    return b if b is not None else np.zeros(n, dtype=np.float32)


class HeadsGpu:
    """Value (+ moves-left) heads -> float32 [n, 5] = (W, D, L, Q, M) in `out`."""

    def __init__(self, ctx: Context, value: ValueHead, moves_left: MovesLeftHead | None):
        self.ctx, self.wdl = ctx, bool(value.wdl)
        self.value = FlatHeadGpu(ctx, value, "v")
        if self.value.n_out != (3 if self.wdl else 1):
            raise ValueError(f"value head has {self.value.n_out} outputs, expected {3 if self.wdl else 1}")
        self.mlh = FlatHeadGpu(ctx, moves_left, "m") if moves_left is not None else None

    def __call__(self, feats: DeviceBuffer, n: int, out: DeviceBuffer, with_mlh: bool = True) -> None:
        v = self.value(feats, n)
        m = self.mlh(feats, n) if (self.mlh is not None and with_mlh) else None
        self.ctx.kernels.head_outputs(v, self.value.ld, self.wdl, out, n, m=m,
                                      ld_m=self.mlh.ld if m is not None else 1, stream=self.ctx.stream)
