"""The search worker, compiled: gather a minibatch (lc0's GatherMinibatch, `src/search/classic/search.cc`).

lc0's `SearchWorker` as numba functions over the tree arrays (`search.tree`), the NN cache
(`search.core.nncache`) and a batch's arrays (`search.core.batch.BatchArrays`), in four modules along lc0's
lines:

* here, `gather` is GatherMinibatch: repeated multi-visit picks, each sending up to min(collisions
  left, room in the batch, out-of-order budget) visits from the root at once. Terminals and cache
  hits are evaluated out of order (that pick's collisions taken back, backed up newest first; at
  most MaxOutOfOrderEvalsFactor x MinibatchSize of them); collisions keep their virtual loss until
  the batch is complete; the collision budget ends the gathering when spent.
* search/core/pick.py: PickNodesToExtendTask (PUCT, virtual loss, the root moves a search may skip).
* search/core/extend.py: ExtendNode (position, legal moves, terminal rules, NN cache, input planes).
* search/core/backup.py: the network's results into the tree (softmax, 16-bit priors, edge order, the
  cache entry) and DoBackupUpdate (values up to the root, proven results as bounds).

tests/test_search.py checks the tree against the real lc0 visit for visit.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...jit import jit
from .backup import apply, backup, cancel_path, defer
from .batch import F_HALT, F_STOP, MAX_MOVES, S_COLLISIONS, S_DESCENTS, S_IN_FLIGHT, S_OOO
from .extend import extend
from .spinlock import fetch_add
from .packed_params import P_EXACT_LIMIT, P_OUT_OF_ORDER
from .pick import best_edge, pick_nodes, root_report, root_skip
from .tree import M_ROOT, NON_TERMINAL


WorkArrays = namedtuple("WorkArrays", ["codes", "dq", "skip", "out_node", "out_depth", "out_k", "out_mx", "stack_node",
                                       "stack_k", "stack_depth", "started", "util", "score", "vtp", "vnif", "hs", "hi",
                                       "def_node", "def_depth", "def_kind", "def_q", "def_d", "def_m",
                                       "kept_node", "kept_visits", "ext_info", "ext_keys", "first"])


def new_work(max_limit: int, max_kept: int) -> WorkArrays:
    """Scratch arrays for picks of at most `max_limit` visits and `max_kept` collision entries."""
    n = int(max_limit) + 16
    z = lambda size, dt: np.zeros(size, dtype=dt)  # noqa: E731
    return WorkArrays(codes=z(MAX_MOVES, np.int16), dq=z(4, np.float64), skip=z(MAX_MOVES, np.bool_),
                      out_node=z(n, np.int64), out_depth=z(n, np.int64), out_k=z(n, np.int64), out_mx=z(n, np.int64),
                      stack_node=z(n, np.int64), stack_k=z(n, np.int64), stack_depth=z(n, np.int64),
                      started=z(MAX_MOVES, np.int64), util=z(MAX_MOVES, np.float64), score=z(MAX_MOVES, np.float64),
                      vtp=z(MAX_MOVES, np.int64), vnif=z(MAX_MOVES, np.int64), hs=z(MAX_MOVES, np.float64), hi=z(MAX_MOVES, np.int64),
                      def_node=z(n, np.int64), def_depth=z(n, np.int64), def_kind=z(n, np.int64),
                      def_q=z(n, np.float64), def_d=z(n, np.float64), def_m=z(n, np.float64),
                      kept_node=z(max_kept + 16, np.int64), kept_visits=z(max_kept + 16, np.int64),
                      ext_info=z((n, 5), np.int64), ext_keys=z(n, np.uint64), first=z(n, np.int64))


@jit
def stopped(stop):
    """Whether the gathering ends: a `stop`, or the end of the search threads' round (batch.F_*)."""
    return stop[F_STOP] != 0 or stop[F_HALT] != 0


@jit
def gather(t, s, p, c, b, puct_tab, allowed, use_allowed, remaining, cap, max_ooo, collisions_left,
           node_limit, stop, w, edge_n, rep):
    """Fill batch `b` with up to `cap` leaves (see the module docstring); returns the leaves in it.
    Root moves outside `allowed` (searchmoves, when `use_allowed`) or hopeless with `remaining`
    playouts left against the best move are not searched (`allowed`: move codes). `w` is a work area
    (`WorkArrays`; its kept_* arrays hold at least collisions_left + 1 entries). Ends with the
    root's `root_report` into edge_n / rep (out-of-order visits change it)."""
    root = t.meta[M_ROOT]
    best_i = best_edge(t, p, root, allowed, use_allowed) if t.first_edge[root] >= 0 else -1
    count = 0
    ooo = 0
    nkept = 0
    exact = p[P_EXACT_LIMIT] != 0.0
    b.dcount[0] = 0
    while count + b.dcount[0] < cap and ooo < max_ooo and not stopped(stop):
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
        npk = pick_nodes(t, s, p, puct_tab, w.skip, use_skip, use_allowed, limit, w)
        s[S_DESCENTS] += 1
        count, ndef = extend_picked(t, s, p, c, b, root, npk, count, w)
        if ndef > 0:
            back_up_out_of_order(t, s, p, root, npk, ndef, w)
            ooo += ndef
            s[S_OOO] += ndef
            continue
        nkept, collisions_left, done = keep_collisions(t, s, root, npk, nkept, collisions_left, stop, w)
        if done:
            break
    for k in range(nkept):
        node = w.kept_node[k]
        if node != root:
            cancel_path(t, t.parent[node], w.kept_visits[k], root)
    root_report(t, p, allowed, use_allowed, edge_n, rep)
    return count


@jit
def apply_batch(t, s, p, c, b, count, policy, q, d, mlh, has_mlh, idx_tab, w2, allowed, use_allowed, edge_n, rep,
                clk):
    """`backup.apply` of a batch's network outputs, then the root's `root_report` (one compiled call
    a batch: each call of a compiled function that takes the tree costs 10-17 µs on a loaded VM)."""
    apply(t, s, p, c, b, count, policy, q, d, mlh, has_mlh, idx_tab, w2, clk)
    root_report(t, p, allowed, use_allowed, edge_n, rep)


@jit
def extend_picked(t, s, p, c, b, root, npk, count, w):
    """Extend the pick's leaves: a leaf for the network goes into batch row `count` onwards; a terminal
    or cache hit is kept in the batch (OutOfOrderEval off) or listed in w.def_* for an out-of-order
    backup. Returns (rows in the batch, out-of-order visits listed)."""
    in_order = p[P_OUT_OF_ORDER] == 0.0
    dq = w.dq
    ndef = 0
    for k in range(npk):
        if w.out_k[k] != 0:  # a collision
            continue
        node = w.out_node[k]
        depth = w.out_depth[k]
        if t.n[node] == 0 and t.term[node] == NON_TERMINAL:
            if extend(t, s, p, c, b, node, depth, count, root, w.codes, dq, w.ext_info, w.ext_keys) == 1:
                count += 1
                continue
            ndef = hold_visit(b, s, w, in_order, node, depth, int(dq[0]), dq[1], dq[2], dq[3], count, ndef)
        else:  # a terminal node visited again
            ndef = hold_visit(b, s, w, in_order, node, depth, 0, 0.0, 0.0, 0.0, count, ndef)
    return count, ndef


@jit
def hold_visit(b, s, w, in_order, node, depth, kind, q, d, m, pos, ndef):
    """A visit that needs no network (kind 0 a terminal, 1 a cache hit with its q, d, m): kept in the
    batch after `pos` network rows (OutOfOrderEval off: `backup.defer`), else listed as entry `ndef`
    of w.def_* for an out-of-order backup. Returns the entries listed."""
    if in_order:
        defer(b, s, node, depth, kind, q, d, m, pos)
        return ndef
    w.def_node[ndef] = node
    w.def_depth[ndef] = depth
    w.def_kind[ndef] = kind
    w.def_q[ndef] = q
    w.def_d[ndef] = d
    w.def_m[ndef] = m
    return ndef + 1


@jit
def back_up_out_of_order(t, s, p, root, npk, ndef, w):
    """lc0 takes back all of this pick's collisions and backs the out-of-order visits up newest first."""
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


@jit
def keep_collisions(t, s, root, npk, nkept, collisions_left, stop, w):
    """The pick's collisions keep their virtual loss until the batch is complete (w.kept_*); one that
    may grow takes more visits to end the gathering sooner. Every collision of the pick is kept, also
    after the budget is spent or a stop came (their virtual loss is taken back at the end of the
    gathering, lc0's too). Returns (kept, collisions left, done)."""
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
        fetch_add(s, S_COLLISIONS, visits)
        collisions_left -= visits
        if collisions_left <= 0 or stopped(stop):
            done = True
    return nkept, collisions_left, done
