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
from ..encoding.outputs import NetOutputs
from ..encoding.packed import PackedPlanes
from ..net.description import NetDescription
from ..reference import Reference
from .base import Backend

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
        with_mlh = self.mlh and self.net.moves_left is not None
        if len(planes) == 0:
            return NetOutputs.empty(self.net.has_wdl, with_mlh)
        with blas_threads.limit(self.threads):
            parts = [self._ref.forward(piece) for piece in planes.chunks(self.chunk)]
        return NetOutputs.concat(parts).astype(np.float32, mlh=with_mlh)


def default_threads() -> int | None:
    """1, unless the user configured the BLAS through the environment (then None: leave it)."""
    if os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS"):
        return None
    return 1
