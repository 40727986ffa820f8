"""The CPU backend: the numpy reference (`lc0_rocm.reference`) behind the `Backend` interface.

Batches larger than `chunk` positions are evaluated in chunks (bounded memory, better cache use)
and concatenated. Results are float32 like every backend's, whatever dtype the arithmetic used.
BLAS threads: `threads` (default 1, like lc0's CPU backends; see `blas_threads` for why) is applied
around each evaluation; when OPENBLAS_NUM_THREADS or OMP_NUM_THREADS is set in the environment and
no `threads` is given, the BLAS is left as configured.
"""

from __future__ import annotations

import os

import numpy as np

from .. import blas_threads
from ..encoding.packed import PackedPlanes
from ..net.description import NetDescription
from ..reference import Reference
from .base import Backend, NetOutputs

DEFAULT_CHUNK = 64


class CpuBackend(Backend):
    """Numpy reference evaluator; `dtype` float32 (lc0's CPU precision) or float64; `mlh=False` drops MLH;
    `threads`: BLAS threads during evaluation (None: default_threads())."""

    name = "cpu"

    def __init__(self, net: NetDescription, dtype=np.float32, chunk: int = DEFAULT_CHUNK, mlh: bool = True,
                 threads: int | None = None):
        super().__init__(net)
        if chunk < 1:
            raise ValueError(f"chunk must be >= 1, got {chunk}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self.threads = threads if threads is not None else default_threads()
        self.dtype = np.dtype(dtype)
        self.chunk = int(chunk)
        self.mlh = mlh
        self._ref = Reference(net, self.dtype)

    @property
    def max_batch(self) -> int:
        return 1 << 20  # any batch: split internally

    def evaluate(self, planes: PackedPlanes) -> NetOutputs:
        n = len(planes)
        if n == 0:
            return _empty(self.net, self.mlh)
        parts = []
        with blas_threads.limit(self.threads):
            for start in range(0, n, self.chunk):
                stop = min(n, start + self.chunk)
                sub = PackedPlanes(planes.masks[start:stop], planes.values[start:stop], planes.transforms[start:stop])
                parts.append(self._ref.forward(sub))
        return _to_float32(parts, self.mlh and self.net.moves_left is not None)


def default_threads() -> int | None:
    """1, unless the user configured the BLAS through the environment (then None: leave it)."""
    if os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS"):
        return None
    return 1


def _to_float32(parts: list[NetOutputs], with_mlh: bool) -> NetOutputs:
    def cat(get):
        return np.ascontiguousarray(np.concatenate([get(p) for p in parts]), dtype=np.float32)

    has_wdl = parts[0].wdl is not None
    return NetOutputs(
        policy=cat(lambda p: p.policy),
        wdl=cat(lambda p: p.wdl) if has_wdl else None,
        q=cat(lambda p: p.q),
        d=cat(lambda p: p.d),
        mlh=cat(lambda p: p.mlh) if with_mlh else None,
    )


def _empty(net: NetDescription, mlh: bool) -> NetOutputs:
    z = np.zeros(0, dtype=np.float32)
    return NetOutputs(
        policy=np.zeros((0, 1858), dtype=np.float32),
        wdl=np.zeros((0, 3), dtype=np.float32) if net.has_wdl else None,
        q=z,
        d=z.copy(),
        mlh=z.copy() if mlh and net.has_moves_left else None,
    )
