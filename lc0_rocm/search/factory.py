"""The one way to build a search ready to run: from a position of a game, its limits and its
parameters, on a tree made for it or reused from the game's last search.

`GamePosition` is what a search starts from: the game's start (the tree's key: a search continues
the tree only when the start and the earlier moves match), its moves, the positions they lead to
(`History`) and the board whose chess960 flag writes the moves. `new_search` sets the tree's root
to it (lc0's `NodeTree::ResetToPosition`, `src/search/classic/node.cc`) and makes the `Search`,
its limits counted from `origin` (the time the `go` came, not the search's start). Every caller
(the engine's MCTS searcher, benchmark, validate, analyse, the warm-up) goes through here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional, Union

import chess

from ..encoding.history import History
from .limits import SearchLimits

if TYPE_CHECKING:  # the search's modules load numba: not needed to name a position
    from .leaf_evaluator import LeafEvaluator
    from .params import SearchParams
    from .search import Search
    from .tree import NodeTree


@dataclass
class GamePosition:
    """A position to search and the game that led to it: `moves` (UCI) from the start named by
    `fen` (None: the standard start), `history` their positions, `board` the position's board (its
    chess960 flag sets the castling notation of the search's moves; the history's own without)."""

    history: History
    moves: list = field(default_factory=list)
    fen: Optional[str] = None
    chess960: bool = False
    board: Optional[chess.Board] = None

    def __post_init__(self) -> None:
        if self.board is None:
            self.board = self.history.board.copy(stack=False)

    @classmethod
    def parse(cls, fen: Optional[str], moves: list, chess960: bool = False) -> "GamePosition":
        """The position of UCI's `position` command (PositionError for a bad FEN or move)."""
        from ..encoding.position import parse_position

        history = parse_position(fen, moves, chess960)
        board = history.board.copy(stack=False)
        board.chess960 = chess960
        return cls(history, list(moves), fen, chess960, board)

    @property
    def start_key(self) -> str:
        """What identifies the game's start for tree reuse."""
        return f"{self.fen or 'startpos'}|{self.chess960}"

    def continues(self, earlier: "GamePosition") -> bool:
        """Whether this position is a later one of `earlier`'s game (same start, its moves first)."""
        return earlier.start_key == self.start_key and self.moves[:len(earlier.moves)] == earlier.moves


def new_search(position: GamePosition, evaluator: "LeafEvaluator", params: "SearchParams",
               limits: Union[SearchLimits, Callable[[int], SearchLimits]], tree: Optional["NodeTree"] = None, *,
               has_wdl: bool = True, has_mlh: bool = False, origin: Optional[float] = None, **options) -> "Search":
    """A `Search` of `position` ready to `run()` or `start()`: on `tree` (its root set to the position,
    the subtree of an earlier search of the same game reused) or on a new one. `limits`: the limits, or
    what makes them from the visits the root already has (a time manager's, as lc0's
    `TimeManager::GetStopper` sees the tree), counted from `origin` (time.monotonic(); now without).
    `options`: Search's own (searchmoves, the callbacks, verbose_stats, score_type, tablebases)."""
    from .search import Search
    from .tree import NodeTree

    tree = tree if tree is not None else NodeTree()
    tree.set_position(position.start_key, position.moves, position.history.last, chess960=position.chess960)
    if callable(limits):
        limits = limits(int(tree.root.n))
    return Search(tree, position.board, position.history.first, evaluator, params, limits, has_wdl=has_wdl,
                  has_mlh=has_mlh, game_board=position.history.board, origin=origin, **options)
