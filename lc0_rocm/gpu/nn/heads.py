"""GPU value and moves-left heads (lc0's `src/neural/backends/cuda/network_cuda.cc`: the value and
moves-left head parts of `forwardEval`), finished by heads.hip into float32 (W, D, L, Q, M) per position.

Both heads are: per-square embedding (1x1 conv for conv bodies, dense for attention bodies) + act,
flatten, fc1 + act, fc2. Our activations are square-major, so the flatten is free; for conv bodies
lc0 flattens channel-major, which is absorbed into fc1 by permuting its columns once at build time.
Narrow widths are padded to 8 with zero weights. Workspace buffers used: v_emb, v_fc1, v_out, m_emb,
m_fc1, m_out, heads_x. Calling convention: `layers.py`.

`wide` heads (an fp16 network's classical tower) run in fp32 from an fp32 copy of the tower output
(`widen`): weights, embedding, fc1 and logits unrounded. A tanh value head turns its logit's error into
|ΔQ| unattenuated near Q = 0; in the float64 twin of the fp16 path (tests/test_fp16_twin.py, four
classical tanh nets, validate's 512 positions) fp32 heads took max |ΔQ| from 0.67 to 0.41 of the all-fp16
path's, after the fp32 input convolution (conv.py). The cost: one pass over the tower output and fp32
GEMMs of the heads' few FLOPs.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...net.description import Conv, MovesLeftHead, ValueHead
from ..runtime.dtypes import storage_type
from ..runtime.memory import DeviceBuffer
from .conv import conv_matrix
from .layers import Context, Linear, SideStream, bias_or_zeros, pad_rows, pad_vec, round_up


class FlatHeadGpu:
    """embedding + act -> flatten -> fc1 + act -> fc2 into y [n, ld] (rows padded to 8); scratch `<tag>_*`."""

    def __init__(self, ctx: Context, head, tag: str, dtype: Optional[str] = None):
        self.ctx, self.tag = ctx, tag
        self.dtype = dtype or ctx.dtype
        size = storage_type(self.dtype).itemsize
        emb = head.embedding
        ew, channel_major = (conv_matrix(emb), True) if isinstance(emb, Conv) else (emb.w, False)
        c = ew.shape[0]
        cp = round_up(c)
        self.emb = Linear(ctx, pad_rows(ew, cp), pad_vec(bias_or_zeros(emb), cp), act=head.activation, rows=64,
                          dtype=self.dtype)
        hidden = head.fc1.n_out
        w1 = head.fc1.w.reshape(hidden, c, 64).transpose(0, 2, 1) if channel_major else head.fc1.w.reshape(hidden, 64, c)
        w1p = np.zeros((hidden, 64, cp), dtype=np.float32)
        w1p[:, :, :c] = w1
        self.fc1 = Linear(ctx, w1p.reshape(hidden, 64 * cp), bias_or_zeros(head.fc1), act=head.activation, rows=1,
                          dtype=self.dtype)
        self.n_out = head.fc2.n_out
        self.ld = round_up(self.n_out)
        self.fc2 = Linear(ctx, pad_rows(head.fc2.w, self.ld), pad_vec(bias_or_zeros(head.fc2), self.ld), rows=1,
                          dtype=self.dtype)
        b = ctx.max_batch
        ctx.ws.request(f"{tag}_emb", b * 64 * cp, size)
        ctx.ws.request(f"{tag}_fc1", b * hidden, size)
        ctx.ws.request(f"{tag}_out", b * self.ld, size)

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        ws, t = self.ctx.ws, self.tag
        self.emb(x, ws[f"{t}_emb"], n, lane)
        self.fc1(ws[f"{t}_emb"], ws[f"{t}_fc1"], n, lane)
        self.fc2(ws[f"{t}_fc1"], y, n, lane)


class HeadsGpu:
    """Value (+ moves-left) heads -> y float32 [n, 5] = (W, D, L, Q, M). `wide` (an fp16 network): both
    heads in fp32 from an fp32 copy of x [n*64, width]."""

    def __init__(self, ctx: Context, value: ValueHead, moves_left: MovesLeftHead | None, wide: bool = False,
                 width: int = 0):
        self.ctx, self.wdl = ctx, bool(value.wdl)
        self.wide, self.width = bool(wide) and ctx.dtype == "f16", width
        dtype = "f32" if self.wide else None
        self.value = FlatHeadGpu(ctx, value, "v", dtype)
        if self.value.n_out != (3 if self.wdl else 1):
            raise ValueError(f"value head has {self.value.n_out} outputs, expected {3 if self.wdl else 1}")
        self.mlh = FlatHeadGpu(ctx, moves_left, "m", dtype) if moves_left is not None else None
        if self.wide:
            ctx.ws.request("heads_x", ctx.max_batch * 64 * width, 4)

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None,
                 with_mlh: bool = True) -> None:
        ws = self.ctx.ws
        if self.wide:
            self.ctx.kernels.widen(x, ws["heads_x"], n * 64 * self.width, stream=self.ctx.where(lane)[0])
            x = ws["heads_x"]
        v = ws["v_out"]
        self.value(x, v, n, lane)
        m = None
        if self.mlh is not None and with_mlh:
            m = ws["m_out"]
            self.mlh(x, m, n, lane)
        self.ctx.kernels.head_outputs(v, self.value.ld, self.wdl, y, n, m=m, ld_m=self.mlh.ld if m is not None else 1,
                                      wide=self.wide, stream=self.ctx.where(lane)[0])
