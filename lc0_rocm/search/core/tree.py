"""The search tree as arrays (lc0's node/edge split, struct of arrays), kept across moves of a game.

One `TreeArrays` (a namedtuple of numpy arrays, which compiled code takes as one argument) holds
every position of the game and of the search:

* rows 0 .. root-1 are the game's positions before the search root, oldest first, chained by
  `parent` (the first position has parent -1); row `root` is the current position; rows after it
  are the tree's nodes, each created when its edge is first visited (lc0's "a child node exists
  only once visited"). History walks (input planes, repetitions) simply follow `parent`.
* per node: `parent`, `edge` (its index among the parent's edges), `first_edge`/`num_edges` into
  the edge arrays (`first_edge` -1: not expanded), visits `n`, visits in flight `nif` (virtual
  loss), values `wl`, `d`, `m` from the point of view of the player who moved INTO the node, the
  first evaluation `v` (NaN: none yet), the cached visited-policy sum `vp` (NaN: recompute), the
  terminal kind `term` and proven bounds `lower`/`upper` (-1 loss, 0 draw, +1 win, mover's view)
  (`n`, `nif`, `wl`, `d`, `m` are strided views of one 32-byte record a node: `_hot_fields`),
  and the position itself: twelve bitboards `bbs`, `castling` (rook squares), side to move
  `black`, lc0's en-passant flag `ep`, `rule50`, repetition count `reps` and a Zobrist `key`;
* per edge: move code `e_code` (board/rules.py), prior `e_p` (lc0's 16-bit rounding, float32),
  child row `e_child` (-1: never visited). Edges are sorted by prior, highest first.

search/tree.py's `NodeTree` holds these arrays for a game; here, the compiled code that writes
nodes (a fresh node, a position, a subtree copied for tree reuse, a terminal mark undone).

The concurrency contract. With one search thread nothing is shared and nothing locked. With several
(core/shared_worker.py) they share these arrays, the NN cache and the search's counters, under two
lock words of core/spinlock.py: `lk`, the tree's readers/writer lock (lc0's `nodes_mutex_`; held
exclusively by backups, shared by Python reading the tree for the stoppers and info lines,
`Search._locked`; picks take none: they read values a backup may be writing, see below), and `clk`,
the NN cache's. "Owner": the thread that holds a leaf's first
visit in flight; no other thread reads that node's edges or values while its `n` is 0 (it is a
collision to them), and the owner's backup, under `lk` exclusively, publishes them.

| data | written by | guard |
|---|---|---|
| `n`, `wl`, `d`, `m`, `term`, `lower`, `upper` | backups, out-of-order backups, reverts, two-fold undos | `lk` exclusive (the reused tree's stale two-folds: before the threads start); picks read them without a lock (a read across a backup misjudges one child for one pick; a child's first visit is decided by its `n` read after the pick's atomic `nif` add, pick.py's `visit_child`) |
| `nif` | picks (virtual loss), backups, collisions and reverts taken back | atomic `fetch_add` (`nif_add`) everywhere, backups included |
| `meta[M_TOP]`, `meta[M_ETOP]` | a new row (pick), a leaf's edges (expansion) | atomic `fetch_add`: each thread gets rows and edges of its own |
| `meta[M_ALONE]` | the search, before its threads start (`Search._run`: 1 for one search thread) | set while no thread runs; with it, `nif`, `meta[M_TOP]` and `e_child` are written without atomics |
| `e_child` | a pick creating a child | `cas` from -1: the row is written (`init_node`) before it is published; a thread losing the race leaves its row unused |
| `parent`, `edge`, position fields (`bbs` ... `key`) | `init_node` (creator, before the `cas`), `extend_leaf` (owner) | row owned by its writer until published |
| `first_edge`, `num_edges`, `e_code`, `e_p`, `v` of a leaf | expansion (`expand_rows`, `cache_hit`), without `lk` | owner; the backup's exclusive `lk` orders them before any reader |
| `vp` (visited-policy cache) | pickers (a NaN refilled), expansion and backups (set to NaN) | none: a sum refilled across a backup may hold until the next backup through the node resets it (first-play urgency only) |
| NN cache entries | `nncache.store` (expansion), the re-lookup of a hit found without a lock | `clk`; an unlocked probe is only a hint, checked again under `clk` |
| search counters `s` (batch.S_*) | all threads | atomic `fetch_add` (S_IN_FLIGHT everywhere: picks reserve it without a lock), or `lk` exclusive (backup counters); Python reads them unlocked (one word each) |
| root report (`edge_n`, `rep`) | `root_report` after a backup | `lk` exclusive; the stoppers read it under `lk` shared |
| stop flags (batch.F_STOP, F_HALT) | `Search.stop()` (F_STOP only), the round's end (F_HALT) | plain int32 words, read without a lock: a late read costs one more pick |
| the compiled cycle's hint `ctl` (core/cycle.py: the stoppers' remaining playouts) and `room` | the watcher (search/compiled_lanes.py); `room` only between rounds | plain float64/int64 words read without a lock: a late read costs one batch with the old hint |
| the arrays themselves (grown, replaced) | `NodeTree.reserve`, `NNCache.make_room` | search/lanes.py's `Gate`: only while no thread is inside compiled code |
| a search thread's batch rows, its pick's `w.ext_*` lines, its leaves' expansion | the thread and its task workers (core/team.py) | each item (a pick entry, a batch row) claimed by one member from the team word's counter; the thread reads them after the job's `finish`; the helpers write no `nif`, no row and no `e_child`, so `M_ALONE` holds for one thread with helpers |

No exception can rise while a lock is held, which would leave it taken and every other thread
spinning: compiled code runs under numba's `error_model="numpy"` (lc0_rocm/jit.py: a division by
zero gives inf, NaN or 0), indexes without bounds checks (numba's default: no IndexError; the
debugging switch NUMBA_BOUNDSCHECK=1 turns them on, and an index out of range would then hang the
threads), allocates nothing in the functions that take a lock (`jit`, `_nrt=False`: no MemoryError)
and holds no `raise` nor `assert`. The Python readers release in a `finally`.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...jit import jit
from ...board import rules
from .spinlock import fetch_add

NON_TERMINAL, END_OF_GAME, TWO_FOLD, TABLEBASE = 0, 1, 2, 3
LOSS, DRAW, WIN = -1, 0, 1
NO_EDGES = -1

TreeArrays = namedtuple("TreeArrays", [
    "parent", "edge", "first_edge", "num_edges", "n", "nif", "wl", "d", "m", "v", "vp",
    "term", "lower", "upper",
    "bbs", "castling", "black", "ep", "rule50", "reps", "key",
    "e_code", "e_p", "e_child",
    "meta",
])
# meta: [0] rows in use, [1] edges in use, [2] root row, [3] chess960, [4] first position is the start board,
# [5] one search thread alone on the tree (`nif_add`, pick.py's `new_child`: plain writes, no atomics)
M_TOP, M_ETOP, M_ROOT, M_960, M_STARTPOS, M_ALONE = 0, 1, 2, 3, 4, 5

_NODE_FIELDS = {
    "parent": np.int32, "edge": np.int32, "first_edge": np.int64, "num_edges": np.int32,
    "n": np.int32, "nif": np.int32, "wl": np.float64, "d": np.float64, "m": np.float64,
    "v": np.float64, "vp": np.float64, "term": np.int8, "lower": np.int8, "upper": np.int8,
    "castling": np.uint64, "black": np.uint8, "ep": np.int8, "rule50": np.int16, "reps": np.int8,
    "key": np.uint64,
}
_EDGE_FIELDS = {"e_code": np.int16, "e_p": np.float32, "e_child": np.int32}
ROW_BYTES = sum(np.dtype(d).itemsize for d in _NODE_FIELDS.values()) + 12 * 8  # the fields and `bbs`
EDGE_BYTES = sum(np.dtype(d).itemsize for d in _EDGE_FIELDS.values())
# What a pick reads of every child it scores and a backup writes of every node on its path: side by side
# in one 32-byte record a node (HOT_WORDS float64 words, 64-byte aligned: a record never straddles two
# cache lines), not in five arrays, so that a child costs one line to load, not five, and a thread's
# write takes one line from the others, not five (docs/perf.md). The fields stay one-dimensional arrays
# (strided views of the record buffer): compiled code reads `t.n[c]` as before.
HOT_WORDS = 4
_HOT_FLOAT = {"wl": 0, "d": 1, "m": 2}  # float64 words of the record
_HOT_INT32 = {"n": 6, "nif": 7}  # int32 halves of its last word


def _hot_fields(nodes: int) -> dict:
    raw = np.zeros(nodes * HOT_WORDS + 8, np.float64)
    skip = (-raw.ctypes.data % 64) // 8
    rec = raw[skip:skip + nodes * HOT_WORDS].reshape(nodes, HOT_WORDS)
    halves = rec.view(np.int32)
    out = {k: rec[:, i] for k, i in _HOT_FLOAT.items()}
    out.update({k: halves[:, i] for k, i in _HOT_INT32.items()})
    return out


def new_arrays(nodes: int, edges: int) -> TreeArrays:
    f = {k: np.zeros(nodes, dtype=t) for k, t in _NODE_FIELDS.items() if k not in _HOT_FLOAT and k not in _HOT_INT32}
    f.update(_hot_fields(nodes))
    f["bbs"] = np.zeros((nodes, 12), dtype=np.uint64)
    f.update({k: np.zeros(edges, dtype=t) for k, t in _EDGE_FIELDS.items()})
    f["meta"] = np.zeros(8, dtype=np.int64)
    return TreeArrays(**f)


def grown(t: TreeArrays, nodes: int, edges: int) -> TreeArrays:
    """`t` with room for at least `nodes` rows and `edges` edges (capacities doubled as needed)."""
    cap_n, cap_e = len(t.n), len(t.e_code)
    if nodes <= cap_n and edges <= cap_e:
        return t
    new_n, new_e = cap_n, cap_e
    while new_n < nodes:
        new_n *= 2
    while new_e < edges:
        new_e *= 2
    top, etop = int(t.meta[M_TOP]), int(t.meta[M_ETOP])
    out = {}
    hot = _hot_fields(new_n) if new_n != cap_n else None
    for name in TreeArrays._fields:
        a = getattr(t, name)
        if name == "meta":
            out[name] = a
            continue
        size = new_e if name in _EDGE_FIELDS else new_n
        if hot is not None and name in hot:
            out[name] = hot[name]
        else:
            out[name] = np.zeros((size,) + a.shape[1:], dtype=a.dtype) if size != len(a) else a
    return copy_used(TreeArrays(**out), t, top, etop)


def copy_used(dst: TreeArrays, src: TreeArrays, rows: int, edges: int) -> TreeArrays:
    """`dst` holding `src`'s first `rows` rows, first `edges` edges and its meta, field by field; a
    field that is `src`'s own array is left as it is. What lies past them is never read before it is
    written (a row is written when it is made, an edge when its node is expanded)."""
    for name, a, b in zip(TreeArrays._fields, dst, src):
        if a is b:
            continue
        if name == "meta":
            a[:] = b
        elif name in _EDGE_FIELDS:
            a[:edges] = b[:edges]
        else:
            a[:rows] = b[:rows]
    return dst


@jit
def nif_add(t, node, visits):
    """t.nif[node] += visits, returning the value before: an atomic `fetch_add` unless one search thread
    is alone on the tree (meta[M_ALONE]), where a locked instruction a visit in flight cost ~5 % of a
    pick's samples for nothing."""
    if t.meta[M_ALONE] != 0:
        old = t.nif[node]
        t.nif[node] = old + visits
        return old
    return fetch_add(t.nif, node, visits)


@jit
def init_node(t, row, parent, edge):
    """A fresh, unvisited, unexpanded node."""
    t.parent[row] = parent
    t.edge[row] = edge
    t.first_edge[row] = NO_EDGES
    t.num_edges[row] = 0
    t.n[row] = 0
    t.nif[row] = 0
    t.wl[row] = 0.0
    t.d[row] = 0.0
    t.m[row] = 0.0
    t.v[row] = np.nan
    t.vp[row] = np.nan
    t.term[row] = NON_TERMINAL
    t.lower[row] = LOSS
    t.upper[row] = WIN


@jit
def copy_subtree(src, dst, old, new_root, stack, remap):
    """Copy the subtree of src row `old` into dst with `old` landing on row `new_root` (whose position
    the caller has written) and its descendants after it; returns (rows, edges) used in dst."""
    top = new_root + 1
    etop = 0
    sp = 0
    stack[0] = old
    remap[0] = new_root
    sp = 1
    while sp > 0:
        sp -= 1
        s = stack[sp]
        r = remap[sp]
        if r != new_root:
            for k in range(12):
                dst.bbs[r, k] = src.bbs[s, k]
            dst.castling[r] = src.castling[s]
            dst.black[r] = src.black[s]
            dst.ep[r] = src.ep[s]
            dst.rule50[r] = src.rule50[s]
            dst.reps[r] = src.reps[s]
            dst.key[r] = src.key[s]
        dst.n[r] = src.n[s]
        dst.nif[r] = 0
        dst.wl[r] = src.wl[s]
        dst.d[r] = src.d[s]
        dst.m[r] = src.m[s]
        dst.v[r] = src.v[s]
        dst.vp[r] = src.vp[s]
        dst.term[r] = src.term[s]
        dst.lower[r] = src.lower[s]
        dst.upper[r] = src.upper[s]
        fe = src.first_edge[s]
        ne = src.num_edges[s]
        dst.num_edges[r] = ne
        if fe < 0:
            dst.first_edge[r] = NO_EDGES
            continue
        dst.first_edge[r] = etop
        for i in range(ne):
            dst.e_code[etop + i] = src.e_code[fe + i]
            dst.e_p[etop + i] = src.e_p[fe + i]
            c = src.e_child[fe + i]
            if c < 0:
                dst.e_child[etop + i] = -1
            else:
                dst.e_child[etop + i] = top
                dst.parent[top] = r
                dst.edge[top] = i
                stack[sp] = c
                remap[sp] = top
                sp += 1
                top += 1
        etop += ne
    return top, etop


@jit
def subtree_size(t, row, stack):
    """(rows, edges) in the subtree of `row`."""
    rows = 0
    edges = 0
    stack[0] = row
    sp = 1
    while sp > 0:
        sp -= 1
        s = stack[sp]
        rows += 1
        fe = t.first_edge[s]
        if fe < 0:
            continue
        ne = t.num_edges[s]
        edges += ne
        for i in range(ne):
            c = t.e_child[fe + i]
            if c >= 0:
                stack[sp] = c
                sp += 1
    return rows, edges


@jit
def write_position(t, row, parent, bbs, castling, black, ep, rule50, reps):
    for k in range(12):
        t.bbs[row, k] = bbs[k]
    t.parent[row] = parent
    t.castling[row] = castling
    t.black[row] = black
    t.ep[row] = ep
    t.rule50[row] = rule50
    t.reps[row] = reps
    t.key[row] = rules.position_key(t.bbs[row], black, castling, ep)


@jit
def make_not_terminal(t, row, root):
    """Undo a terminal mark (tree reuse, a two-fold draw whose first occurrence left the tree):
    the node's stats are recomputed from its children, if any (lc0's Node::MakeNotTerminal)."""
    t.term[row] = NON_TERMINAL
    t.lower[row] = LOSS
    t.upper[row] = WIN
    t.n[row] = 0
    t.vp[row] = np.nan
    if row != root:
        t.vp[t.parent[row]] = np.nan
    fe = t.first_edge[row]
    if fe < 0:
        t.wl[row] = 0.0
        t.d[row] = 1.0
        t.m[row] = 0.0
        return
    n = 1
    wl = t.v[row] if not np.isnan(t.v[row]) else 0.0
    d = t.d[row]
    m = t.m[row]
    for i in range(t.num_edges[row]):
        c = t.e_child[fe + i]
        if c >= 0 and t.n[c] > 0:
            cn = t.n[c]
            n += cn
            wl += -t.wl[c] * cn
            d += t.d[c] * cn
            m += (t.m[c] + 1) * cn
    t.n[row] = n
    t.wl[row] = wl / n
    t.d[row] = d / n
    t.m[row] = m / n
