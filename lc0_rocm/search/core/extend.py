"""Extending a picked leaf (lc0's ExtendNode, `src/search/classic/search.cc`), compiled.

A first visit of a node: its position made from the parent's (repetitions as lc0 counts them), its
legal moves, the terminal rules (mate, stalemate, insufficient material, 50 moves, threefold,
two-fold inside the tree), the tablebase test, then the NN cache (a hit expands the node from the
entry and is backed up out of order), else its input planes go straight into the batch row.
`extend_leaf` does the part that writes only the node itself, `commit_leaf` the shared part (edges
of a cache hit, the batch row and counters); `extend` is both, for one leaf.
"""

from __future__ import annotations

import math

import numpy as np

from ...encoding.bits import popcount
from ...encoding.packed import NUM_PLANES
from ...jit import jit
from ...board import encode as enc
from . import nncache
from ...board import rules
from .backup import make_terminal, rescale_value
from .batch import S_CACHE_HITS, S_IN_FLIGHT, TB_PENDING
from .prefetch import prefetch
from .spinlock import fetch_add
from .packed_params import P_CACHE_HISTORY, P_FILL, P_INPUT_FORMAT, P_TB_PIECES, P_TWO_FOLD
from .tree import DRAW, END_OF_GAME, M_960, M_ETOP, M_STARTPOS, NON_TERMINAL, TWO_FOLD, WIN


# --------------------------------------------------------------------------------------------
# Positions and rules


@jit
def set_child_position(t, node):
    """Position of a new node: its parent's after the edge's move; repetitions as lc0 counts them."""
    par = t.parent[node]
    code = t.e_code[t.first_edge[par] + t.edge[node]]
    castling, ep, rule50 = rules.make_move(t.bbs[par], t.black[par], t.castling[par], t.ep[par], t.rule50[par],
                                           code, t.meta[M_960] != 0, t.bbs[node])
    black = 1 - t.black[par]
    t.black[node] = black
    t.castling[node] = castling
    t.ep[node] = ep
    t.rule50[node] = rule50
    t.key[node] = rules.position_key(t.bbs[node], black, castling, ep)
    t.reps[node] = rules.repetitions(node, t.parent, t.key, t.bbs, t.castling, t.black, t.ep, t.rule50, t.reps)


@jit
def prefetch_history(t, node):
    """Start loading the positions of the grandparent and the five before it, which the input planes
    read after the move generation: rows written long ago, out of the CPU's caches."""
    q = t.parent[t.parent[node]]
    for _ in range(6):
        if q < 0:
            break
        prefetch(t.bbs[q], 0)
        prefetch(t.bbs[q], 11)
        q = t.parent[q]


@jit
def draw_by_rule(t, p, node, depth):
    """(plies_left, kind) if the position below the root is a draw by rule, else (0, NON_TERMINAL)."""
    if not rules.has_mating_material(t.bbs[node]):
        return 0.0, END_OF_GAME
    if t.rule50[node] >= 100:
        return 0.0, END_OF_GAME
    reps = t.reps[node]
    if reps >= 2:
        return 0.0, END_OF_GAME
    if reps == 1 and p[P_TWO_FOLD] != 0.0 and depth - 1 >= 4:
        cycle = rules.plies_since_repetition(node, t.parent, t.key, t.bbs, t.castling, t.black, t.ep, t.reps)
        if depth - 1 >= cycle:
            return float(cycle), TWO_FOLD
    return 0.0, NON_TERMINAL


@jit
def history_key(t, node, length):
    """Cache key of the last `length` + 1 positions and their repetition counts."""
    h = np.uint64(0x9E3779B97F4A7C15)
    q = node
    for _ in range(length + 1):
        if q < 0:
            break
        h = mix64(h ^ t.key[q] ^ (np.uint64(t.reps[q]) << np.uint64(56)))
        q = t.parent[q]
    return h


@jit
def mix64(x):
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


# --------------------------------------------------------------------------------------------
# The NN cache


@jit
def unpack_prior(packed):
    """The float32 prior of lc0's 16-bit form: bits (packed << 12) | (3 << 28), i.e. exponent field
    96 + (packed >> 11) and 11 mantissa bits (Edge::GetP)."""
    bits = (np.int64(packed) << 12) | (3 << 28)
    exponent = (bits >> 23) & 0xFF
    mantissa = bits & 0x7FFFFF
    return np.float32(math.ldexp(1.0 + mantissa / 8388608.0, int(exponent) - 127))


@jit
def expand_from_cache(t, c, node, slot, codes):
    """Edges of `node` from a cache entry (moves in generator order `codes`)."""
    cnt = c.count[slot]
    off = nncache.entry_offset(c, slot)
    fe = fetch_add(t.meta, M_ETOP, cnt)
    for k in range(cnt):
        t.e_code[fe + k] = codes[c.order[off + k]]
        t.e_p[fe + k] = unpack_prior(c.prior[off + k])
        t.e_child[fe + k] = -1
    t.first_edge[node] = fe
    t.num_edges[node] = cnt
    t.vp[node] = np.nan


@jit
def cache_hit(t, s, p, c, node, slot, codes, dq):
    """Expand `node` from cache entry `slot`; dq = (1, q, d, m) for its out-of-order backup. Returns 0."""
    expand_from_cache(t, c, node, slot, codes)
    fetch_add(s, S_CACHE_HITS, 1)
    dq[0] = 1.0
    t.v[node] = -np.float64(c.qdm[slot, 0])  # the network's own value (VerboseMoveStats' V), before rescaling
    q, d = rescale_value(t, p, node, np.float64(c.qdm[slot, 0]), np.float64(c.qdm[slot, 1]))
    dq[1] = q
    dq[2] = d
    dq[3] = c.qdm[slot, 2]
    return 0


# --------------------------------------------------------------------------------------------
# A first visit


LEAF_TERMINAL, LEAF_CACHED, LEAF_BATCH = 0, 1, 2  # what `extend_leaf` found (info[i, 0])


@jit
def _cache_hit(c, key, info, i):
    """Look `key` up in the NN cache; a hit marks info[i] as LEAF_CACHED with its slot."""
    slot = nncache.lookup(c, key)
    if slot < 0:
        return False
    info[i, 0] = LEAF_CACHED
    info[i, 1] = slot
    return True


@jit(inline="always")  # a call per first visit passed the tree's 25 arrays on the stack
def extend_leaf(t, p, c, node, depth, root, codes, masks, values, row, info, keys, i):
    """The part of a first visit that writes only `node` itself (with several search threads it runs
    outside the tree's lock: search/core/shared_worker.py): its position, legal moves (into `codes`), the
    terminal rules (a terminal is made here), the tablebase test and the NN-cache lookup; a leaf for
    the network gets its planes in masks/values[row]. info[i] = (LEAF_*, cache slot, move count,
    transform, tablebase mark); keys[i] the cache key."""
    if node != root:
        prefetch_history(t, node)
        set_child_position(t, node)
    hist = int(p[P_CACHE_HISTORY])
    key = np.uint64(0)
    if hist < 7:  # the key now: its cache slot loads while the moves are generated
        key = history_key(t, node, hist)
        nncache.prefetch_slot(c, key)
    ncodes, check = rules.legal_moves(t.bbs[node], t.black[node], t.castling[node], t.ep[node],
                                      t.meta[M_960] != 0, codes)
    info[i, 0] = LEAF_TERMINAL
    if ncodes == 0:
        make_terminal(t, node, WIN if check else DRAW, 0.0, END_OF_GAME, root)  # no parent write: not a loss
        return
    if node != root:
        plies, kind = draw_by_rule(t, p, node, depth)
        if kind != NON_TERMINAL:
            make_terminal(t, node, DRAW, plies, kind, root)
            return
    tb = 0
    if node != root and p[P_TB_PIECES] > 0 and t.rule50[node] == 0 and t.castling[node] == 0:
        occ = np.uint64(0)
        for k in range(12):
            occ |= t.bbs[node, k]
        if popcount(occ) <= p[P_TB_PIECES]:
            tb = TB_PENDING  # lc0 probes such a position before its cache: no cache lookup
    info[i, 2] = ncodes
    info[i, 4] = tb
    if hist < 7:
        keys[i] = key
        if tb == 0 and _cache_hit(c, key, info, i):
            return
    tr = encode_leaf(t, p, node, masks, values, row)
    info[i, 3] = tr
    if hist >= 7:
        # the transform is part of the key: a position and its mirror image encode alike
        key = enc.input_hash(masks[row], values[row], t.black[node], t.ep[node]) ^ mix64(np.uint64(tr + 1))
        keys[i] = key
        if tb == 0 and _cache_hit(c, key, info, i):
            return
    info[i, 0] = LEAF_BATCH


@jit
def encode_leaf(t, p, node, masks, values, row):
    """The input planes of `node` into masks/values[row]; returns the canonical transform."""
    return enc.encode(node, t.parent, t.bbs, t.castling, t.black, t.ep, t.rule50, t.reps, t.meta[M_STARTPOS] != 0,
                      int(p[P_INPUT_FORMAT]), int(p[P_FILL]), masks[row], values[row])


@jit
def commit_leaf(t, s, p, c, b, node, depth, j, codes, masks, values, row, info, keys, i, dq, copy):
    """The shared part of a first visit extended by `extend_leaf`: a cache hit's edges, or row j of
    the batch (planes copied from masks/values[row] with `copy`, else already there). Returns 1 when the
    node went into the batch; 0 when it was a terminal or a cache hit, to be backed up out of order:
    then dq = (kind 0 terminal / 1 cache, q, d, m)."""
    kind = info[i, 0]
    if kind == LEAF_TERMINAL:
        dq[0] = 0.0
        return 0
    if kind == LEAF_CACHED:
        return cache_hit(t, s, p, c, node, info[i, 1], codes, dq)
    if copy:
        for k in range(NUM_PLANES):
            b.masks[j, k] = masks[row, k]
            b.values[j, k] = values[row, k]
    ncodes = info[i, 2]
    b.node[j] = node
    b.depth[j] = depth
    b.key[j] = keys[i]
    b.transform[j] = info[i, 3]
    b.black[j] = t.black[node]
    b.tb[j] = info[i, 4]
    b.ncodes[j] = ncodes
    for k in range(ncodes):
        b.codes[j, k] = codes[k]
    fetch_add(s, S_IN_FLIGHT, 1)
    return 1


@jit
def extend(t, s, p, c, b, node, depth, j, root, codes, dq, info, keys):
    """First visit of `node`, alone: `extend_leaf` into row j of the batch, then `commit_leaf`."""
    extend_leaf(t, p, c, node, depth, root, codes, b.masks, b.values, j, info, keys, 0)
    return commit_leaf(t, s, p, c, b, node, depth, j, codes, b.masks, b.values, j, info, keys, 0, dq, False)
