"""Building blocks of the GPU network runner: the shared context, the activation workspace, `Linear`.

Like lc0's CUDA layers, a layer owns its weights (uploaded once, in the storage dtype) and nothing else;
activations live in the network's `Workspace`: named buffers that every layer declares while it is
built (`ws.request(name, elements)`, the largest request per name wins) and that are allocated once,
zero-filled, for the maximum batch. A layer reads and writes buffers by name while it runs, so two
layers that run one after the other share memory, and a deep net needs no more than a shallow one.
Layers launch on `ctx.stream` and never synchronize.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from .gemm import Gemm
from .memory import DeviceBuffer
from .nn_kernels import GEMV_MAX_M, NnKernels
from .ops import bias_act

# activations hipBLASLt applies in the GEMM epilogue; the others run as a separate bias_act pass
EPILOGUE_ACTS = ("none", "relu")
NP_DTYPES = {"f32": np.float32, "f16": np.float16}
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
    use_gemv: bool = False
    side: Optional["SideStream"] = None  # a second stream for independent branches (smolgen)
    side_max_batch: int = 64  # above this the branches compete for the whole GPU: run them in line

    @property
    def np_dtype(self):
        return NP_DTYPES[self.dtype]

    def upload(self, arr: np.ndarray, dtype=None) -> DeviceBuffer:
        """A device copy of `arr` in the storage dtype (or `dtype`), kept for the network's lifetime."""
        host = np.ascontiguousarray(arr, dtype=dtype or self.np_dtype)
        if dtype is None and self.dtype == "f16":
            big = np.abs(np.asarray(arr, dtype=np.float64)).max(initial=0.0)
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
    """A second stream with its own GEMM workspace, forked from and joined back into `ctx.stream`.

    `fork(main)` makes the side stream wait for everything queued on `main` so far; `join(main)` makes
    `main` wait for everything queued on the side stream. Both work eagerly and under graph capture
    (where they become graph edges, the side stream joining the capture).
    """

    def __init__(self, device, workspace_bytes: int):
        from .stream import Event, Stream

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
    """y[m, n] = act(x[m, k] @ w.T + b) with hipBLASLt; `w` [n, k] float32 host array (already padded).

    `raw=True` builds a GEMM without bias and activation, for a caller that fuses the bias (`self.b`)
    into the kernel that follows (LayerNorm). Activations hipBLASLt cannot fuse (mish, swish, relu2,
    selu, ...) run as one bias_act pass over y after a bias-epilogue GEMM. A call with few rows
    (m <= GEMV_MAX_M: the per-position layers at small batches) runs gemv.hip instead, bias and any
    activation included. `stream` / `workspace` override the context's (a layer on a side stream).
    """

    def __init__(self, ctx: Context, w: np.ndarray, b: Optional[np.ndarray] = None, act: str = "none",
                 raw: bool = False):
        self.ctx = ctx
        self.n, self.k = w.shape
        self.act, self.raw = act, raw
        self.w = ctx.upload(w)
        self.b = ctx.upload(b) if b is not None else None

    def __call__(self, x: DeviceBuffer, y: DeviceBuffer, m: int, stream=None, workspace=None) -> None:
        ctx = self.ctx
        s = stream or ctx.stream
        if ctx.use_gemv and m <= GEMV_MAX_M and self.k % 8 == 0 and x.ptr % 16 == 0 and y.ptr % 16 == 0:
            bias, act = (None, "none") if self.raw else (self.b, self.act)
            ctx.kernels.gemv(x, self.w, bias, y, m, self.n, self.k, act=act, stream=s)
            return
        if self.raw:
            ctx.gemm.linear(x, self.w, y, m, self.n, self.k, dtype=ctx.dtype, stream=s, workspace=workspace)
            return
        fused = self.act in EPILOGUE_ACTS
        ctx.gemm.linear(x, self.w, y, m, self.n, self.k, bias=self.b, act=self.act if fused else "none",
                        dtype=ctx.dtype, stream=s, workspace=workspace)
        if not fused:
            bias_act(ctx.device, y, y, None, m * self.n, act=self.act, dtype=ctx.dtype, stream=s)


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
