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
  terminal kind `term` and proven bounds `lower`/`upper` (-1 loss, 0 draw, +1 win, mover's view),
  and the position itself: twelve bitboards `bbs`, `castling` (rook squares), side to move
  `black`, lc0's en-passant flag `ep`, `rule50`, repetition count `reps` and a Zobrist `key`;
* per edge: move code `e_code` (search.rules), prior `e_p` (lc0's 16-bit rounding, float32),
  child row `e_child` (-1: never visited). Edges are sorted by prior, highest first.

`NodeTree.set_position` writes the game's history and, when the new game extends the old one,
keeps the subtree of the moves played (tree reuse) by copying it into fresh arrays (compiled
`_copy_subtree`); `NodeView` reads one node for reporting and tests (no object per node is kept).
"""

from __future__ import annotations

from collections import namedtuple
from typing import Optional

import chess
import numpy as np

from . import rules
from .jit import jit

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
# meta: [0] rows in use, [1] edges in use, [2] root row, [3] chess960, [4] first position is the start board
M_TOP, M_ETOP, M_ROOT, M_960, M_STARTPOS = 0, 1, 2, 3, 4

_NODE_FIELDS = {
    "parent": np.int32, "edge": np.int32, "first_edge": np.int64, "num_edges": np.int32,
    "n": np.int32, "nif": np.int32, "wl": np.float64, "d": np.float64, "m": np.float64,
    "v": np.float64, "vp": np.float64, "term": np.int8, "lower": np.int8, "upper": np.int8,
    "castling": np.uint64, "black": np.uint8, "ep": np.int8, "rule50": np.int16, "reps": np.int8,
    "key": np.uint64,
}
_EDGE_FIELDS = {"e_code": np.int16, "e_p": np.float32, "e_child": np.int32}
_ROW_BYTES = sum(np.dtype(d).itemsize for d in _NODE_FIELDS.values()) + 12 * 8  # the fields and `bbs`
_EDGE_BYTES = sum(np.dtype(d).itemsize for d in _EDGE_FIELDS.values())


def new_arrays(nodes: int, edges: int) -> TreeArrays:
    f = {k: np.zeros(nodes, dtype=t) for k, t in _NODE_FIELDS.items()}
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
    for name in TreeArrays._fields:
        a = getattr(t, name)
        if name == "meta":
            out[name] = a
            continue
        size = new_e if name in _EDGE_FIELDS else new_n
        b = np.zeros((size,) + a.shape[1:], dtype=a.dtype) if size != len(a) else a
        if b is not a:
            used = etop if name in _EDGE_FIELDS else top
            b[:used] = a[:used]
        out[name] = b
    return TreeArrays(**out)


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
def _copy_subtree(src, dst, old, new_root, stack, remap):
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


def _history_states(last) -> list:
    states = []
    s = last
    while s is not None:
        states.append(s)
        s = s.prev
    states.reverse()
    return states


# A new position's arrays start this large: np.zeros maps zero pages that cost nothing until a search
# touches them, while each doubling of a smaller start copies everything grown so far (on a 2-core VM, a
# fresh 200k-node search spent a tenth of its host time in those copies from 16k rows and 64k edges)
START_ROWS = 1 << 18
START_EDGES = 1 << 23


class NodeTree:
    """The tree of the current game, kept across `position` commands when the game continues."""

    def __init__(self, nodes: int = START_ROWS, edges: int = START_EDGES):
        self.arrays = new_arrays(nodes, edges)
        self.start_fen: Optional[str] = None
        self.moves: list[str] = []
        self.reused = False
        self.chess960 = False
        self._stack = np.zeros(1 << 12, dtype=np.int64)

    @property
    def root_row(self) -> int:
        return int(self.arrays.meta[M_ROOT])

    @property
    def root(self) -> "NodeView":
        return NodeView(self, self.root_row)

    def bytes_in_use(self) -> int:
        """Memory the rows and edges in use take (what RamLimitMb counts for the tree)."""
        t = self.arrays
        return int(t.meta[M_TOP]) * _ROW_BYTES + int(t.meta[M_ETOP]) * _EDGE_BYTES

    def has_room(self, nodes: int, edges: int) -> bool:
        """Whether `nodes` more rows and `edges` more edges fit without growing."""
        t = self.arrays
        return int(t.meta[M_TOP]) + nodes <= len(t.n) and int(t.meta[M_ETOP]) + edges <= len(t.e_code)

    def reserve(self, nodes: int, edges: int) -> None:
        """Room for `nodes` more rows and `edges` more edges."""
        t = self.arrays
        self.arrays = grown(t, int(t.meta[M_TOP]) + nodes, int(t.meta[M_ETOP]) + edges)

    def set_position(self, start_fen: str, moves: list[str], state, chess960: bool = False) -> "NodeView":
        """Make the position after `moves` from `start_fen` the root (`state`: its PositionState, whose
        `prev` chain is the game); reuse the old tree if the new game extends the old one (same start,
        old moves a prefix of the new ones) and the new root was visited."""
        old = self.arrays
        node = -1
        if self.start_fen is not None and start_fen == self.start_fen and moves[: len(self.moves)] == self.moves \
                and chess960 == self.chess960 and old.meta[M_TOP] > 0:
            node = int(old.meta[M_ROOT])
            for uci in moves[len(self.moves):]:
                node = self._child_by_uci(node, uci)
                if node < 0:
                    break
        self.reused = node >= 0 and int(old.n[node]) > 0
        states = _history_states(state)
        h = len(states)
        rows, edges = 1, 0
        if self.reused:
            rows, edges = self._subtree_size(node)
        t = new_arrays(max(START_ROWS, 2 * (h + rows)), max(START_EDGES, 2 * edges))
        for i, s in enumerate(states):
            write_position(t, i, i - 1, np.array(s.bbs, dtype=np.uint64), np.uint64(s.castling),
                           int(s.black_to_move), s.ep_file, s.rule50, s.repetitions)
        root = h - 1
        if self.reused:
            stack_size = max(rows, 1) + 1
            top, etop = _copy_subtree(old, t, node, root, np.zeros(stack_size, np.int64),
                                      np.zeros(stack_size, np.int64))
            t.parent[root] = root - 1
            t.edge[root] = -1
            if t.term[root] != NON_TERMINAL:
                make_not_terminal(t, root, root)
        else:
            init_node(t, root, root - 1, -1)
            top, etop = h, 0
        t.meta[M_TOP] = top
        t.meta[M_ETOP] = etop
        t.meta[M_ROOT] = root
        t.meta[M_960] = int(chess960)
        t.meta[M_STARTPOS] = int(states[0].is_startpos_board)
        self.arrays = t
        self.start_fen = start_fen
        self.moves = list(moves)
        self.chess960 = chess960
        return self.root

    def _subtree_size(self, row: int) -> tuple[int, int]:
        t = self.arrays
        need = int(t.meta[M_TOP]) + 1
        if len(self._stack) < need:
            self._stack = np.zeros(need, dtype=np.int64)
        r, e = subtree_size(t, row, self._stack)
        return int(r), int(e)

    def _child_by_uci(self, row: int, uci: str) -> int:
        t = self.arrays
        fe = int(t.first_edge[row])
        if fe < 0:
            return -1
        for i in range(int(t.num_edges[row])):
            if rules.code_to_move(int(t.e_code[fe + i]), self.chess960).uci() == uci:
                return int(t.e_child[fe + i])
        return -1

    def clear(self) -> None:
        self.arrays = new_arrays(1 << 10, 1 << 12)
        self.start_fen = None
        self.moves = []


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


class NodeView:
    """Read access to one node of a `NodeTree` (for reporting and tests); lc0's field names."""

    __slots__ = ("tree", "row")

    def __init__(self, tree: NodeTree, row: int):
        self.tree = tree
        self.row = row

    def __eq__(self, other) -> bool:
        return isinstance(other, NodeView) and other.tree is self.tree and other.row == self.row

    def __hash__(self) -> int:
        return hash((id(self.tree), self.row))

    @property
    def _t(self) -> TreeArrays:
        return self.tree.arrays

    n = property(lambda self: int(self._t.n[self.row]))
    n_in_flight = property(lambda self: int(self._t.nif[self.row]))
    wl = property(lambda self: float(self._t.wl[self.row]))
    d = property(lambda self: float(self._t.d[self.row]))
    m = property(lambda self: float(self._t.m[self.row]))
    terminal = property(lambda self: int(self._t.term[self.row]))
    lower = property(lambda self: int(self._t.lower[self.row]))
    upper = property(lambda self: int(self._t.upper[self.row]))
    is_terminal = property(lambda self: self.terminal != NON_TERMINAL)

    @property
    def v(self) -> Optional[float]:
        v = float(self._t.v[self.row])
        return None if v != v else v

    @property
    def num_edges(self) -> int:
        t = self._t
        return 0 if t.first_edge[self.row] < 0 else int(t.num_edges[self.row])

    def _edges(self) -> slice:
        t = self._t
        fe = int(t.first_edge[self.row])
        return slice(fe, fe + int(t.num_edges[self.row]))

    @property
    def moves(self) -> Optional[list]:
        if self._t.first_edge[self.row] < 0:
            return None
        c960 = self.tree.chess960
        return [rules.code_to_move(int(c), c960) for c in self._t.e_code[self._edges()]]

    @property
    def p(self) -> Optional[list]:
        if self._t.first_edge[self.row] < 0:
            return None
        return self._t.e_p[self._edges()].astype(np.float64).tolist()

    @property
    def children(self) -> Optional[list]:
        if self._t.first_edge[self.row] < 0:
            return None
        return [None if c < 0 else NodeView(self.tree, int(c)) for c in self._t.e_child[self._edges()]]

    def edge_n(self, i: int) -> int:
        c = int(self._t.e_child[int(self._t.first_edge[self.row]) + i])
        return 0 if c < 0 else int(self._t.n[c])

    @property
    def parent(self) -> Optional["NodeView"]:
        if self.row == self.tree.root_row:
            return None
        return NodeView(self.tree, int(self._t.parent[self.row]))

    @property
    def move(self) -> Optional[chess.Move]:
        p = self.parent
        return None if p is None else p.moves[int(self._t.edge[self.row])]
