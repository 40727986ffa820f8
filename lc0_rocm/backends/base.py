"""The one interface every backend implements, and the outputs it returns.

Search and tools see only this: `evaluate(PackedPlanes) -> NetOutputs`. Outputs are per position,
from the side to move's point of view, exactly lc0's backend contract: raw policy logits (not
softmaxed, not masked), Q = W - L (or tanh value), D, and moves-left (0 without an MLH head).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..encoding.packed import PackedPlanes
from ..net.description import NetDescription


@dataclass(frozen=True)
class NetOutputs:
    policy: np.ndarray  # float32 [N, 1858] raw logits
    wdl: Optional[np.ndarray]  # float32 [N, 3] probabilities (W, D, L), or None for tanh-value nets
    q: np.ndarray  # float32 [N]: W - L, or the tanh value
    d: np.ndarray  # float32 [N]: draw probability (0 for tanh-value nets)
    mlh: Optional[np.ndarray]  # float32 [N] moves left, or None when the net has no MLH head

    def __len__(self) -> int:
        return self.policy.shape[0]


class Backend(ABC):
    """Evaluates batches of packed positions with one network."""

    name: str = "?"

    def __init__(self, net: NetDescription):
        self.net = net

    @property
    def max_batch(self) -> int:
        return 1024

    @abstractmethod
    def evaluate(self, planes: PackedPlanes) -> NetOutputs:
        """Evaluate a batch (any size up to max_batch; larger batches are split by the caller)."""

    def close(self) -> None:
        """Release device resources (no-op for the CPU)."""
