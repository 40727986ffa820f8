"""GPU layers of the attention body and the attention policy head (lc0's `src/neural/backends/cuda/layers.cc`:
`EncoderBlock`, `AttentionPolicyHead`, `AttentionBody`).

Tokens are square-major rows ([n*64, width]) throughout. Fusions: Q|K|V is one GEMM (weights
concatenated at build time) and wq|wk of the policy head likewise; every LayerNorm also does the
previous GEMM's bias add, the activation or the alpha-scaled residual add, and the input gating;
attention is one fused kernel per layer (all heads, whole batch) with the smolgen bias added inside.
Workspace buffers used: tokens, vec12, pos, x, qkv, att, proj, x1, ffh, sg_c, sg_h, sg_g, sg_bias,
pol_x, pol_qk. Calling convention: `layers.py`.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ...encoding.packed import NUM_PLANES
from ...encoding.policy_map import ATTENTION_POLICY_MAP
from ...net.description import AttentionBody, AttentionPolicyHead, EncoderLayer, Smolgen
from ..runtime.memory import DeviceBuffer
from .layers import (Context, Linear, Norm, SideStream, bias_or_zeros, pad_cols, pad_rows, pad_segments, round_up,
                     split_input)


class SmolgenGpu:
    """Smolgen attention bias [n, heads, 64, 64] (lc0's smolgen in `EncoderBlock::Eval`): compress each
    token, dense over the whole position twice, then the global weights generate each head's 64x64 bias."""

    def __init__(self, ctx: Context, sg: Smolgen, heads: int, global_w: Linear):
        self.ctx, self.heads = ctx, heads
        self.act = sg.activation
        hc = sg.compress.n_out
        self.hcp = round_up(hc)
        self.compress = Linear(ctx, pad_rows(sg.compress.w, self.hcp), raw=True, rows=64)
        self.dense1 = Linear(ctx, pad_segments(sg.dense1.w, 64, hc, self.hcp), sg.dense1.b, raw=True, rows=1)
        self.ln1 = Norm(ctx, sg.ln1, rows=1)
        self.dense2 = Linear(ctx, sg.dense2.w, sg.dense2.b, raw=True, rows=1)
        self.ln2 = Norm(ctx, sg.ln2, rows=1)
        self.gen = sg.dense2.n_out // heads
        if self.gen * heads != sg.dense2.n_out or global_w.k != self.gen:
            raise ValueError(f"smolgen: {sg.dense2.n_out} generated values do not split into {heads} heads "
                             f"of {global_w.k}")
        self.global_w = global_w.with_rows(heads)  # one row of generated values per head
        b = ctx.max_batch
        ctx.ws.request("sg_c", b * 64 * self.hcp)
        ctx.ws.request("sg_h", b * self.dense1.n)
        ctx.ws.request("sg_g", b * self.dense2.n)
        ctx.ws.request("sg_bias", b * heads * 4096)

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        ws = self.ctx.ws
        self.compress(x, ws["sg_c"], n, lane)
        self.dense1(ws["sg_c"], ws["sg_h"], n, lane)
        self.ln1(ws["sg_h"], ws["sg_h"], n, lane, bias=self.dense1.b, act=self.act)
        self.dense2(ws["sg_h"], ws["sg_g"], n, lane)
        self.ln2(ws["sg_g"], ws["sg_g"], n, lane, bias=self.dense2.b, act=self.act)
        self.global_w(ws["sg_g"], y, n, lane)


class EncoderLayerGpu:
    """y <- LN2(x1 + a*FFN(x1)), x1 = LN1(x + a*MHA(x)); x and y are [n*64, E] (y may be x: in place)."""

    def __init__(self, ctx: Context, layer: EncoderLayer, alpha: float, global_w: Optional[Linear]):
        self.ctx, self.alpha = ctx, float(alpha)
        mha = layer.mha
        self.width, self.dm, self.heads = mha.q.n_in, mha.d_model, mha.heads
        qkv_w = np.concatenate([mha.q.w, mha.k.w, mha.v.w])
        qkv_b = np.concatenate([bias_or_zeros(mha.q), bias_or_zeros(mha.k), bias_or_zeros(mha.v)])
        self.qkv = Linear(ctx, qkv_w, qkv_b, rows=64)
        self.out = Linear(ctx, mha.out.w, bias_or_zeros(mha.out), raw=True, rows=64)
        self.ln1 = Norm(ctx, layer.ln1, rows=64)
        self.ffn1 = Linear(ctx, layer.ffn.dense1.w, bias_or_zeros(layer.ffn.dense1), act=layer.ffn.activation, rows=64)
        self.ffn2 = Linear(ctx, layer.ffn.dense2.w, bias_or_zeros(layer.ffn.dense2), raw=True, rows=64)
        self.ln2 = Norm(ctx, layer.ln2, rows=64)
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

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        ctx, ws = self.ctx, self.ctx.ws
        stream, _ = ctx.where(lane)
        bias = None
        if self.smolgen is not None:
            bias = ws["sg_bias"]
            side = ctx.side if lane is None else None
            if side is not None and n <= ctx.side_max_batch:
                # smolgen depends only on x, like Q|K|V: it runs on the side stream meanwhile
                side.fork(stream)
                self.smolgen(x, bias, n, side)
                self.qkv(x, ws["qkv"], n, lane)
                side.join(stream)
            else:
                self.qkv(x, ws["qkv"], n, lane)
                self.smolgen(x, bias, n, lane)
        else:
            self.qkv(x, ws["qkv"], n, lane)
        ctx.kernels.mha(ws["qkv"], n, self.dm, self.heads, ws["att"], bias=bias, stream=stream)
        self.out(ws["att"], ws["proj"], n, lane)
        self.ln1(ws["proj"], ws["x1"], n, lane, bias=self.out.b, skip=x, alpha=self.alpha)
        self.ffn1(ws["x1"], ws["ffh"], n, lane)
        self.ffn2(ws["ffh"], ws["proj"], n, lane)
        self.ln2(ws["proj"], y, n, lane, bias=self.ffn2.b, skip=ws["x1"], alpha=self.alpha)


class AttentionBodyGpu:
    """Embedding (+LN, gating, embedding FFN) -> encoder stack, into y [n*64, E]. x is the network input
    (packed planes, see `split_input`), or the conv tower's output for an embedding 'tower' body."""

    def __init__(self, ctx: Context, body: AttentionBody, tower_width: int = 0):
        self.ctx, self.body = ctx, body
        self.E = body.embedding_size
        rows = ctx.max_batch * 64
        if body.embedding == "tower":
            if not tower_width:
                raise ValueError("attention body with embedding 'tower' but the net has no conv tower")
            self.cin = tower_width
        elif body.embedding == "pe_map":
            self.cin = NUM_PLANES + 64
        elif body.embedding == "pe_dense":
            self.cin = NUM_PLANES + body.preproc.n_out // 64
        else:
            raise ValueError(f"unknown attention-body embedding {body.embedding!r}")
        self.ld_in = round_up(self.cin) if body.embedding != "tower" else self.cin
        self.preproc = None
        if body.embedding == "pe_dense":
            self.preproc = Linear(ctx, body.preproc.w, bias_or_zeros(body.preproc), rows=1)
            ctx.ws.request("vec12", ctx.max_batch * 768)
            ctx.ws.request("pos", ctx.max_batch * body.preproc.n_out)
        if body.embedding != "tower":
            ctx.ws.request("tokens", rows * self.ld_in)
        self.emb_norm = Norm(ctx, body.emb_ln, rows=64) if body.emb_ln is not None else None
        self.emb = Linear(ctx, pad_cols(body.emb.w, self.ld_in), bias_or_zeros(body.emb), act=body.activation,
                          raw=self.emb_norm is not None, rows=64)
        self.gate_mul = self.gate_add = None
        if body.gate_mult is not None and body.gate_add is not None:
            self.gate_mul, self.gate_add = ctx.upload(body.gate_mult), ctx.upload(body.gate_add)
        self.emb_ffn = None
        if body.emb_ffn is not None:
            ffn = body.emb_ffn
            self.emb_ffn = (Linear(ctx, ffn.dense1.w, bias_or_zeros(ffn.dense1), act=ffn.activation, rows=64),
                            Linear(ctx, ffn.dense2.w, bias_or_zeros(ffn.dense2), raw=True, rows=64),
                            Norm(ctx, body.emb_ffn_ln, rows=64))
            ctx.ws.request("ffh", rows * self.emb_ffn[0].n)
            ctx.ws.request("proj", rows * self.E)
        self.global_w = None
        if body.smolgen_global is not None:
            self.global_w = Linear(ctx, body.smolgen_global, raw=True, rows=1)  # rows set per layer (heads)
        self.encoders = [EncoderLayerGpu(ctx, layer, body.alpha, self.global_w) for layer in body.encoders]

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        ctx, ws, body = self.ctx, self.ctx.ws, self.body
        k = ctx.kernels
        stream, _ = ctx.where(lane)
        if body.embedding == "tower":
            tokens = x
        else:
            masks, values = split_input(x, n)
            tokens = ws["tokens"]
            vec12 = ws["vec12"] if self.preproc is not None else None
            k.expand_planes(masks, values, tokens, n, self.ld_in, pe_map=body.embedding == "pe_map", vec12=vec12,
                            stream=stream)
            if self.preproc is not None:
                self.preproc(vec12, ws["pos"], n, lane)
                k.copy_columns(ws["pos"], tokens, n * 64, self.cin - NUM_PLANES, self.ld_in, NUM_PLANES, stream=stream)
        self.emb(tokens, y, n, lane)
        if self.emb_norm is not None:
            self.emb_norm(y, y, n, lane, bias=self.emb.b, act=body.activation, gate_mul=self.gate_mul,
                          gate_add=self.gate_add)
        elif self.gate_mul is not None:
            k.gate(y, self.gate_mul, self.gate_add, n * 64, self.E, stream=stream)
        if self.emb_ffn is not None:
            d1, d2, norm = self.emb_ffn
            d1(y, ws["ffh"], n, lane)
            d2(ws["ffh"], ws["proj"], n, lane)
            norm(ws["proj"], y, n, lane, bias=d2.b, skip=y, alpha=body.alpha)
        for layer in self.encoders:
            layer(y, y, n, lane)


class AttentionPolicyGpu:
    """Attention policy head: embedding (+act) -> policy encoders -> wq|wk -> y float32 [n, 1858] logits."""

    def __init__(self, ctx: Context, head: AttentionPolicyHead):
        self.ctx = ctx
        self.emb = Linear(ctx, head.embedding.w, bias_or_zeros(head.embedding), act=head.embedding_activation,
                          rows=64)
        self.encoders = [EncoderLayerGpu(ctx, layer, 1.0, None) for layer in head.encoders]
        self.pdm = head.wq.n_out
        self.wqk = Linear(ctx, np.concatenate([head.wq.w, head.wk.w]),
                          np.concatenate([bias_or_zeros(head.wq), bias_or_zeros(head.wk)]), rows=64)
        self.ppo = ctx.upload(head.ppo)
        self.map = ctx.upload(np.asarray(ATTENTION_POLICY_MAP).reshape(-1), dtype=np.int32)
        rows = ctx.max_batch * 64
        ctx.ws.request("pol_x", rows * self.emb.n)
        ctx.ws.request("pol_qk", rows * 2 * self.pdm)

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        ctx, ws = self.ctx, self.ctx.ws
        stream, _ = ctx.where(lane)
        self.emb(x, ws["pol_x"], n, lane)
        for layer in self.encoders:
            layer(ws["pol_x"], ws["pol_x"], n, lane)
        self.wqk(ws["pol_x"], ws["pol_qk"], n, lane)
        ctx.kernels.attention_policy(ws["pol_qk"], n, self.pdm, self.ppo, self.map, y, stream=stream)
