"""The seam between the engine and its search algorithms (lc0's `SearchBase`, `src/search/search.h`).

A `Searcher` owns what one algorithm keeps between `go`s (for the MCTS: the tree, the time manager,
whether a position continues the game) and starts the search of each `go`. The engine
(lc0_rocm/engine.py) owns the rest and is the searcher's `SearchHost`: the options, the net,
backend and evaluator, the tablebases, and the fault policy a failed search reports to. A `go`'s
answer goes through its `GoReply`, which the engine can take back (abort).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator, Optional, Protocol

from ..search.limits import GoParams


class RunningSearch(Protocol):
    """A started search (search.Search, instamove.InstamoveSearch, searchers.deferred.DeferredSearch)."""

    initial_visits: int

    def stop(self) -> None: ...

    def ponderhit(self, limits=None) -> None: ...

    def wait(self, timeout: Optional[float] = None) -> bool: ...

    @property
    def running(self) -> bool: ...


class SearchHost(Protocol):
    """What a searcher uses of the engine: its responder (`r`), options, loaded net, backend and
    evaluator, the tablebases of SyzygyPath, and the fault policy."""

    r: object  # engine.Responder
    options: object  # engine_options.Options
    net: object
    backend: object
    evaluator: object

    def opt(self, name: str): ...

    def ensure_tablebases(self): ...

    def sync_evaluator(self) -> None: ...

    def note_search_error(self, error: Optional[BaseException]) -> None: ...

    def failed_to_start(self, error: BaseException, go: GoParams) -> None: ...


class Searcher(Protocol):
    """One search algorithm behind the engine; `search`: the running (or last) search of a `go`."""

    options: Optional[tuple]  # the options `uci` lists (None: every declared one)
    search: Optional[RunningSearch]

    def prepare(self, minibatch: int) -> bool:
        """Make the algorithm ready once the net is loaded (True: the compiled search is loaded)."""

    def backend_changed(self) -> None:
        """The net or backend was loaded or unloaded: nothing evaluated by the old one is kept."""

    def new_game(self) -> None:
        """`ucinewgame`: forget the game (tree, time saved)."""

    def start(self, position, go: GoParams, received: Optional[float], reply: "GoReply") -> None:
        """Start the search of `go` from `position` (search.factory.GamePosition); returns at once, the
        bestmove comes through `reply`."""

    def ponderhit(self) -> None:
        """The pondered move was played: the running search goes on under the clock."""


class GoReply:
    """The answer owed to one `go`: said unless the `go` was aborted (lc0's Search::Abort), the check
    and the words under the engine's bestmove lock, so that an abort and a bestmove never cross."""

    def __init__(self, responder, lock: threading.Lock):
        self.r = responder
        self._lock = lock
        self.aborted = threading.Event()

    @contextmanager
    def open(self) -> Iterator[bool]:
        """Holding the lock: whether the `go` still wants an answer."""
        with self._lock:
            yield not self.aborted.is_set()

    def bestmove(self, best, ponder) -> None:
        with self.open() as wanted:
            if wanted:
                self.r.bestmove(best, ponder)


def parse_searchmoves(board, toks, on_bad=None) -> list:
    """The moves of `go searchmoves` legal on `board`, in order; `on_bad(tok)` for every other token
    (python-chess parses `0000` as the null move, which is no root move)."""
    moves = []
    for tok in toks:
        try:
            move = board.parse_uci(tok)
        except ValueError:
            move = None
        if move:
            moves.append(move)
        elif on_bad is not None:
            on_bad(tok)
    return moves


def first_legal_move(board, searchmoves=()) -> object:
    """The first of `searchmoves` legal on `board`, else its first legal move (None without one)."""
    moves = parse_searchmoves(board, searchmoves)
    return moves[0] if moves else next(iter(board.legal_moves), None)
