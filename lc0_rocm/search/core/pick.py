"""Picking leaves to extend (lc0's PickNodesToExtend, `src/search/classic/search.cc`), compiled.

`pick_nodes` is one multi-visit pick (PickNodesToExtendTask): up to `limit` visits sent from the
root at once; every node hands its share to the child with the best PUCT score until another child
would overtake it, adding visits in flight on the way (virtual loss). A single visit is a plain
descent (`descend`); several are handed out by `share` from a heap of the children's scores.

PUCT: a child's score is Q + U, U = cpuct(N) sqrt(N_children) P / (1 + n + n_in_flight), cpuct(N) =
CPuct + CPuctFactor ln((N + CPuctBase) / CPuctBase) (lc0's FastLog); an unvisited child's Q is the
first-play urgency parent_Q - FpuValue sqrt(sum of visited priors); with a moves-left head lc0's M
utility is added once |Q| > MovesLeftThreshold. Also here: the root moves a search may skip
(searchmoves, smart pruning) and lc0's best-child order (GetBestChildrenNoTemperature).
"""

from __future__ import annotations

import math

import numpy as np

from ...jit import jit, jit_alloc
from ... import fastmath
from .backup import cancel_path, draw_score_at, revert_two_fold
from .batch import INT_MAX
from .spinlock import cas, fetch_add
from .packed_params import (P_CPUCT, P_CPUCT_BASE, P_CPUCT_FACTOR, P_FPU, P_FPU_ABSOLUTE, P_FPU_ABSOLUTE_ROOT,
                            P_FPU_ROOT, P_ML_CONSTANT, P_ML_MAX, P_ML_QUADRATIC, P_ML_SCALED, P_ML_SLOPE,
                            P_ML_THRESHOLD, P_MLH)
from .tree import M_ALONE, M_ROOT, M_TOP, NON_TERMINAL, TWO_FOLD, init_node, nif_add

PUCT_TABLE_SIZE = 1 << 16


# --------------------------------------------------------------------------------------------
# Scores


fast_log_f64 = jit(fastmath.fast_log_f64)  # lc0's FastLog, the one fastmath.py defines, compiled


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
def new_child(t, node, i):
    """Row of the child at edge i of `node`, created on first use."""
    e = t.first_edge[node] + i
    c = t.e_child[e]
    if c < 0 and t.meta[M_ALONE] != 0:  # one search thread: nothing to race
        c = t.meta[M_TOP]
        t.meta[M_TOP] = c + 1
        init_node(t, c, node, i)
        t.e_child[e] = c
    elif c < 0:  # a new row, published once written; a thread that lost the race leaves its row unused
        c = fetch_add(t.meta, M_TOP, 1)
        init_node(t, c, node, i)
        first = cas(t.e_child, e, -1, c)
        if first >= 0:
            c = first
    return c


# --------------------------------------------------------------------------------------------
# One pick (PickNodesToExtendTask)


@jit
def fpu_at(t, p, node, is_root, ds):
    """First-play urgency of `node`'s unvisited children (FpuValue / FpuStrategy, the root's own)."""
    vp = visited_policy(t, node)
    if is_root:
        value = p[P_FPU_ROOT]
        absolute = p[P_FPU_ABSOLUTE_ROOT] != 0.0
    else:
        value = p[P_FPU]
        absolute = p[P_FPU_ABSOLUTE] != 0.0
    return value if absolute else -t.wl[node] + ds * t.d[node] - value * math.sqrt(vp)


@jit
def overtake_estimate(pi, puct, second, best_util, best_started):
    """Visits the best child can take before the second best overtakes it (lc0's estimate)."""
    x = pi * puct / (second - best_util) - (best_started + 1) + 1
    if x < 1.0:
        return 1
    if x < 1e9:
        return int(x)
    return 1000000000


@jit
def visit_child(t, child):
    """One visit in flight added at `child`, for a pick: returns the child's `n` as that visit finds it,
    or -1 for a collision (another pick holds the child's first visit; nothing is added).

    Pickers hold no lock (search/core/shared_worker.py), so another thread's backup may give the child
    its first visit between the read of its `n` (0) and the atomic add. A backup writes `n` before it
    takes its visit in flight back, so when the add finds no visit in flight, the `n` read after it is
    the child's: 0, the pick owns the first visit; else the visit goes through the child as any other.
    With one thread the second read gives the first one's value."""
    nv = t.n[child]
    if nv == 0:
        if nif_add(t, child, 1) > 0:
            nif_add(t, child, -1)
            return -1
        return t.n[child]
    nif_add(t, child, 1)
    return nv


@jit
def emit(w, nout, node, depth, k, mx):
    """Entry `nout` of the pick: (node, depth, 0, 0) a visit to a leaf, (node, depth, k, max) k visits
    that collided with a leaf in flight. Returns nout + 1."""
    w.out_node[nout] = node
    w.out_depth[nout] = depth
    w.out_k[nout] = k
    w.out_mx[nout] = mx
    return nout + 1


@jit(inline="always")  # as `root_skip`; two callers (worker.gather, shared_worker.gather_shared)
def pick_nodes(t, s, p, puct_tab, skip, use_skip, root_filter, limit, w):
    """lc0's PickNodesToExtendTask from the root for `limit` visits, into w.out_* (see `emit`; max > 0:
    a collision that may grow to that many visits); returns how many entries. `skip`: root edges not
    to search when `use_skip` (`root_filter`: searchmoves, which lifts lc0's scan limit). `w`: the
    worker's scratch arrays (search/core/worker.py: WorkArrays)."""
    root = t.meta[M_ROOT]
    if t.n[root] == 0 or t.term[root] != NON_TERMINAL:
        return pick_root_leaf(t, root, limit, w)
    nif_add(t, root, limit)
    want_estimate = limit == 1
    max_limit = INT_MAX
    nout = 0
    # task stack: (node, visits, depth); visits < 0 marks a child that got -visits from its parent's share:
    # depth > 0, a subtree to descend (its visits in flight added), depth < 0 (at -depth) a child whose
    # visits wait at it (a collision, a leaf's or a terminal's visits past its first), decided when the
    # share was made (`share`: several threads' backups may change a child before it is popped)
    w.stack_node[0] = root
    w.stack_k[0] = limit
    w.stack_depth[0] = 1
    sp = 1
    while sp > 0:
        sp -= 1
        node = w.stack_node[sp]
        cur_limit = w.stack_k[sp]
        depth = w.stack_depth[sp]
        if cur_limit < 0:  # a child that got visits from its parent's share
            k = -cur_limit
            if depth < 0:
                nout = emit(w, nout, node, -depth, k, max_limit if (k == limit and max_limit > k) else 0)
                continue
            cur_limit = k
        use_skip_here = node == root and use_skip
        if cur_limit == 1:
            nout, max_limit = descend(t, s, p, puct_tab, skip, use_skip_here, root_filter, node, depth, root,
                                      want_estimate, max_limit, w, nout)
        else:
            nout, max_limit, sp = share(t, s, p, puct_tab, skip, use_skip_here, root_filter, node, depth, root,
                                        cur_limit, max_limit, w, nout, sp)
    return nout


@jit
def pick_root_leaf(t, root, limit, w):
    """The pick when the root itself is the leaf (not yet evaluated, or terminal)."""
    nout = 0
    cur = limit
    if not (t.n[root] == 0 and t.nif[root] > 0):
        nif_add(t, root, 1)
        cur -= 1
        nout = emit(w, nout, root, 1, 0, 0)
    if cur > 0:
        nout = emit(w, nout, root, 1, cur, INT_MAX if cur == limit else 0)
    return nout


@jit
def best_child(t, p, node, fe, ne, puct, fpu, ds, m_on, skip, use_skip, max_needed, w):
    """The single-visit scan of lc0's picking: (best edge or -1, its utility, its visits started, the
    second best score, whether there is a second). w.score/util/started: scratch."""
    score = w.score
    util = w.util
    started = w.started
    # the scores first, then the best two: as `take_candidates`, the scan runs ahead on the rows
    # without the compares' mispredictions
    end = 0
    can_exit = False
    for i in range(ne):
        if i == max_needed:
            break
        end = i + 1
        if use_skip and skip[i]:
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
        score[i] = t.e_p[fe + i] * puct / (1 + ns) + u
        util[i] = u
        started[i] = ns
        if can_exit:
            break
        if ns == 0:
            can_exit = True
    best = -np.inf
    second = -np.inf
    best_i = -1
    has_second = False
    best_util = 0.0
    best_started = 0
    for i in range(end):
        if use_skip and skip[i]:
            continue
        sc = score[i]
        if sc > best:
            if best_i >= 0:
                has_second = True
            second = best
            best = sc
            best_i = i
            best_util = util[i]
            best_started = started[i]
        elif sc > second:
            second = sc
            has_second = True
    return best_i, best_util, best_started, second, has_second


@jit(inline="always")  # one call site: a call passes the tree's 25 arrays as ~175 words on the stack
def descend(t, s, p, puct_tab, skip, use_skip, root_filter, node, depth, root, want_estimate, max_limit, w, nout):
    """A single visit from `node`: a plain descent to a leaf or a collision (the choices `share` would
    make, without its bookkeeping). Returns (entries, max_limit)."""
    mlh = p[P_MLH] != 0.0
    m_threshold = p[P_ML_THRESHOLD]
    while True:
        fe = t.first_edge[node]
        ne = t.num_edges[node]
        ds = draw_score_at(t, p, node)
        fpu = fpu_at(t, p, node, node == root, ds)
        n = t.n[node]
        puct = puct_tab[n] if n < PUCT_TABLE_SIZE else puct_of(p, n)
        m_on = mlh and abs(t.wl[node]) > m_threshold
        max_needed = n + t.nif[node] + 3
        if use_skip and root_filter:
            max_needed = ne
        best_i, best_util, best_started, second, has_second = best_child(t, p, node, fe, ne, puct, fpu, ds, m_on,
                                                                          skip, use_skip, max_needed, w)
        if best_i < 0:  # every edge excluded (cannot happen: the best root move never is)
            cancel_path(t, node, 1, root)
            return nout, max_limit
        if want_estimate and has_second and best_util < second:
            estimate = overtake_estimate(t.e_p[fe + best_i], puct, second, best_util, best_started)
            if estimate < max_limit:
                max_limit = estimate
        child = new_child(t, node, best_i)
        if t.term[child] == TWO_FOLD and depth < t.m[child]:
            revert_two_fold(t, s, child, depth, root)
        depth += 1
        nv = visit_child(t, child)
        if nv < 0:  # collision
            return emit(w, nout, child, depth, 1, max_limit if (want_estimate and max_limit > 1) else 0), max_limit
        if nv == 0 or t.term[child] != NON_TERMINAL:
            return emit(w, nout, child, depth, 0, 0), max_limit
        node = child
        use_skip = False


@jit(inline="always")  # as `descend`
def share(t, s, p, puct_tab, skip, use_skip, root_filter, node, depth, root, cur_limit, max_limit, w, nout, sp):
    """`cur_limit` (> 1) visits from `node` handed out by PUCT: each round the best child takes visits
    until the second best would overtake it; leaves are emitted, children with visits left pushed on
    the task stack in edge order. Returns (entries, max_limit, stack size)."""
    started = w.started
    util = w.util
    score = w.score
    vtp = w.vtp
    vnif = w.vnif
    hs = w.hs
    hi = w.hi
    fe = t.first_edge[node]
    ne = t.num_edges[node]
    ds = draw_score_at(t, p, node)
    fpu = fpu_at(t, p, node, node == root, ds)
    n = t.n[node]
    puct = puct_tab[n] if n < PUCT_TABLE_SIZE else puct_of(p, n)
    m_on = p[P_MLH] != 0.0 and abs(t.wl[node]) > p[P_ML_THRESHOLD]
    max_needed = ne
    if not use_skip or not root_filter:
        k = n + t.nif[node] + cur_limit + 2
        if k < max_needed:
            max_needed = k
    for i in range(max_needed):
        started[i] = 0
        util[i] = fpu
        score[i] = 0.0
        vtp[i] = 0
        vnif[i] = 0
    nc, last, first_unstarted = take_candidates(t, p, node, fe, puct, fpu, ds, m_on, skip, use_skip, max_needed,
                                                w, 0, -1, -1)
    while cur_limit > 0 and nc > 0:
        best_i = hi[0]
        new_visits = cur_limit
        if nc > 1:
            second = -hs[1] if (nc == 2 or heap_less(hs, hi, 1, 2)) else -hs[2]
            estimate = INT_MAX
            if util[best_i] < second:
                estimate = overtake_estimate(t.e_p[fe + best_i], puct, second, util[best_i], started[best_i])
            if estimate < max_limit:
                max_limit = estimate
            if estimate < cur_limit:
                new_visits = estimate
        child = new_child(t, node, best_i)
        if t.term[child] == TWO_FOLD and depth < t.m[child]:
            revert_two_fold(t, s, child, depth, root)
        nv = visit_child(t, child)
        if nv < 0:
            # collision: lc0's next rounds pick this child again and again with the same
            # estimate: every visit left waits at it
            vtp[best_i] += cur_limit
            cur_limit = 0
            break
        vtp[best_i] += new_visits
        cur_limit -= new_visits
        was_unstarted = started[best_i] == 0
        started[best_i] += 1
        new_visits -= 1
        if nv > 0 and t.term[child] == NON_TERMINAL:
            nif_add(t, child, new_visits)
            started[best_i] += new_visits
            vnif[best_i] += new_visits + 1  # the share's visits in flight at the child: a subtree task
        else:
            vtp[best_i] -= 1
            nout = emit(w, nout, child, depth + 1, 0, 0)
        score[best_i] = t.e_p[fe + best_i] * puct / (1 + started[best_i]) + util[best_i]
        hs[0] = -score[best_i]  # replace the top, then restore the heap
        heap_sift_down(hs, hi, nc, 0)
        if was_unstarted and best_i == first_unstarted:
            # the scan now reaches the next unstarted child and one more
            first_unstarted = -1
            j = best_i + 1
            while j <= last:
                if not (use_skip and skip[j]) and started[j] == 0:
                    first_unstarted = j
                    break
                j += 1
            nc, last, first_unstarted = take_candidates(t, p, node, fe, puct, fpu, ds, m_on, skip, use_skip,
                                                        max_needed, w, nc, last, first_unstarted)
    if cur_limit > 0:  # every edge excluded (cannot happen, see above): take the visits back
        cancel_path(t, node, cur_limit, root)
    # children with shares, in edge order (pushed in reverse: the stack pops them in order): the visits
    # with their visits in flight at the child descend (one thread: all or none of a child's), the others
    # wait at it
    for i in range(last, -1, -1):
        k = vtp[i]
        if k > 0:
            kn = vnif[i]
            if k > kn:
                w.stack_node[sp] = t.e_child[fe + i]
                w.stack_k[sp] = kn - k
                w.stack_depth[sp] = -(depth + 1)
                sp += 1
            if kn > 0:
                w.stack_node[sp] = t.e_child[fe + i]
                w.stack_k[sp] = -kn
                w.stack_depth[sp] = depth + 1
                sp += 1
    return nout, max_limit, sp


# --------------------------------------------------------------------------------------------
# The candidate heap of `share`


@jit
def heap_less(hs, hi, a, b):
    return hs[a] < hs[b] or (hs[a] == hs[b] and hi[a] < hi[b])


@jit
def heap_swap(hs, hi, a, b):
    hs[a], hs[b] = hs[b], hs[a]
    hi[a], hi[b] = hi[b], hi[a]


@jit
def heap_sift_up(hs, hi, k):
    while k > 0:
        up = (k - 1) >> 1
        if heap_less(hs, hi, k, up):
            heap_swap(hs, hi, k, up)
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
            heap_swap(hs, hi, k, m)
            k = m
        else:
            break


@jit
def take_candidates(t, p, node, fe, puct, fpu, ds, m_on, skip, use_skip, max_needed, w, nc, last, first_unstarted):
    """Score children last+1, ... into the candidate heap, up to the first one without visits
    started and one more (priors are sorted, so lc0's scan looks no further). Returns
    (heap size, last, first_unstarted)."""
    started = w.started
    util = w.util
    score = w.score
    hs = w.hs
    hi = w.hi
    # the scores first, then the heap: the scan then runs ahead on the children's records (a miss
    # each) without the heap's compares, mispredicted, flushing it (~20 % of a pick)
    i0 = last + 1
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
        if first_unstarted >= 0:
            break
        if started[i] == 0:
            first_unstarted = i
    for i in range(i0, last + 1):
        if use_skip and skip[i]:
            continue
        hs[nc] = -score[i]
        hi[nc] = i
        heap_sift_up(hs, hi, nc)
        nc += 1
    return nc, last, first_unstarted


# --------------------------------------------------------------------------------------------
# Root moves: searchmoves, smart pruning, and lc0's best-child order (GetBestChildrenNoTemperature)


@jit(inline="always")  # a call per pick passed the tree's arrays on the stack
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


@jit
def is_allowed(t, e, allowed):
    """Whether edge e's move is among the `allowed` codes (searchmoves)."""
    code = t.e_code[e]
    for k in range(len(allowed)):
        if allowed[k] == code:
            return True
    return False


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


# what `root_report` writes into its float64 array `rep`
R_BEST, R_EDGES, R_WIN, R_WIN_M, R_LOSING, R_MAY_RESIGN = range(6)
REPORT_SIZE = 8


@jit
def root_report(t, p, allowed, use_allowed, edge_n, rep):
    """What the stoppers and the info lines read of the root after a batch, in one pass: the best
    edge (`best_edge`, -1 if none), the number of root edges (-1: not expanded or not visited),
    each child's visits into edge_n (all root moves, searchmoves or not, as lc0), whether a child is
    a proven win and the least plies-left of those, the proven losses, and whether every visited
    child is below lc0's resign value (-0.98)."""
    root = t.meta[M_ROOT]
    fe = t.first_edge[root]
    rep[R_BEST] = -1.0
    rep[R_EDGES] = -1.0
    rep[R_WIN] = 0.0
    rep[R_WIN_M] = 0.0
    rep[R_LOSING] = 0.0
    rep[R_MAY_RESIGN] = 1.0
    if t.n[root] == 0 or fe < 0:
        return
    ne = t.num_edges[root]
    rep[R_BEST] = best_edge(t, p, root, allowed, use_allowed)
    rep[R_EDGES] = ne
    for i in range(ne):
        c = t.e_child[fe + i]
        n = t.n[c] if c >= 0 else 0
        edge_n[i] = n
        if n == 0:
            continue
        term = t.term[c] != NON_TERMINAL
        wl = t.wl[c]
        if term and wl > 0:
            if rep[R_WIN] == 0.0 or t.m[c] < rep[R_WIN_M]:
                rep[R_WIN_M] = t.m[c]
            rep[R_WIN] = 1.0
        if term and wl < 0:
            rep[R_LOSING] += 1.0
        if wl > -0.98:
            rep[R_MAY_RESIGN] = 0.0

