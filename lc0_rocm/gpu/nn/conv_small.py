"""The classical tower at small batches: every 3x3 convolution is one direct-convolution kernel
(conv_small.hip), and a residual block's end (SE unit, residual add, activation) runs in the prologue of
the next block's first convolution. A residual block is two kernels where the Winograd path (conv.py) has
four ops, each launch-bound at a few boards (lc0 has nothing like it: `FusedWinogradConvSELayer` at every
batch size). The network runner chooses this path or Winograd per batch size by timing both
(`network.py`); towers wider than CONV_SMALL_MAX_C filters, or with other than 3x3 convolutions, only
have Winograd.

Weights are fp32 here whatever the storage dtype (filters regrouped by `direct_filter`, SE layers as
conv.py's fused path lays them out), and there is no Winograd rounding: the path is at least as exact as
the Winograd one. Activations alternate between the tower output `y` and workspace `t3` (a block end
reads the previous block's input while it writes the next one); `t1` holds a block's middle activation
and `t2` its second convolution's output before the block end. Calling convention: `layers.py`.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...encoding.packed import NUM_PLANES
from ...net.description import Conv, ConvTower
from ..runtime.memory import DeviceBuffer
from .kernels import CONV_ACTS, CONV_SMALL_R, conv_small_shape
from .layers import Context, SideStream, bias_or_zeros

SMALL_MAX_BATCH = 64  # larger batches are Winograd's: the 36-way GEMMs on the matrix units win there
# wider towers are Winograd's: a board's 256 channels made each thread's sum so long that the direct path
# took 12.9 ms at batch 1 on se256x20 against Winograd's 0.95 (H200, the first version of the kernel)
SMALL_MAX_FILTERS = 128


def direct_filter(w: np.ndarray) -> np.ndarray:
    """OIHW 3x3 weights [O, I, 3, 3] -> conv_small.hip's W [ceil(O/4), I, 9, 4] float32 (pad filters 0)."""
    o, i = w.shape[:2]
    groups = -(-o // CONV_SMALL_R)
    out = np.zeros((groups * CONV_SMALL_R, i, 9), dtype=np.float64)
    out[:o] = np.asarray(w, dtype=np.float64).reshape(o, i, 9)
    return np.ascontiguousarray(out.reshape(groups, CONV_SMALL_R, i, 9).transpose(0, 2, 3, 1), dtype=np.float32)


def direct_ok(conv: Conv, itemsize: int, hidden: int = 0) -> bool:
    """Whether conv_small.hip runs this convolution (3x3, inputs a multiple of 8 and at most
    SMALL_MAX_FILTERS, the board and an SE unit of `hidden` in its LDS)."""
    if conv.kernel != 3 or conv.n_in % 8 or conv.n_in > max(SMALL_MAX_FILTERS, NUM_PLANES):
        return False
    try:
        conv_small_shape(1, conv.n_in, conv.n_out, hidden, itemsize)
    except ValueError:
        return False
    return True


def small_tower_ok(tower: ConvTower, itemsize: int) -> bool:
    """Whether `SmallTowerGpu` serves this tower in this storage size: 3x3 convolutions of one width, a
    multiple of 8 and at most SMALL_MAX_FILTERS (`direct_ok`)."""
    filters = tower.input.n_out
    hidden = max([blk.se.fc1.n_out for blk in tower.blocks if blk.se is not None], default=0)
    convs = [c for blk in tower.blocks for c in (blk.conv1, blk.conv2)]
    return (tower.activation in CONV_ACTS and filters % 8 == 0 and filters <= SMALL_MAX_FILTERS
            and direct_ok(tower.input, itemsize) and all(c.n_out == filters for c in [tower.input] + convs)
            and all(direct_ok(c, itemsize, hidden) for c in convs))


class DirectConv:
    """One 3x3 convolution's fp32 weights for conv_small.hip."""

    def __init__(self, ctx: Context, conv: Conv):
        self.cin, self.n_out = conv.n_in, conv.n_out
        self.w = ctx.upload(direct_filter(conv.w), dtype=np.float32)
        self.b = ctx.upload(bias_or_zeros(conv), dtype=np.float32)


class SmallConvPolicyGpu:
    """The conv policy head's two 3x3 convolutions as conv_small.hip kernels: x [n*64, C] -> act(conv1) ->
    conv2 -> y [n*64, 80] (the caller gathers the logits). Workspace `t1`."""

    def __init__(self, ctx: Context, conv1: Conv, conv2: Conv, act: str, max_batch: int):
        self.ctx, self.act, self.max_batch = ctx, act, int(max_batch)
        self.conv1, self.conv2 = DirectConv(ctx, conv1), DirectConv(ctx, conv2)
        ctx.ws.request("t1", self.max_batch * 64 * conv1.n_out)

    @staticmethod
    def ok(conv1: Conv, conv2: Conv, act: str, itemsize: int) -> bool:
        return act in CONV_ACTS and conv1.n_out == conv2.n_in and all(direct_ok(c, itemsize) for c in (conv1, conv2))

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        ws, c1, c2 = self.ctx.ws, self.conv1, self.conv2
        common = dict(n=n, act=self.act, stream=self.ctx.where(lane)[0])
        self.ctx.kernels.conv_small(x, c1.cin, c1.cin, c1.w, c1.b, ws["t1"], c1.n_out, c1.n_out, out_act=True,
                                    **common)
        self.ctx.kernels.conv_small(ws["t1"], c2.cin, c2.cin, c2.w, c2.b, y, c2.n_out, c2.n_out, out_act=False,
                                    **common)


class SmallTowerGpu:
    """Expanded input planes [n*64, 112] -> input conv -> residual blocks -> y [n*64, F], n <= max_batch."""

    def __init__(self, ctx: Context, tower: ConvTower, max_batch: int):
        if not small_tower_ok(tower, ctx.ws.itemsize):
            raise ValueError(f"SmallTowerGpu: a tower of 3x3 convolutions of one width (a multiple of 8, at most "
                             f"{SMALL_MAX_FILTERS}), activation in {CONV_ACTS}")
        self.ctx, self.act, self.max_batch = ctx, tower.activation, int(max_batch)
        self.filters = tower.input.n_out
        self.input = DirectConv(ctx, tower.input)
        self.blocks = []
        for blk in tower.blocks:
            se = None
            if blk.se is not None:
                fc1, fc2 = blk.se.fc1, blk.se.fc2
                se = (ctx.upload(fc1.w, dtype=np.float32), ctx.upload(bias_or_zeros(fc1), dtype=np.float32),
                      ctx.upload(np.ascontiguousarray(fc2.w.T), dtype=np.float32),
                      ctx.upload(bias_or_zeros(fc2), dtype=np.float32), fc1.n_out)
            self.blocks.append((DirectConv(ctx, blk.conv1), DirectConv(ctx, blk.conv2), se))
        rows = self.max_batch * 64 * self.filters
        for name in ("t1", "t2", "t3"):
            ctx.ws.request(name, rows)

    def __call__(self, planes: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        if n > self.max_batch:
            raise ValueError(f"SmallTowerGpu: batch {n} > {self.max_batch}")
        ctx, ws, F = self.ctx, self.ctx.ws, self.filters
        run = ctx.kernels.conv_small
        stream = ctx.where(lane)[0]
        common = dict(n=n, act=self.act, stream=stream)
        run(planes, NUM_PLANES, NUM_PLANES, self.input.w, self.input.b, y, F, F, out_act=True, **common)
        cur, other = y, ws["t3"]
        prev_se = None
        for i, (conv1, conv2, se) in enumerate(self.blocks):
            if i == 0:
                run(cur, F, F, conv1.w, conv1.b, ws["t1"], F, F, out_act=True, **common)
            else:  # the previous block's end, then this block's first convolution
                run(None, F, F, conv1.w, conv1.b, ws["t1"], F, F, out_act=True, z=ws["t2"], skip=cur, xout=other,
                    se=prev_se, **common)
                cur, other = other, cur
            run(ws["t1"], F, F, conv2.w, conv2.b, ws["t2"], F, F, out_act=False, **common)
            prev_se = se
        if self.blocks:  # the last block's end, into y (in place when y holds its input)
            run(None, F, F, None, None, None, F, 0, out_act=False, z=ws["t2"], skip=cur, xout=y, se=prev_se,
                **common)
