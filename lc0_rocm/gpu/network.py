"""The GPU network runner: builds device layers from a `NetDescription` once and evaluates batches.

`GpuNetwork(net, device, dtype, max_batch)` uploads every weight once (fp32 or fp16 storage; float
accumulation everywhere), sizes the activation workspace for `max_batch` positions, and
`evaluate(planes)` runs: upload packed planes -> expand on the GPU -> conv tower and/or attention
body -> policy head (float32 logits in lc0's 1858 order) and value / moves-left heads (float32
W, D, L, Q, M) -> one download of each -> `NetOutputs`. Everything for one batch is queued on one
stream and synchronized once at the end. Batches larger than `max_batch` are run in pieces.

Which layers: conv tower (`layers_conv`), attention body and attention policy (`layers_attention`),
conv / classical policy (`layers_conv`), value and moves-left heads (`layers_heads`).
"""

from __future__ import annotations

import numpy as np

from ..backends.base import NetOutputs
from ..encoding.packed import NUM_PLANES, PackedPlanes
from ..net.description import AttentionPolicyHead, ClassicalPolicyHead, ConvPolicyHead, NetDescription
from .gemm import Gemm
from .layers import Context, Workspace
from .layers_attention import AttentionBodyGpu, AttentionPolicyGpu
from .layers_conv import ClassicalPolicyGpu, ConvPolicyGpu, ConvTowerGpu
from .layers_heads import HeadsGpu
from .memory import DeviceBuffer
from .nn_kernels import POLICY_SIZE, NnKernels
from .stream import Stream

DTYPE_ITEMSIZE = {"f32": 4, "f16": 2}


class GpuNetwork:
    """One network on one device in one storage dtype ('f32' or 'f16')."""

    def __init__(self, net: NetDescription, device, dtype: str = "f16", max_batch: int = 1024,
                 gemm: Gemm | None = None):
        if dtype not in DTYPE_ITEMSIZE:
            raise ValueError(f"dtype must be 'f32' or 'f16', got {dtype!r}")
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.net, self.device, self.dtype, self.max_batch = net, device, dtype, int(max_batch)
        self._own_gemm = gemm is None
        stream = Stream(device)
        ws = Workspace(device, DTYPE_ITEMSIZE[dtype])
        self.ctx = Context(device, dtype, gemm or Gemm(device), NnKernels(device, dtype), stream, self.max_batch, ws)
        try:
            self._build()
            b = self.max_batch
            ws.request("masks", b * NUM_PLANES, 8)
            ws.request("values", b * NUM_PLANES, 4)
            ws.request("policy", b * POLICY_SIZE, 4)
            ws.request("heads", b * 5, 4)
            ws.allocate(stream)
        except Exception:
            self.close()
            raise

    def _build(self) -> None:
        net, ctx = self.net, self.ctx
        self.tower = ConvTowerGpu(ctx, net.tower) if net.tower is not None else None
        self.body = None
        if net.body is not None:
            self.body = AttentionBodyGpu(ctx, net.body, self.tower.filters if self.tower is not None else 0)
        elif self.tower is None:
            raise ValueError("net has neither a conv tower nor an attention body")
        head = net.policy
        if isinstance(head, AttentionPolicyHead):
            self.policy = AttentionPolicyGpu(ctx, head)
        elif isinstance(head, ConvPolicyHead):
            self.policy = ConvPolicyGpu(ctx, head)
        elif isinstance(head, ClassicalPolicyHead):
            self.policy = ClassicalPolicyGpu(ctx, head)
        else:
            raise ValueError(f"unknown policy head {type(head).__name__}")
        self.heads = HeadsGpu(ctx, net.value, net.moves_left)

    @property
    def workspace_bytes(self) -> int:
        return self.ctx.ws.nbytes

    def enqueue(self, n: int, masks: np.ndarray, values: np.ndarray, with_mlh: bool = True) -> None:
        """Queue one batch of n <= max_batch positions (host arrays must stay alive until synchronized)."""
        ctx, ws = self.ctx, self.ctx.ws
        ws["masks"].upload(masks, stream=ctx.stream)
        ws["values"].upload(values, stream=ctx.stream)
        feats = None
        if self.tower is not None:
            feats = self.tower(n, ws["masks"], ws["values"])
        if self.body is not None:
            feats = self.body(n, ws["masks"], ws["values"])
        self.policy(feats, n, ws["policy"])
        self.heads(feats, n, ws["heads"], with_mlh=with_mlh)

    def evaluate(self, planes: PackedPlanes, with_mlh: bool = True) -> NetOutputs:
        n_total = len(planes)
        policy = np.empty((n_total, POLICY_SIZE), dtype=np.float32)
        heads = np.empty((n_total, 5), dtype=np.float32)
        ctx, ws = self.ctx, self.ctx.ws
        for start in range(0, n_total, self.max_batch):
            stop = min(n_total, start + self.max_batch)
            n = stop - start
            masks = np.ascontiguousarray(planes.masks[start:stop], dtype=np.uint64)
            values = np.ascontiguousarray(planes.values[start:stop], dtype=np.float32)
            self.enqueue(n, masks, values, with_mlh)
            ws["policy"].download(policy[start:stop], stream=ctx.stream)
            ws["heads"].download(heads[start:stop], stream=ctx.stream)
            ctx.stream.synchronize()
        has_mlh = with_mlh and self.net.moves_left is not None
        return NetOutputs(
            policy=policy,
            wdl=np.ascontiguousarray(heads[:, :3]) if self.net.value.wdl else None,
            q=np.ascontiguousarray(heads[:, 3]),
            d=np.ascontiguousarray(heads[:, 1]) if self.net.value.wdl else np.zeros(n_total, np.float32),
            mlh=np.ascontiguousarray(heads[:, 4]) if has_mlh else None,
        )

    def close(self) -> None:
        ctx = getattr(self, "ctx", None)
        if ctx is None:
            return
        try:
            ctx.stream.synchronize()
        except Exception:
            pass
        ctx.free()
        if self._own_gemm:
            ctx.gemm.close()
        self.ctx = None
