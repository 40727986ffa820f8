"""The engine's own search behind the seam (lc0's `ClassicSearch`, `src/search/classic/wrapper.cc`):
the tree kept from `go` to `go` while the game goes on, the TimeManager option's manager (its saved
time lasts the game), the search parameters of each `go` read from the options, and the first
start's compile of the search (search/precompile.py) in the background: until it is done a `go` is
answered by searchers/first_start.py.
"""

from __future__ import annotations

import time
from typing import Optional

from ..search.limits import GoParams
from .base import GoReply, SearchHost, parse_searchmoves


class MctsSearcher:
    """lc0's classic search: PUCT on a tree reused across the game's moves."""

    options = None  # `uci` lists every option

    def __init__(self, host: SearchHost):
        self.host = host
        self.search = None
        self.tree = None
        self.go: Optional[GoParams] = None
        self.position = None  # the position of the last `go` (search.factory.GamePosition)
        self._game = None  # the position of the last search: does the next one continue its game?
        self._tm_key = None
        self._time_manager = None
        self.compile = None  # search.precompile.Background while a first start compiles the search
        self.compile_started = 0.0  # when it began (time.monotonic())

    # ---- the net and the game
    def prepare(self, minibatch: int) -> bool:
        """Warm the search up when it is compiled (True); on a first start, prepare the backend and
        compile the search in the background (isready does not wait)."""
        from ..jit import is_compiled
        from ..search.precompile import Background
        from ..search.warmup import prepare_backend, warm_up

        host, bg = self.host, self.compile
        if (bg is None and is_compiled()) or (bg is not None and bg.ready.is_set()):
            warm_up(host.evaluator, host.net.has_wdl, host.net.has_moves_left, minibatch,  # about a second
                    int(host.opt("Threads")), int(host.opt("TaskWorkers")))
            return True
        prepare_backend(host.evaluator, minibatch, int(host.opt("Threads")))
        if bg is None:
            host.r.note("compiling the search for this machine in the background (first start "
                        "only, one to two minutes); until then a go with a clock plays the policy move")
            self.compile = Background(host.r.note)
            self.compile_started = time.monotonic()
            self.compile.begin()
        return False

    def backend_changed(self) -> None:
        self.tree = None

    def new_game(self) -> None:
        if self.tree is not None:
            self.tree.forget_game()  # its arrays hold the next game's tree (search/tree.py)
        self.position = self._game = None
        if self._time_manager is not None:
            self._time_manager.new_game()

    def time_manager(self):
        """The TimeManager option's manager (made again when the option changes; its saved time
        lasts the game otherwise)."""
        from ..errors import Lc0RocmError
        from ..search.timemgr import engine_move_overhead_ms, make_time_manager

        key = self.host.opt("TimeManager")
        overhead = engine_move_overhead_ms(self.host.opt("MoveOverheadMs"))  # our own latency kept back too
        if self._time_manager is None or key != self._tm_key:
            try:
                self._time_manager = make_time_manager(key, overhead)
            except ValueError as e:
                raise Lc0RocmError(f"option TimeManager: {e}") from None
            self._tm_key = key
        self._time_manager.move_overhead_ms = overhead
        return self._time_manager

    # ---- a go
    def start(self, position, go: GoParams, received: Optional[float], reply: GoReply) -> None:
        """Search `go`; before the first start's compile is done, a `go` with a clock is answered at
        once with the policy move and any other waits for the compile in a DeferredSearch."""
        from . import first_start

        self.go, self.position = go, position
        bg = self.compile
        if bg is not None and not bg.ready.is_set():
            if first_start.has_clock(go, position.board):
                from ..jit import is_compiled

                if not bg.ready.wait(1.0 if is_compiled() else 0.0):  # compiled, and loading: a second at most
                    first_start.answer_with_policy_move(self, position, go, reply)
                    return
            else:  # nodes, depth, mate, infinite, ponder: waits for the compile in its own thread
                self.host.r.note("waiting for the search's first-start compile")
                self.search = first_start.DeferredSearch(self, position, go, received, reply)
                self.search.start()
                return
        self.search = self.new_search(position, go, received, reply)
        self.search.start()

    def new_search(self, position, go: GoParams, received: Optional[float], reply: GoReply):
        """The search of `go` from `position`, ready to start, on the game's tree."""
        import chess

        from ..search.factory import new_search
        from ..search.params import params_from_options
        from ..search.tree import NodeTree

        host = self.host
        board = position.board
        black = board.turn == chess.BLACK
        searchmoves = parse_searchmoves(
            board, go.searchmoves, lambda tok: host.r.error(f"go searchmoves: {tok!r} is not a legal move here; ignored"))
        tablebases = host.ensure_tablebases()
        host.sync_evaluator()
        params = params_from_options(host.options, go, black)
        if host.opt("ContemptMode") == "play" and go.infinite and params.wdl_rescale_diff != 0.0:
            host.r.info_string("WARNING: Contempt mode set to 'disable' as 'play' not supported for infinite search.")
        tm = self.time_manager()
        if self.tree is None:
            self.tree = NodeTree()
        if self._game is not None and not position.continues(self._game):
            tm.new_game()  # lc0 makes a new time manager when a position does not continue the game
        self._game = position
        ply = _game_ply(position)
        search = None

        def on_bestmove(best, ponder):
            if search is not None:
                tm.search_done(search.limits, (time.monotonic() - search.limits_origin) * 1000.0,
                               total_nodes=search.root.n)
                host.note_search_error(search.error)
            reply.bestmove(best, ponder)

        def on_info(lines):
            host.r.infos(lines)
            s = search
            if host.opt("LogLiveStats") and s is not None and s.running:
                for line in s.verbose_stats_lines():  # Nibbler's live move table
                    host.r.info_string(line)

        search = new_search(
            position, host.evaluator, params, lambda root_n: tm.limits(go, ply, black, tree_nodes=root_n),
            self.tree, has_wdl=host.net.has_wdl, has_mlh=host.net.has_moves_left, origin=received,
            searchmoves=searchmoves, on_info=on_info, on_bestmove=on_bestmove,
            on_stats=lambda lines: [host.r.info_string(x) for x in lines],
            verbose_stats=bool(host.opt("VerboseMoveStats")), score_type=host.opt("ScoreType"),
            tablebases=tablebases)
        return search

    def ponderhit(self) -> None:
        import chess

        s, go, pos = self.search, self.go, self.position
        if s is None or not s.running or go is None or not go.ponder:
            return
        go = GoParams(**{**go.__dict__, "ponder": False})
        ply = _game_ply(pos)
        s.ponderhit(self.time_manager().limits(go, ply, pos.board.turn == chess.BLACK, tree_nodes=s.initial_visits))


def _game_ply(position) -> int:
    """The game's ply as lc0's time manager counts it: from the root's move number, plus the moves."""
    from ..search.timemgr import lc0_game_ply

    return lc0_game_ply(position.history.board.root().fullmove_number, len(position.moves))
