"""The game's tree kept across `position` commands: `NodeTree` (the arrays of search/core/tree.py and
the game they belong to) and `NodeView`, one node read for reporting and tests.

`NodeTree.set_position` writes the game's history and, when the new game extends the old one,
keeps the subtree of the moves played (tree reuse) by copying it (compiled `copy_subtree`) into
arrays of its size and from there back into the arrays it was in; a new tree is made in the old
arrays too (`forget_game` keeps them for the next game); fresh arrays only where the old ones are too
small. `NodeView` reads one node (no object per node is kept).
"""

from __future__ import annotations

from typing import Optional

import chess
import numpy as np

from ..board import rules
from .core.tree import (EDGE_BYTES, ROW_BYTES, M_960, M_ETOP, M_ROOT, M_STARTPOS, M_TOP, NON_TERMINAL, TreeArrays,
                        copy_subtree, copy_used, grown, init_node, make_not_terminal, new_arrays, subtree_size, write_position)


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
EDGES_PER_ROW = 220  # edges reserved for each row a gathering may add (chess has at most 218 legal moves)


def _recycled(t: TreeArrays, rows: int) -> TreeArrays:
    """`t` made to read as new arrays for a tree whose first `rows` rows (the game's history) are
    written next: those rows and the counters zeroed. The rest is never read before it is written (a
    row is written by `init_node` when it is made, an edge when its node is expanded), so nothing else
    needs clearing."""
    for name, a in zip(TreeArrays._fields, t):
        if name == "meta":
            a[:] = 0
        else:
            a[:rows] = 0
    return t


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
        return int(t.meta[M_TOP]) * ROW_BYTES + int(t.meta[M_ETOP]) * EDGE_BYTES

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
        need_rows, need_edges = max(START_ROWS, 2 * (h + rows)), max(START_EDGES, 2 * edges)
        fits = len(old.n) >= need_rows and len(old.e_code) >= need_edges
        if self.reused:  # the kept subtree is copied into arrays of its size, then back into the old ones
            t = new_arrays(h + rows, max(edges, 1))  # (their pages stay mapped and touched: docs/perf.md)
        elif fits:
            t = _recycled(old, h)
        else:
            t = new_arrays(need_rows, need_edges)
        for i, s in enumerate(states):
            write_position(t, i, i - 1, np.array(s.bbs, dtype=np.uint64), np.uint64(s.castling),
                           int(s.black_to_move), s.ep_file, s.rule50, s.repetitions)
        root = h - 1
        if self.reused:
            stack_size = max(rows, 1) + 1
            top, etop = copy_subtree(old, t, node, root, np.zeros(stack_size, np.int64),
                                      np.zeros(stack_size, np.int64))
            t = copy_used(old if fits else new_arrays(need_rows, need_edges), t, top, etop)
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

    def forget_game(self) -> None:
        """A new game (`ucinewgame`): nothing of this one is reused, but the arrays are kept: the next
        position's tree is made in them. Fresh arrays cost every `go` 5-90 ms on the 2-core VM (the
        allocator zeroing reused memory, or the first touch of fresh pages during the search), where
        lc0's node allocator reuses its memory (docs/perf.md)."""
        self.start_fen = None
        self.moves = []

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
