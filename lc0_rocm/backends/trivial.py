"""lc0's `trivial` backend: the same policy logits for every position and a value from piece-square
tables (`src/neural/backends/network_trivial.cc: TrivialNetworkComputation`), in float32 as lc0.

Q = 2 / (1 + exp(-10 s)) - 1, s = the sum over the side to move's pieces of their square's value
less the opponent's (their planes flipped top to bottom), with the kings' endgame table when each
side has no queen, or a queen without rooks and at most one minor piece. D = 0 (a plain value
network, no WDL), no moves-left. Option `input_mode` as the random backend's. Like `random`, it is a
way to run the search with no network work, with outputs a chess engine can play with.
"""

from __future__ import annotations

import numpy as np

from ..encoding.outputs import POLICY_SIZE, NetOutputs
from ..encoding.packed import PackedPlanes
from ..net.description import NetDescription
from .base import Backend
from .compiled_eval import KIND_TRIVIAL, TRIVIAL_POLICY, TRIVIAL_TABLES, CompiledEval, trivial_fill
from .randomnet import input_mode, output_net


class TrivialBackend(Backend):
    """lc0's `trivial` backend (see the module docstring)."""

    concurrent = True  # compiled, GIL released, no state: each search thread evaluates its own batches

    name = "trivial"

    def __init__(self, net: NetDescription, opts: dict[str, str]):
        super().__init__(output_net(net, input_mode(opts), wdl=False))

    def compiled_eval(self):
        """The compiled kernel for the search's threads (backends/compiled_eval.py)."""
        return CompiledEval(KIND_TRIVIAL, np.zeros(2, np.int64), np.zeros(0, np.uint64), TRIVIAL_TABLES,
                            TRIVIAL_POLICY)

    def evaluate(self, planes: PackedPlanes) -> NetOutputs:
        n = len(planes)
        q = np.empty(n, np.float32)
        if n:
            trivial_fill(np.ascontiguousarray(planes.masks, np.uint64), 0, n, TRIVIAL_TABLES, q)
        policy = np.empty((n, POLICY_SIZE), np.float32)  # writable, as every backend's: a read-only array
        policy[:] = TRIVIAL_POLICY  # (a broadcast view of one row) would give the compiled search a second signature
        return NetOutputs(policy=policy, wdl=None, q=q, d=np.zeros(n, np.float32), mlh=None)
