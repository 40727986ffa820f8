"""GPU layers of the attention body and the attention policy head (lc0-facts §4.3, §4.4.1).

Tokens are square-major rows ([n*64, width]) throughout. Fusions: Q|K|V is one GEMM (weights
concatenated at build time) and wq|wk of the policy head likewise; every LayerNorm also does the
previous GEMM's bias add, the activation or the alpha-scaled residual add, and the input gating;
attention is one fused kernel per layer (all heads, whole batch) with the smolgen bias added inside.
Workspace buffers used: tokens, vec12, pos, x, qkv, att, proj, x1, ffh, sg_c, sg_h, sg_g, sg_bias,
pol_x, pol_qk.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..encoding.policy_map import ATTENTION_POLICY_MAP
from ..net.description import AttentionBody, AttentionPolicyHead, EncoderLayer, LayerNorm, Smolgen
from .layers import Context, Linear, pad_cols, pad_rows, pad_segments, round_up
from .memory import DeviceBuffer


class Norm:
    """LayerNorm parameters on the device."""

    def __init__(self, ctx: Context, ln: LayerNorm):
        self.gamma, self.beta, self.eps = ctx.upload(ln.gamma), ctx.upload(ln.beta), float(ln.eps)
        self.width = ln.gamma.shape[0]

    def __call__(self, ctx: Context, x, out, rows: int, bias=None, skip=None, alpha: float = 1.0,
                 act: str = "none", gate_mul=None, gate_add=None, stream=None) -> None:
        ctx.kernels.layernorm(x, out, rows, self.width, self.gamma, self.beta, self.eps, bias=bias, skip=skip,
                              alpha=alpha, act=act, gate_mul=gate_mul, gate_add=gate_add,
                              stream=stream or ctx.stream)


class SmolgenGpu:
    """Smolgen attention bias [n, heads, 64, 64] into workspace `sg_bias` (facts §4.3.3 step 3)."""

    def __init__(self, ctx: Context, sg: Smolgen, heads: int, global_w: Linear):
        self.ctx, self.heads, self.global_w = ctx, heads, global_w
        self.act = sg.activation
        hc = sg.compress.n_out
        self.hcp = round_up(hc)
        self.compress = Linear(ctx, pad_rows(sg.compress.w, self.hcp), raw=True)
        self.dense1 = Linear(ctx, pad_segments(sg.dense1.w, 64, hc, self.hcp), sg.dense1.b, raw=True)
        self.ln1 = Norm(ctx, sg.ln1)
        self.dense2 = Linear(ctx, sg.dense2.w, sg.dense2.b, raw=True)
        self.ln2 = Norm(ctx, sg.ln2)
        self.gen = sg.dense2.n_out // heads
        if self.gen * heads != sg.dense2.n_out or global_w.k != self.gen:
            raise ValueError(f"smolgen: {sg.dense2.n_out} generated values do not split into {heads} heads "
                             f"of {global_w.k}")
        b = ctx.max_batch
        ctx.ws.request("sg_c", b * 64 * self.hcp)
        ctx.ws.request("sg_h", b * self.dense1.n)
        ctx.ws.request("sg_g", b * self.dense2.n)
        ctx.ws.request("sg_bias", b * heads * 4096)

    def __call__(self, x: DeviceBuffer, n: int, stream=None, workspace=None) -> DeviceBuffer:
        ctx, ws = self.ctx, self.ctx.ws
        s, w = stream, workspace
        self.compress(x, ws["sg_c"], n * 64, s, w)
        self.dense1(ws["sg_c"], ws["sg_h"], n, s, w)
        self.ln1(ctx, ws["sg_h"], ws["sg_h"], n, bias=self.dense1.b, act=self.act, stream=s)
        self.dense2(ws["sg_h"], ws["sg_g"], n, s, w)
        self.ln2(ctx, ws["sg_g"], ws["sg_g"], n, bias=self.dense2.b, act=self.act, stream=s)
        self.global_w(ws["sg_g"], ws["sg_bias"], n * self.heads, s, w)
        return ws["sg_bias"]


class EncoderLayerGpu:
    """x <- LN2(x1 + a*FFN(x1)), x1 = LN1(x + a*MHA(x)); x is [n*64, E] and is updated in place."""

    def __init__(self, ctx: Context, layer: EncoderLayer, alpha: float, global_w: Optional[Linear]):
        self.ctx, self.alpha = ctx, float(alpha)
        mha = layer.mha
        self.width, self.dm, self.heads = mha.q.n_in, mha.d_model, mha.heads
        qkv_w = np.concatenate([mha.q.w, mha.k.w, mha.v.w])
        qkv_b = np.concatenate([_bias(mha.q), _bias(mha.k), _bias(mha.v)])
        self.qkv = Linear(ctx, qkv_w, qkv_b)
        self.out = Linear(ctx, mha.out.w, _bias(mha.out), raw=True)
        self.ln1 = Norm(ctx, layer.ln1)
        self.ffn1 = Linear(ctx, layer.ffn.dense1.w, _bias(layer.ffn.dense1), act=layer.ffn.activation)
        self.ffn2 = Linear(ctx, layer.ffn.dense2.w, _bias(layer.ffn.dense2), raw=True)
        self.ln2 = Norm(ctx, layer.ln2)
        self.smolgen = None
        if mha.smolgen is not None:
            if global_w is None:
                raise ValueError("smolgen layer without the global smolgen weights")
            self.smolgen = SmolgenGpu(ctx, mha.smolgen, self.heads, global_w)
        rows = ctx.max_batch * 64
        ctx.ws.request("qkv", rows * 3 * self.dm)
        ctx.ws.request("att", rows * self.dm)
        ctx.ws.request("proj", rows * self.width)
        ctx.ws.request("x1", rows * self.width)
        ctx.ws.request("ffh", rows * self.ffn1.n)

    def __call__(self, x: DeviceBuffer, n: int) -> None:
        ctx, ws, rows = self.ctx, self.ctx.ws, n * 64
        bias = None
        if self.smolgen is not None and ctx.side is not None and n <= ctx.side_max_batch:
            # smolgen depends only on x, like Q|K|V: it runs on the side stream meanwhile
            side = ctx.side
            side.fork(ctx.stream)
            bias = self.smolgen(x, n, side.stream, side.workspace)
            self.qkv(x, ws["qkv"], rows)
            side.join(ctx.stream)
        else:
            self.qkv(x, ws["qkv"], rows)
            if self.smolgen is not None:
                bias = self.smolgen(x, n)
        ctx.kernels.mha(ws["qkv"], n, self.dm, self.heads, ws["att"], bias=bias, stream=ctx.stream)
        self.out(ws["att"], ws["proj"], rows)
        self.ln1(ctx, ws["proj"], ws["x1"], rows, bias=self.out.b, skip=x, alpha=self.alpha)
        self.ffn1(ws["x1"], ws["ffh"], rows)
        self.ffn2(ws["ffh"], ws["proj"], rows)
        self.ln2(ctx, ws["proj"], x, rows, bias=self.ffn2.b, skip=ws["x1"], alpha=self.alpha)


def _bias(dense) -> np.ndarray:
    return dense.b if dense.b is not None else np.zeros(dense.n_out, dtype=np.float32)


class AttentionBodyGpu:
    """Tokens -> embedding (+LN, gating, embedding FFN) -> encoder stack; result in workspace `x`."""

    def __init__(self, ctx: Context, body: AttentionBody, tower_width: int = 0):
        self.ctx, self.body = ctx, body
        self.E = body.embedding_size
        rows = ctx.max_batch * 64
        if body.embedding == "tower":
            if not tower_width:
                raise ValueError("attention body with embedding 'tower' but the net has no conv tower")
            self.cin = tower_width
        elif body.embedding == "pe_map":
            self.cin = 112 + 64
        elif body.embedding == "pe_dense":
            self.cin = 112 + body.preproc.n_out // 64
        else:
            raise ValueError(f"unknown attention-body embedding {body.embedding!r}")
        self.ld_in = round_up(self.cin) if body.embedding != "tower" else self.cin
        self.preproc = None
        if body.embedding == "pe_dense":
            self.preproc = Linear(ctx, body.preproc.w, _bias(body.preproc))
            ctx.ws.request("vec12", ctx.max_batch * 768)
            ctx.ws.request("pos", ctx.max_batch * body.preproc.n_out)
        if body.embedding != "tower":
            ctx.ws.request("tokens", rows * self.ld_in)
        self.emb_norm = Norm(ctx, body.emb_ln) if body.emb_ln is not None else None
        self.emb = Linear(ctx, pad_cols(body.emb.w, self.ld_in), _bias(body.emb), act=body.activation,
                          raw=self.emb_norm is not None)
        self.gate_mul = self.gate_add = None
        if body.gate_mult is not None and body.gate_add is not None:
            self.gate_mul, self.gate_add = ctx.upload(body.gate_mult), ctx.upload(body.gate_add)
        self.emb_ffn = None
        if body.emb_ffn is not None:
            self.emb_ffn = (Linear(ctx, body.emb_ffn.dense1.w, _bias(body.emb_ffn.dense1), act=body.emb_ffn.activation),
                            Linear(ctx, body.emb_ffn.dense2.w, _bias(body.emb_ffn.dense2), raw=True),
                            Norm(ctx, body.emb_ffn_ln))
            ctx.ws.request("ffh", rows * self.emb_ffn[0].n)
            ctx.ws.request("proj", rows * self.E)
        ctx.ws.request("x", rows * self.E)
        self.global_w = None
        if body.smolgen_global is not None:
            self.global_w = Linear(ctx, body.smolgen_global, raw=True)
        self.encoders = [EncoderLayerGpu(ctx, layer, body.alpha, self.global_w) for layer in body.encoders]

    def __call__(self, n: int, masks: DeviceBuffer, values: DeviceBuffer) -> DeviceBuffer:
        ctx, ws, body, rows = self.ctx, self.ctx.ws, self.body, n * 64
        k = ctx.kernels
        if body.embedding == "tower":
            tokens = ws["tower"]
        else:
            tokens = ws["tokens"]
            vec12 = ws["vec12"] if self.preproc is not None else None
            k.expand_planes(masks, values, tokens, n, self.ld_in, pe_map=body.embedding == "pe_map", vec12=vec12,
                            stream=ctx.stream)
            if self.preproc is not None:
                self.preproc(vec12, ws["pos"], n)
                k.copy_columns(ws["pos"], tokens, rows, self.cin - 112, self.ld_in, 112, stream=ctx.stream)
        x = ws["x"]
        self.emb(tokens, x, rows)
        if self.emb_norm is not None:
            self.emb_norm(ctx, x, x, rows, bias=self.emb.b, act=body.activation, gate_mul=self.gate_mul,
                          gate_add=self.gate_add)
        elif self.gate_mul is not None:
            k.gate(x, self.gate_mul, self.gate_add, rows, self.E, stream=ctx.stream)
        if self.emb_ffn is not None:
            d1, d2, norm = self.emb_ffn
            d1(x, ws["ffh"], rows)
            d2(ws["ffh"], ws["proj"], rows)
            norm(ctx, ws["proj"], x, rows, bias=d2.b, skip=x, alpha=body.alpha)
        for layer in self.encoders:
            layer(x, n)
        return x


class AttentionPolicyGpu:
    """Attention policy head: embedding (+act) -> policy encoders -> wq|wk -> 1858 logits (float32)."""

    def __init__(self, ctx: Context, head: AttentionPolicyHead):
        self.ctx = ctx
        self.emb = Linear(ctx, head.embedding.w, _bias(head.embedding), act=head.embedding_activation)
        self.encoders = [EncoderLayerGpu(ctx, layer, 1.0, None) for layer in head.encoders]
        self.pdm = head.wq.n_out
        self.wqk = Linear(ctx, np.concatenate([head.wq.w, head.wk.w]), np.concatenate([_bias(head.wq), _bias(head.wk)]))
        self.ppo = ctx.upload(head.ppo)
        self.map = ctx.upload(np.asarray(ATTENTION_POLICY_MAP).reshape(-1), dtype=np.int32)
        rows = ctx.max_batch * 64
        ctx.ws.request("pol_x", rows * self.emb.n)
        ctx.ws.request("pol_qk", rows * 2 * self.pdm)

    def __call__(self, feats: DeviceBuffer, n: int, out: DeviceBuffer) -> None:
        ctx, ws, rows = self.ctx, self.ctx.ws, n * 64
        self.emb(feats, ws["pol_x"], rows)
        for layer in self.encoders:
            layer(ws["pol_x"], n)
        self.wqk(ws["pol_x"], ws["pol_qk"], rows)
        ctx.kernels.attention_policy(ws["pol_qk"], n, self.pdm, self.ppo, self.map, out, stream=ctx.stream)
