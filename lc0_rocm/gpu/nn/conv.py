"""GPU layers of the classical residual tower and the convolutional / classical policy heads (lc0's
`src/neural/backends/cuda/layers.cc`: `ConvLayer`, `ResidualBlock`, `SELayer`, `PolicyMapLayer`).
No MIOpen: a 3x3 convolution on the 8x8 board is im2col (conv.hip) plus one hipBLASLt GEMM with the
bias and ReLU in its epilogue; a 1x1 convolution is a plain GEMM.

Activations are square-major ([n*64, C], like the attention body), so the tower output feeds an
attention body or the heads directly. Workspace buffers used: planes, cols, t1, t2, se_pool, se_h,
se_t, pol_conv, pol_fc. Calling convention: `layers.py`.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...encoding.policy_map import CONV_POLICY_GATHER_SQUARE_MAJOR
from ...net.description import ClassicalPolicyHead, Conv, ConvPolicyHead, ConvTower
from ..runtime.memory import DeviceBuffer
from .layers import Context, Linear, SideStream, pad_rows, pad_vec, round_up, split_input


def conv_matrix(conv: Conv) -> np.ndarray:
    """OIHW weights as the [O, K] GEMM matrix matching conv.hip's im2col columns ((kh*3+kw)*C + c)."""
    w = conv.w
    if conv.kernel == 1:
        return np.ascontiguousarray(w[:, :, 0, 0])
    if conv.kernel == 3:
        return np.ascontiguousarray(w.transpose(0, 2, 3, 1).reshape(w.shape[0], -1))
    raise ValueError(f"unsupported convolution kernel size {conv.kernel}")


class ConvGpu:
    """act(conv(x) + b) for k = 1 or 3: x [n*64, C] -> y [n*64, O] (O padded with zero rows to `out_rows`)."""

    def __init__(self, ctx: Context, conv: Conv, act: str = "none", out_rows: int = 0):
        self.ctx, self.kernel, self.cin = ctx, conv.kernel, conv.n_in
        w, b = conv_matrix(conv), conv.b
        if out_rows:
            w, b = pad_rows(w, out_rows), pad_vec(b, out_rows)
        self.lin = Linear(ctx, w, b, act=act, rows=64)
        self.n_out = self.lin.n
        if self.kernel == 3:
            ctx.ws.request("cols", ctx.max_batch * 64 * 9 * self.cin)

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        if self.kernel == 3:
            cols = self.ctx.ws["cols"]
            self.ctx.kernels.im2col3x3(x, cols, n, self.cin, stream=self.ctx.where(lane)[0])
            x = cols
        self.lin(x, y, n, lane)


class ResidualBlockGpu:
    """y <- act(SE(conv2(act(conv1(x)))) + x) (y may be x: in place)."""

    def __init__(self, ctx: Context, block, act: str):
        self.ctx, self.act = ctx, act
        self.conv1 = ConvGpu(ctx, block.conv1, act)
        self.conv2 = ConvGpu(ctx, block.conv2)
        self.F = self.conv2.n_out
        self.se = None
        b = ctx.max_batch
        ctx.ws.request("t1", b * 64 * self.conv1.n_out)
        ctx.ws.request("t2", b * 64 * self.F)
        if block.se is not None:
            self.se = (Linear(ctx, block.se.fc1.w, block.se.fc1.b, act=act, rows=1),
                       Linear(ctx, block.se.fc2.w, block.se.fc2.b, rows=1))
            ctx.ws.request("se_pool", b * self.F)
            ctx.ws.request("se_h", b * self.se[0].n)
            ctx.ws.request("se_t", b * 2 * self.F)

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        ctx, ws, k = self.ctx, self.ctx.ws, self.ctx.kernels
        stream, _ = ctx.where(lane)
        self.conv1(x, ws["t1"], n, lane)
        self.conv2(ws["t1"], ws["t2"], n, lane)
        se = None
        if self.se is not None:
            fc1, fc2 = self.se
            k.se_pool(ws["t2"], ws["se_pool"], n, self.F, stream=stream)
            fc1(ws["se_pool"], ws["se_h"], n, lane)
            fc2(ws["se_h"], ws["se_t"], n, lane)
            se = ws["se_t"]
        k.residual(ws["t2"], x, y, n, self.F, self.act, se=se, stream=stream)


class ConvTowerGpu:
    """Network input (packed planes, see `split_input`) -> input conv -> residual blocks, into y [n*64, F]."""

    def __init__(self, ctx: Context, tower: ConvTower):
        self.ctx = ctx
        self.input = ConvGpu(ctx, tower.input, tower.activation)
        self.blocks = [ResidualBlockGpu(ctx, blk, tower.activation) for blk in tower.blocks]
        self.filters = self.input.n_out
        ctx.ws.request("planes", ctx.max_batch * 64 * 112)

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        ws = self.ctx.ws
        masks, values = split_input(x, n)
        self.ctx.kernels.expand_planes(masks, values, ws["planes"], n, 112, stream=self.ctx.where(lane)[0])
        self.input(ws["planes"], y, n, lane)
        for block in self.blocks:
            block(y, y, n, lane)


class ConvPolicyGpu:
    """Conv policy: conv1 3x3 (+act) -> conv2 3x3 to 80 planes -> gather into y float32 [n, 1858] logits."""

    def __init__(self, ctx: Context, head: ConvPolicyHead):
        self.ctx = ctx
        self.conv1 = ConvGpu(ctx, head.conv1, head.activation)
        self.conv2 = ConvGpu(ctx, head.conv2)
        if self.conv2.n_out != 80:
            raise ValueError(f"conv policy: {self.conv2.n_out} output planes, expected 80")
        self.idx = ctx.upload(CONV_POLICY_GATHER_SQUARE_MAJOR, dtype=np.int32)  # square*80 + plane
        ctx.ws.request("t1", ctx.max_batch * 64 * self.conv1.n_out)
        ctx.ws.request("pol_conv", ctx.max_batch * 64 * 80)

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        ws = self.ctx.ws
        self.conv1(x, ws["t1"], n, lane)
        self.conv2(ws["t1"], ws["pol_conv"], n, lane)
        self.ctx.kernels.policy_gather(ws["pol_conv"], 64 * 80, self.idx, y, n, stream=self.ctx.where(lane)[0])


class ClassicalPolicyGpu:
    """Classical policy: 1x1 conv (+act) -> FC to 1858 (columns reordered to square-major input) -> y."""

    def __init__(self, ctx: Context, head: ClassicalPolicyHead):
        self.ctx = ctx
        pc = head.conv.n_out
        self.pcp = round_up(pc)
        self.conv = ConvGpu(ctx, head.conv, head.activation, out_rows=self.pcp)
        w = head.fc.w.reshape(head.fc.n_out, pc, 64).transpose(0, 2, 1)  # [1858, square, channel]
        wp = np.zeros((head.fc.n_out, 64, self.pcp), dtype=np.float32)
        wp[:, :, :pc] = w
        self.out_ld = round_up(head.fc.n_out)
        b = head.fc.b if head.fc.b is not None else np.zeros(head.fc.n_out, np.float32)
        self.fc = Linear(ctx, pad_rows(wp.reshape(head.fc.n_out, -1), self.out_ld), pad_vec(b, self.out_ld), rows=1)
        self.idx = ctx.upload(np.arange(head.fc.n_out), dtype=np.int32)
        ctx.ws.request("t1", ctx.max_batch * 64 * self.pcp)
        ctx.ws.request("pol_fc", ctx.max_batch * self.out_ld)

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        ws = self.ctx.ws
        self.conv(x, ws["t1"], n, lane)
        self.fc(ws["t1"], ws["pol_fc"], n, lane)
        self.ctx.kernels.policy_gather(ws["pol_fc"], self.out_ld, self.idx, y, n, stream=self.ctx.where(lane)[0])
