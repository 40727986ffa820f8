"""The search worker, compiled: gather a minibatch, expand evaluated leaves, back values up.

lc0's `SearchWorker` (`src/search/classic/search.cc`) as numba functions over the tree arrays
(`search.tree`), the NN cache (`search.nncache`) and a batch's arrays (`BatchArrays`):

* `gather` is GatherMinibatch: repeated multi-visit picks (PickNodesToExtendTask), each sending up
  to min(collisions left, room in the batch, out-of-order budget) visits from the root at once;
  every node hands its share to the child with the best PUCT score until another child would
  overtake it, adding visits in flight on the way (virtual loss). A picked leaf is extended
  (ExtendNode): its position made from the parent's, legal moves, terminal rules (mate,
  stalemate, insufficient material, 50 moves, threefold, two-fold inside the tree), then the NN
  cache, else its input planes go straight into the batch. Terminals and cache hits are evaluated
  out of order (that pick's collisions taken back, backed up newest first; at most
  MaxOutOfOrderEvalsFactor x MinibatchSize of them); collisions keep their virtual loss until the
  batch is complete; the collision budget ends the gathering when spent.
* `apply` takes the network's outputs for a batch: lc0's policy softmax over the legal moves
  (PolicyTemperature, FastExp, sequential float32 sum), 16-bit prior rounding (Edge::SetP), edges
  sorted by prior (ties in generator order), the cache entry stored, and the value backed up.
* `backup` is DoBackupUpdateSingleNode with proven wins/losses as bounds (sticky endgames).

PUCT: a child's score is Q + U, U = cpuct(N) sqrt(N_children) P / (1 + n + n_in_flight), cpuct(N) =
CPuct + CPuctFactor ln((N + CPuctBase) / CPuctBase) (lc0's FastLog); an unvisited child's Q is the
first-play urgency parent_Q - FpuValue sqrt(sum of visited priors); with a moves-left head lc0's M
utility is added once |Q| > MovesLeftThreshold. tests/test_search.py checks the tree against the
real lc0 visit for visit.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from . import encode as enc
from . import nncache
from . import rules
from . import score as sc
from .jit import jit, jit_alloc
from .params import (P_CACHE_HISTORY, P_CPUCT, P_CPUCT_BASE, P_CPUCT_FACTOR, P_FILL, P_FPU, P_FPU_ABSOLUTE,
                     P_FPU_ABSOLUTE_ROOT, P_FPU_ROOT, P_INPUT_FORMAT, P_ML_CONSTANT, P_ML_MAX, P_ML_QUADRATIC,
                     P_ML_SCALED, P_ML_SLOPE, P_ML_THRESHOLD, P_MLH, P_STICKY, P_TEMPERATURE, P_TWO_FOLD,
                     P_EXACT_LIMIT, P_DRAW_SCORE, P_WDL_RATIO, P_WDL_DIFF, P_WDL_MAX_S, P_CONTEMPT_BLACK, P_TB_PIECES, P_OUT_OF_ORDER)
from .tree import DRAW, END_OF_GAME, LOSS, M_960, M_ETOP, M_ROOT, M_STARTPOS, M_TOP, NON_TERMINAL, TABLEBASE, TWO_FOLD, WIN, init_node, \
    make_not_terminal

ZERO_PRIOR = np.float32(2.0 ** -31)  # what lc0's 16-bit prior storage gives back for a prior set to 0
PUCT_TABLE_SIZE = 1 << 16
MAX_MOVES = 256
INT_MAX = 2**31 - 1
NUM_PLANES = enc.NUM_PLANES
RULE50_PLANE = 109

# counters the worker keeps (int64 array `stats`)
(S_PLAYOUTS, S_CUM_DEPTH, S_MAX_DEPTH, S_NN_EVALS, S_CACHE_HITS, S_COLLISIONS, S_DESCENTS, S_REVERTED,
 S_IN_FLIGHT, S_BATCHES, S_OOO) = range(11)
STATS_SIZE = 16

BatchArrays = namedtuple("BatchArrays", ["node", "depth", "key", "ncodes", "codes", "masks", "values",
                                         "transform", "black", "tb",
                                         "dnode", "ddepth", "dkind", "dval", "dpos", "dcount"])
# BatchArrays.d*: with OutOfOrderEval off, the batch's terminals and cache hits (lc0 keeps them in the
# minibatch and backs them up with it, in pick order): node, depth, kind (0 terminal, 1 cache hit),
# (q, d, m) of a cache hit, and `dpos`, the number of network rows picked before it; dcount[0] of them
# BatchArrays.tb: 0 a plain leaf; TB_PENDING a tablebase candidate (the search probes it between
# gathering and applying); TB_RESULT + r a proven one, r = -1/0/+1 for the side to move
TB_PENDING, TB_RESULT = 1, 3


def new_batch(capacity: int, masks: np.ndarray | None = None, values: np.ndarray | None = None) -> BatchArrays:
    """Arrays for one batch of `capacity` leaves; `masks`/`values` may be the backend's own (pinned)
    input buffers, which the encoder then fills directly."""
    cap = max(1, int(capacity))
    if masks is None:
        masks = np.zeros((cap, NUM_PLANES), dtype=np.uint64)
    if values is None:
        values = np.ones((cap, NUM_PLANES), dtype=np.float32)
    return BatchArrays(node=np.zeros(cap, np.int32), depth=np.zeros(cap, np.int32), key=np.zeros(cap, np.uint64),
                       ncodes=np.zeros(cap, np.int32), codes=np.zeros((cap, MAX_MOVES), np.int16),
                       masks=masks, values=values, transform=np.zeros(cap, np.int32), black=np.zeros(cap, np.int32),
                       tb=np.zeros(cap, np.int8), dnode=np.zeros(cap, np.int64), ddepth=np.zeros(cap, np.int64),
                       dkind=np.zeros(cap, np.int64), dval=np.zeros((cap, 3), np.float64),
                       dpos=np.zeros(cap, np.int64), dcount=np.zeros(1, np.int64))


# --------------------------------------------------------------------------------------------
# Small pieces


fast_log_f64 = jit(sc.fast_log_f64)  # lc0's FastLog, the one search.score defines, compiled


@jit
def puct_of(p, n):
    """cpuct(N) * sqrt(children visits) of a node with N visits."""
    cpuct = p[P_CPUCT]
    if p[P_CPUCT_FACTOR] != 0.0:
        cpuct += p[P_CPUCT_FACTOR] * fast_log_f64((n + p[P_CPUCT_BASE]) / p[P_CPUCT_BASE])
    return cpuct * math.sqrt(n - 1 if n > 1 else 1)


@jit_alloc
def puct_table(p):
    out = np.empty(PUCT_TABLE_SIZE, dtype=np.float64)
    for n in range(PUCT_TABLE_SIZE):
        out[n] = puct_of(p, n)
    return out


@jit
def visited_policy(t, node):
    """Sum of the priors of the children with visits (cached in `vp` until a child's first visit)."""
    vp = t.vp[node]
    if not np.isnan(vp):
        return vp
    vp = 0.0
    fe = t.first_edge[node]
    for i in range(t.num_edges[node]):
        c = t.e_child[fe + i]
        if c >= 0 and t.n[c] > 0:
            vp += t.e_p[fe + i]
    t.vp[node] = vp
    return vp


@jit
def m_utility(t, p, parent, child, q):
    """lc0's moves-left utility of a visited child (prefer short wins and long losses)."""
    cap = p[P_ML_MAX]
    m = p[P_ML_SLOPE] * (t.m[child] - t.m[parent])
    if m > cap:
        m = cap
    if m < -cap:
        m = -cap
    if q > 0 or (q == 0 and math.copysign(1.0, q) > 0):  # FastSign(-q)
        m = -m
    thr = p[P_ML_THRESHOLD]
    if 0.0 < thr < 1.0:
        q = max(0.0, abs(q) - thr) / (1.0 - thr)
    return m * (p[P_ML_CONSTANT] + p[P_ML_SCALED] * abs(q) + p[P_ML_QUADRATIC] * q * q)


@jit
def cancel_path(t, node, visits, root):
    """Take `visits` visits in flight back from `node` and its ancestors up to the root (negative:
    add them); nothing for a row above the root."""
    while node >= root:
        t.nif[node] -= visits
        if node == root:
            break
        node = t.parent[node]


@jit
def new_child(t, node, i):
    """Row of the child at edge i of `node`, created on first use."""
    e = t.first_edge[node] + i
    c = t.e_child[e]
    if c < 0:
        c = t.meta[M_TOP]
        t.meta[M_TOP] = c + 1
        init_node(t, c, node, i)
        t.e_child[e] = c
    return c


@jit
def make_terminal(t, node, result, plies_left, kind, root):
    """Mark as game end with `result` for the player who moved into the node."""
    if kind != TWO_FOLD:
        t.lower[node] = result
        t.upper[node] = result
    t.term[node] = kind
    t.m[node] = plies_left
    if result == DRAW:
        t.wl[node] = 0.0
        t.d[node] = 1.0
    elif result == WIN:
        t.wl[node] = 1.0
        t.d[node] = 0.0
    else:
        t.wl[node] = -1.0
        t.d[node] = 0.0
        if node != root:  # a lost move needs no exploration bonus: lc0 clears its prior
            par = t.parent[node]
            t.e_p[t.first_edge[par] + t.edge[node]] = ZERO_PRIOR
            t.vp[par] = np.nan
    if np.isnan(t.v[node]):
        t.v[node] = t.wl[node]


@jit
def revert_terminal_visits(t, node, v, d, m, count, root):
    if node != root:
        t.vp[t.parent[node]] = np.nan
    n_new = t.n[node] - count
    if n_new <= 0:
        t.wl[node] = 0.0
        t.d[node] = 1.0
        t.m[node] = 0.0
        t.n[node] = 0
    else:
        t.wl[node] -= count * (v - t.wl[node]) / n_new
        t.d[node] -= count * (d - t.d[node]) / n_new
        t.m[node] -= count * (m - t.m[node]) / n_new
        t.n[node] = n_new


@jit
def revert_two_fold(t, s, child, depth, root):
    """A two-fold draw whose first occurrence is now above the root: undo it (tree reuse)."""
    wl = t.wl[child]
    d = t.d[child]
    m = t.m[child]
    visits = t.n[child]
    counter = 0
    n = child
    while True:
        revert_terminal_visits(t, n, wl, d, m + counter, visits, root)
        counter += 1
        if counter > depth or n == root:
            break
        n = t.parent[n]
    make_not_terminal(t, child, root)
    s[S_REVERTED] += visits


# --------------------------------------------------------------------------------------------
# Backup


@jit
def maybe_set_bounds(t, par, m, root):
    """Bounds of `par` from its children; makes it terminal when they meet. Returns (set, n_to_fix,
    v_delta, d_delta, m_delta): set False when nothing was set, n_to_fix 0 when only the bounds
    changed."""
    losing_m = 0.0
    lower = LOSS
    upper = LOSS
    fe = t.first_edge[par]
    for i in range(t.num_edges[par]):
        c = t.e_child[fe + i]
        if c < 0:
            el = LOSS
            eu = WIN
        else:
            el = t.lower[c]
            eu = t.upper[c]
        if el > lower:
            lower = el
        if eu > upper:
            upper = eu
        if el == WIN:
            break
        if eu == LOSS and c >= 0 and t.n[c] > 0 and t.m[c] > losing_m:
            losing_m = t.m[c]
    if lower == LOSS and upper == WIN:
        return False, 0, 0.0, 0.0, 0.0
    if lower == upper:
        n_to_fix = t.n[par]
        cur_v = t.wl[par]
        cur_d = t.d[par]
        cur_m = t.m[par]
        plies = (max(losing_m, m) if upper == LOSS else m) + 1.0
        make_terminal(t, par, -upper, plies, END_OF_GAME, root)
        return True, n_to_fix, -(t.wl[par] - cur_v), t.d[par] - cur_d, t.m[par] - cur_m
    t.lower[par] = -upper
    t.upper[par] = -lower
    return True, 0, 0.0, 0.0, 0.0


@jit
def backup(t, s, p, node, v, d, m, depth, root):
    """lc0's DoBackupUpdateSingleNode: values up to the root, proven results as bounds."""
    if np.isnan(t.v[node]):
        t.v[node] = v
    if t.n[node] == 0 and node != root:
        t.vp[t.parent[node]] = np.nan  # a child gets its first visit: the parent's visited policy changes
    update_bounds = p[P_STICKY] != 0.0 and t.term[node] != NON_TERMINAL and t.n[node] == 0
    n = node
    # one walk to the root; the bounds work (sticky endgames) runs only while update_bounds holds
    n_to_fix = 0
    v_delta = 0.0
    d_delta = 0.0
    m_delta = 0.0
    while True:
        if t.term[n] != NON_TERMINAL:
            v = t.wl[n]
            d = t.d[n]
            m = t.m[n]
        n1 = t.n[n] + 1
        t.wl[n] += (v - t.wl[n]) / n1
        t.d[n] += (d - t.d[n]) / n1
        t.m[n] += (m - t.m[n]) / n1
        t.n[n] = n1
        t.nif[n] -= 1
        if n_to_fix > 0 and t.term[n] == NON_TERMINAL:
            t.wl[n] += n_to_fix * v_delta / t.n[n]
            t.d[n] += n_to_fix * d_delta / t.n[n]
            t.m[n] += n_to_fix * m_delta / t.n[n]
        if n == root:
            break
        par = t.parent[n]
        if t.term[par] != NON_TERMINAL:
            n_to_fix = 0
        if update_bounds and par != root and t.term[par] == NON_TERMINAL:
            update_bounds, fix_n, fix_v, fix_d, fix_m = maybe_set_bounds(t, par, m, root)
            if update_bounds and fix_n > 0:
                n_to_fix = fix_n
                v_delta = fix_v
                d_delta = fix_d
                m_delta = fix_m
        else:
            update_bounds = False
        v = -v
        v_delta = -v_delta
        m += 1
        n = par
    s[S_PLAYOUTS] += 1
    s[S_CUM_DEPTH] += depth
    if depth > s[S_MAX_DEPTH]:
        s[S_MAX_DEPTH] = depth


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
    key = rules.position_key(t.bbs[node], black, castling, ep)
    t.key[node] = key
    reps = 0
    if rule50 >= 4:
        q = par
        steps = 1
        while q >= 0:
            if steps >= 4 and steps % 2 == 0:
                if t.key[q] == key and same_position(t, q, node):
                    reps = 1 + t.reps[q]
                    break
                if t.rule50[q] < 2:
                    break
            q = t.parent[q]
            steps += 1
    t.reps[node] = reps


@jit
def same_position(t, a, b):
    if t.black[a] != t.black[b] or t.castling[a] != t.castling[b] or t.ep[a] != t.ep[b]:
        return False
    for k in range(12):
        if t.bbs[a, k] != t.bbs[b, k]:
            return False
    return True


@jit
def plies_since_repetition(t, node):
    """Plies back to the previous occurrence of a repeated position (0 if it is not a repetition)."""
    if t.reps[node] == 0:
        return 0
    q = t.parent[node]
    steps = 1
    while q >= 0:
        if steps >= 4 and steps % 2 == 0 and t.key[q] == t.key[node] and same_position(t, q, node):
            return steps
        q = t.parent[q]
        steps += 1
    return 0


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
        cycle = plies_since_repetition(t, node)
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
    fe = t.meta[M_ETOP]
    t.meta[M_ETOP] = fe + cnt
    for k in range(cnt):
        t.e_code[fe + k] = codes[c.order[off + k]]
        t.e_p[fe + k] = unpack_prior(c.prior[off + k])
        t.e_child[fe + k] = -1
    t.first_edge[node] = fe
    t.num_edges[node] = cnt
    t.vp[node] = np.nan


@jit
def popcount(x):
    n = 0
    while x:
        x &= x - np.uint64(1)
        n += 1
    return n


@jit
def draw_score_at(t, p, node):
    """DrawScore for the side to move at `node` (lc0's GetDrawScore: White gets it, Black its negation)."""
    return -p[P_DRAW_SCORE] if t.black[node] else p[P_DRAW_SCORE]


@jit
def rescale_value(t, p, node, q, d):
    """A network's (q, d) for `node` (side to move's view) through lc0's WDL rescaling when
    contempt or a draw-rate target asks for it (`SearchWorker::FetchSingleNodeResult`): the value
    is rescaled from the view of the player who moved into `node`, favoured when that player is
    the contempt side."""
    ratio = p[P_WDL_RATIO]
    diff = p[P_WDL_DIFF]
    if ratio == 1.0 and diff == 0.0:
        return q, d
    mover_black = t.black[node] == 0
    sign = 1.0 if mover_black == (p[P_CONTEMPT_BLACK] != 0.0) else -1.0
    v2, d2, _ = sc.wdl_rescale(np.float32(-q), np.float32(d), ratio, diff, sign, False, p[P_WDL_MAX_S])
    return -np.float64(v2), np.float64(d2)


@jit
def cache_hit(t, s, p, c, node, slot, codes, dq):
    """Expand `node` from cache entry `slot`; dq = (1, q, d, m) for its out-of-order backup. Returns 0."""
    expand_from_cache(t, c, node, slot, codes)
    s[S_CACHE_HITS] += 1
    dq[0] = 1.0
    t.v[node] = -np.float64(c.qdm[slot, 0])  # the network's own value (VerboseMoveStats' V), before rescaling
    q, d = rescale_value(t, p, node, np.float64(c.qdm[slot, 0]), np.float64(c.qdm[slot, 1]))
    dq[1] = q
    dq[2] = d
    dq[3] = c.qdm[slot, 2]
    return 0


LEAF_TERMINAL, LEAF_CACHED, LEAF_BATCH = 0, 1, 2  # what `extend_leaf` found (info[i, 0])


@jit
def extend_leaf(t, p, c, node, depth, root, codes, masks, values, row, info, keys, i):
    """The part of a first visit that writes only `node` itself (distinct leaves could be extended in
    parallel; measured, not kept: docs/perf.md): its position, legal moves (into `codes`), the
    terminal rules (a terminal is made here), the tablebase test and the NN-cache lookup; a leaf for
    the network gets its planes in masks/values[row]. info[i] = (LEAF_*, cache slot, move count,
    transform, tablebase mark); keys[i] the cache key."""
    if node != root:
        set_child_position(t, node)
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
    hist = int(p[P_CACHE_HISTORY])
    key = np.uint64(0)
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
        key = history_key(t, node, hist)
        keys[i] = key
        if tb == 0:
            slot = nncache.lookup(c, key)
            if slot >= 0:
                info[i, 0] = LEAF_CACHED
                info[i, 1] = slot
                return
    tr = enc.encode(node, t.parent, t.bbs, t.castling, t.black, t.ep, t.rule50, t.reps, t.meta[M_STARTPOS] != 0,
                    int(p[P_INPUT_FORMAT]), int(p[P_FILL]), masks[row], values[row])
    info[i, 3] = tr
    if hist >= 7:
        # the transform is part of the key: a position and its mirror image encode alike
        key = enc.input_hash(masks[row], values[row], t.black[node], t.ep[node]) ^ mix64(np.uint64(tr + 1))
        keys[i] = key
        if tb == 0:
            slot = nncache.lookup(c, key)
            if slot >= 0:
                info[i, 0] = LEAF_CACHED
                info[i, 1] = slot
                return
    info[i, 0] = LEAF_BATCH


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
    s[S_IN_FLIGHT] += 1
    return 1


@jit
def extend(t, s, p, c, b, node, depth, j, root, codes, dq, info, keys):
    """First visit of `node`, alone: `extend_leaf` into row j of the batch, then `commit_leaf`."""
    extend_leaf(t, p, c, node, depth, root, codes, b.masks, b.values, j, info, keys, 0)
    return commit_leaf(t, s, p, c, b, node, depth, j, codes, b.masks, b.values, j, info, keys, 0, dq, False)


# --------------------------------------------------------------------------------------------
# Picking leaves (PickNodesToExtendTask)


@jit
def heap_less(hs, hi, a, b):
    return hs[a] < hs[b] or (hs[a] == hs[b] and hi[a] < hi[b])


@jit
def heap_sift_up(hs, hi, k):
    while k > 0:
        up = (k - 1) >> 1
        if heap_less(hs, hi, k, up):
            hs[k], hs[up] = hs[up], hs[k]
            hi[k], hi[up] = hi[up], hi[k]
            k = up
        else:
            break


@jit
def heap_sift_down(hs, hi, size, k):
    while True:
        l = 2 * k + 1
        if l >= size:
            break
        m = l
        r = l + 1
        if r < size and heap_less(hs, hi, r, l):
            m = r
        if heap_less(hs, hi, m, k):
            hs[k], hs[m] = hs[m], hs[k]
            hi[k], hi[m] = hi[m], hi[k]
            k = m
        else:
            break


@jit
def take_candidates(t, p, node, fe, ne, puct, fpu, ds, m_on, skip, use_skip, max_needed, started, util, score,
                    hs, hi, nc, last, first_unstarted):
    """Score children last+1, ... into the candidate heap, up to the first one without visits
    started and one more (priors are sorted, so lc0's scan looks no further). Returns
    (heap size, last, first_unstarted)."""
    while True:
        i = last + 1
        if i >= max_needed:
            break
        last = i
        if use_skip and skip[i]:
            continue
        c = t.e_child[fe + i]
        pi = t.e_p[fe + i]
        if c < 0:
            sc = pi * puct + fpu
        else:
            nv = t.n[c]
            ns = nv + t.nif[c]
            started[i] = ns
            if nv > 0:
                q = t.wl[c] + ds * t.d[c]
                u = q + m_utility(t, p, node, c, q) if m_on else q
                util[i] = u
                sc = pi * puct / (1 + ns) + u
            else:
                sc = pi * puct / (1 + ns) + fpu
        score[i] = sc
        hs[nc] = -sc
        hi[nc] = i
        heap_sift_up(hs, hi, nc)
        nc += 1
        if first_unstarted >= 0:
            break
        if started[i] == 0:
            first_unstarted = i
    return nc, last, first_unstarted


@jit
def pick_nodes(t, s, p, puct_tab, skip, use_skip, root_filter, limit, out_node, out_depth, out_k, out_mx,
               stack_node, stack_k, stack_depth, started, util, score, vtp, hs, hi):
    """lc0's PickNodesToExtendTask from the root for `limit` visits. Writes entries (node, depth, 0, 0)
    for a visit to a leaf (never visited, or terminal) and (node, depth, k, max) for k visits that
    collided with a leaf in flight (max > 0: may grow to that many); returns how many."""
    root = t.meta[M_ROOT]
    nout = 0
    max_limit = INT_MAX
    if t.n[root] == 0 or t.term[root] != NON_TERMINAL:
        cur = limit
        if not (t.n[root] == 0 and t.nif[root] > 0):
            t.nif[root] += 1
            cur -= 1
            out_node[nout] = root
            out_depth[nout] = 1
            out_k[nout] = 0
            out_mx[nout] = 0
            nout += 1
        if cur > 0:
            out_node[nout] = root
            out_depth[nout] = 1
            out_k[nout] = cur
            out_mx[nout] = INT_MAX if cur == limit else 0
            nout += 1
        return nout
    t.nif[root] += limit
    collision_limit = limit
    want_estimate = collision_limit == 1
    mlh = p[P_MLH] != 0.0
    m_threshold = p[P_ML_THRESHOLD]
    # task stack: (node, visits, depth); visits < 0 marks a child to visit-or-descend with -visits
    sp = 0
    stack_node[0] = root
    stack_k[0] = limit
    stack_depth[0] = 1
    sp = 1
    while sp > 0:
        sp -= 1
        node = stack_node[sp]
        cur_limit = stack_k[sp]
        depth = stack_depth[sp]
        if cur_limit < 0:  # a child that got visits from its parent's share
            k = -cur_limit
            if t.n[node] == 0 or t.term[node] != NON_TERMINAL:
                mx = max_limit if (k == collision_limit and max_limit > k) else 0
                out_node[nout] = node
                out_depth[nout] = depth
                out_k[nout] = k
                out_mx[nout] = mx
                nout += 1
                continue
            cur_limit = k
        is_root = node == root
        use_skip_here = is_root and use_skip
        if is_root:
            fpu_value = p[P_FPU_ROOT]
            fpu_absolute = p[P_FPU_ABSOLUTE_ROOT] != 0.0
        else:
            fpu_value = p[P_FPU]
            fpu_absolute = p[P_FPU_ABSOLUTE] != 0.0
        # ---- a single visit: a plain descent (same choices, no bookkeeping)
        done = False
        while cur_limit == 1:
            fe = t.first_edge[node]
            ne = t.num_edges[node]
            vp = visited_policy(t, node)
            wl = t.wl[node]
            ds = draw_score_at(t, p, node)
            fpu = fpu_value if fpu_absolute else -wl + ds * t.d[node] - fpu_value * math.sqrt(vp)
            n = t.n[node]
            puct = puct_tab[n] if n < PUCT_TABLE_SIZE else puct_of(p, n)
            m_on = mlh and (wl > m_threshold or -wl > m_threshold)
            max_needed = n + t.nif[node] + 3
            if use_skip_here and root_filter:
                max_needed = ne
            best = -np.inf
            second = -np.inf
            best_i = -1
            has_second = False
            best_util = 0.0
            best_started = 0
            can_exit = False
            for i in range(ne):
                if i == max_needed:
                    break
                if use_skip_here and skip[i]:
                    continue
                c = t.e_child[fe + i]
                if c < 0:
                    ns = 0
                    u = fpu
                else:
                    nv = t.n[c]
                    ns = nv + t.nif[c]
                    if nv > 0:
                        u = t.wl[c] + ds * t.d[c]
                        if m_on:
                            u += m_utility(t, p, node, c, u)
                    else:
                        u = fpu
                sc = t.e_p[fe + i] * puct / (1 + ns) + u
                if sc > best:
                    if best_i >= 0:
                        has_second = True
                    second = best
                    best = sc
                    best_i = i
                    best_util = u
                    best_started = ns
                elif sc > second:
                    second = sc
                    has_second = True
                if can_exit:
                    break
                if ns == 0:
                    can_exit = True
            if best_i < 0:  # every edge excluded (cannot happen: the best root move never is)
                cancel_path(t, node, 1, root)
                done = True
                break
            if want_estimate and has_second and best_util < second:
                x = t.e_p[fe + best_i] * puct / (second - best_util) - (best_started + 1) + 1
                if x < 1.0:
                    estimate = 1
                elif x < 1e9:
                    estimate = int(x)
                else:
                    estimate = 1000000000
                if estimate < max_limit:
                    max_limit = estimate
            child = new_child(t, node, best_i)
            if t.term[child] == TWO_FOLD and depth < t.m[child]:
                revert_two_fold(t, s, child, depth, root)
            depth += 1
            if t.n[child] == 0 and t.nif[child] > 0:  # collision
                mx = max_limit if (want_estimate and max_limit > 1) else 0
                out_node[nout] = child
                out_depth[nout] = depth
                out_k[nout] = 1
                out_mx[nout] = mx
                nout += 1
                done = True
                break
            t.nif[child] += 1
            if t.n[child] == 0 or t.term[child] != NON_TERMINAL:
                out_node[nout] = child
                out_depth[nout] = depth
                out_k[nout] = 0
                out_mx[nout] = 0
                nout += 1
                done = True
                break
            node = child
            use_skip_here = False
            fpu_value = p[P_FPU]
            fpu_absolute = p[P_FPU_ABSOLUTE] != 0.0
        if done:
            continue
        # ---- several visits: hand out shares by PUCT
        fe = t.first_edge[node]
        ne = t.num_edges[node]
        vp = visited_policy(t, node)
        ds = draw_score_at(t, p, node)
        fpu = fpu_value if fpu_absolute else -t.wl[node] + ds * t.d[node] - fpu_value * math.sqrt(vp)
        n = t.n[node]
        puct = puct_tab[n] if n < PUCT_TABLE_SIZE else puct_of(p, n)
        m_on = mlh and abs(t.wl[node]) > m_threshold
        max_needed = ne
        if not use_skip_here or not root_filter:
            k = n + t.nif[node] + cur_limit + 2
            if k < max_needed:
                max_needed = k
        for i in range(max_needed):
            started[i] = 0
            util[i] = fpu
            score[i] = 0.0
            vtp[i] = 0
        nc = 0
        last = -1
        first_unstarted = -1
        nc, last, first_unstarted = take_candidates(t, p, node, fe, ne, puct, fpu, ds, m_on, skip, use_skip_here,
                                                    max_needed, started, util, score, hs, hi, nc, last,
                                                    first_unstarted)
        while cur_limit > 0 and nc > 0:
            best_i = hi[0]
            best_util = util[best_i]
            if nc > 1:
                if nc == 2 or heap_less(hs, hi, 1, 2):
                    second = -hs[1]
                else:
                    second = -hs[2]
                estimate = INT_MAX
                if best_util < second:
                    x = t.e_p[fe + best_i] * puct / (second - best_util) - (started[best_i] + 1) + 1
                    if x < 1.0:
                        estimate = 1
                    elif x < 1e9:
                        estimate = int(x)
                    else:
                        estimate = 1000000000
                if estimate < max_limit:
                    max_limit = estimate
                new_visits = cur_limit if cur_limit < estimate else estimate
            else:
                new_visits = cur_limit
            child = new_child(t, node, best_i)
            if t.term[child] == TWO_FOLD and depth < t.m[child]:
                revert_two_fold(t, s, child, depth, root)
            if t.n[child] == 0 and t.nif[child] > 0:
                # collision: lc0's next rounds pick this child again and again with the same
                # estimate: every visit left waits at it
                vtp[best_i] += cur_limit
                cur_limit = 0
                break
            vtp[best_i] += new_visits
            cur_limit -= new_visits
            t.nif[child] += 1
            was_unstarted = started[best_i] == 0
            started[best_i] += 1
            new_visits -= 1
            if t.n[child] > 0 and t.term[child] == NON_TERMINAL:
                t.nif[child] += new_visits
                started[best_i] += new_visits
            else:
                vtp[best_i] -= 1
                out_node[nout] = child
                out_depth[nout] = depth + 1
                out_k[nout] = 0
                out_mx[nout] = 0
                nout += 1
            sc = t.e_p[fe + best_i] * puct / (1 + started[best_i]) + util[best_i]
            score[best_i] = sc
            hs[0] = -sc  # replace the top, then restore the heap
            heap_sift_down(hs, hi, nc, 0)
            if was_unstarted and best_i == first_unstarted:
                # the scan now reaches the next unstarted child and one more
                first_unstarted = -1
                j = best_i + 1
                while j <= last:
                    if not (use_skip_here and skip[j]) and started[j] == 0:
                        first_unstarted = j
                        break
                    j += 1
                nc, last, first_unstarted = take_candidates(t, p, node, fe, ne, puct, fpu, ds, m_on, skip,
                                                            use_skip_here, max_needed, started, util, score,
                                                            hs, hi, nc, last, first_unstarted)
        if cur_limit > 0:  # every edge excluded (cannot happen, see above): take the visits back
            cancel_path(t, node, cur_limit, root)
        # children with shares, in edge order (pushed in reverse: the stack pops them in order)
        for i in range(last, -1, -1):
            k = vtp[i]
            if k > 0:
                stack_node[sp] = t.e_child[fe + i]
                stack_k[sp] = -k
                stack_depth[sp] = depth + 1
                sp += 1
    return nout


# --------------------------------------------------------------------------------------------
# Gathering (GatherMinibatch)


@jit
def gather(t, s, p, c, b, puct_tab, allowed, use_allowed, remaining, best_i, cap, max_ooo, collisions_left,
           node_limit, stop, w):
    """Fill batch `b` with up to `cap` leaves (see the module docstring); returns the leaves in it.
    Root moves outside `allowed` (searchmoves, when `use_allowed`) or hopeless with `remaining`
    playouts left against the best move `best_i` are not searched (`allowed`: move codes). `w` is a work area (`WorkArrays`;
    its kept_* arrays hold at least collisions_left + 1 entries)."""
    root = t.meta[M_ROOT]
    count = 0
    ooo = 0
    nkept = 0
    exact = p[P_EXACT_LIMIT] != 0.0
    in_order = p[P_OUT_OF_ORDER] == 0.0
    codes = w.codes
    dq = w.dq
    info = w.ext_info
    keys = w.ext_keys
    b.dcount[0] = 0
    while count + b.dcount[0] < cap and ooo < max_ooo and stop[0] == 0:
        limit = min(collisions_left, cap - count - b.dcount[0], max_ooo - ooo)
        if exact:  # visits completed out of order count too: never past `go nodes`
            room = node_limit - t.n[root] - s[S_IN_FLIGHT]
            if room <= 0:
                break
            if room < limit:
                limit = room
        use_skip = False
        if t.first_edge[root] >= 0:
            use_skip = root_skip(t, w.skip, allowed, use_allowed, remaining, best_i) or use_allowed
        npk = pick_nodes(t, s, p, puct_tab, w.skip, use_skip, use_allowed, limit, w.out_node, w.out_depth, w.out_k,
                         w.out_mx, w.stack_node, w.stack_k, w.stack_depth, w.started, w.util, w.score, w.vtp,
                         w.hs, w.hi)
        s[S_DESCENTS] += 1
        ndef = 0
        for k in range(npk):
            if w.out_k[k] == 0:  # a visit
                node = w.out_node[k]
                depth = w.out_depth[k]
                if t.n[node] == 0 and t.term[node] == NON_TERMINAL:
                    r = extend(t, s, p, c, b, node, depth, count, root, codes, dq, info, keys)
                    if r == 1:
                        count += 1
                        continue
                    if in_order:
                        defer(b, s, node, depth, int(dq[0]), dq[1], dq[2], dq[3], count)
                        continue
                    w.def_node[ndef] = node
                    w.def_depth[ndef] = depth
                    w.def_kind[ndef] = int(dq[0])
                    w.def_q[ndef] = dq[1]
                    w.def_d[ndef] = dq[2]
                    w.def_m[ndef] = dq[3]
                elif in_order:
                    defer(b, s, node, depth, 0, 0.0, 0.0, 0.0, count)
                    continue
                else:  # a terminal node visited again
                    w.def_node[ndef] = node
                    w.def_depth[ndef] = depth
                    w.def_kind[ndef] = 0
                ndef += 1
        if ndef > 0:
            # lc0 takes back all of this pick's collisions and backs the out-of-order visits up newest first
            for k in range(npk):
                if w.out_k[k] > 0:
                    node = w.out_node[k]
                    if node != root:
                        cancel_path(t, t.parent[node], w.out_k[k], root)
            for k in range(ndef - 1, -1, -1):
                node = w.def_node[k]
                if w.def_kind[k] == 0:
                    backup(t, s, p, node, t.wl[node], t.d[node], t.m[node], w.def_depth[k], root)
                else:
                    backup(t, s, p, node, -w.def_q[k], w.def_d[k], w.def_m[k], w.def_depth[k], root)
            ooo += ndef
            s[S_OOO] += ndef
            continue
        done = False
        for k in range(npk):
            visits = w.out_k[k]
            if visits == 0:
                continue
            node = w.out_node[k]
            extra_max = w.out_mx[k]
            if extra_max > 0 and collisions_left > visits:  # grow it to end the gathering sooner
                extra = min(extra_max, collisions_left) - visits
                if node != root:
                    cancel_path(t, t.parent[node], -extra, root)
                visits += extra
            w.kept_node[nkept] = node
            w.kept_visits[nkept] = visits
            nkept += 1
            s[S_COLLISIONS] += visits
            collisions_left -= visits
            if collisions_left <= 0 or stop[0] != 0:
                done = True
                break
        if done:
            break
    for k in range(nkept):
        node = w.kept_node[k]
        if node != root:
            cancel_path(t, t.parent[node], w.kept_visits[k], root)
    return count


@jit
def defer(b, s, node, depth, kind, q, d, m, pos):
    """Keep a terminal or cache-hit visit in the batch, to be backed up with it (OutOfOrderEval off)."""
    k = b.dcount[0]
    b.dnode[k] = node
    b.ddepth[k] = depth
    b.dkind[k] = kind
    b.dval[k, 0] = q
    b.dval[k, 1] = d
    b.dval[k, 2] = m
    b.dpos[k] = pos
    b.dcount[0] = k + 1
    s[S_IN_FLIGHT] += 1


@jit
def back_up_deferred(t, s, p, b, k, root):
    node = b.dnode[k]
    if b.dkind[k] == 0:
        backup(t, s, p, node, t.wl[node], t.d[node], t.m[node], b.ddepth[k], root)
    else:
        backup(t, s, p, node, -b.dval[k, 0], b.dval[k, 1], b.dval[k, 2], b.ddepth[k], root)
    s[S_IN_FLIGHT] -= 1


WorkArrays = namedtuple("WorkArrays", ["codes", "dq", "skip", "out_node", "out_depth", "out_k", "out_mx", "stack_node",
                                       "stack_k", "stack_depth", "started", "util", "score", "vtp", "hs", "hi",
                                       "def_node", "def_depth", "def_kind", "def_q", "def_d", "def_m",
                                       "kept_node", "kept_visits", "ext_info", "ext_keys"])


def new_work(max_limit: int, max_kept: int) -> WorkArrays:
    """Scratch arrays for picks of at most `max_limit` visits and `max_kept` collision entries."""
    n = int(max_limit) + 16
    z = lambda size, dt: np.zeros(size, dtype=dt)  # noqa: E731
    return WorkArrays(codes=z(MAX_MOVES, np.int16), dq=z(4, np.float64), skip=z(MAX_MOVES, np.bool_),
                      out_node=z(n, np.int64), out_depth=z(n, np.int64), out_k=z(n, np.int64), out_mx=z(n, np.int64),
                      stack_node=z(n, np.int64), stack_k=z(n, np.int64), stack_depth=z(n, np.int64),
                      started=z(MAX_MOVES, np.int64), util=z(MAX_MOVES, np.float64), score=z(MAX_MOVES, np.float64),
                      vtp=z(MAX_MOVES, np.int64), hs=z(MAX_MOVES, np.float64), hi=z(MAX_MOVES, np.int64),
                      def_node=z(n, np.int64), def_depth=z(n, np.int64), def_kind=z(n, np.int64),
                      def_q=z(n, np.float64), def_d=z(n, np.float64), def_m=z(n, np.float64),
                      kept_node=z(max_kept + 16, np.int64), kept_visits=z(max_kept + 16, np.int64),
                      ext_info=z((1, 5), np.int64), ext_keys=z(1, np.uint64))


# --------------------------------------------------------------------------------------------
# Results (expansion and backup after the network)


@jit
def apply(t, s, p, c, b, count, policy, q, d, mlh, has_mlh, idx_tab, w2):
    """Expand the batch's leaves from the network outputs, store them in the cache, back them up."""
    root = t.meta[M_ROOT]
    inv_t = np.float32(1.0) / np.float32(p[P_TEMPERATURE])
    logits = w2.logits
    ex = w2.ex
    pri = w2.pri
    order = w2.order
    packed = w2.packed
    pbits = pri.view(np.uint32)
    exbits = ex.view(np.int32)
    nd = b.dcount[0]
    kd = 0
    for j in range(count):
        while kd < nd and b.dpos[kd] <= j:
            back_up_deferred(t, s, p, b, kd, root)
            kd += 1
        node = b.node[j]
        if b.tb[j] >= TB_RESULT - 1:  # a tablebase result: a terminal, the network's output unused
            make_terminal(t, node, -(b.tb[j] - TB_RESULT), max(0.0, t.m[t.parent[node]] - 1.0), TABLEBASE, root)
            backup(t, s, p, node, t.wl[node], t.d[node], t.m[node], b.depth[j], root)
            continue
        n = b.ncodes[j]
        row = b.black[j] * 8 + b.transform[j]
        mx = np.float32(-np.inf)
        for k in range(n):
            v = policy[j, idx_tab[row, b.codes[j, k]]]
            logits[k] = v
            if v > mx:
                mx = v
        # lc0's FastExp of (logit - max) / T, bit for bit (search.score.fast_exp_array), summed in order
        total = np.float32(0.0)
        for k in range(n):
            a = ((logits[k] - mx) * inv_t) * np.float32(1.442695040)
            if a < np.float32(-126.0):
                ex[k] = np.float32(0.0)
            else:
                e = np.int32(a - np.float32(1.0)) if a < np.float32(0.0) else np.int32(a)
                f = a - np.float32(e)
                ex[k] = np.float32(1.0) + f * (np.float32(0.6602339) + np.float32(0.33976606) * f)
                exbits[k] += e << 23
            total += ex[k]
        scale = np.float32(1.0) / total
        for k in range(n):
            pri[k] = ex[k] * scale
        # lc0's 16-bit prior (Edge::SetP): 11 mantissa bits, round half up, exponents 2^-32 .. 2^0
        for k in range(n):
            tmp = np.int64(pbits[k]) + ((1 << 11) - (3 << 28))
            pk = 0 if tmp < 0 else (tmp >> 12) & 0xFFFF
            packed[k] = pk
            pbits[k] = np.uint32((pk << 12) | (3 << 28))
        # order by prior, highest first, ties in generator order: unique keys (prior descending,
        # then index) sorted with a shell sort (an insertion sort cost ~1 µs a position)
        for k in range(n):
            order[k] = ((0xFFFF - packed[k]) << 8) | k
        shell_sort(order, n)
        for k in range(n):
            order[k] &= 0xFF
        fe = t.meta[M_ETOP]
        t.meta[M_ETOP] = fe + n
        for k in range(n):
            o = order[k]
            t.e_code[fe + k] = b.codes[j, o]
            t.e_p[fe + k] = pri[o]
            t.e_child[fe + k] = -1
            w2.sorted_order[k] = o
            w2.sorted_packed[k] = packed[o]
        t.first_edge[node] = fe
        t.num_edges[node] = n
        t.vp[node] = np.nan
        t.v[node] = -np.float64(q[j])
        qj, dj = rescale_value(t, p, node, np.float64(q[j]), np.float64(d[j]))
        mj = np.float64(mlh[j]) if has_mlh else 0.0
        nncache.store(c, b.key[j], q[j], d[j], np.float32(mj), n, w2.sorted_order, w2.sorted_packed)
        backup(t, s, p, node, -qj, dj, mj, b.depth[j], root)
    while kd < nd:
        back_up_deferred(t, s, p, b, kd, root)
        kd += 1
    b.dcount[0] = 0
    s[S_NN_EVALS] += count
    s[S_IN_FLIGHT] -= count
    s[S_BATCHES] += 1


@jit
def shell_sort(a, n):
    """Sort a[:n] ascending in place (Ciura's gaps; fine for the <= 218 moves of a position)."""
    for gap in (57, 23, 10, 4, 1):
        for i in range(gap, n):
            v = a[i]
            j = i
            while j >= gap and a[j - gap] > v:
                a[j] = a[j - gap]
                j -= gap
            a[j] = v


ApplyArrays = namedtuple("ApplyArrays", ["logits", "ex", "pri", "order", "packed", "sorted_order",
                                         "sorted_packed"])


def new_apply_work() -> ApplyArrays:
    return ApplyArrays(logits=np.zeros(MAX_MOVES, np.float32), ex=np.zeros(MAX_MOVES, np.float32),
                       pri=np.zeros(MAX_MOVES, np.float32),
                       order=np.zeros(MAX_MOVES, np.int64), packed=np.zeros(MAX_MOVES, np.int64),
                       sorted_order=np.zeros(MAX_MOVES, np.uint8), sorted_packed=np.zeros(MAX_MOVES, np.uint16))


@jit
def revert_batch(t, s, b, count):
    """Take back the virtual loss of a batch that will not be applied."""
    root = t.meta[M_ROOT]
    for j in range(count):
        cancel_path(t, b.node[j], 1, root)
    s[S_IN_FLIGHT] -= count
    for k in range(b.dcount[0]):
        cancel_path(t, b.dnode[k], 1, root)
    s[S_IN_FLIGHT] -= b.dcount[0]
    b.dcount[0] = 0


# --------------------------------------------------------------------------------------------
# Reading the tree: lc0's best-child order (GetBestChildrenNoTemperature)


@jit
def cmp3(x, y):
    if x > y:
        return 1
    if x < y:
        return -1
    return 0


@jit
def _rank(t, c):
    if c < 0 or t.n[c] == 0 or t.term[c] == NON_TERMINAL or t.wl[c] == 0:
        return 1
    return 2 if t.wl[c] > 0 else 0


@jit
def prefer(t, a, pa, b, pb, ds):
    """-1 if child a is a better move than child b, 1 if worse, 0 if equal (lc0's criteria; `ds`
    is the DrawScore of the side choosing)."""
    ra = _rank(t, a)
    rb = _rank(t, b)
    if ra != rb:
        return -1 if ra > rb else 1
    if ra == 1:
        na = t.n[a] if a >= 0 else 0
        nb = t.n[b] if b >= 0 else 0
        if na > 0 and nb > 0 and t.term[a] != NON_TERMINAL and t.term[b] != NON_TERMINAL:  # two proven draws
            return cmp3(t.m[a], t.m[b])
        if na != nb:
            return -1 if na > nb else 1
        qa = t.wl[a] + ds * t.d[a] if na > 0 else 0.0
        qb = t.wl[b] + ds * t.d[b] if nb > 0 else 0.0
        if qa != qb:
            return -1 if qa > qb else 1
        return cmp3(pb, pa)
    if ra == 2:  # the shortest win
        return cmp3(t.m[a], t.m[b])
    return cmp3(t.m[b], t.m[a])  # the longest loss


@jit
def is_allowed(t, e, allowed):
    """Whether edge e's move is among the `allowed` codes (searchmoves)."""
    code = t.e_code[e]
    for k in range(len(allowed)):
        if allowed[k] == code:
            return True
    return False


@jit
def best_edge(t, p, node, allowed, use_allowed):
    """Index of the best child edge of an expanded, visited node (-1 if none); with `use_allowed`
    only moves whose codes are in `allowed`."""
    if t.n[node] == 0 or t.first_edge[node] < 0:
        return -1
    fe = t.first_edge[node]
    ds = draw_score_at(t, p, node)
    best = -1
    for i in range(t.num_edges[node]):
        if use_allowed and not is_allowed(t, fe + i, allowed):
            continue
        if best < 0 or prefer(t, t.e_child[fe + i], t.e_p[fe + i], t.e_child[fe + best], t.e_p[fe + best], ds) < 0:
            best = i
    return best


@jit
def root_skip(t, skip, allowed, use_allowed, remaining, best_i):
    """Root edges not to search: outside `searchmoves`, or hopeless under smart pruning (fewer
    playouts left than the visits they lack to the best move). Returns whether any is skipped."""
    root = t.meta[M_ROOT]
    fe = t.first_edge[root]
    ne = t.num_edges[root]
    any_skip = False
    best_n = 0
    if best_i >= 0:
        c = t.e_child[fe + best_i]
        best_n = t.n[c] if c >= 0 else 0
    for i in range(ne):
        sk = use_allowed and not is_allowed(t, fe + i, allowed)
        if not sk and best_i >= 0 and i != best_i and remaining < np.inf:
            c = t.e_child[fe + i]
            ni = t.n[c] if c >= 0 else 0
            if remaining < best_n - ni:
                sk = True
        skip[i] = sk
        any_skip = any_skip or sk
    return any_skip
