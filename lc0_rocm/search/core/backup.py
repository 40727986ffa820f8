"""Backing values up, and a batch's network results into the tree (lc0's FetchMinibatchResults and
DoBackupUpdate, `src/search/classic/search.cc`), compiled.

* `apply` takes the network's outputs for a batch: lc0's policy softmax over the legal moves
  (PolicyTemperature, FastExp, sequential float32 sum), 16-bit prior rounding (Edge::SetP), edges
  sorted by prior (ties in generator order), the cache entry stored, and the value backed up; the
  batch's terminals and cache hits kept in it (OutOfOrderEval off) are backed up in pick order.
* `backup` is DoBackupUpdateSingleNode with proven wins/losses as bounds (sticky endgames).
* `cancel_path`, `revert_batch`: visits in flight taken back; `make_terminal` and the two-fold
  reversal of tree reuse, which picking (search/core/pick.py) and extension (search/core/extend.py) share.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...jit import jit
from . import nncache
from ...fastmath import wdl_rescale
from .batch import (MAX_MOVES, S_BATCHES, S_CUM_DEPTH, S_IN_FLIGHT, S_MAX_DEPTH, S_NN_EVALS, S_PLAYOUTS,
                    S_REVERTED, TB_RESULT)
from .spinlock import fetch_add, lock, unlock
from .packed_params import (P_CONTEMPT_BLACK, P_DRAW_SCORE, P_STICKY, P_TEMPERATURE, P_WDL_DIFF, P_WDL_MAX_S,
                            P_WDL_RATIO)
from .tree import (DRAW, END_OF_GAME, LOSS, M_ETOP, M_ROOT, NON_TERMINAL, TABLEBASE, TWO_FOLD, WIN, make_not_terminal,
                   nif_add)

ZERO_PRIOR = np.float32(2.0 ** -31)  # what lc0's 16-bit prior storage gives back for a prior set to 0


# --------------------------------------------------------------------------------------------
# Visits in flight and terminals


@jit
def cancel_path(t, node, visits, root):
    """Take `visits` visits in flight back from `node` and its ancestors up to the root (negative:
    add them); nothing for a row above the root."""
    while node >= root:
        nif_add(t, node, -visits)
        if node == root:
            break
        node = t.parent[node]


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


@jit
def revert_batch(t, s, b, count):
    """Take back the virtual loss of a batch that will not be applied."""
    root = t.meta[M_ROOT]
    for j in range(count):
        cancel_path(t, b.node[j], 1, root)
    fetch_add(s, S_IN_FLIGHT, -count)
    for k in range(b.dcount[0]):
        cancel_path(t, b.dnode[k], 1, root)
    fetch_add(s, S_IN_FLIGHT, -b.dcount[0])
    b.dcount[0] = 0


# --------------------------------------------------------------------------------------------
# Backup (DoBackupUpdate)


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
        nif_add(t, n, -1)  # atomic: with several threads, pickers add visits in flight meanwhile
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
    fetch_add(s, S_IN_FLIGHT, 1)


@jit
def back_up_deferred(t, s, p, b, k, root):
    node = b.dnode[k]
    if b.dkind[k] == 0:
        backup(t, s, p, node, t.wl[node], t.d[node], t.m[node], b.ddepth[k], root)
    else:
        backup(t, s, p, node, -b.dval[k, 0], b.dval[k, 1], b.dval[k, 2], b.ddepth[k], root)
    fetch_add(s, S_IN_FLIGHT, -1)


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
    v2, d2, _ = wdl_rescale(np.float32(-q), np.float32(d), ratio, diff, sign, False, p[P_WDL_MAX_S])
    return -np.float64(v2), np.float64(d2)


# --------------------------------------------------------------------------------------------
# A batch's results (FetchMinibatchResults)


@jit
def apply(t, s, p, c, b, count, policy, q, d, mlh, has_mlh, idx_tab, w2, clk):
    """Expand the batch's leaves from the network outputs, store them in the cache, back them up
    (`expand_rows`, then `back_up_rows`; `clk`: the cache's lock word, search/core/spinlock.py)."""
    expand_rows(t, c, p, b, count, policy, q, d, mlh, has_mlh, idx_tab, False, w2, clk)
    back_up_rows(t, s, p, b, count, q, d, mlh, has_mlh)


@jit
def expand_rows(t, c, p, b, count, policy, q, d, mlh, has_mlh, idx_tab, compact, w2, clk):
    """Each network leaf's priors, its edges (a range taken atomically) and its cache entry (under the
    cache's lock `clk`): writes only the leaf's own node, which no other search thread reads before
    its backup (a node without visits is a collision to them). `policy`: a network's rows [*, 1858],
    or with `compact` each row's logits of its legal moves in generator order (`priors`)."""
    expand_range(t, c, p, b, 0, count, policy, q, d, mlh, has_mlh, idx_tab, compact, w2, clk)


@jit
def expand_range(t, c, p, b, lo, hi, policy, q, d, mlh, has_mlh, idx_tab, compact, w2, clk):
    """`expand_rows` for rows lo .. hi-1 (a task worker's share: search/core/team.py; `w2` its own)."""
    if hi > lo:
        nncache.prefetch_slot(c, b.key[lo])
    for j in range(lo, hi):
        if j + 1 < hi:  # the next row's cache slot loads while this row's priors are worked out
            nncache.prefetch_slot(c, b.key[j + 1])
        if b.tb[j] >= TB_RESULT - 1:  # a tablebase result: a terminal, the network's output unused
            continue
        node = b.node[j]
        n = b.ncodes[j]
        priors(p, b, j, n, policy, idx_tab, compact, w2)
        add_edges(t, b, j, node, n, w2)
        t.v[node] = -np.float64(q[j])
        mj = np.float32(mlh[j]) if has_mlh else np.float32(0.0)
        lock(clk)
        nncache.store(c, b.key[j], q[j], d[j], mj, n, w2.sorted_order, w2.sorted_packed)
        unlock(clk)


@jit
def back_up_rows(t, s, p, b, count, q, d, mlh, has_mlh):
    """The batch's values up the tree in pick order, the terminals and cache hits kept with it
    (OutOfOrderEval off) in their places, tablebase results made terminals here."""
    root = t.meta[M_ROOT]
    nd = b.dcount[0]
    kd = 0
    for j in range(count):
        while kd < nd and b.dpos[kd] <= j:
            back_up_deferred(t, s, p, b, kd, root)
            kd += 1
        node = b.node[j]
        if b.tb[j] >= TB_RESULT - 1:
            make_terminal(t, node, -(b.tb[j] - TB_RESULT), max(0.0, t.m[t.parent[node]] - 1.0), TABLEBASE, root)
            backup(t, s, p, node, t.wl[node], t.d[node], t.m[node], b.depth[j], root)
            continue
        qj, dj = rescale_value(t, p, node, np.float64(q[j]), np.float64(d[j]))
        mj = np.float64(mlh[j]) if has_mlh else 0.0
        backup(t, s, p, node, -qj, dj, mj, b.depth[j], root)
    while kd < nd:
        back_up_deferred(t, s, p, b, kd, root)
        kd += 1
    b.dcount[0] = 0
    s[S_NN_EVALS] += count
    fetch_add(s, S_IN_FLIGHT, -count)  # atomic: pickers reserve visits in flight meanwhile (no lock)
    s[S_BATCHES] += 1


@jit(inline="always")  # a call per leaf passed the batch's and work area's ~27 arrays on the stack
def priors(p, b, j, n, policy, idx_tab, compact, w2):
    """Row j's priors in w2.pri (float32, as lc0 stores them), their 16-bit forms in w2.packed, and in
    w2.order the move indices by prior, highest first, ties in generator order. The logit of move k is
    policy[j, k] with `compact` (search/core/cycle.py's buffers: read in order, where the lookup of a
    [*, 1858] row missed the CPU's caches, ~1 µs a position on the 2-core VM), else at its policy index."""
    inv_t = np.float32(1.0) / np.float32(p[P_TEMPERATURE])
    logits = w2.logits
    ex = w2.ex
    pri = w2.pri
    order = w2.order
    packed = w2.packed
    pbits = pri.view(np.uint32)
    exbits = ex.view(np.int32)
    row = b.black[j] * 8 + b.transform[j]
    mx = np.float32(-np.inf)
    for k in range(n):
        v = policy[j, k] if compact else policy[j, idx_tab[row, b.codes[j, k]]]
        logits[k] = v
        if v > mx:
            mx = v
    # lc0's FastExp of (logit - max) / T, bit for bit (score.fast_exp_array), summed in order
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
    # then index) sorted
    keys = w2.keys
    for k in range(n):
        keys[k] = ((0xFFFF - packed[k]) << 8) | k
    if n <= RANK_SORT_MAX:
        # each key's place is the count of keys below it: no branch on the data, where a shell sort
        # mispredicted its way to ~600 ns at 35 moves (an insertion sort ~1 µs); 160 ns
        for k in range(n):
            v = keys[k]
            r = 0
            for i in range(n):
                r += keys[i] < v
            order[r] = k
    else:
        shell_sort(keys, n)
        for k in range(n):
            order[k] = keys[k] & 0xFF


@jit
def add_edges(t, b, j, node, n, w2):
    """The edges of `node` (batch row j) in w2.order, with their priors; the cache entry's order and
    16-bit priors into w2.sorted_order / sorted_packed."""
    fe = fetch_add(t.meta, M_ETOP, n)
    for k in range(n):
        o = w2.order[k]
        t.e_code[fe + k] = b.codes[j, o]
        t.e_p[fe + k] = w2.pri[o]
        t.e_child[fe + k] = -1
        w2.sorted_order[k] = o
        w2.sorted_packed[k] = w2.packed[o]
    t.first_edge[node] = fe
    t.num_edges[node] = n
    t.vp[node] = np.nan


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
                                         "sorted_packed", "keys"])
RANK_SORT_MAX = 64  # moves up to which `priors` orders by counting (n^2 compares, vectorised) rather than sorting


def new_apply_work() -> ApplyArrays:
    return ApplyArrays(logits=np.zeros(MAX_MOVES, np.float32), ex=np.zeros(MAX_MOVES, np.float32),
                       pri=np.zeros(MAX_MOVES, np.float32),
                       order=np.zeros(MAX_MOVES, np.int64), packed=np.zeros(MAX_MOVES, np.int64),
                       sorted_order=np.zeros(MAX_MOVES, np.uint8), sorted_packed=np.zeros(MAX_MOVES, np.uint16),
                       keys=np.zeros(MAX_MOVES, np.int64))
