"""The search tree: one `Node` per position reached, its edges stored as parallel arrays.

A node owns the edges to its children as three parallel Python lists, sorted by prior, highest
first (lc0's order, which lets the PUCT loop stop at the first unvisited edge):
`moves[i]` (python-chess move), `p[i]` (prior, in lc0's 16-bit rounding) and `children[i]` (the
child Node, or None while that edge has never been visited). A node with `moves is None` has not
been expanded yet (or is terminal).

Values follow lc0's convention: `wl` (W - L), `d` (draw probability) and `m` (plies left) of a node
are from the point of view of the player who made the move INTO the node, i.e. the player to move
at the parent, so a parent compares its children's `wl` directly. `n` counts completed visits,
`n_in_flight` visits on their way (virtual loss: it only enlarges the PUCT denominator).

Terminal nodes (checkmate, stalemate, draws by rule, two-fold repetition inside the tree) carry
`terminal` != NON_TERMINAL and exact values. Proven results propagate upwards through `lower` /
`upper` bounds (-1 loss, 0 draw, +1 win, mover's view), lc0's "sticky endgames".

`NodeTree` keeps the tree between moves: a new `position` that extends the previous game keeps the
subtree of the moves played (tree reuse).
"""

from __future__ import annotations

from typing import Optional

import chess

NON_TERMINAL = 0
END_OF_GAME = 1
TWO_FOLD = 2

LOSS, DRAW, WIN = -1, 0, 1
ZERO_PRIOR = 2.0 ** -31  # what lc0's 16-bit prior storage gives back for a prior set to 0


class Node:
    """One position of the search tree (see module docstring for the conventions)."""

    __slots__ = (
        "parent",
        "index",
        "state",
        "moves",
        "p",
        "children",
        "n",
        "n_in_flight",
        "wl",
        "d",
        "m",
        "v",
        "terminal",
        "lower",
        "upper",
        "board",
        "vp",
    )

    def __init__(self, parent: Optional["Node"] = None, index: int = 0):
        self.parent = parent
        self.index = index  # edge index in the parent
        self.state = None  # encoding.history.PositionState of this position (set on expansion)
        self.moves: Optional[list] = None
        self.p: Optional[list] = None
        self.children: Optional[list] = None
        self.n = 0
        self.n_in_flight = 0
        self.wl = 0.0
        self.d = 0.0
        self.m = 0.0
        self.v = None  # first evaluation (NN value or terminal value), mover's view
        self.terminal = NON_TERMINAL
        self.lower = LOSS
        self.upper = WIN
        self.board = None  # python-chess board of this position, kept only by busy nodes
        self.vp = None  # cached sum of the priors of children with visits (None: recompute)

    # ---- edges
    def set_edges(self, moves: list, priors: list) -> None:
        """Attach the legal moves and their priors (already sorted by prior, descending)."""
        self.moves = moves
        self.p = priors
        self.children = [None] * len(moves)
        self.vp = None

    @property
    def num_edges(self) -> int:
        return 0 if self.moves is None else len(self.moves)

    def child(self, i: int) -> "Node":
        """The child of edge i, created on first use."""
        c = self.children[i]
        if c is None:
            c = Node(self, i)
            self.children[i] = c
        return c

    def edge_n(self, i: int) -> int:
        c = self.children[i]
        return 0 if c is None else c.n

    @property
    def children_visits(self) -> int:
        return self.n - 1 if self.n > 0 else 0

    def visited_policy(self) -> float:
        total = 0.0
        for c in self.children or ():
            if c is not None and c.n > 0:
                total += self.p[c.index]
        return total

    @property
    def is_terminal(self) -> bool:
        return self.terminal != NON_TERMINAL

    @property
    def move(self) -> Optional[chess.Move]:
        """The move leading to this node (None at the root)."""
        return None if self.parent is None else self.parent.moves[self.index]

    # ---- values
    def make_terminal(self, result: int, plies_left: float = 0.0, kind: int = END_OF_GAME) -> None:
        """Mark as game end with `result` for the player who moved into this node."""
        if kind != TWO_FOLD:
            self.lower = self.upper = result
        self.terminal = kind
        self.m = float(plies_left)
        if result == DRAW:
            self.wl, self.d = 0.0, 1.0
        elif result == WIN:
            self.wl, self.d = 1.0, 0.0
        else:
            self.wl, self.d = -1.0, 0.0
            # A lost move needs no exploration bonus: lc0 clears its prior.
            if self.parent is not None:
                self.parent.p[self.index] = ZERO_PRIOR
                self.parent.vp = None
        if self.v is None:
            self.v = self.wl

    def make_not_terminal(self) -> None:
        """Undo a terminal mark (tree reuse): recompute the stats from the children, if any."""
        self.terminal = NON_TERMINAL
        self.lower, self.upper = LOSS, WIN
        self.n = 0
        self.vp = None
        if self.parent is not None:
            self.parent.vp = None
        if self.moves is None:
            self.wl, self.d, self.m = 0.0, 1.0, 0.0
            return
        self.n = 1
        wl = self.v if self.v is not None else 0.0
        d = self.d
        m = self.m
        for c in self.children:
            if c is not None and c.n > 0:
                self.n += c.n
                wl += -c.wl * c.n
                d += c.d * c.n
                m += (c.m + 1) * c.n
        self.wl = wl / self.n
        self.d = d / self.n
        self.m = m / self.n

    def finalize_score_update(self, v: float, d: float, m: float) -> None:
        n1 = self.n + 1
        self.wl += (v - self.wl) / n1
        self.d += (d - self.d) / n1
        self.m += (m - self.m) / n1
        self.n = n1
        self.n_in_flight -= 1

    def adjust_for_terminal(self, v: float, d: float, m: float, count: int) -> None:
        self.wl += count * v / self.n
        self.d += count * d / self.n
        self.m += count * m / self.n

    def revert_terminal_visits(self, v: float, d: float, m: float, count: int) -> None:
        if self.parent is not None:
            self.parent.vp = None
        n_new = self.n - count
        if n_new <= 0:
            self.wl, self.d, self.m, self.n = 0.0, 1.0, 0.0, 0
        else:
            self.wl -= count * (v - self.wl) / n_new
            self.d -= count * (d - self.d) / n_new
            self.m -= count * (m - self.m) / n_new
            self.n = n_new

    def count_nodes(self) -> int:
        """Nodes in this subtree (for tests and statistics)."""
        total = 0
        stack = [self]
        while stack:
            node = stack.pop()
            total += 1
            if node.children:
                stack.extend(c for c in node.children if c is not None)
        return total


class NodeTree:
    """The tree of the current game, kept across `position` commands when the game continues."""

    def __init__(self):
        self.root: Optional[Node] = None
        self.start_fen: Optional[str] = None
        self.moves: list[str] = []
        self.reused = False

    def set_position(self, start_fen: str, moves: list[str], state) -> Node:
        """Make the position after `moves` from `start_fen` the root; reuse the old tree if the new
        game extends the old one (same start, old moves a prefix of the new ones)."""
        node = None
        if self.root is not None and start_fen == self.start_fen and moves[: len(self.moves)] == self.moves:
            node = self.root
            for uci in moves[len(self.moves):]:
                node = _child_by_uci(node, uci)
                if node is None:
                    break
        self.reused = node is not None and node.n > 0
        if node is None:
            node = Node()
        else:
            if node.parent is not None:
                node.parent.children[node.index] = None  # let the rest of the old tree go
                node.parent = None
            if node.is_terminal:
                node.make_not_terminal()
        node.state = state
        self.root = node
        self.start_fen = start_fen
        self.moves = list(moves)
        return node

    def clear(self) -> None:
        self.root = None
        self.start_fen = None
        self.moves = []


def _child_by_uci(node: Node, uci: str) -> Optional[Node]:
    if node.moves is None:
        return None
    for i, mv in enumerate(node.moves):
        if mv.uci() == uci:
            return node.children[i]
    return None
