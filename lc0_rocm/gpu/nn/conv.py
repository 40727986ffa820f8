"""GPU layers of the classical residual tower and the convolutional / classical policy heads (lc0's
`src/neural/backends/cuda/layers.cc`: `FusedWinogradConvSELayer`, `ResidualBlock`, `SELayer`,
`PolicyMapLayer`). No MIOpen and no im2col: a 3x3 convolution on the 8x8 board is Winograd F(4x4, 3x3)
(conv.hip: input transform, 36 products as one strided-batched hipBLASLt GEMM, output transform with the
bias, the SE unit, the residual add and the activation fused); a 1x1 convolution is a plain GEMM.

An output transform also writes the next convolution's input transform when it has the whole channel
in hand (conv1 -> conv2 of a block, a block's output -> the next block's conv1), so the intermediate
activation of a block is never stored. An SE block ends one of two ways, chosen per call (`plan`):
"fused", the SE unit inside the output transform (`winograd_out_se`, one block of threads per board, up
to WINOGRAD_SE_MAX_C filters), or "split", for big batches: conv2's output transform writes z and pools
it, the two SE dense layers run as GEMMs over all boards, and the scale, shift, residual and activation
run in the next convolution's input transform (`winograd_in_se`; the `residual` kernel after the last
block). Towers wider than WINOGRAD_SE_MAX_C (or `Context.conv_fuse_se = False`) always split.

Activations are square-major ([n*64, C], like the attention body), so the tower output feeds an
attention body or the heads directly. Workspace buffers used: planes, wino_v, wino_m, t1, t2, se_pool,
se_h, se_t, pol_conv, pol_fc. Calling convention: `layers.py`.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...encoding.packed import NUM_PLANES
from ...encoding.policy_map import CONV_POLICY_GATHER_SQUARE_MAJOR
from ...net.description import ClassicalPolicyHead, Conv, ConvPolicyHead, ConvTower
from ..runtime.memory import DeviceBuffer
from .conv_small import SMALL_MAX_BATCH, SmallConvPolicyGpu, SmallTowerGpu, small_tower_ok
from .kernels import CONV_ACTS, WINOGRAD_SE_MAX_C
from .layers import Context, Linear, SideStream, bias_or_zeros, pad_rows, pad_vec, round_up, split_input

SPLIT_MIN_BATCH = 128  # "auto" times the split SE end from this many boards
# ... on towers this wide: it was measured (1.24x fused at batch 1024) on 256 filters only, and on maia-1200
# (64 filters) at batch 256 its extra fp16 stores (z, the means, the SE outputs) flipped one top-1 move of
# 499, below the GPU test's 99 % gate; narrower towers keep the fused end unless conv_plan=split asks
SPLIT_MIN_FILTERS = 256


def split_offered(ctx: Context, filters: int) -> bool:
    """Whether a tower of `filters` can run the split SE end under `ctx.conv_plan` (its SE layers and
    buffers are only built then)."""
    return ctx.conv_plan == "split" or (ctx.conv_plan == "auto" and filters >= SPLIT_MIN_FILTERS)

# Winograd F(4x4, 3x3) (Lavin & Gray's Toom-Cook construction): for a 6x6 input patch d and a 3x3 filter g,
# the 4x4 cross-correlation is A^T [(G g G^T) * (B^T d B)] A. The points 0, 1, -1, 1/2, -2 and infinity round
# about 1.5x less than the textbook 0, +-1, +-2 (fp16 and fp32, measured on random data by the float64
# twin; Barabasz et al. found the same). conv.hip hard-codes B^T and A^T (wino_bt, wino_at); G transforms
# the filters here, once, in float64.
WINO_POINTS = (0.0, 1.0, -1.0, 0.5, -2.0)  # and infinity


def winograd_matrices(points=WINO_POINTS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A^T [4, 6], G [6, 3], B^T [6, 6]) of F(4, 3) on `points` and infinity, float64.

    A^T[i, j] = p_j^i and G[j, k] = p_j^k / prod_{l != j} (p_j - p_l) for the finite points, the last column of
    A^T and row of G pick the leading coefficient (the point at infinity); B^T is the unique matrix that makes
    sum_j A^T[i, j] G[j, k] B^T[j, l] = [l == i + k] (cross-correlation), solved for exactly."""
    m, r, n = 4, 3, 6
    at, g = np.zeros((m, n)), np.zeros((n, r))
    for j, p in enumerate(points):
        at[:, j] = [p**i for i in range(m)]
        g[j] = [p**k / np.prod([p - q for q in points if q != p]) for k in range(r)]
    at[m - 1, n - 1] = g[n - 1, r - 1] = 1.0
    # unknowns B^T[j, l] for each l separately: sum_j at[i, j] g[j, k] B^T[j, l] = [l == i + k]
    a = np.einsum("ij,jk->ikj", at, g).reshape(m * r, n)
    rhs = np.array([[1.0 if l == i + k else 0.0 for l in range(n)] for i in range(m) for k in range(r)])
    bt = np.linalg.lstsq(a, rhs, rcond=None)[0]
    return at, g, np.round(bt * 64) / 64  # the entries are multiples of 1/2: exact after rounding


WINO_AT, WINO_G, WINO_BT = winograd_matrices()


def conv_matrix(conv: Conv) -> np.ndarray:
    """A 1x1 convolution's OIHW weights as the [O, I] GEMM matrix."""
    if conv.kernel != 1:
        raise ValueError(f"conv_matrix: a {conv.kernel}x{conv.kernel} convolution is not a plain GEMM")
    return np.ascontiguousarray(conv.w[:, :, 0, 0])


def winograd_filter(w: np.ndarray) -> np.ndarray:
    """OIHW 3x3 weights [O, I, 3, 3] -> U [36, O, I] float64, U[i*6 + j] = (G g G^T)[i, j] per filter."""
    u = np.einsum("ak,oikl,bl->aboi", WINO_G, np.asarray(w, dtype=np.float64), WINO_G)
    return u.reshape(36, w.shape[0], w.shape[1])


class ConvGpu:
    """act(conv(x) + b) for k = 1 or 3: x [n*64, C] -> y [n*64, O].

    k = 1: a GEMM (`out_rows` pads O with zero filters). k = 3: Winograd in three steps that callers may
    run apart to fuse: `transform(x)` (x -> workspace wino_v), `multiply()` (wino_v -> wino_m) and
    `finish(...)` (wino_m -> y and/or the next convolution's wino_v, with the fusions of winograd_out).
    `wide` (fp16 networks): V, U and M in fp32 and the product an fp32 GEMM, x and y still fp16 (the
    tower's input convolution, see `ConvTowerGpu`).
    """

    def __init__(self, ctx: Context, conv: Conv, act: str = "none", out_rows: int = 0, wide: bool = False):
        self.ctx, self.kernel, self.cin, self.act = ctx, conv.kernel, conv.n_in, act
        self.wide = bool(wide) and ctx.dtype == "f16"
        if self.kernel == 1:
            w, b = conv_matrix(conv), conv.b
            if out_rows:
                w, b = pad_rows(w, out_rows), pad_vec(b, out_rows)
            self.lin = Linear(ctx, w, b, act=act, rows=64)
            self.n_out = self.lin.n
            return
        if self.kernel != 3 or out_rows or act not in CONV_ACTS:
            raise ValueError(f"unsupported convolution: kernel {conv.kernel}, out_rows {out_rows}, activation {act}")
        self.n_out = conv.n_out
        self.kp, self.np_ = round_up(self.cin), round_up(self.n_out)
        u = np.zeros((36, self.np_, self.kp), dtype=np.float64)
        u[:, : self.n_out, : self.cin] = winograd_filter(conv.w)
        self.u = ctx.upload(u, dtype=np.float32 if self.wide else None)
        self.b = ctx.upload(conv.b)
        tiles = 4 * ctx.max_batch
        size = 4 if self.wide else None  # fp32 V and M share the workspace buffers of the fp16 ones
        ctx.ws.request("wino_v", 36 * tiles * self.kp, size)
        ctx.ws.request("wino_m", 36 * tiles * self.np_, size)

    def feeds(self, other: "ConvGpu") -> bool:
        """Whether this 3x3 convolution's output transform can write `other`'s input transform directly."""
        return (self.kernel == 3 and other.kernel == 3 and other.cin == self.n_out and self.n_out % 8 == 0)

    def transform(self, x: DeviceBuffer, n: int, lane: Optional[SideStream] = None, ldx: Optional[int] = None):
        self.ctx.kernels.winograd_in(x, self.ctx.ws["wino_v"], n, self.cin, ldx=ldx, Kp=self.kp, wide=self.wide,
                                     stream=self.ctx.where(lane)[0])

    def multiply(self, n: int, lane: Optional[SideStream] = None) -> None:
        ctx = self.ctx
        s, workspace = ctx.where(lane)
        ctx.gemm.linear(ctx.ws["wino_v"], self.u, ctx.ws["wino_m"], 4 * n, self.np_, self.kp,
                        dtype="f32" if self.wide else ctx.dtype, stream=s, workspace=workspace, batch=36)

    def finish(self, n: int, lane: Optional[SideStream] = None, y: Optional[DeviceBuffer] = None,
               act: Optional[str] = None, skip=None, pooled=None, vnext: bool = False) -> None:
        ctx = self.ctx
        ctx.kernels.winograd_out(ctx.ws["wino_m"], self.np_, y, n, self.n_out, act=self.act if act is None else act,
                                 bias=self.b, skip=skip, pooled=pooled, vnext=ctx.ws["wino_v"] if vnext else None,
                                 wide=self.wide, stream=ctx.where(lane)[0])

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        if self.kernel == 1:
            self.lin(x, y, n, lane)
            return
        self.transform(x, n, lane)
        self.multiply(n, lane)
        self.finish(n, lane, y=y)


class ResidualBlockGpu:
    """y <- act(SE(conv2(act(conv1(x)))) + x) (y may be x: in place)."""

    def __init__(self, ctx: Context, block, act: str):
        self.ctx, self.act = ctx, act
        self.conv1 = ConvGpu(ctx, block.conv1, act)
        self.conv2 = ConvGpu(ctx, block.conv2)
        self.F = self.conv2.n_out
        self.chain = self.conv1.feeds(self.conv2)
        b = ctx.max_batch
        if not self.chain:
            ctx.ws.request("t1", b * 64 * self.conv1.n_out)
        self.se = self.se_fused = None
        if block.se is not None:
            fc1, fc2 = block.se.fc1, block.se.fc2
            if ctx.conv_fuse_se and self.F <= WINOGRAD_SE_MAX_C:
                self.H = fc1.n_out
                self.se_fused = (ctx.upload(fc1.w), ctx.upload(bias_or_zeros(fc1)),
                                 ctx.upload(np.ascontiguousarray(fc2.w.T)), ctx.upload(bias_or_zeros(fc2)))
            if self.se_fused is None or split_offered(ctx, self.F):  # the split end, where it can run
                self.se = (Linear(ctx, fc1.w, fc1.b, act=act, rows=1), Linear(ctx, fc2.w, fc2.b, rows=1))
                ctx.ws.request("t2", b * 64 * self.F)
                ctx.ws.request("se_pool", b * self.F)
                ctx.ws.request("se_h", b * self.se[0].n)
                ctx.ws.request("se_t", b * 2 * self.F)

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None,
                 ready: bool = False, vnext: bool = False, plan: str = "fused") -> bool:
        """`ready`: wino_v already holds conv1's input transform of x. `vnext`: also write the transform of
        y for a following 3x3 convolution of F inputs. `plan`: how an SE block ends (module docstring; a
        block without SE ends the same way under every plan). Returns whether wino_v was written."""
        ctx, ws, k = self.ctx, self.ctx.ws, self.ctx.kernels
        stream, _ = ctx.where(lane)
        if not ready:
            self.conv1.transform(x, n, lane)
        self.conv1.multiply(n, lane)
        if self.chain:
            self.conv1.finish(n, lane, vnext=True)
        else:
            self.conv1.finish(n, lane, y=ws["t1"])
            self.conv2.transform(ws["t1"], n, lane)
        self.conv2.multiply(n, lane)
        vnext = vnext and self.F % 8 == 0
        if self.se_fused is not None and (plan == "fused" or self.se is None):
            w1, b1, w2t, b2 = self.se_fused
            k.winograd_out_se(ws["wino_m"], self.conv2.np_, self.conv2.b, x, y, n, self.F, w1, b1, w2t, b2, self.H,
                              self.act, vnext=ws["wino_v"] if vnext else None, stream=stream)
            return vnext
        if self.se is not None:
            fc1, fc2 = self.se
            self.conv2.finish(n, lane, y=ws["t2"], pooled=ws["se_pool"])
            fc1(ws["se_pool"], ws["se_h"], n, lane)
            fc2(ws["se_h"], ws["se_t"], n, lane)
            if vnext:  # the next block's conv1 input transform, with the SE, the residual and act in front
                k.winograd_in_se(ws["t2"], x, ws["se_t"], y, ws["wino_v"], n, self.F, self.act, stream=stream)
                return True
            k.residual(ws["t2"], x, y, n, self.F, self.act, se=ws["se_t"], stream=stream)
            return False
        self.conv2.finish(n, lane, y=y, act=self.act, skip=x, vnext=vnext)
        return vnext


class ConvTowerGpu:
    """Network input (packed planes, see `split_input`) -> input conv -> residual blocks, into y [n*64, F].

    The input convolution is `wide` (fp32 transforms and GEMM in an fp16 network): its fp16 U and M moved a
    tanh value head's Q more than the fp16 transforms of all the blocks' convolutions together (its error
    passes through every block; tests/test_fp16_twin.py), for one fp32 GEMM of K = 112 per batch."""

    def __init__(self, ctx: Context, tower: ConvTower):
        self.ctx = ctx
        self.input = ConvGpu(ctx, tower.input, tower.activation, wide=True)
        self.blocks = [ResidualBlockGpu(ctx, blk, tower.activation) for blk in tower.blocks]
        self.filters = self.input.n_out
        ctx.ws.request("planes", ctx.max_batch * 64 * NUM_PLANES)
        self.small = None
        if ctx.conv_plan in ("auto", "direct") and small_tower_ok(tower, ctx.ws.itemsize):
            self.small = SmallTowerGpu(ctx, tower, min(ctx.max_batch, SMALL_MAX_BATCH))

    def plans(self, n: int) -> list[str]:
        """The ways this tower can run a batch of n (CONV_PLANS), the default first: `ctx.conv_plan` where it
        applies, else every one that does ("auto": the network runner times them, network.py; the split SE
        end from SPLIT_MIN_BATCH boards, where the fused one's bandwidth is what limits)."""
        direct = self.small is not None and n <= self.small.max_batch
        split = split_offered(self.ctx, self.filters) and any(b.se is not None for b in self.blocks)
        if self.ctx.conv_plan == "auto":
            return ["fused"] + (["direct"] if direct else []) + (["split"] if split and n >= SPLIT_MIN_BATCH else [])
        return [self.ctx.conv_plan] if self.ctx.conv_plan != "direct" or direct else ["fused"]

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None,
                 plan: str = "fused") -> None:
        ws = self.ctx.ws
        masks, values = split_input(x, n)
        self.ctx.kernels.expand_planes(masks, values, ws["planes"], n, NUM_PLANES, stream=self.ctx.where(lane)[0])
        if plan == "direct":
            self.small(ws["planes"], y, n, lane)
            return
        self.input.transform(ws["planes"], n, lane)
        self.input.multiply(n, lane)
        ready = bool(self.blocks) and self.input.feeds(self.blocks[0].conv1)
        self.input.finish(n, lane, y=y, vnext=ready)
        for i, block in enumerate(self.blocks):
            nxt = i + 1 < len(self.blocks) and block.conv2.n_out == self.blocks[i + 1].conv1.cin
            ready = block(y, y, n, lane, ready=ready, vnext=nxt, plan=plan)


class ConvPolicyGpu:
    """Conv policy: conv1 3x3 (+act) -> conv2 3x3 to 80 planes -> gather into y float32 [n, 1858] logits."""

    def __init__(self, ctx: Context, head: ConvPolicyHead):
        self.ctx = ctx
        self.conv1 = ConvGpu(ctx, head.conv1, head.activation)
        self.conv2 = ConvGpu(ctx, head.conv2)
        if self.conv2.n_out != 80:
            raise ValueError(f"conv policy: {self.conv2.n_out} output planes, expected 80")
        self.chain = self.conv1.feeds(self.conv2)
        self.idx = ctx.upload(CONV_POLICY_GATHER_SQUARE_MAJOR, dtype=np.int32)  # square*80 + plane
        if not self.chain:
            ctx.ws.request("t1", ctx.max_batch * 64 * self.conv1.n_out)
        ctx.ws.request("pol_conv", ctx.max_batch * 64 * 80)
        self.small = None  # the tower's "direct" plan runs this head's convolutions directly too
        if (ctx.conv_plan in ("auto", "direct")
                and SmallConvPolicyGpu.ok(head.conv1, head.conv2, head.activation, ctx.ws.itemsize)):
            self.small = SmallConvPolicyGpu(ctx, head.conv1, head.conv2, head.activation,
                                            min(ctx.max_batch, SMALL_MAX_BATCH))

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None,
                 plan: str = "fused") -> None:
        ws = self.ctx.ws
        if plan == "direct" and self.small is not None and n <= self.small.max_batch:
            self.small(x, ws["pol_conv"], n, lane)
        elif self.chain:
            self.conv1.transform(x, n, lane)
            self.conv1.multiply(n, lane)
            self.conv1.finish(n, lane, vnext=True)
            self.conv2.multiply(n, lane)
            self.conv2.finish(n, lane, y=ws["pol_conv"])
        else:
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

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None,
                 plan: str = "fused") -> None:
        """`plan`: the tower's (the same 1x1 convolution and GEMMs under every one)."""
        ws = self.ctx.ws
        self.conv(x, ws["t1"], n, lane)
        self.fc(ws["t1"], ws["pol_fc"], n, lane)
        self.ctx.kernels.policy_gather(ws["pol_fc"], self.out_ld, self.idx, y, n, stream=self.ctx.where(lane)[0])
