"""Gathering and backing up when several search threads share one tree (lc0's Threads > 1), compiled.

lc0 runs two search threads on one tree by default (`src/search/classic/search.cc`): each gathers its
own minibatch, picking under a shared lock on the nodes with atomic visits in flight, extends the
nodes it picked outside it (no other thread descends into a node whose first visit is in flight: it
has no visits yet), and backs values up under the exclusive lock. Here picks take no lock at all, and
backups keep the exclusive one (the lock word of search/core/spinlock.py), a pick at a time:

  1. no lock: one multi-visit pick (search/core/pick.py: visits in flight and new rows by atomic
     operations; a child's first visit decided after the atomic add, `pick.visit_child`; a
     share's children decided when it is made), its first visits marked; with ExactNodeLimit its
     visits are reserved in flight before it starts, so threads picking together never pass `go nodes`;
  2. no lock: each first visit's node-local work (search/core/extend.py's `extend_leaf`: position,
     legal moves, terminal rules, NN-cache probe, input planes) into its own batch row (with task
     workers, theirs too: search/core/team.py);
  3. no lock: the leaves committed in pick order (a cache hit is looked up again under the cache's
     lock: the probe read the cache without it), collisions kept as in `worker.gather`;
  4. exclusive: terminals and cache hits backed up out of order.

A pick reads visits and values a backup may be writing meanwhile: a read half before and half after a
backup misjudges one child's score for that pick, which lc0's shared lock rules out and MCTS does not
need (the 16-core H200 host, docs/perf.md: four threads 352-376k -> 486-490k nps, their lock waits 5.0k
-> 0.2k cycles a playout). Visits in flight (`nif`, the stats word S_IN_FLIGHT) are atomic on both
sides, so none is lost. A batch's results: each leaf expanded without the tree's lock (its edges, its
cache entry under the cache's own lock), then backed up under the exclusive lock (`apply_shared`):
backups never overlap, and Python's readers (`Search._locked`, shared) see none half done. What writes
values outside a backup takes the exclusive lock too (`revert_stale_two_folds` before the threads
start). The search with one thread (`worker.gather`, `worker.apply_batch`) is lc0's tree visit for
visit; with more, as lc0's own, the tree depends on timing.
"""

from __future__ import annotations

from ...jit import jit
from . import counters as ct
from . import nncache
from .backup import back_up_rows, cancel_path, expand_rows, revert_batch, revert_two_fold
from .batch import S_DESCENTS, S_IN_FLIGHT, S_OOO
from .counters import K_BACKUP, K_COMMIT, K_EXPAND, K_EXTEND, K_PICK, K_WAIT, N_COLLISIONS, N_PICKS, N_PLAYOUTS
from .extend import LEAF_BATCH, LEAF_CACHED, commit_leaf, encode_leaf, extend_leaf
from .packed_params import P_CACHE_HISTORY, P_EXACT_LIMIT, P_OUT_OF_ORDER
from .pick import best_edge, pick_nodes, root_report, root_skip
from .prefetch import prefetch
from .spinlock import fetch_add, lock, lock_shared, unlock, unlock_shared
from .team import J_EXTEND, TM_HELPERS, claim, finish, post
from .tree import M_ROOT, NON_TERMINAL, TWO_FOLD
from .worker import back_up_out_of_order, hold_visit, keep_collisions, stopped

EXTEND_CHUNK = 4  # pick entries a task worker claims at a time (search/core/team.py)


@jit
def gather_shared(t, s, p, c, b, puct_tab, allowed, use_allowed, remaining, cap, max_ooo, collisions_left,
                  node_limit, stop, w, edge_n, rep, lk, clk, ctr, tm):
    """`worker.gather` for a tree other threads search too (see the module docstring): picks and
    commits without a lock, out-of-order backups under `lk` exclusively; the NN cache's entries are
    read under its own lock `clk`. Returns the leaves in batch `b`. `ctr`: the thread's
    cycle counters (search/core/counters.py; empty: off), the phases from its entry stamp on. `tm`: the
    thread's team word (search/core/team.py): its task workers extend the first visits with it."""
    root = t.meta[M_ROOT]
    tc = ct.start(ctr)
    best_i = best_edge(t, p, root, allowed, use_allowed) if t.first_edge[root] >= 0 else -1
    tc = ct.tick(ctr, K_PICK, tc)
    count = 0
    ooo = 0
    nkept = 0
    exact = p[P_EXACT_LIMIT] != 0.0
    b.dcount[0] = 0
    while count + b.dcount[0] < cap and ooo < max_ooo and not stopped(stop):
        limit = min(collisions_left, cap - count - b.dcount[0], max_ooo - ooo)
        if exact:  # the pick's visits held in flight at once: threads picking together never pass `go nodes`
            held = fetch_add(s, S_IN_FLIGHT, limit)
            room = node_limit - t.n[root] - held  # `n` read after: a backup between counts twice, never none
            if room < limit:
                fetch_add(s, S_IN_FLIGHT, max(room, 0) - limit)
                if room <= 0:
                    break
                limit = room
        use_skip = False
        if t.first_edge[root] >= 0:
            use_skip = root_skip(t, w.skip, allowed, use_allowed, remaining, best_i) or use_allowed
        npk = pick_nodes(t, s, p, puct_tab, w.skip, use_skip, use_allowed, limit, w)
        fetch_add(s, S_DESCENTS, 1)
        mark_first_visits(t, npk, w)
        tc = ct.tick(ctr, K_PICK, tc)
        ct.add(ctr, N_PICKS, 1)
        if tm[TM_HELPERS] > 0 and npk > EXTEND_CHUNK:  # the task workers take chunks of the pick's entries too
            post(tm, J_EXTEND, npk, count)
            team_extend(t, p, c, b, root, npk, count, w, tm)
            finish(tm)
        else:
            extend_range(t, p, c, b, root, 0, npk, count, w)
        tc = ct.tick(ctr, K_EXTEND, tc)
        count, ndef = commit_picked(t, s, p, c, b, root, npk, count, w, clk)
        done = False
        if ndef == 0:
            nkept0 = nkept
            nkept, collisions_left, done = keep_collisions(t, s, root, npk, nkept, collisions_left, stop, w)
            for k in range(nkept0, nkept):
                ct.add(ctr, N_COLLISIONS, w.kept_visits[k])
        if exact:  # the out-of-order visits stay held until they are backed up
            fetch_add(s, S_IN_FLIGHT, ndef - limit)
        if ndef > 0:
            tc = ct.tick(ctr, K_COMMIT, tc)
            ct.waited(ctr, lock(lk))
            tc = ct.tick(ctr, K_WAIT, tc)
            back_up_out_of_order(t, s, p, root, npk, ndef, w)
            if exact:
                fetch_add(s, S_IN_FLIGHT, -ndef)
            s[S_OOO] += ndef
            unlock(lk)
            ct.add(ctr, N_PLAYOUTS, ndef)
            for k in range(npk):
                if w.out_k[k] > 0:
                    ct.add(ctr, N_COLLISIONS, w.out_k[k])
            ooo += ndef
            tc = ct.tick(ctr, K_COMMIT, tc)
            continue
        tc = ct.tick(ctr, K_COMMIT, tc)
        if done:
            break
    for k in range(nkept):
        node = w.kept_node[k]
        if node != root:
            cancel_path(t, t.parent[node], w.kept_visits[k], root)
    tc = ct.tick(ctr, K_COMMIT, tc)
    if ooo > 0:  # the root's report changed (the network's batches report when they are applied)
        ct.waited(ctr, lock(lk))
        tc = ct.tick(ctr, K_WAIT, tc)
        root_report(t, p, allowed, use_allowed, edge_n, rep)
        unlock(lk)
        ct.tick(ctr, K_BACKUP, tc)
    return count


@jit
def mark_first_visits(t, npk, w):
    """w.first[k]: the pick's entry k is a first visit (a leaf never evaluated), numbered in pick
    order, else -1: the same test `worker.extend_picked` makes (a leaf the pick owns keeps `n` 0 until
    its own backup)."""
    nfirst = 0
    for k in range(npk):
        w.first[k] = -1
        if w.out_k[k] == 0 and t.n[w.out_node[k]] == 0 and t.term[w.out_node[k]] == NON_TERMINAL:
            w.first[k] = nfirst
            nfirst += 1


@jit
def extend_range(t, p, c, b, root, k0, k1, count, w):
    """Outside the lock: for the pick's entries k0 .. k1-1, the i-th first visit's node-local work into
    batch row count + i (the pick holds at most the batch's free rows), its legal moves into that row's
    codes. Each entry writes only its own row and w.ext_* line: task workers take ranges of them."""
    for k in range(k0, k1):
        i = w.first[k]
        if i < 0:
            continue
        if k + 1 < k1 and w.first[k + 1] >= 0:  # the next leaf's parent position loads meanwhile
            par = t.bbs[t.parent[w.out_node[k + 1]]]
            prefetch(par, 0)
            prefetch(par, 11)
        row = count + i
        extend_leaf(t, p, c, w.out_node[k], w.out_depth[k], root, b.codes[row], b.masks, b.values, row,
                    w.ext_info, w.ext_keys, i)


@jit
def team_extend(t, p, c, b, root, npk, count, w, tm):
    """A team member's share of a pick's extension (job J_EXTEND, search/core/team.py): chunks of
    EXTEND_CHUNK entries claimed until none is left."""
    while True:
        k0 = claim(tm, EXTEND_CHUNK)
        if k0 >= npk:
            return
        extend_range(t, p, c, b, root, k0, min(k0 + EXTEND_CHUNK, npk), count, w)


@jit(inline="always")  # a call per pick passed ~70 arrays on the stack
def commit_picked(t, s, p, c, b, root, npk, count, w, clk):
    """In pick order: `worker.extend_picked`'s second half for leaves extended by
    `extend_range` (rows moved down over terminals and cache hits). Returns (rows in the batch,
    out-of-order visits listed in w.def_*)."""
    in_order = p[P_OUT_OF_ORDER] == 0.0
    dq = w.dq
    ndef = 0
    j = count
    for k in range(npk):
        if w.out_k[k] != 0:  # a collision
            continue
        node = w.out_node[k]
        depth = w.out_depth[k]
        i = w.first[k]
        if i >= 0:
            row = count + i
            cached = w.ext_info[i, 0] == LEAF_CACHED
            if cached:  # the entry must not change while it is read
                lock(clk)
                recheck_cache(t, p, c, b, node, row, w.ext_info, w.ext_keys, i)
            kept = commit_leaf(t, s, p, c, b, node, depth, j, b.codes[row], b.masks, b.values, row, w.ext_info,
                               w.ext_keys, i, dq, row != j)
            if cached:
                unlock(clk)
            if kept == 1:
                j += 1
                continue
            ndef = hold_visit(b, s, w, in_order, node, depth, int(dq[0]), dq[1], dq[2], dq[3], j, ndef)
        else:  # a terminal node visited again
            ndef = hold_visit(b, s, w, in_order, node, depth, 0, 0.0, 0.0, 0.0, j, ndef)
    return j, ndef


@jit
def recheck_cache(t, p, c, b, node, row, info, keys, i):
    """A cache hit found outside the lock, looked up again under it: still there, its slot now; gone
    (replaced by another thread's store), the leaf goes to the network after all."""
    if info[i, 0] != LEAF_CACHED:
        return
    slot = nncache.lookup(c, keys[i])
    if slot >= 0:
        info[i, 1] = slot
        return
    info[i, 0] = LEAF_BATCH
    if p[P_CACHE_HISTORY] < 7:  # the planes were not encoded: the probe came first
        info[i, 3] = encode_leaf(t, p, node, b.masks, b.values, row)


@jit
def revert_stale_two_folds(t, s, root, stack_node, stack_depth):
    """A pick that meets a two-fold draw whose first occurrence is now above the root (a reused tree)
    undoes it (pick.py, as lc0); threads picking together cannot write values, so a search with
    several threads undoes every such draw of the reused tree before it starts. The stacks hold a
    row each."""
    stack_node[0] = root
    stack_depth[0] = 1
    sp = 1
    while sp > 0:
        sp -= 1
        node = stack_node[sp]
        depth = stack_depth[sp]
        fe = t.first_edge[node]
        if fe < 0:
            continue
        for i in range(t.num_edges[node]):
            child = t.e_child[fe + i]
            if child < 0:
                continue
            if t.term[child] == TWO_FOLD and depth < t.m[child]:
                revert_two_fold(t, s, child, depth, root)
            if t.n[child] > 0 and t.term[child] == NON_TERMINAL:
                stack_node[sp] = child
                stack_depth[sp] = depth + 1
                sp += 1


@jit
def apply_shared(t, s, p, c, b, count, policy, q, d, mlh, has_mlh, idx_tab, compact, w2, allowed, use_allowed,
                 edge_n, rep, lk, clk, ctr):
    """`worker.apply_batch` for a tree other threads search too: the leaves expanded without the
    tree's lock (`backup.expand_rows`; `compact`: its policy form), then backed up under the exclusive
    lock `lk`. `ctr`: as `gather_shared`'s."""
    tc = ct.start(ctr)
    expand_rows(t, c, p, b, count, policy, q, d, mlh, has_mlh, idx_tab, compact, w2, clk)
    tc = ct.tick(ctr, K_EXPAND, tc)
    back_up_shared(t, s, p, b, count, q, d, mlh, has_mlh, allowed, use_allowed, edge_n, rep, lk, ctr, tc)


@jit
def back_up_shared(t, s, p, b, count, q, d, mlh, has_mlh, allowed, use_allowed, edge_n, rep, lk, ctr, tc):
    """`apply_shared`'s second half, for a batch expanded already (by a team: search/core/cycle.py):
    its values up the tree under the exclusive lock `lk`, the root's report; `tc` the phase stamp."""
    ct.waited(ctr, lock(lk))
    tc = ct.tick(ctr, K_WAIT, tc)
    ct.add(ctr, N_PLAYOUTS, count + b.dcount[0])
    back_up_rows(t, s, p, b, count, q, d, mlh, has_mlh)
    root_report(t, p, allowed, use_allowed, edge_n, rep)
    unlock(lk)
    ct.tick(ctr, K_BACKUP, tc)


@jit
def revert_shared(t, s, b, count, lk):
    """`backup.revert_batch` under the lock word `lk`."""
    lock(lk)
    revert_batch(t, s, b, count)
    unlock(lk)


@jit
def locked(lk):
    """Take the lock word shared from Python (reading the tree for the stoppers and info lines);
    `released` gives it back."""
    lock_shared(lk)


@jit
def released(lk):
    unlock_shared(lk)
