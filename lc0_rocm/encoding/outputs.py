"""Network outputs: what every backend returns for a batch of `PackedPlanes`, one row per position.

This is lc0's backend contract, from the side to move's point of view: raw policy logits (not
softmaxed, not masked) in the 1858-move order of `policy_map`, the value as WDL probabilities (or a
tanh value), Q = W - L, D, and moves-left. It lives beside `PackedPlanes` because it is the other
half of the one interface between the network and everything else: the numpy reference and the GPU
runner produce it, backends pass it on, search and tools read it.

A batch cut into pieces (`PackedPlanes.chunks`, `PackedPlanes.split`) is put back together with
`NetOutputs.concat(pieces)`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

POLICY_SIZE = 1858
FIELDS = ("policy", "wdl", "q", "d", "mlh")  # NetOutputs' arrays, in order


@dataclass(frozen=True)
class NetOutputs:
    policy: np.ndarray  # float32 [N, 1858] raw logits
    wdl: Optional[np.ndarray]  # float32 [N, 3] probabilities (W, D, L), or None for tanh-value nets
    q: np.ndarray  # float32 [N]: W - L, or the tanh value
    d: np.ndarray  # float32 [N]: draw probability (0 for tanh-value nets)
    mlh: Optional[np.ndarray]  # float32 [N] moves left, or None when the net has no MLH head

    def __len__(self) -> int:
        return self.policy.shape[0]

    @staticmethod
    def concat(parts: "Sequence[NetOutputs]") -> "NetOutputs":
        """The outputs of consecutive pieces of one batch as one (a single piece is returned as is).

        A field is None in the result when it is None in the first piece."""
        if len(parts) == 1:
            return parts[0]
        first = parts[0]
        cat = lambda f: None if getattr(first, f) is None else np.concatenate([getattr(p, f) for p in parts])  # noqa: E731
        return NetOutputs(**{f: cat(f) for f in FIELDS})

    @staticmethod
    def empty(has_wdl: bool, has_mlh: bool) -> "NetOutputs":
        """The outputs of a batch of no positions (float32)."""
        z = lambda *shape: np.zeros((0, *shape), dtype=np.float32)  # noqa: E731
        return NetOutputs(policy=z(POLICY_SIZE), wdl=z(3) if has_wdl else None, q=z(), d=z(),
                          mlh=z() if has_mlh else None)

    def astype(self, dtype=np.float32, copy: bool = False, mlh: bool = True) -> "NetOutputs":
        """Every array as contiguous `dtype` (a copy only where needed, or always with `copy`);
        `mlh=False` drops the moves-left output."""
        conv = lambda a: None if a is None else np.array(a, dtype=dtype, copy=True, order="C") if copy \
            else np.ascontiguousarray(a, dtype=dtype)  # noqa: E731
        return NetOutputs(policy=conv(self.policy), wdl=conv(self.wdl), q=conv(self.q), d=conv(self.d),
                          mlh=conv(self.mlh) if mlh else None)

    def take(self, rows: np.ndarray) -> "NetOutputs":
        """The outputs of the given rows (an index array; rows may repeat)."""
        pick = lambda a: None if a is None else a[rows]  # noqa: E731
        return NetOutputs(**{f: pick(getattr(self, f)) for f in FIELDS})
