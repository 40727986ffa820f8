#!/usr/bin/env python3
"""PyTorch yardstick: the same Lc0 net rebuilt in PyTorch from our NetDescription, eager vs torch.compile.

Builds every layer of the net the loader produced (conv tower with SE, attention body with PE_MAP /
PE_DENSE / tower embedding, gating, embedding FFN, smolgen, encoders; attention / convolution /
classical policy, WDL or tanh value, moves-left) as a torch.nn.Module in the chosen dtype (fp16 by
default) on the chosen device, mirroring lc0_rocm/reference.py step by step. Before any timing it
checks the outputs against the numpy reference: on a batch of different positions (eager), and for
every mode and batch size on the benchmark batch itself, within lc0's tolerance for the dtype
(|a − b| ≤ atol + rtol·|b|; fp16/bf16: atol 0.11, rtol 0.2 as in lc0's fp16 checks, fp32: atol 1e-3,
rtol 1e-2). A mismatch stops the run with exit code 1.

Timing per mode and batch size: `--warmup` untimed calls (the first one of a compiled mode compiles
it and is reported as compile time), then `--reps` calls, each timed on the GPU between two CUDA
events recorded around the forward on the current stream and synchronised after every call (one
evaluation at a time, like a blocking backend); on the CPU the wall clock. Medians are reported,
with min/max. Inputs are the packed planes (uint64 masks viewed as int64, values), already on the
device, expanded to dense planes by the model; `--transfers` adds the host→device copy of the
packed input and the device→host copy of the outputs to every timed call, like a backend's evaluate.

    PYTHONPATH=. python3 tools/torch_bench.py 1 64 256 1024 --modes eager,compile --json out.json
    python3 tools/torch_bench.py 8 --device cpu --dtype fp32 --modes eager --reps 5   # CPU smoke test
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lc0_rocm.net.description import (  # noqa: E402
    AttentionPolicyHead,
    ClassicalPolicyHead,
    Conv,
    ConvPolicyHead,
    NetDescription,
)
from lc0_rocm.encoding.history import STARTPOS_FEN  # noqa: E402
from lc0_rocm.encoding.packed import NUM_PLANES  # noqa: E402

MODES = ("eager", "compile", "reduce-overhead", "max-autotune")
# (atol, rtol) lc0's HIP backend was validated with through lc0's check backend (the atol/rtol options of
# src/neural/backends/network_check.cc): fp32 and fp16
TOLERANCES = {"fp32": (1e-3, 1e-2), "fp16": (1.1e-1, 2e-1), "bf16": (1.1e-1, 2e-1)}


class BenchError(Exception):
    """A user-facing failure: printed as one line, exit code 1."""


# ------------------------------------------------------------------------------------------------
# The model


def build_model(net: NetDescription, dtype, device, attention: str = "sdpa"):
    """The net as a torch.nn.Module: forward(masks int64 [N,112], values [N,112]) -> (policy, value, mlh).

    policy: raw logits [N, 1858]; value: WDL probabilities [N, 3] (float32) or tanh value [N, 1];
    mlh: moves left [N] or None.
    """
    import torch
    import torch.nn.functional as F
    from torch import nn

    from lc0_rocm.encoding.policy_map import ATTENTION_POLICY_GATHER, CONV_POLICY_GATHER_SQUARE_MAJOR
    from lc0_rocm.encoding.pos_encoding import pos_encoding_table

    def tensor(a, dt=dtype):
        return torch.from_numpy(np.array(a, dtype=np.float32, copy=True)).to(device=device, dtype=dt)

    def act(name: str, x):
        if name == "none":
            return x
        if name == "relu":
            return F.relu(x)
        if name == "relu2":
            r = F.relu(x)
            return r * r
        if name == "mish":
            return F.mish(x)
        if name == "swish":
            return F.silu(x)
        if name == "selu":
            return F.selu(x)
        if name == "tanh":
            return torch.tanh(x)
        if name == "sigmoid":
            return torch.sigmoid(x)
        raise BenchError(f"unknown activation {name!r}")

    class Linear(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.register_buffer("w", tensor(d.w))
            self.register_buffer("b", tensor(d.b) if d.b is not None else None)

        def forward(self, x):
            return F.linear(x, self.w, self.b)

    class LN(nn.Module):
        def __init__(self, ln):
            super().__init__()
            self.register_buffer("g", tensor(ln.gamma))
            self.register_buffer("b", tensor(ln.beta))
            self.eps = float(ln.eps)

        def forward(self, x):
            return F.layer_norm(x, (x.shape[-1],), self.g, self.b, self.eps)

    class Conv2d(nn.Module):
        def __init__(self, c: Conv):
            super().__init__()
            self.register_buffer("w", tensor(c.w))
            self.register_buffer("b", tensor(c.b))
            self.pad = c.kernel // 2

        def forward(self, x):  # NCHW
            return F.conv2d(x, self.w, self.b, padding=self.pad)

    class FFN(nn.Module):
        def __init__(self, f):
            super().__init__()
            self.d1, self.d2, self.activation = Linear(f.dense1), Linear(f.dense2), f.activation

        def forward(self, x):
            return self.d2(act(self.activation, self.d1(x)))

    class Smolgen(nn.Module):
        def __init__(self, sg, heads):
            super().__init__()
            self.compress, self.d1, self.ln1 = Linear(sg.compress), Linear(sg.dense1), LN(sg.ln1)
            self.d2, self.ln2 = Linear(sg.dense2), LN(sg.ln2)
            self.activation, self.heads = sg.activation, heads

        def forward(self, x, global_wt):
            n = x.shape[0]
            c = self.compress(x).reshape(n, -1)
            u = self.ln1(act(self.activation, self.d1(c)))
            v = self.ln2(act(self.activation, self.d2(u)))
            return (v.reshape(n * self.heads, -1) @ global_wt).reshape(n, self.heads, 64, 64)

    class MHA(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.q, self.k, self.v, self.out = Linear(m.q), Linear(m.k), Linear(m.v), Linear(m.out)
            self.heads, self.depth = m.heads, m.depth
            self.smolgen = Smolgen(m.smolgen, m.heads) if m.smolgen is not None else None

        def forward(self, x, global_wt):
            n = x.shape[0]

            def split(t):
                return t.reshape(n, 64, self.heads, self.depth).transpose(1, 2)

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            bias = None
            if self.smolgen is not None:
                if global_wt is None:
                    raise BenchError("smolgen layer without the global smolgen weights")
                bias = self.smolgen(x, global_wt)
            if attention == "sdpa":
                o = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
            else:
                logits = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(self.depth))
                if bias is not None:
                    logits = logits + bias
                o = torch.softmax(logits, dim=-1) @ v
            return self.out(o.transpose(1, 2).reshape(n, 64, self.heads * self.depth))

    class Encoder(nn.Module):
        def __init__(self, e, alpha):
            super().__init__()
            self.mha, self.ln1, self.ffn, self.ln2 = MHA(e.mha), LN(e.ln1), FFN(e.ffn), LN(e.ln2)
            self.alpha = float(alpha)

        def forward(self, x, global_wt):
            x1 = self.ln1(x + self.alpha * self.mha(x, global_wt))
            return self.ln2(x1 + self.alpha * self.ffn(x1))

    class Tower(nn.Module):
        def __init__(self, t):
            super().__init__()
            self.input = Conv2d(t.input)
            self.c1 = nn.ModuleList(Conv2d(b.conv1) for b in t.blocks)
            self.c2 = nn.ModuleList(Conv2d(b.conv2) for b in t.blocks)
            self.se1 = nn.ModuleList(Linear(b.se.fc1) if b.se else nn.Identity() for b in t.blocks)
            self.se2 = nn.ModuleList(Linear(b.se.fc2) if b.se else nn.Identity() for b in t.blocks)
            self.has_se = [b.se is not None for b in t.blocks]
            self.activation = t.activation

        def forward(self, x):  # NCHW in and out
            a = self.activation
            x = act(a, self.input(x))
            for c1, c2, s1, s2, se in zip(self.c1, self.c2, self.se1, self.se2, self.has_se):
                z = c2(act(a, c1(x)))
                if se:
                    f = z.shape[1]
                    t = s2(act(a, s1(z.mean(dim=(2, 3)))))
                    z = z * torch.sigmoid(t[:, :f])[:, :, None, None] + t[:, f:, None, None]
                x = act(a, z + x)
            return x

    class Body(nn.Module):
        def __init__(self, b):
            super().__init__()
            self.embedding = b.embedding
            self.emb, self.activation, self.alpha = Linear(b.emb), b.activation, float(b.alpha)
            self.preproc = Linear(b.preproc) if b.preproc is not None else None
            self.emb_ln = LN(b.emb_ln) if b.emb_ln is not None else None
            self.register_buffer("gate_mult", tensor(b.gate_mult) if b.gate_mult is not None else None)
            self.register_buffer("gate_add", tensor(b.gate_add) if b.gate_add is not None else None)
            self.emb_ffn = FFN(b.emb_ffn) if b.emb_ffn is not None else None
            self.emb_ffn_ln = LN(b.emb_ffn_ln) if b.emb_ffn_ln is not None else None
            self.register_buffer("global_wt", tensor(b.smolgen_global.T) if b.smolgen_global is not None else None)
            self.register_buffer("pos_table", tensor(pos_encoding_table()))
            self.encoders = nn.ModuleList(Encoder(e, b.alpha) for e in b.encoders)

        def forward(self, planes, tower_tokens):  # planes [N, 64, 112] square-major
            n = planes.shape[0]
            if self.embedding == "tower":
                tokens = tower_tokens
            elif self.embedding == "pe_map":
                tokens = torch.cat([planes, self.pos_table.expand(n, 64, 64)], dim=-1)
            elif self.embedding == "pe_dense":
                pos = self.preproc(planes[:, :, :12].reshape(n, 64 * 12)).reshape(n, 64, -1)
                tokens = torch.cat([planes, pos], dim=-1)
            else:
                raise BenchError(f"unknown attention-body embedding {self.embedding!r}")
            t = act(self.activation, self.emb(tokens))
            if self.emb_ln is not None:
                t = self.emb_ln(t)
            if self.gate_mult is not None and self.gate_add is not None:
                t = t * self.gate_mult + self.gate_add
            if self.emb_ffn is not None:
                t = self.emb_ffn_ln(t + self.alpha * self.emb_ffn(t))
            for e in self.encoders:
                t = e(t, self.global_wt)
            return t

    def to_nchw(tokens):
        n, _, c = tokens.shape
        return tokens.transpose(1, 2).reshape(n, c, 8, 8)

    def to_tokens(x):
        n, c = x.shape[:2]
        return x.reshape(n, c, 64).transpose(1, 2)

    class AttentionPolicy(nn.Module):
        def __init__(self, h: AttentionPolicyHead):
            super().__init__()
            self.embedding, self.activation = Linear(h.embedding), h.embedding_activation
            self.encoders = nn.ModuleList(Encoder(e, 1.0) for e in h.encoders)
            self.wq, self.wk = Linear(h.wq), Linear(h.wk)
            self.register_buffer("ppo_t", tensor(h.ppo.T))
            self.register_buffer("gather", torch.from_numpy(np.array(ATTENTION_POLICY_GATHER, dtype=np.int64)).to(device))

        def forward(self, tokens):
            n = tokens.shape[0]
            p = act(self.activation, self.embedding(tokens))
            for e in self.encoders:
                p = e(p, None)
            qp, kp = self.wq(p), self.wk(p)
            logits = (qp @ kp.transpose(1, 2)) * (1.0 / math.sqrt(qp.shape[-1]))
            offs = kp[:, 56:64, :] @ self.ppo_t
            offs = offs[:, :, :3] + offs[:, :, 3:4]
            promo = logits[:, 48:56, 56:64, None] + offs[:, None, :, :]
            flat = torch.cat([logits.reshape(n, 4096), promo.reshape(n, 192)], dim=1)
            return flat.index_select(1, self.gather)

    class ConvPolicy(nn.Module):
        def __init__(self, h: ConvPolicyHead):
            super().__init__()
            self.c1, self.c2, self.activation = Conv2d(h.conv1), Conv2d(h.conv2), h.activation
            self.register_buffer("gather", torch.from_numpy(np.array(CONV_POLICY_GATHER_SQUARE_MAJOR, dtype=np.int64)).to(device))

        def forward(self, tokens):
            z = self.c2(act(self.activation, self.c1(to_nchw(tokens))))  # [N, 80, 8, 8]
            n = z.shape[0]
            return z.permute(0, 2, 3, 1).reshape(n, -1).index_select(1, self.gather)

    class ClassicalPolicy(nn.Module):
        def __init__(self, h: ClassicalPolicyHead):
            super().__init__()
            self.conv, self.fc, self.activation = Conv2d(h.conv), Linear(h.fc), h.activation

        def forward(self, tokens):
            y = act(self.activation, self.conv(to_nchw(tokens)))
            return self.fc(y.reshape(y.shape[0], -1))

    class ValueLike(nn.Module):
        """Value or moves-left head: embedding (1x1 conv or per-token dense) + act, fc1 + act, fc2."""

        def __init__(self, h):
            super().__init__()
            self.conv_embedding = isinstance(h.embedding, Conv)
            self.emb = Conv2d(h.embedding) if self.conv_embedding else Linear(h.embedding)
            self.fc1, self.fc2, self.activation = Linear(h.fc1), Linear(h.fc2), h.activation

        def forward(self, tokens):
            n = tokens.shape[0]
            if self.conv_embedding:
                v = act(self.activation, self.emb(to_nchw(tokens))).reshape(n, -1)
            else:
                v = act(self.activation, self.emb(tokens)).reshape(n, -1)
            return self.fc2(act(self.activation, self.fc1(v)))

    class LeelaNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.tower = Tower(net.tower) if net.tower is not None else None
            self.body = Body(net.body) if net.body is not None else None
            if self.tower is None and self.body is None:
                raise BenchError("net has neither a conv tower nor an attention body")
            head = net.policy
            if isinstance(head, AttentionPolicyHead):
                self.policy = AttentionPolicy(head)
            elif isinstance(head, ConvPolicyHead):
                self.policy = ConvPolicy(head)
            elif isinstance(head, ClassicalPolicyHead):
                self.policy = ClassicalPolicy(head)
            else:
                raise BenchError(f"unknown policy head {type(head).__name__}")
            self.value, self.wdl = ValueLike(net.value), net.value.wdl
            self.mlh = ValueLike(net.moves_left) if net.moves_left is not None else None
            self.register_buffer("shifts", torch.arange(64, dtype=torch.int64, device=device))

        def forward(self, masks, values):
            n = masks.shape[0]
            bits = (masks.unsqueeze(-1) >> self.shifts) & 1  # [N, 112, 64]
            dense = bits.to(values.dtype) * values.unsqueeze(-1)
            tower_tokens = None
            if self.tower is not None:
                tower_tokens = to_tokens(self.tower(dense.reshape(n, NUM_PLANES, 8, 8)))
            if self.body is not None:
                feats = self.body(dense.transpose(1, 2), tower_tokens)
            else:
                feats = tower_tokens
            policy = self.policy(feats)
            v = self.value(feats)
            value = torch.softmax(v.float(), dim=-1) if self.wdl else torch.tanh(v.float())
            mlh = F.relu(self.mlh(feats)[:, 0]) if self.mlh is not None else None
            return policy, value, mlh

    return LeelaNet().eval()


# ------------------------------------------------------------------------------------------------
# Inputs, reference check


def encode_fen(fen: str, input_format: int):
    """PackedPlanes of one position given by FEN (validated by our position parser)."""
    from lc0_rocm.encoding.planes import encode_positions
    from lc0_rocm.encoding.position import parse_position

    return encode_positions([parse_position(fen, [])], input_format)


def check_positions(n: int, input_format: int):
    """PackedPlanes of the first n positions of the validation suite (boards with their histories)."""
    from lc0_rocm.encoding.planes import encode_positions
    from lc0_rocm.validation_positions import boards

    return encode_positions(boards(n), input_format)


def to_device(planes, torch, dtype, device):
    masks = torch.from_numpy(np.ascontiguousarray(planes.masks).view(np.int64)).to(device)
    values = torch.from_numpy(np.ascontiguousarray(planes.values, dtype=np.float32)).to(device=device, dtype=dtype)
    return masks, values


def reference_outputs(net, planes):
    """(policy, value, mlh) of the numpy float32 reference, shaped like the torch model's outputs."""
    from lc0_rocm.reference import Reference

    out = Reference(net, np.float32).forward(planes)
    value = out.wdl if out.wdl is not None else out.q[:, None]
    return out.policy, value, out.mlh


def compare(got, want, atol: float, rtol: float, rows=None) -> tuple[bool, str]:
    """lc0-style check of (policy, value, mlh): |a − b| ≤ atol + rtol·|b| everywhere."""
    ok, parts = True, []
    for name, g, w in zip(("policy", "value", "mlh"), got, want):
        if w is None:
            continue
        g = g.detach().float().cpu().numpy()
        if rows is not None:
            w = np.broadcast_to(w, g.shape)
        bad = np.abs(g - w) > atol + rtol * np.abs(w)
        err = float(np.max(np.abs(g - w))) if g.size else 0.0
        if bad.any() or not np.isfinite(g).all():
            ok = False
        parts.append(f"{name} max|err| {err:.3g}" + (f" ({int(bad.sum())} outside)" if bad.any() else ""))
    return ok, ", ".join(parts)


# ------------------------------------------------------------------------------------------------
# Timing


def make_runner(model, mode: str, compile_mode: str, dynamic: bool):
    import torch

    if mode == "eager":
        return model
    cm = {"compile": compile_mode, "reduce-overhead": "reduce-overhead", "max-autotune": "max-autotune"}[mode]
    for knob in ("recompile_limit", "cache_size_limit"):  # one compiled graph per batch size
        if hasattr(torch._dynamo.config, knob):
            setattr(torch._dynamo.config, knob, 4096)
    compiled = torch.compile(model, mode=None if cm == "default" else cm, dynamic=dynamic)
    if cm in ("reduce-overhead", "max-autotune"):  # CUDA graphs: outputs are reused between calls

        def run(*a):
            torch.compiler.cudagraph_mark_step_begin()
            return compiled(*a)

        return run
    return compiled


def time_calls(fn, inputs, reps: int, device, transfers: bool, host_inputs=None, wall=None) -> list[float]:
    """Seconds per call: CUDA events around each call (synchronised each time) or the wall clock.

    With `wall` (a list), the wall-clock seconds of each call (until synchronised) are appended to it.
    """
    import torch

    cuda = device.type == "cuda"
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        if transfers:
            args = tuple(h.to(device, non_blocking=True) for h in host_inputs)
            out = fn(*args)
            _ = [o.to("cpu", non_blocking=True) for o in out if o is not None]
        else:
            out = fn(*inputs)
        if cuda:
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1000.0)
        else:
            times.append(time.perf_counter() - t0)
        if wall is not None:
            wall.append(time.perf_counter() - t0)
    return times


def summarize(size: int, times: list[float]) -> dict:
    med = statistics.median(times)
    return {
        "size": size,
        "median_ms": med * 1000.0,
        "min_ms": min(times) * 1000.0,
        "max_ms": max(times) * 1000.0,
        "median_nps": size / med,
        "reps": len(times),
        "times_ms": [t * 1000.0 for t in times],
    }


# ------------------------------------------------------------------------------------------------
# Command line


def parse_args(argv):
    from lc0_rocm.default_net import default_net_path

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sizes", nargs="*", type=int, default=[1, 64, 256, 1024], help="batch sizes (default: 1 64 256 1024)")
    p.add_argument("-w", "--weights", default=str(default_net_path()), help="network file (default: the default net)")
    p.add_argument("--fen", default=STARTPOS_FEN, help="position replicated to each batch size (default: startpos)")
    p.add_argument("--device", default=None, help="torch device (default: cuda when available, else cpu)")
    p.add_argument("--dtype", choices=sorted(TOLERANCES), default="fp16", help="precision (default: fp16)")
    p.add_argument("--modes", default="eager,compile", help=f"comma list of {', '.join(MODES)} (default: eager,compile)")
    p.add_argument("--compile-mode", default="default", help="torch.compile mode for 'compile' (default: default)")
    p.add_argument("--dynamic", action="store_true", help="torch.compile with dynamic shapes (one graph for all sizes)")
    p.add_argument("--attention", choices=("sdpa", "manual"), default="sdpa", help="attention: fused SDPA or matmul+softmax")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls per mode and size (default: 10)")
    p.add_argument("--reps", type=int, default=50, help="timed calls per mode and size (default: 50)")
    p.add_argument("--check-positions", type=int, default=32, help="different positions in the eager check (default: 32)")
    p.add_argument("--transfers", action="store_true", help="time host->device input and device->host output copies too")
    p.add_argument("--json", metavar="FILE", help="write every measurement as JSON")
    p.add_argument("--policy-head", default="vanilla")
    p.add_argument("--value-head", default="winner")
    return p.parse_args(argv)


def main(argv=None) -> int:
    try:
        return _main(parse_args(sys.argv[1:] if argv is None else argv))
    except BenchError as e:
        print(f"torch_bench: error: {e}", file=sys.stderr)
        return 1
    except Exception as e:  # our package's user errors (bad net file, bad FEN) are one line too
        from lc0_rocm.errors import Lc0RocmError, one_line

        if isinstance(e, (Lc0RocmError, FileNotFoundError)):
            print(f"torch_bench: error: {one_line(e)}", file=sys.stderr)
            return 1
        raise


def _main(args) -> int:
    try:
        import torch
    except ImportError:
        raise BenchError("PyTorch is not installed (pip install torch)") from None
    from lc0_rocm.net.loader import load_net

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in modes:
        if m not in MODES:
            raise BenchError(f"unknown mode {m!r} (choose from {', '.join(MODES)})")
    if not args.sizes or min(args.sizes) < 1:
        raise BenchError("batch sizes must be positive integers")
    if args.reps < 1 or args.warmup < 1:
        raise BenchError("--reps and --warmup must be at least 1")
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    if device.type == "cuda" and not torch.cuda.is_available():
        raise BenchError("CUDA is not available to torch")
    dtype = {"fp16": torch.float16, "fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]
    atol, rtol = TOLERANCES[args.dtype]

    net = load_net(args.weights, policy_head=args.policy_head, value_head=args.value_head)
    dev_name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    print(f"torch {torch.__version__} on {dev_name}; net {args.weights}; {args.dtype}; attention {args.attention}", file=sys.stderr)

    result = {
        "torch": torch.__version__,
        "device": dev_name,
        "weights": str(args.weights),
        "dtype": args.dtype,
        "attention": args.attention,
        "fen": args.fen,
        "transfers": args.transfers,
        "timer": "cuda events" if device.type == "cuda" else "wall clock",
        "tolerance": {"atol": atol, "rtol": rtol},
        "checks": [],
        "results": {},
    }
    with torch.inference_mode():
        model = build_model(net, dtype, device, args.attention)

        # 1. eager against the reference on different positions
        check_planes = check_positions(max(1, args.check_positions), net.input_format)
        ok, msg = compare(model(*to_device(check_planes, torch, dtype, device)), reference_outputs(net, check_planes), atol, rtol)
        print(f"check eager, {len(check_planes)} positions: {'ok' if ok else 'MISMATCH'}: {msg}", file=sys.stderr)
        result["checks"].append({"mode": "eager", "positions": len(check_planes), "ok": ok, "detail": msg})
        if not ok:
            raise BenchError(f"eager outputs differ from the numpy reference beyond atol {atol}, rtol {rtol}: {msg}")

        position = encode_fen(args.fen, net.input_format)
        want = reference_outputs(net, position)
        for mode in modes:
            runner = make_runner(model, mode, args.compile_mode, args.dynamic)
            rows = []
            for size in args.sizes:
                batch = type(position)(
                    np.repeat(position.masks, size, axis=0),
                    np.repeat(position.values, size, axis=0),
                    np.repeat(position.transforms, size, axis=0),
                )
                inputs = to_device(batch, torch, dtype, device)
                host_inputs = None
                if args.transfers:
                    host_inputs = tuple(t.cpu().pin_memory() if device.type == "cuda" else t.cpu() for t in inputs)
                t0 = time.perf_counter()
                out = runner(*inputs)
                if device.type == "cuda":
                    torch.cuda.synchronize(device)
                first_s = time.perf_counter() - t0
                # 2. every mode and size against the reference, on the batch that is timed
                ok, msg = compare(out, want, atol, rtol, rows=size)
                result["checks"].append({"mode": mode, "size": size, "ok": ok, "detail": msg})
                if not ok:
                    raise BenchError(f"{mode} outputs at batch size {size} differ from the numpy reference: {msg}")
                if args.warmup > 1:
                    time_calls(runner, inputs, args.warmup - 1, device, args.transfers, host_inputs)
                wall = []
                times = time_calls(runner, inputs, args.reps, device, args.transfers, host_inputs, wall)
                row = summarize(size, times)
                row["wall_median_ms"] = statistics.median(wall) * 1000.0
                row["first_call_s"] = first_s
                rows.append(row)
                print(
                    f"{mode:>15} {size:5d}: median {row['median_ms']:9.4f} ms  {row['median_nps']:10.0f} nps"
                    f"  (min {row['min_ms']:.4f}, max {row['max_ms']:.4f}, wall {row['wall_median_ms']:.4f} ms;"
                    f" first call {first_s:.2f} s)",
                    flush=True,
                )
            result["results"][mode] = rows

    print(_table(result, modes, args.sizes))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")
    return 0


def _table(result: dict, modes, sizes) -> str:
    head = "size," + ",".join(f" {m} ms, {m} nps" for m in modes)
    lines = [head]
    for i, size in enumerate(sizes):
        cells = [f"{size:4d}"]
        for m in modes:
            r = result["results"][m][i]
            cells.append(f" {r['median_ms']:.4f}, {r['median_nps']:.0f}")
        lines.append(",".join(cells))
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
