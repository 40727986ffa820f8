"""Packed network input: 112 planes per position, each a uint64 square mask and a float value.

This is the form lc0 uploads to a GPU (and the form the GPU kernels expand): plane p of position n
is `values[n, p]` on every square whose bit is set in `masks[n, p]` (bit i = square i, a1 = 0), 0.0
elsewhere. `transforms[n]` is the canonical transform (bits: 1 flip, 2 mirror, 4 transpose) applied
to that position's planes; the policy of that position must be read through the same transform.

A batch larger than a backend takes at once is cut with `chunks(size)` (pieces of at most `size`)
or `split(sizes)` (pieces of the given sizes); `NetOutputs.concat` joins the pieces' outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator

import numpy as np

NUM_PLANES = 112


@dataclass(frozen=True)
class PackedPlanes:
    masks: np.ndarray  # uint64 [N, 112]
    values: np.ndarray  # float32 [N, 112]
    transforms: np.ndarray  # int32 [N]

    def __post_init__(self):
        if self.masks.dtype != np.uint64 or self.masks.ndim != 2 or self.masks.shape[1] != NUM_PLANES:
            raise ValueError(f"masks must be uint64 [N, {NUM_PLANES}], got {self.masks.dtype} {self.masks.shape}")
        if self.values.shape != self.masks.shape:
            raise ValueError(f"values shape {self.values.shape} != masks shape {self.masks.shape}")

    def __len__(self) -> int:
        return self.masks.shape[0]

    def rows(self, start: int, stop: int) -> "PackedPlanes":
        """Positions start..stop-1 (views, no copy); the whole batch is returned as is."""
        if start == 0 and stop >= len(self):
            return self
        return PackedPlanes(self.masks[start:stop], self.values[start:stop], self.transforms[start:stop])

    def split(self, sizes: Iterable[int]) -> Iterator["PackedPlanes"]:
        """Consecutive pieces of the given sizes (views), in order."""
        start = 0
        for size in sizes:
            yield self.rows(start, start + size)
            start += size

    def chunks(self, size: int) -> Iterator["PackedPlanes"]:
        """Consecutive pieces of at most `size` positions (views; one piece, the batch itself, if it fits)."""
        if size < 1:
            raise ValueError(f"chunk size must be >= 1, got {size}")
        if len(self) <= size:
            yield self
            return
        for start in range(0, len(self), size):
            yield self.rows(start, start + size)

    @staticmethod
    def concat(items: "list[PackedPlanes]") -> "PackedPlanes":
        return PackedPlanes(
            np.ascontiguousarray(np.concatenate([i.masks for i in items])),
            np.ascontiguousarray(np.concatenate([i.values for i in items]).astype(np.float32)),
            np.concatenate([i.transforms for i in items]).astype(np.int32),
        )

    def expand(self, dtype=np.float32) -> np.ndarray:
        """Dense planes [N, 112, 8, 8] (H = rank, W = file), as the network's first layer sees them."""
        bits = (self.masks[:, :, None] >> np.arange(64, dtype=np.uint64)) & np.uint64(1)
        dense = bits.astype(dtype) * self.values[:, :, None].astype(dtype)
        return dense.reshape(len(self), NUM_PLANES, 8, 8)
