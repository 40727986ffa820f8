"""Host launchers of the network kernels (lc0_rocm/kernels/{bias_act,expand_planes,layernorm,embedding,
attention,conv,policy,heads}.hip); their numpy twins are `lc0_rocm.activations` and the functions of
`lc0_rocm.reference`.

`NnKernels(device, dtype)` binds a device and a storage dtype ('f32' or 'f16'); each method checks sizes
and arguments, then launches asynchronously on the given stream (the device's default stream if None).
Buffers are `DeviceBuffer`s; optional ones may be None (passed as a null pointer). Sizes are in elements
of the storage dtype unless a method says float32 or int32. `bias_act(dev, y, x, bias, total, channels,
inner, act, dtype)` is also a plain function, for callers without an `NnKernels`.
"""

from __future__ import annotations

import math

import numpy as np

from ...encoding.outputs import POLICY_SIZE
from ...encoding.packed import NUM_PLANES
from ...encoding.policy_map import ATTENTION_MAP_SIZE
from ..runtime.dtypes import storage_type
from ..runtime.kernel import get_kernel, ptr

# the activations every kernel knows: name -> code, mirroring LC0_ACT_* in lc0_rocm/kernels/common.h
ACT_CODES = {"none": 0, "relu": 1, "relu2": 2, "mish": 3, "swish": 4, "selu": 5, "tanh": 6, "sigmoid": 7}
BLOCK = 256
MAX_GRID = 65535
MAX_MHA_DEPTH = 64
# attention kernels: t128 (the fast one) where mha_t128_ok, else simple (any depth <= 64); auto picks
MHA_VARIANTS = ("auto", "simple", "t128")
# the activations conv.hip is compiled for (CONV_ACT): a classical tower's are relu or mish (lc0's
# DEFAULT_ACTIVATION), plus none for plain outputs
CONV_ACTS = ("none", "relu", "mish")
WINOGRAD_SE_MAX_C = 256  # conv.hip's winograd_out_se: one thread per channel, a block of at most 256
CONV_SMALL_LDS = 64 * 1024  # conv_small.hip's LDS: a board's input channels, a weight chunk, SE scratch
CONV_SMALL_THREADS = 256  # conv_small.hip: 64 squares x (output groups G x input-channel splits Q = 4)
CONV_SMALL_R = 4  # conv_small.hip: output channels per thread (direct_filter's group)


def conv_small_shape(n: int, C: int, O: int, H: int, itemsize: int) -> tuple[int, int, int, int, int]:
    """conv_small.hip's launch for n boards, C inputs, O outputs, an SE unit of H (0: none):
    (G output groups of 4 channels per block, Q input-channel splits, CK channels per weight chunk, wsz
    floats of weight/scratch LDS, LDS bytes). One group per block with four splits while the grid is small
    (at a few boards every thread sums a quarter of the channels), four groups once it fills the card; the
    largest chunk (C, C/2, ...) that fits CONV_SMALL_LDS (ValueError if none does)."""
    blocks = n * -(-max(O, 1) // CONV_SMALL_R)
    G = 1 if blocks <= 512 else (2 if blocks <= 1024 else 4)
    Q = CONV_SMALL_THREADS // 64 // G
    for CK in (C, C // 2, C // 4, C // 8):
        if CK < Q or CK % Q:
            continue
        wsz = -(-max(G * CK * 36, CONV_SMALL_THREADS * 4, H * C // 8) // 4) * 4
        shared = (4 * C + wsz) * 4 + C * 65 * itemsize
        if shared <= CONV_SMALL_LDS:
            return G, Q, CK, wsz, shared
    raise ValueError(f"conv_small: {C} channels do not fit {CONV_SMALL_LDS} bytes of LDS")


def _aligned16(*bufs) -> bool:
    return all(b is None or b.ptr % 16 == 0 for b in bufs)


def mha_t128_ok(depth: int) -> bool:
    """Whether attention.hip's mha_t128 serves this head depth."""
    return depth % 8 == 0 and depth <= 32


def _grid(total: int, block: int = BLOCK) -> int:
    return max(1, (total + block - 1) // block)


def _p(buf):
    return ptr(0) if buf is None else buf


def act_code(name: str) -> int:
    try:
        return ACT_CODES[name]
    except KeyError:
        raise ValueError(f"unknown activation {name!r} (known: {', '.join(ACT_CODES)})") from None


def bias_act(dev, y, x, bias, total: int, channels: int = 1, inner: int = 1, act: str = "none",
             dtype: str = "f16", stream=None) -> None:
    """y = act(x + bias[(i // inner) % channels]) over `total` elements (bias may be None; y may be x).

    Without a bias, with `total` a multiple of 8 and 16-byte aligned buffers it runs `act8_*` (8 elements
    per thread, 16-byte accesses); otherwise `bias_act_*` (one element per thread)."""
    act_code(act)
    size = storage_type(dtype).itemsize
    if total < 0 or channels < 1 or inner < 1:
        raise ValueError(f"bad sizes total={total} channels={channels} inner={inner}")
    if x.nbytes < total * size or y.nbytes < total * size:
        raise ValueError(f"buffers too small for {total} {dtype} elements")
    if bias is not None and bias.nbytes < channels * size:
        raise ValueError(f"bias buffer too small for {channels} {dtype} elements")
    if total == 0:
        return
    if bias is None and total % 8 == 0 and _aligned16(x, y):
        n8 = total // 8
        get_kernel(dev, "bias_act.hip", f"act8_{act}_{dtype}").launch(
            min(_grid(n8), MAX_GRID), BLOCK, (y, x, np.int32(n8)), stream=stream)
        return
    get_kernel(dev, "bias_act.hip", f"bias_act_{act}_{dtype}").launch(
        min(_grid(total), MAX_GRID), BLOCK,
        (y, x, _p(bias), np.int32(total), np.int32(channels), np.int32(inner)), stream=stream)


class NnKernels:
    """The network kernels of one device and storage dtype."""

    def __init__(self, device, dtype: str, mha_variant: str = "auto", vector_ln: bool = True):
        if mha_variant not in MHA_VARIANTS:
            raise ValueError(f"mha_variant must be one of {MHA_VARIANTS}, got {mha_variant!r}")
        self.device, self.dtype, self.size = device, dtype, storage_type(dtype).itemsize
        self.mha_variant, self.vector_ln = mha_variant, bool(vector_ln)
        self.policy_split_below = 64  # batches smaller than this use the 16-blocks-per-position policy kernel

    # ------------------------------------------------------------------ helpers

    def _k(self, filename: str, name: str, options=()):
        return get_kernel(self.device, filename, f"{name}_{self.dtype}", options)

    def _need(self, what: str, buf, count: int, size: int | None = None) -> None:
        if buf is None:
            return
        nbytes = count * (self.size if size is None else size)
        if buf.nbytes < nbytes:
            raise ValueError(f"{what}: buffer of {buf.nbytes} bytes, needs {nbytes}")

    # ------------------------------------------------------------------ input

    def expand_planes(self, masks, values, out, n: int, ld: int, pe_map: bool = False, vec12=None, stream=None):
        """out [n*64, ld] <- planes (+ kPosEncoding columns 112..175 if pe_map); vec12 [n, 768] optional.

        masks: uint64 [n, 112] buffer, values: float32 [n, 112] buffer.
        """
        cols = NUM_PLANES + 64 if pe_map else NUM_PLANES
        if ld < cols:
            raise ValueError(f"expand_planes: ld {ld} < {cols} columns")
        self._need("masks", masks, n * NUM_PLANES, 8)
        self._need("values", values, n * NUM_PLANES, 4)
        self._need("out", out, n * 64 * ld)
        self._need("vec12", vec12, n * 768)
        total = n * 64 * cols
        self._k("expand_planes.hip", "expand_planes").launch(
            _grid(total), BLOCK, (masks, values, out, _p(vec12), np.int32(n), np.int32(ld), np.int32(int(pe_map))),
            stream=stream)

    def copy_columns(self, src, dst, rows: int, width: int, ld_dst: int, col0: int, stream=None):
        """dst[r, col0:col0+width] <- src[r, :] (src rows are `width` long)."""
        if col0 + width > ld_dst:
            raise ValueError(f"copy_columns: columns {col0}..{col0 + width} exceed ld {ld_dst}")
        self._need("src", src, rows * width)
        self._need("dst", dst, rows * ld_dst)
        self._k("expand_planes.hip", "copy_columns").launch(
            _grid(rows * width), BLOCK,
            (src, dst, np.int32(rows), np.int32(width), np.int32(ld_dst), np.int32(col0)), stream=stream)

    # ------------------------------------------------------------------ elementwise

    def bias_act(self, y, x, bias, total: int, channels: int = 1, inner: int = 1, act: str = "none", stream=None):
        """y = act(x + bias[(i // inner) % channels]) over `total` elements (see the function `bias_act`)."""
        bias_act(self.device, y, x, bias, total, channels, inner, act, self.dtype, stream)

    def widen(self, x, y, total: int, stream=None):
        """y float32 [total] <- x [total] of an fp16 network (a copy in an fp32 one)."""
        if self.dtype != "f16":
            raise ValueError("widen: only an fp16 network has narrower activations than float32")
        self._need("x", x, total)
        self._need("y", y, total, 4)
        get_kernel(self.device, "bias_act.hip", "widen_f16").launch(
            min(_grid(total), MAX_GRID), BLOCK, (y, x, np.int32(total)), stream=stream)

    # ------------------------------------------------------------------ normalisation and gating

    def layernorm(self, x, out, rows: int, C: int, gamma, beta, eps: float, bias=None, skip=None,
                  alpha: float = 1.0, act: str = "none", gate_mul=None, gate_add=None, stream=None):
        """out = LN(alpha * act(x + bias) + skip) * gamma + beta (* gate_mul + gate_add), per row of C."""
        if (gate_mul is None) != (gate_add is None):
            raise ValueError("layernorm: gate_mul and gate_add go together")
        if C * 4 > self.device.max_shared_per_block:
            raise ValueError(f"layernorm: row of {C} floats exceeds the block's shared memory")
        for what, buf, count in (("x", x, rows * C), ("out", out, rows * C), ("skip", skip, rows * C),
                                 ("bias", bias, C), ("gamma", gamma, C), ("beta", beta, C),
                                 ("gate_mul", gate_mul, 64 * C), ("gate_add", gate_add, 64 * C)):
            self._need(what, buf, count)
        warp = self.device.warp_size
        args = (x, _p(bias), _p(skip), out, gamma, beta, _p(gate_mul), _p(gate_add), np.int32(C),
                np.float32(alpha), np.float32(eps), np.int32(act_code(act)))
        vec = self.vector_ln and C % 8 == 0 and _aligned16(x, bias, skip, out, gamma, beta, gate_mul, gate_add)
        if vec and C <= 8 * 1024:
            threads = -(-(C // 8) // warp) * warp
            self._k("layernorm.hip", "layernorm8").launch(rows, threads, args, stream=stream)
            return
        threads = min(1024, max(warp, -(-C // (4 * warp)) * warp))  # about 4 elements per thread
        self._k("layernorm.hip", "layernorm").launch(rows, threads, args, shared=C * 4, stream=stream)

    def gate(self, x, gate_mul, gate_add, rows: int, C: int, stream=None):
        """In place: x[r, c] = x[r, c] * gate_mul[r % 64, c] + gate_add[r % 64, c]."""
        for what, buf, count in (("x", x, rows * C), ("gate_mul", gate_mul, 64 * C), ("gate_add", gate_add, 64 * C)):
            self._need(what, buf, count)
        self._k("embedding.hip", "gate").launch(
            _grid(rows * C), BLOCK, (x, gate_mul, gate_add, np.int32(rows), np.int32(C)), stream=stream)

    # ------------------------------------------------------------------ attention

    def mha(self, qkv, n: int, dm: int, heads: int, out, bias=None, ld_out: int | None = None, stream=None):
        """Fused attention: qkv [n*64, 3*dm] (Q|K|V), bias [n, heads, 64, 64] or None -> out [n*64, ld_out]."""
        if dm % heads:
            raise ValueError(f"mha: d_model {dm} not divisible by {heads} heads")
        depth = dm // heads
        if depth > MAX_MHA_DEPTH:
            raise ValueError(f"mha: head depth {depth} > {MAX_MHA_DEPTH} is not supported")
        ld_out = dm if ld_out is None else ld_out
        self._need("qkv", qkv, n * 64 * 3 * dm)
        self._need("out", out, n * 64 * ld_out)
        self._need("bias", bias, n * heads * 4096)
        variant = self.mha_variant
        fits = mha_t128_ok(depth) and ld_out % 4 == 0 and _aligned16(qkv, out, bias)
        if variant == "auto":
            variant = "t128" if fits else "simple"
        elif variant == "t128" and not fits:
            raise ValueError(f"mha: mha_t128 needs a head depth that is a multiple of 8 and <= 32 (got "
                             f"{depth}), ld_out % 4 == 0 (got {ld_out}) and 16-byte aligned buffers")
        args = (qkv, np.int32(3 * dm), np.int32(dm), np.int32(heads), _p(bias), out, np.int32(ld_out),
                np.float32(1.0 / math.sqrt(depth)))
        threads = {"t128": 128, "simple": 64}[variant]
        name = {"t128": "mha_t128", "simple": "mha"}[variant]
        self._k("attention.hip", name, (f"-DMHA_DEPTH={depth}",)).launch((heads, n), threads, args, stream=stream)

    # ------------------------------------------------------------------ convolution tower

    def _conv(self, name: str, act: str = "none", small: bool = False):
        """A kernel of conv.hip (conv_small.hip if `small`) from the module compiled for activation `act`
        (CONV_ACT)."""
        if act not in CONV_ACTS:
            raise ValueError(f"convolution activation {act!r}: the conv kernels know {', '.join(CONV_ACTS)}")
        if small:
            return self._k("conv_small.hip", name, (f"-DCONV_ACT={act_code(act)}",))
        return self._k("conv.hip", name, (f"-DCONV_ACT={act_code(act)}",))

    def _wide(self, name: str, wide: bool) -> tuple[str, int]:
        """(kernel name, bytes per V / M element): `wide` keeps V resp. M in fp32 in an fp16 network."""
        return (name + "32", 4) if wide and self.dtype == "f16" else (name, self.size)

    def winograd_in(self, x, V, n: int, C: int, ldx: int | None = None, Kp: int | None = None, wide: bool = False,
                    stream=None):
        """V [36, 4n, Kp] <- the Winograd F(4x4, 3x3) input transform of x [n*64, ldx] (channels 0..C-1;
        channels C..Kp-1 of V are written 0); `wide`: V float32 (fp16 networks; the same kernel in fp32)."""
        ldx = C if ldx is None else ldx
        Kp = -(-C // 8) * 8 if Kp is None else Kp
        if ldx < C or Kp < C:
            raise ValueError(f"winograd_in: ldx {ldx} and Kp {Kp} must be >= C {C}")
        name, vsize = self._wide("winograd_in", wide)
        self._need("x", x, n * 64 * ldx)
        self._need("V", V, 36 * 4 * n * Kp, vsize)
        self._conv(name).launch(_grid(n * Kp), BLOCK, (x, np.int32(ldx), V, np.int32(n), np.int32(C), np.int32(Kp)),
                                stream=stream)

    def winograd_out(self, M, ldm: int, y, n: int, C: int, act: str = "none", bias=None, skip=None,
                     ldy: int | None = None, pooled=None, vnext=None, wide: bool = False, stream=None):
        """z = A^T M A + bias per channel c < C (M [36, 4n, ldm]); pooled [n, C] <- mean of z over the board;
        v = act(z + skip) (skip [n*64, C]); y [n*64, ldy] <- v; vnext [36, 4n, C] <- the input transform of
        v (C % 8 == 0). Any of bias, skip, y, pooled, vnext may be None. `wide`: M float32 (fp16 networks)."""
        ldy = C if ldy is None else ldy
        if ldm < C or ldy < C:
            raise ValueError(f"winograd_out: ldm {ldm} and ldy {ldy} must be >= C {C}")
        if vnext is not None and C % 8:
            raise ValueError(f"winograd_out: the next input transform needs C % 8 == 0, got {C}")
        name, msize = self._wide("winograd_out", wide)
        self._need("M", M, 36 * 4 * n * ldm, msize)
        for what, buf, count in (("bias", bias, C), ("skip", skip, n * 64 * C), ("y", y, n * 64 * ldy),
                                 ("pooled", pooled, n * C), ("vnext", vnext, 36 * 4 * n * C)):
            self._need(what, buf, count)
        self._conv(name, act).launch(
            _grid(n * C), BLOCK, (M, np.int32(ldm), _p(bias), _p(skip), _p(y), np.int32(ldy), _p(pooled), _p(vnext),
                                  np.int32(n), np.int32(C)), stream=stream)

    def winograd_out_se(self, M, ldm: int, bias, skip, y, n: int, C: int, w1, b1, w2t, b2, H: int, act: str,
                        vnext=None, stream=None):
        """The SE residual block's end: z = A^T M A + bias; h = act(w1 [H, C] . mean_board(z) + b1);
        t = w2t [H, 2C]^T . h + b2; y [n*64, C] <- act(sigmoid(t[:C]) * z + t[C:] + skip) (y may be skip);
        vnext [36, 4n, C] <- its input transform (None: not written). C <= WINOGRAD_SE_MAX_C."""
        if C > WINOGRAD_SE_MAX_C or (vnext is not None and C % 8):
            raise ValueError(f"winograd_out_se: C = {C} (at most {WINOGRAD_SE_MAX_C}, a multiple of 8 with vnext)")
        for what, buf, count in (("M", M, 36 * 4 * n * ldm), ("bias", bias, C), ("skip", skip, n * 64 * C),
                                 ("y", y, n * 64 * C), ("w1", w1, H * C), ("b1", b1, H), ("w2t", w2t, 2 * H * C),
                                 ("b2", b2, 2 * C), ("vnext", vnext, 36 * 4 * n * C)):
            self._need(what, buf, count)
        threads = -(-C // 64) * 64
        self._conv("winograd_out_se", act).launch(
            n, threads, (M, np.int32(ldm), bias, skip, y, _p(vnext), w1, b1, w2t, b2, np.int32(C), np.int32(H)),
            shared=(C + H) * 4, stream=stream)

    def conv_small(self, x, ldx: int, C: int, W, bias, y, ldy: int, O: int, n: int, act: str, out_act: bool,
                   z=None, skip=None, xout=None, se=None, stream=None):
        """A direct 3x3 convolution of n boards (conv_small.hip): y [n*64, ldy] columns 0..O-1 <- act?(bias +
        W * u), u the input: x [n*64, ldx] channels 0..C-1, or with z the previous block's end act(SE(z) * z +
        skip) (se = (w1, b1, w2t, b2, H) fp32 buffers or None), also written to xout. W: fp32 `direct_filter`
        groups, bias fp32 [O]. O = 0: the block end alone. The launch shape is `conv_small_shape`'s."""
        if C % 8 or ldx % 8 or (z is None) != (skip is None) or (x is None) == (z is None):
            raise ValueError(f"conv_small: C = {C}, ldx = {ldx} (multiples of 8), either x or both z and skip")
        w1 = b1 = w2t = b2 = None
        H = 0
        if se is not None:
            w1, b1, w2t, b2, H = se
            if not 0 < H <= 2 * C or (H * C) % 8:
                raise ValueError(f"conv_small: SE width {H} for {C} channels")
        ngrp = -(-O // CONV_SMALL_R)
        for what, buf, count, size in (("x", x, n * 64 * ldx, None), ("z", z, n * 64 * C, None),
                                       ("skip", skip, n * 64 * C, None), ("xout", xout, n * 64 * C, None),
                                       ("w1", w1, H * C, 4), ("b1", b1, H, 4), ("w2t", w2t, 2 * H * C, 4),
                                       ("b2", b2, 2 * C, 4), ("W", W, ngrp * C * 9 * CONV_SMALL_R, 4),
                                       ("bias", bias, O, 4), ("y", y, n * 64 * ldy if O else 0, None)):
            self._need(what, buf, count, size)
        G, Q, CK, wsz, shared = conv_small_shape(n, C, O, H, self.size)
        gy = -(-ngrp // G) if O else max(1, min(C // 8, 16))
        self._conv("conv_small", act, small=True).launch(
            (n, gy), CONV_SMALL_THREADS,
            (_p(x), np.int32(ldx), np.int32(C), _p(z), _p(skip), _p(xout), _p(w1), _p(b1), _p(w2t), _p(b2),
             np.int32(H), _p(W), _p(bias), _p(y), np.int32(ldy), np.int32(O), np.int32(int(out_act)),
             np.int32(Q), np.int32(CK), np.int32(wsz)),
            shared=shared, stream=stream)

    def winograd_in_se(self, z, skip, se, y, V, n: int, C: int, act: str, Kp: int | None = None, stream=None):
        """v = act(sigmoid(se[:, :C]) * z + se[:, C:] + skip) per board (act(z + skip) for se None; z, skip
        [n*64, C], se [n, 2C]); y [n*64, C] <- v (None: not written; may be skip); V [36, 4n, Kp] <- the
        input transform of v (channels C..Kp-1 written 0)."""
        Kp = -(-C // 8) * 8 if Kp is None else Kp
        if Kp < C:
            raise ValueError(f"winograd_in_se: Kp {Kp} must be >= C {C}")
        for what, buf, count in (("z", z, n * 64 * C), ("skip", skip, n * 64 * C), ("se", se, n * 2 * C),
                                 ("y", y, n * 64 * C), ("V", V, 36 * 4 * n * Kp)):
            self._need(what, buf, count)
        self._conv("winograd_in_se", act).launch(
            _grid(n * Kp), BLOCK, (z, skip, _p(se), _p(y), V, np.int32(n), np.int32(C), np.int32(Kp)), stream=stream)

    def residual(self, z, skip, out, n: int, C: int, act: str, se=None, stream=None):
        """out = act(sigmoid(se[:, :C]) * z + se[:, C:] + skip), or act(z + skip) without se."""
        for what, buf, count in (("z", z, n * 64 * C), ("skip", skip, n * 64 * C), ("out", out, n * 64 * C),
                                 ("se", se, n * 2 * C)):
            self._need(what, buf, count)
        self._conv("residual", act).launch(
            _grid(n * 64 * C), BLOCK, (z, skip, _p(se), out, np.int32(n), np.int32(C)), stream=stream)

    # ------------------------------------------------------------------ heads

    def attention_policy(self, qk, n: int, pdm: int, ppo, policy_map, out, stream=None):
        """out float32 [n, 1858] <- attention policy from qk [n*64, 2*pdm] (Qp|Kp) and ppo [4, pdm].

        policy_map: int32 [4288] raw index -> 1858 index or -1.
        """
        self._need("qk", qk, n * 64 * 2 * pdm)
        self._need("ppo", ppo, 4 * pdm)
        self._need("policy_map", policy_map, ATTENTION_MAP_SIZE, 4)
        self._need("out", out, n * POLICY_SIZE, 4)
        split = n < self.policy_split_below
        self._k("policy.hip", "attention_policy_split" if split else "attention_policy").launch(
            (n, 16) if split else n, 256, (qk, np.int32(pdm), ppo, policy_map, out, np.float32(1.0 / math.sqrt(pdm))), stream=stream)

    def policy_gather(self, x, stride: int, idx, out, n: int, stream=None):
        """out float32 [n, 1858] <- x[b*stride + idx[m]]; idx int32 [1858]."""
        self._need("x", x, n * stride)
        self._need("idx", idx, POLICY_SIZE, 4)
        self._need("out", out, n * POLICY_SIZE, 4)
        self._k("policy.hip", "policy_gather").launch(
            _grid(n * POLICY_SIZE), BLOCK, (x, np.int32(stride), idx, out, np.int32(n)), stream=stream)

    def head_outputs(self, v, ld_v: int, wdl: bool, out, n: int, m=None, ld_m: int = 1, wide: bool = False,
                     stream=None):
        """out float32 [n, 5] = (W, D, L, Q, M) from the value logits v [n, ld_v] and moves-left m [n, ld_m]
        (`wide`: v and m float32, heads run in fp32 in an fp16 network)."""
        size = 4 if wide else self.size
        self._need("v", v, n * ld_v, size)
        self._need("m", m, n * ld_m, size)
        self._need("out", out, n * 5, 4)
        get_kernel(self.device, "heads.hip", "head_outputs_f32" if wide else f"head_outputs_{self.dtype}").launch(
            _grid(n), BLOCK, (v, np.int32(ld_v), np.int32(int(wdl)), _p(m), np.int32(ld_m), out, np.int32(n)),
            stream=stream)
