"""Building blocks of the GPU network runner: the shared context, the activation workspace, `Linear`, `Norm`.

Like lc0's CUDA layers, a layer owns its weights (uploaded once, in the storage dtype) and nothing else;
activations live in the network's `Workspace`: named buffers that every layer declares while it is
built (`ws.request(name, elements)`, the largest request per name wins) and that are allocated once,
zero-filled, for the maximum batch. A layer's scratch buffers are workspace buffers it names, so two
layers that run one after the other share memory, and a deep net needs no more than a shallow one.

Every layer is called the same way:

    layer(x, y, n, lane=None, **fusions)

x is its input buffer and y its output buffer (the same buffer where the layer allows it: residual
blocks and encoder layers work in place), n the number of positions in the batch (a layer knows its
rows per position: 64 for per-square layers, 1 for per-position ones), and `lane` where it runs: None
for the context's main stream (`ctx.stream` at call time, the GEMM handle's own workspace), or a
`SideStream` (its stream and its own GEMM workspace). Keyword arguments are fusions a layer offers
(LayerNorm's bias, residual, activation and gating; the heads' moves-left switch). Layers launch
asynchronously and never synchronize.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ...encoding.packed import NUM_PLANES
from ...net.description import LayerNorm
from ..runtime.dtypes import storage_type
from ..runtime.gemm import Gemm
from ..runtime.memory import DeviceBuffer
from .kernels import NnKernels, bias_act

# activations hipBLASLt applies in the GEMM epilogue; the others run as a separate bias_act pass
EPILOGUE_ACTS = ("none", "relu")
# how a classical tower runs a batch (conv.py ConvTowerGpu.plans): "fused" Winograd with the SE unit in the
# output transform, "split" Winograd with the SE layers as GEMMs over all boards (big batches), "direct"
# conv_small.hip (small batches); "auto" times the ones that apply per batch size (network.py)
CONV_PLANS = ("auto", "fused", "split", "direct")
ALIGN_ELEMS = 8  # pad GEMM widths to this many elements (16 bytes of fp16): hipBLASLt's fast paths want it


def round_up(x: int, to: int = ALIGN_ELEMS) -> int:
    return -(-x // to) * to


class Workspace:
    """Named activation buffers, sized by the largest request under each name, allocated once."""

    def __init__(self, device, itemsize: int):
        self.device, self.itemsize = device, itemsize
        self.sizes: dict[str, int] = {}
        self.bufs: dict[str, DeviceBuffer] = {}

    def request(self, name: str, elements: int, itemsize: Optional[int] = None) -> None:
        if self.bufs:
            raise RuntimeError("workspace already allocated")
        nbytes = int(elements) * (itemsize or self.itemsize)
        self.sizes[name] = max(self.sizes.get(name, 0), nbytes)

    def allocate(self, stream) -> None:
        for name, nbytes in self.sizes.items():
            buf = DeviceBuffer.allocate(self.device, max(nbytes, 256))
            buf.fill_byte(0, stream=stream)  # padding columns must read as 0, never as NaN
            self.bufs[name] = buf
        stream.synchronize()

    def __getitem__(self, name: str) -> DeviceBuffer:
        return self.bufs[name]

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.bufs.values())

    def free(self) -> None:
        for b in self.bufs.values():
            b.free()
        self.bufs.clear()


@dataclass
class Context:
    """What every layer needs: device, storage dtype, GEMM handle, kernels, stream, workspace, max batch."""

    device: object
    dtype: str
    gemm: Gemm
    kernels: NnKernels
    stream: object
    max_batch: int
    ws: Workspace
    weights: list = field(default_factory=list)
    side: Optional["SideStream"] = None  # a second stream for independent branches (smolgen)
    side_max_batch: int = 64  # above this the branches compete for the whole GPU: run them in line
    conv_fuse_se: bool = True  # SE blocks end in one winograd_out_se kernel (conv.py), where the width allows
    conv_plan: str = "auto"  # how a classical tower runs (CONV_PLANS; conv.py ConvTowerGpu.plans)

    @property
    def np_dtype(self):
        return storage_type(self.dtype).numpy

    def where(self, lane: Optional["SideStream"]):
        """(stream, GEMM workspace) of a lane: the main stream (and the GEMM handle's workspace) for None."""
        return (self.stream, None) if lane is None else (lane.stream, lane.workspace)

    def upload(self, arr: np.ndarray, dtype=None) -> DeviceBuffer:
        """A device copy of `arr` in the storage dtype (or `dtype`), kept for the network's lifetime."""
        host = np.ascontiguousarray(arr, dtype=dtype or self.np_dtype)
        if dtype is None and self.dtype == "f16":
            big = float(np.abs(np.asarray(arr)).max(initial=0.0))  # in its own dtype: no float64 copy
            if not np.isfinite(big) or big > 65504:
                raise ValueError(f"a weight of magnitude {big:g} does not fit fp16")
        buf = DeviceBuffer.allocate(self.device, max(host.nbytes, 256))
        buf.upload(host)
        self.weights.append(buf)
        return buf

    def free(self) -> None:
        for b in self.weights:
            b.free()
        self.weights.clear()
        self.ws.free()
        if self.side is not None:
            self.side.close()
            self.side = None


class SideStream:
    """A second stream with its own GEMM workspace (a lane), forked from and joined back into `ctx.stream`.

    `fork(main)` makes the side stream wait for everything queued on `main` so far; `join(main)` makes
    `main` wait for everything queued on the side stream. Both work eagerly and under graph capture
    (where they become graph edges, the side stream joining the capture).
    """

    def __init__(self, device, workspace_bytes: int):
        from ..runtime.stream import Event, Stream

        self.stream = Stream(device)
        self.workspace = DeviceBuffer.allocate(device, workspace_bytes)
        self._fork, self._join = Event(timing=False), Event(timing=False)

    def fork(self, main) -> None:
        self._fork.record(main)
        self.stream.wait(self._fork)

    def join(self, main) -> None:
        self._join.record(self.stream)
        main.wait(self._join)

    def close(self) -> None:
        self.stream.close()
        self.workspace.free()
        self._fork.close()
        self._join.close()


class Linear:
    """y[m, n] = act(x[m, k] @ w.T + b) with hipBLASLt for m = n_positions * rows; `w` [n, k] float32 host
    array (already padded).

    `raw=True` builds a GEMM without bias and activation, for a caller that fuses the bias (`self.b`)
    into the kernel that follows (LayerNorm). Activations hipBLASLt cannot fuse (mish, swish, relu2,
    selu, ...) run as one bias_act pass over y after a bias-epilogue GEMM. `dtype` ('f32' in an fp16
    network) stores x, w, b and y in that type instead of the network's.
    """

    def __init__(self, ctx: Context, w: np.ndarray, b: Optional[np.ndarray] = None, act: str = "none",
                 raw: bool = False, *, rows: int, dtype: Optional[str] = None):
        self.ctx, self.rows = ctx, rows
        self.n, self.k = w.shape
        self.act, self.raw = act, raw
        self.dtype = dtype or ctx.dtype
        host = None if self.dtype == ctx.dtype else storage_type(self.dtype).numpy
        self.w = ctx.upload(w, dtype=host)
        self.b = ctx.upload(b, dtype=host) if b is not None else None

    def with_rows(self, rows: int) -> "Linear":
        """The same weights applied to `rows` rows per position (nothing is uploaded again)."""
        other = copy.copy(self)
        other.rows = rows
        return other

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None) -> None:
        ctx = self.ctx
        s, workspace = ctx.where(lane)
        m = n * self.rows
        if self.raw:
            ctx.gemm.linear(x, self.w, y, m, self.n, self.k, dtype=self.dtype, stream=s, workspace=workspace)
            return
        fused = self.act in EPILOGUE_ACTS
        ctx.gemm.linear(x, self.w, y, m, self.n, self.k, bias=self.b, act=self.act if fused else "none",
                        dtype=self.dtype, stream=s, workspace=workspace)
        if not fused:
            bias_act(ctx.device, y, y, None, m * self.n, act=self.act, dtype=self.dtype, stream=s)


class Norm:
    """LayerNorm over rows of `width` (rows per position: `rows`), with the fusions of the layernorm kernel:
    y = LN(alpha * act(x + bias) + skip) * gamma + beta (* gate_mul + gate_add)."""

    def __init__(self, ctx: Context, ln: LayerNorm, *, rows: int):
        self.ctx, self.rows = ctx, rows
        self.gamma, self.beta, self.eps = ctx.upload(ln.gamma), ctx.upload(ln.beta), float(ln.eps)
        self.width = ln.gamma.shape[0]

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, n: int, lane: Optional[SideStream] = None, bias=None,
                 skip=None, alpha: float = 1.0, act: str = "none", gate_mul=None, gate_add=None) -> None:
        s, _ = self.ctx.where(lane)
        self.ctx.kernels.layernorm(x, y, n * self.rows, self.width, self.gamma, self.beta, self.eps, bias=bias,
                                   skip=skip, alpha=alpha, act=act, gate_mul=gate_mul, gate_add=gate_add, stream=s)


def split_input(buf: DeviceBuffer, n: int) -> tuple[DeviceBuffer, DeviceBuffer]:
    """The network input of n positions: (masks uint64 [n, 112], values float32 [n, 112]) views of `buf`."""
    return buf.view(0, n * NUM_PLANES * 8), buf.view(n * NUM_PLANES * 8, n * NUM_PLANES * 4)


def bias_or_zeros(dense) -> np.ndarray:
    """A dense layer's bias, or zeros where it has none."""
    return dense.b if dense.b is not None else np.zeros(dense.n_out, dtype=np.float32)


def pad_rows(w: np.ndarray, rows: int) -> np.ndarray:
    """w with zero rows appended up to `rows` (output features a consumer ignores)."""
    if w.shape[0] == rows:
        return w
    out = np.zeros((rows,) + w.shape[1:], dtype=np.float32)
    out[: w.shape[0]] = w
    return out


def pad_cols(w: np.ndarray, cols: int) -> np.ndarray:
    """w [n, k] with zero columns appended up to `cols` (input features that are padding)."""
    if w.shape[1] == cols:
        return w
    out = np.zeros((w.shape[0], cols), dtype=np.float32)
    out[:, : w.shape[1]] = w
    return out


def pad_segments(w: np.ndarray, segments: int, width: int, padded: int) -> np.ndarray:
    """w [n, segments*width] -> [n, segments*padded]: each input segment padded with zero columns."""
    n = w.shape[0]
    out = np.zeros((n, segments, padded), dtype=np.float32)
    out[:, :, :width] = w.reshape(n, segments, width)
    return out.reshape(n, segments * padded)


def pad_vec(b: Optional[np.ndarray], n: int) -> Optional[np.ndarray]:
    if b is None or b.shape[0] == n:
        return b
    out = np.zeros(n, dtype=np.float32)
    out[: b.shape[0]] = b
    return out
