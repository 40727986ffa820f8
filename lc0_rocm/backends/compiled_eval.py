"""The compiled evaluations of lc0's `random` and `trivial` backends and of a GPU runner, and the one way
compiled code calls them: `evaluate(kind, ints, words, floats, masks, values, lo, n, want, nwant, policy, q, d, m)`.

numba cannot take a Python callable, so a backend whose evaluation is compiled describes it as a small
integer `kind` (KIND_*) and its numbers in three arrays (`CompiledEval`, from `Backend.compiled_eval()`),
and `evaluate` picks the kernel with an `if`. The search's threads then run their whole batch cycle
(gather, evaluate, back up) in one compiled call without the GIL (search/core/cycle.py). The backends'
own `evaluate` (randomnet.py, trivial.py) run the same kernels, so both paths give the same numbers.
KIND_GPU is one search thread's own network runner (backends/gpu_round_trip.py `round_trip`: copy in,
captured graphs, copy out, wait, through the HIP runtime's C entry points); its `ints` are the lane words,
`words`/`floats` the pinned input and output.
This module imports nothing of the backends' Python side: the compiled search's cache key hashes it and
what it imports (lc0_rocm/jit.py), and should not change with them.

Kernels, bit for bit as lc0's (`src/neural/backends/network_random.cc`, `network_trivial.cc`): see
randomnet.py and trivial.py for what they compute.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from ..encoding.bits import popcount
from ..encoding.outputs import POLICY_SIZE
from ..jit import jit, jit_alloc
from . import trivial_tables as tt
from .gpu_round_trip import NO_GRAPH, gather_policy, round_trip

KIND_RANDOM, KIND_TRIVIAL, KIND_GPU = 1, 2, 3
__all__ = ["NO_GRAPH", "CompiledEval", "evaluate", "every_index", "KIND_RANDOM", "KIND_TRIVIAL",
           "KIND_GPU"]
# ints: KIND_RANDOM [seed, uniform]; words: KIND_RANDOM the policy indices' hashes (`policy_hashes`);
# floats: KIND_TRIVIAL its tables, flat (TRIVIAL_*: offsets of the pieces', kings' and endgame kings' tables)
TRIVIAL_PIECES, TRIVIAL_KINGS, TRIVIAL_KINGS_ENDGAME, TRIVIAL_SIZE = 0, 5 * 64, 6 * 64, 7 * 64

CompiledEval = namedtuple("CompiledEval", ["kind", "ints", "words", "floats", "policy_row", "has_mlh", "host"],
                          defaults=(False, None))
# policy_row: the logits every position gets (the kernel writes none: the search cycle copies a row's
# legal moves' ones, search/core/cycle.py `policy_wanted`), or None: the kernel writes each position's;
# has_mlh: the kernel writes moves left (m); host: the Python side of a KIND_GPU lane
# (backends/gpu_lanes.py CompiledLane: enter, evaluate_eager, error), else None


@jit
def evaluate(kind, ints, words, floats, masks, values, lo, n, want, nwant, policy, q, d, m):
    """Positions lo .. n-1 of masks/values [*, 112] into policy, q, d (and m, KIND_GPU) with the kernel
    of `kind` (a host kernel's rows are independent: a search thread's task workers take ranges of
    them, search/core/team.py; KIND_GPU evaluates rows 0 .. n-1 whatever `lo`); returns 0, or
    KIND_GPU's failure (gpu_round_trip.round_trip: a hipError_t, NO_GRAPH).
    Position j's policy is needed at the indices want[j, :nwant[j]] only (its legal moves: lc0's
    backends compute a logit when the search asks for it), compact: the logit of want[j, k] into
    policy[j, k] (a kernel whose policy is CompiledEval.policy_row writes none); at every index, into
    policy[j, index], where nwant[j] < 0."""
    if kind == KIND_GPU:
        status = round_trip(ints, words, floats, masks, values, n, q, d, m)
        if status == 0:
            gather_policy(floats, n, want, nwant, policy)
        return status
    if kind == KIND_RANDOM:
        if ints[1] != 0:  # uniform: the policy row is fixed (CompiledEval.policy_row)
            for j in range(lo, n):
                q[j] = 0.0
                d[j] = 0.0
        else:
            random_fill(masks, values, lo, n, np.uint64(ints[0]), words, want, nwant, policy, q, d)
    elif kind == KIND_TRIVIAL:
        trivial_fill(masks, lo, n, floats, q)
        for j in range(lo, n):
            d[j] = 0.0
    return 0


# ---- lc0's random backend

_K = np.uint64(0x299799ADF0D95DEF)
_M1, _A1 = np.uint64(0xFAD0D7F2FBB059F1), np.uint64(0xBAAD41CDCB839961)
_M2, _A2 = np.uint64(0x7ACEC0050BF82F43), np.uint64(0xD571B3A92B1B2755)


@jit
def _hash(v):
    """lc0's Hash (utils/hashcat.h)."""
    return _M1 * (v + _A1) + _M2 * ((v >> np.uint64(31)) + _A2)


@jit
def _pair(a, b):
    """lc0's HashCat({a, b}) = HashCat(HashCat(0, a), b)."""
    h = _K + _hash(a)
    return h ^ (_K + _hash(b) + (h << np.uint64(6)) + (h >> np.uint64(2)))


_LOW32, _S32 = np.uint64(0xFFFFFFFF), np.uint64(32)
_DIV10000 = np.uint64(0x346DC5D63886594B)  # x // 10000 = mulhi(x, this) >> 11, for every uint64 x


@jit(inline="always")
def _mod10000(x):
    """x % 10000 by a multiply-high (numba's 64-bit modulo costs a division, ~1.3x slower here)."""
    a_lo, a_hi = x & _LOW32, x >> _S32
    b_lo, b_hi = _DIV10000 & _LOW32, _DIV10000 >> _S32
    p1, p2 = a_lo * b_hi, a_hi * b_lo
    mid = ((a_lo * b_lo) >> _S32) + (p1 & _LOW32) + (p2 & _LOW32)
    hi = a_hi * b_hi + (p1 >> _S32) + (p2 >> _S32) + (mid >> _S32)
    return x - (hi >> np.uint64(11)) * np.uint64(10000)


@jit_alloc
def policy_hashes():
    """The half of lc0's HashCat(hash, i) that depends on the policy index i alone, for every i."""
    hm = np.empty(POLICY_SIZE, np.uint64)
    for i in range(POLICY_SIZE):
        hm[i] = _K + _hash(np.uint64(i))
    return hm


def every_index(n: int) -> tuple[np.ndarray, np.ndarray]:
    """`want`, `nwant` for `n` positions whose whole policy is needed."""
    return np.zeros((1, 1), np.int32), np.full(max(1, n), -1, np.int32)


@jit
def random_fill(masks, values, lo, n, seed, hm, want, nwant, policy, q, d):
    """lc0's random outputs of positions lo .. n-1 into policy [*, 1858], q, d (float32); `hm`:
    `policy_hashes()`; the policy at want[j, :nwant[j]] only, into policy[j, :nwant[j]] (compact), or
    everywhere (nwant[j] < 0). A position's 224 chained hashes wait each for the one before (latency
    bound), so four positions' chains run side by side (1.8x a position on the 2-core VM, same bits)."""
    bits = values.view(np.uint32)  # lc0 hashes the planes' values as their IEEE bits
    for j0 in range(lo, n, 4):
        h0, h1, h2, h3 = _four_chains(masks, bits, j0, n, seed)
        _random_outputs(j0, h0, hm, want, nwant, policy, q, d)
        if j0 + 1 < n:
            _random_outputs(j0 + 1, h1, hm, want, nwant, policy, q, d)
        if j0 + 2 < n:
            _random_outputs(j0 + 2, h2, hm, want, nwant, policy, q, d)
        if j0 + 3 < n:
            _random_outputs(j0 + 3, h3, hm, want, nwant, policy, q, d)


@jit
def _pair_hashed(a, hb):
    """_pair(a, b) with hb = _K + _hash(b) known."""
    h = _K + _hash(a)
    return h ^ (hb + (h << np.uint64(6)) + (h >> np.uint64(2)))


_ONE_BITS = np.uint32(0x3F800000)  # a plane's usual value, 1.0f
with np.errstate(over="ignore"):  # uint64 arithmetic wraps, as in the compiled code
    _ONE_HASHED = _K + _hash.py_func(np.uint64(_ONE_BITS))  # _K + _hash(1.0f's bits), `_pair_hashed`'s hb


@jit
def _four_chains(masks, bits, j0, n, seed):
    """lc0's hash of the planes of positions j0 .. j0 + 3 (those past n repeat the last one). A plane
    whose value is 1.0 in all four (all but the rule-50 plane, as the encoders write them) takes the
    value's hash from a constant: a quarter of the multiplications."""
    h0 = seed
    h1 = seed
    h2 = seed
    h3 = seed
    j1 = min(j0 + 1, n - 1)
    j2 = min(j0 + 2, n - 1)
    j3 = min(j0 + 3, n - 1)
    for p in range(masks.shape[1]):
        h0 = _pair(h0, masks[j0, p])
        h1 = _pair(h1, masks[j1, p])
        h2 = _pair(h2, masks[j2, p])
        h3 = _pair(h3, masks[j3, p])
        if bits[j0, p] == _ONE_BITS and bits[j1, p] == _ONE_BITS and bits[j2, p] == _ONE_BITS \
                and bits[j3, p] == _ONE_BITS:
            h0 = _pair_hashed(h0, _ONE_HASHED)
            h1 = _pair_hashed(h1, _ONE_HASHED)
            h2 = _pair_hashed(h2, _ONE_HASHED)
            h3 = _pair_hashed(h3, _ONE_HASHED)
        else:
            h0 = _pair(h0, np.uint64(bits[j0, p]))
            h1 = _pair(h1, np.uint64(bits[j1, p]))
            h2 = _pair(h2, np.uint64(bits[j2, p]))
            h3 = _pair(h3, np.uint64(bits[j3, p]))
    return h0, h1, h2, h3


@jit
def _random_outputs(j, h, hm, want, nwant, policy, q, d):
    """Position j's q, d and policy from its planes' hash h."""
    a = np.float32(3.0) / np.float32(10000.0)
    qj = np.float32((np.int64(h % np.uint64(200000)) - 100000) / 100000.0)
    q[j] = qj
    max_d = np.float32(1.0) - abs(qj)
    x = _pair(h, np.uint64(1234)) % np.uint64(10000)
    d[j] = np.float32(np.float64(max_d * np.float32(x)) / 10000.0)
    g = _K + _hash(h)
    c = (g << np.uint64(6)) + (g >> np.uint64(2))
    if nwant[j] < 0:
        for i in range(POLICY_SIZE):
            policy[j, i] = np.float32(np.int32(_mod10000(g ^ (hm[i] + c)))) * a
    else:
        for k in range(nwant[j]):
            i = want[j, k]
            policy[j, k] = np.float32(np.int32(_mod10000(g ^ (hm[i] + c)))) * a


# ---- lc0's trivial backend

TRIVIAL_TABLES = np.concatenate([np.array(tt.PAWNS, np.float32), np.array(tt.KNIGHTS, np.float32),
                                 np.array(tt.BISHOPS, np.float32), np.array(tt.ROOKS, np.float32),
                                 np.array(tt.QUEENS, np.float32), np.array(tt.KINGS, np.float32),
                                 np.array(tt.KINGS_ENDGAME, np.float32)])
TRIVIAL_POLICY = np.array(tt.LOG_POLICY, dtype=np.float32)


@jit
def _dot(mask, weights, at):
    """lc0's DotProduct: the weights (from `at`) of the set squares, summed in float32 from a1 up."""
    total = np.float32(0.0)
    sq = 0
    while mask:
        if mask & np.uint64(1):
            total += weights[at + sq]
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
def trivial_fill(masks, lo, n, tables, q):
    """q[j] of positions lo .. n-1 from their 112 plane masks (planes 0-5 ours, 6-11 theirs);
    `tables`: TRIVIAL_TABLES."""
    for j in range(lo, n):
        m = masks[j]
        s = np.float32(0.0)
        for k in range(5):
            s += _dot(m[k], tables, TRIVIAL_PIECES + 64 * k)
            s -= _dot(_flip(m[6 + k]), tables, TRIVIAL_PIECES + 64 * k)
        endgame = _bare(m[4], m[3], m[1], m[2]) and _bare(m[10], m[9], m[7], m[8])
        at = TRIVIAL_KINGS_ENDGAME if endgame else TRIVIAL_KINGS
        s += _dot(m[5], tables, at)
        s -= _dot(_flip(m[11]), tables, at)
        e = np.float32(math.exp(np.float64(s * np.float32(-10.0))))  # expf, correctly rounded
        q[j] = np.float32(2.0) / (np.float32(1.0) + e) - np.float32(1.0)
