"""lc0's `trivial` backend: the same policy logits for every position and a value from piece-square
tables (`src/neural/backends/network_trivial.cc: TrivialNetworkComputation`), in float32 as lc0.

Q = 2 / (1 + exp(-10 s)) - 1, s = the sum over the side to move's pieces of their square's value
less the opponent's (their planes flipped top to bottom), with the kings' endgame table when each
side has no queen, or a queen without rooks and at most one minor piece. D = 0 (a plain value
network, no WDL), no moves-left. Option `input_mode` as the random backend's. Like `random`, it is a
way to run the search with no network work, with outputs a chess engine can play with.
"""

from __future__ import annotations

import math

import numpy as np

from ..encoding.bits import popcount
from ..encoding.outputs import POLICY_SIZE, NetOutputs
from ..encoding.packed import PackedPlanes
from ..jit import jit
from ..net.description import NetDescription
from . import trivial_tables as tt
from .base import Backend
from .randomnet import input_mode, output_net

_LOG_POLICY = np.array(tt.LOG_POLICY, dtype=np.float32)
_PIECES = np.array([tt.PAWNS, tt.KNIGHTS, tt.BISHOPS, tt.ROOKS, tt.QUEENS], dtype=np.float32)
_KINGS = np.array(tt.KINGS, dtype=np.float32)
_KINGS_ENDGAME = np.array(tt.KINGS_ENDGAME, dtype=np.float32)


@jit
def _dot(mask, weights):
    """lc0's DotProduct: the weights of the set squares, summed in float32 from a1 up."""
    total = np.float32(0.0)
    sq = 0
    while mask:
        if mask & np.uint64(1):
            total += weights[sq]
        mask >>= np.uint64(1)
        sq += 1
    return total


@jit
def _flip(mask):
    """lc0's ReverseBytesInBytes: the board upside down."""
    out = np.uint64(0)
    for k in range(8):
        out = (out << np.uint64(8)) | ((mask >> np.uint64(8 * k)) & np.uint64(0xFF))
    return out


@jit
def _bare(queen, rook, knight, bishop):
    """No queen, or a queen without rooks and at most one minor piece (lc0's endgame test)."""
    return queen == 0 or (rook == 0 and popcount(knight | bishop) <= 1)


@jit
def trivial_q(masks, pieces, kings, kings_endgame, q):
    """q[j] from the 112 plane masks of position j (planes 0-5 ours, 6-11 theirs)."""
    for j in range(masks.shape[0]):
        m = masks[j]
        s = np.float32(0.0)
        for k in range(5):
            s += _dot(m[k], pieces[k])
            s -= _dot(_flip(m[6 + k]), pieces[k])
        endgame = _bare(m[4], m[3], m[1], m[2]) and _bare(m[10], m[9], m[7], m[8])
        table = kings_endgame if endgame else kings
        s += _dot(m[5], table)
        s -= _dot(_flip(m[11]), table)
        e = np.float32(math.exp(np.float64(s * np.float32(-10.0))))  # expf, correctly rounded
        q[j] = np.float32(2.0) / (np.float32(1.0) + e) - np.float32(1.0)


class TrivialBackend(Backend):
    """lc0's `trivial` backend (see the module docstring)."""

    concurrent = True  # compiled, GIL released, no state: each search thread evaluates its own batches

    name = "trivial"

    def __init__(self, net: NetDescription, opts: dict[str, str]):
        super().__init__(output_net(net, input_mode(opts), wdl=False))

    def evaluate(self, planes: PackedPlanes) -> NetOutputs:
        n = len(planes)
        q = np.empty(n, np.float32)
        if n:
            trivial_q(np.ascontiguousarray(planes.masks, np.uint64), _PIECES, _KINGS, _KINGS_ENDGAME, q)
        policy = np.broadcast_to(_LOG_POLICY, (n, POLICY_SIZE))
        return NetOutputs(policy=np.ascontiguousarray(policy), wdl=None, q=q, d=np.zeros(n, np.float32), mlh=None)
