"""The engine controller: the options' meaning, the net/backend lifecycle, the GPU fault policy, the
search parameters and the search's start and stop — everything a `go` needs except the protocol.

`Engine` answers through a `Responder` (uci.py's UciEngine formats its calls as UCI lines; a tool
can collect them): `infos` (a search's info lines), `instamove_info`, `policy_move`, `bestmove`,
`info_string`, `error` (one line each) and `note` (stderr diagnostics). A bestmove is owed for every
`start` and sent once, unless `abort` took it back (lc0's Search::Abort).

The GPU fault policy: after the GPU runs out of memory (at open, while preparing batch sizes, or
during a search) the device batch (`max_batch`) is halved down to MIN_GPU_BATCH; when the GPU fails
otherwise and Backend is `auto`, the cpu backend is used from then on (until the net settings
change); after a search ended in a GPU fault, the next `go` reopens the backend.

The first start's compile (search/precompile.py) runs in the background. Until it is done, a `go`
with a clock is answered at once with the network's policy move, and any other `go` becomes a
`DeferredSearch`: it waits in its own thread (the UCI loop keeps answering `stop`, `isready`,
`quit`), sending an `info` line of the policy move and the compile's progress every second, and
answers with the policy move should `stop` or `ponderhit` come first. The instamove
modes (`algorithm` policyhead / valuehead) never compile the search.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Optional, Protocol

from . import engine_options as eo
from .errors import BackendError, GpuOutOfMemoryError, Lc0RocmError, one_line
from .search.limits import GoParams

NET_KEYS = ("WeightsFile", "Backend", "BackendOptions")
MIN_GPU_BATCH = 16  # the smallest device batch tried after the GPU runs out of memory
MCTS = "mcts"  # the engine's own search; lc0's instamove algorithms are lc0_rocm.instamove's


class EngineError(Lc0RocmError):
    """A bad option value or a request the engine cannot take (one line)."""


class Responder(Protocol):
    """What the engine says; the caller decides how it is shown."""

    def infos(self, lines: list) -> None: ...  # search.search.InfoLine

    def instamove_info(self, result) -> None: ...  # instamove.InstamoveResult

    def policy_move(self, best, cp: int, ms: int) -> None: ...  # depth 1, one node

    def bestmove(self, best, ponder) -> None: ...  # chess.Move or None

    def info_string(self, text: str) -> None: ...

    def error(self, text: str) -> None: ...

    def note(self, text: str) -> None: ...


@dataclass
class Position:
    fen: Optional[str]
    moves: list[str]
    history: object  # encoding.history.History
    chess960: bool
    board: object = None  # chess.Board (its chess960 flag sets the moves' castling notation)


class Engine:
    """The options (`options`), the loaded net, backend and evaluator, the position, the running
    search; `algorithm`: MCTS, or "policyhead" / "valuehead" (lc0's instamove modes); `opener`:
    how a backend is opened (api.open_backend's signature; tests give one that fails as a GPU does)."""

    def __init__(self, responder: Responder, algorithm: str = MCTS, opener=None):
        self.r = responder
        self.algorithm = algorithm
        self.opener = opener
        self.options = eo.Options()
        self.net = None
        self.backend = None
        self.evaluator = None
        self.tablebases = None
        self._tb_key = None
        self._loaded_key = None
        self.position: Optional[Position] = None
        self.position_error: Optional[str] = None
        self.tree = None
        self.search = None
        self.go_params: Optional[GoParams] = None
        self._tm_key = None
        self._time_manager = None
        self._last_game = None  # (start, moves) of the last search: does the next continue it?
        self._bestmove_lock = threading.Lock()  # orders a search's bestmove against its abort
        self._search_aborted: Optional[threading.Event] = None
        # GPU faults: the fault that ended the last search (the next `go` reopens the backend), the
        # max_batch after running out of memory, and whether `auto` fell back to the CPU
        self.backend_fault: Optional[BaseException] = None
        self.max_batch_cap: Optional[int] = None
        self.on_cpu_fallback = False
        self._fault_state_key = None  # the net settings that cap and fallback belong to
        self.compile = None  # search.precompile.Background while a first start compiles the search
        self.compile_started = 0.0  # when it began (time.monotonic())

    def opt(self, name: str):
        return self.options[name]

    def configure(self, settings) -> None:
        """Apply (option name, value) pairs in order (EngineError on a bad one); WeightsFile
        `<default>` becomes the bundled net's path."""
        for name, value in settings:
            self.set_option(name, value)
        if self.opt("WeightsFile") == "<default>":
            from .default_net import default_net_path

            self.options.set("WeightsFile", str(default_net_path()))

    def declared_options(self) -> Optional[tuple]:
        """The options `uci` lists (None: every declared one; the instamove modes list lc0's few)."""
        return None if self.algorithm == MCTS else eo.INSTAMOVE_OPTIONS

    # ---- options
    def set_option(self, name: str, value) -> tuple[str, object]:
        """Parse and store one option (EngineError on a bad name or value); (name, value)."""
        try:
            previous = self.options[name]
            name, value = self.options.set(name, value)
        except eo.OptionError as e:
            raise EngineError(str(e)) from None
        if name == "TimeManager":
            from .search.timemgr import make_time_manager

            try:
                make_time_manager(value, self.opt("MoveOverheadMs"))
            except ValueError as e:
                self.options.set("TimeManager", previous)
                raise EngineError(f"option TimeManager: {e}") from None
        elif name == "Contempt":
            from .search.params import contempt_value

            try:  # every entry read now (a `name=value` one as if that opponent played), not at `go`
                for entry in value.split(","):
                    contempt_value(entry.split("=", 1)[0] if "=" in entry else "", entry, 0.0)
            except ValueError as e:
                self.options.set("Contempt", previous)
                raise EngineError(f"option Contempt: {e}") from None
        elif name == "WeightsFile" and value in ("", "<default>", "<autodiscover>"):
            from .default_net import default_net_path

            self.options.set("WeightsFile", str(default_net_path()))
        return name, self.options[name]

    # ---- game and position
    def new_game(self) -> None:
        self.stop_and_wait()
        if self.evaluator is not None:
            self.evaluator.cache.clear()  # as lc0: a new game starts with an empty NN cache
        self.tree = None
        self.position = None
        self.position_error = None
        self._last_game = None
        if self._time_manager is not None:
            self._time_manager.new_game()

    def set_position(self, fen: Optional[str], moves: list[str]) -> None:
        """The position to search (PositionError, kept as `position_error`, for a bad one)."""
        self.stop_and_wait()
        try:
            self.position = self._parse_position(fen, moves)
            self.position_error = None
        except Lc0RocmError as e:
            self.position = None
            self.position_error = one_line(e)
            raise

    def _parse_position(self, fen: Optional[str], moves: list[str]) -> Position:
        from .encoding.position import parse_position

        chess960 = bool(self.opt("UCI_Chess960"))
        history = parse_position(fen, moves, chess960)
        board = history.board.copy(stack=False)
        board.chess960 = chess960
        return Position(fen, list(moves), history, chess960, board)

    # ---- network and tablebases
    def ensure_net(self) -> bool:
        """Load the network / create the backend if the options changed. False (reported) on failure."""
        from .search.evaluator import NNEvaluator
        from .search.warmup import prepare_backend

        if self.opener is None:
            from .api import open_backend as opener
        else:
            opener = self.opener

        key = tuple(self.opt(k) for k in NET_KEYS)
        if self._loaded_key == key and self.evaluator is not None:
            self.sync_evaluator()
            return True
        self.unload()
        if self._fault_state_key != key:  # new net or backend settings: the GPU gets another chance
            self._fault_state_key = key
            self.on_cpu_fallback = False
            self.max_batch_cap = None
        path, backend_name, backend_opts = key
        try:
            self.r.note(f"Loading weights file from: {path}")
            t0 = time.monotonic()
            handle = self._open_backend(opener, path, backend_name, backend_opts)
        except (Lc0RocmError, OSError) as e:
            msg = getattr(e, "strerror", None) and f"{e.strerror}: {e.filename}" or one_line(e)
            self.r.error(f"cannot load network {path}: {msg}")
            return False
        except Exception as e:
            self.r.error(f"cannot load network {path}: {type(e).__name__}: {one_line(e)}")
            return False
        net, backend = handle.net, handle.backend
        net_s = time.monotonic() - t0
        self.net, self.backend = net, backend
        self.evaluator = NNEvaluator(backend, net.input_format, self.opt("NNCacheSize"),
                                     self.opt("PolicyTemperature"))
        self.sync_evaluator()
        minibatch = int(self.opt("MinibatchSize"))
        t1 = time.monotonic()
        compiled = False
        try:
            if self.algorithm != MCTS:  # one evaluation per go: nothing of the search to compile
                prepare_backend(self.evaluator, minibatch)
            else:
                compiled = self._prepare_search(minibatch)
        except Exception as e:
            self.unload()
            if self.gpu_failed_at_start(e, backend.name, backend_name):
                return self.ensure_net()  # a smaller device batch, or the cpu (bounded: both only shrink)
            self.r.error(f"cannot start the search: {type(e).__name__}: {one_line(e)}")
            return False
        self._loaded_key = key
        self.tree = None
        body = "attention body" if net.is_attention_body else "residual tower"
        self.r.note(f"Network loaded in {net_s:.2f}s: {body}, input format "
                    f"{net.input_format}, {'WDL' if net.has_wdl else 'value'}"
                    f"{', moves-left' if net.has_moves_left else ''}; backend {backend.name}")
        self.r.note(f"Search ready in {time.monotonic() - t1:.2f}s (batch sizes prepared, compiled search loaded)"
                    if compiled else f"Batch sizes prepared in {time.monotonic() - t1:.2f}s")
        return True

    def _prepare_search(self, minibatch: int) -> bool:
        """Warm the search up when it is compiled (True); on a first start, prepare the backend and
        compile the search in the background (isready does not wait)."""
        from .jit import is_compiled
        from .search.precompile import Background
        from .search.warmup import prepare_backend, warm_up

        bg = self.compile
        if (bg is None and is_compiled()) or (bg is not None and bg.ready.is_set()):
            warm_up(self.evaluator, self.net.has_wdl, self.net.has_moves_left, minibatch)  # about a second
            return True
        prepare_backend(self.evaluator, minibatch)
        if bg is None:
            self.r.note("compiling the search for this machine in the background (first start "
                        "only, one to two minutes); until then a go with a clock plays the policy move")
            self.compile = Background(self.r.note)
            self.compile_started = time.monotonic()
            self.compile.begin()
        return False

    def _open_backend(self, open_backend, path: str, name: str, options: str):
        """open_backend with the GPU fault policy: after running out of GPU memory, halve the device
        batch (`max_batch`) down to MIN_GPU_BATCH; when the GPU still fails and Backend is `auto`,
        use the CPU and say so in an `info string`."""
        if self.on_cpu_fallback and name == "auto":
            return open_backend(path, backend="cpu", options=options)
        while True:
            try:
                return open_backend(path, backend=name, options=options, max_batch=self.max_batch_cap)
            except BackendError as e:
                if name == "cpu":
                    raise
                if isinstance(e, GpuOutOfMemoryError) and self.shrink_device_batch():
                    continue
                if name != "auto":
                    self.max_batch_cap = None  # not the batch's fault: the next attempt starts afresh
                    raise
                self.fall_back_to_cpu(e)
                return open_backend(path, backend="cpu", options=options)

    def gpu_failed_at_start(self, error: BaseException, backend: str, requested: str) -> bool:
        """The GPU failed while preparing its batch sizes at `isready`: True (try again) when a smaller
        device batch is left to try after out-of-memory, or when `auto` may fall back to the cpu."""
        if not backend.startswith("rocm"):
            return False
        if isinstance(error, GpuOutOfMemoryError) and self.shrink_device_batch():
            return True
        if requested == "auto" and not self.on_cpu_fallback:
            self.fall_back_to_cpu(error)
            return True
        return False

    def recover_from_fault(self) -> None:
        """After a search ended in a GPU fault: reopen the backend for this `go` (with half the device
        batch after running out of memory). Should the GPU fail again, `_open_backend` decides."""
        fault, self.backend_fault = self.backend_fault, None
        if fault is None or self.backend is None or not self.backend.name.startswith("rocm"):
            return
        shrunk = isinstance(fault, GpuOutOfMemoryError) and self.shrink_device_batch(quiet=True)
        note = f" with max_batch {self.max_batch_cap}" if shrunk else ""
        self.r.info_string(f"retrying on the GPU{note} after the last search's fault")
        self.unload()

    def shrink_device_batch(self, quiet: bool = False) -> bool:
        """After the GPU ran out of memory: halve the device batch (max_batch, per device) down to
        MIN_GPU_BATCH. False when it is already there."""
        cap = self.max_batch_cap or max_batch_option(self.opt("BackendOptions"))
        if cap <= MIN_GPU_BATCH:
            return False
        self.max_batch_cap = max(MIN_GPU_BATCH, cap // 2)
        if not quiet:
            self.r.info_string(f"GPU out of memory with max_batch {cap}; trying max_batch {self.max_batch_cap}")
        return True

    def fall_back_to_cpu(self, error: BaseException) -> None:
        """Backend `auto` after the GPU failed: the cpu from now on (until the net settings change)."""
        self.r.info_string(f"the GPU backend failed ({one_line(error)}); using the cpu backend")
        self.on_cpu_fallback = True

    def note_search_error(self, error: Optional[BaseException]) -> None:
        """A search ended in `error`: reported; a backend fault makes the next `go` reopen the backend."""
        if error is None:
            return
        self.r.error(f"search failed: {type(error).__name__}: {one_line(error)}")
        if isinstance(error, (BackendError, MemoryError)):
            self.backend_fault = error

    def sync_evaluator(self) -> None:
        ev = self.evaluator
        ev.set_policy_temperature(self.opt("PolicyTemperature"))
        ev.set_cache_size(self.opt("NNCacheSize"))
        if ev.cache_history_length != self.opt("CacheHistoryLength"):
            ev.cache_history_length = self.opt("CacheHistoryLength")
            ev.cache.clear()
        ev.fill = self.opt("HistoryFill")

    def unload(self) -> None:
        if self.evaluator is not None:
            self.evaluator.close()
        if self.backend is not None:
            try:
                self.backend.close()
            except Exception:
                pass
        self.net = self.backend = self.evaluator = None
        self._loaded_key = None
        self.tree = None

    def ensure_tablebases(self):
        """The Syzygy tables of SyzygyPath (opened again when it changes); None without."""
        key = self.opt("SyzygyPath")
        if key != self._tb_key:
            from .search.syzygy import Tablebases

            if self.tablebases is not None:
                self.tablebases.close()
            self.tablebases = None
            self._tb_key = key
            skipped: list = []
            self.tablebases = Tablebases.open(key, skipped=skipped)
            # as lc0 (SyzygyTablebase::init): what cannot be read is reported once and left out; the
            # search uses the tables found, or none
            for problem in skipped:
                self.r.error(one_line(problem))
            if self.tablebases is not None:
                self.r.note(f"Syzygy tablebases found: up to {self.tablebases.max_pieces} pieces")
        return self.tablebases

    # ---- time
    def game_ply(self) -> int:
        """The game ply lc0's time managers see (the start FEN's fullmove number plus the moves)."""
        from .search.timemgr import lc0_game_ply

        pos = self.position
        return lc0_game_ply(pos.history.board.root().fullmove_number, len(pos.moves))

    def time_manager(self):
        """The TimeManager option's manager (made again when the option changes; its saved time
        lasts the game otherwise)."""
        from .search.timemgr import engine_move_overhead_ms, make_time_manager

        key = self.opt("TimeManager")
        overhead = engine_move_overhead_ms(self.opt("MoveOverheadMs"))  # our own latency kept back too
        if self._time_manager is None or key != self._tm_key:
            try:
                self._time_manager = make_time_manager(key, overhead)
            except ValueError as e:
                raise EngineError(f"option TimeManager: {e}") from None
            self._tm_key = key
        self._time_manager.move_overhead_ms = overhead
        return self._time_manager

    # ---- search
    def search_params(self, go: Optional[GoParams] = None, black_to_move: bool = False):
        """SearchParams from the options (lc0's BaseSearchParams and the contempt of this `go`)."""
        return search_params(self.options, go if go is not None else GoParams(), black_to_move)

    def go(self, go: GoParams, received: Optional[float] = None) -> None:
        """Answer a `go`: abort a running search (its bestmove taken back), then search the position,
        or answer at once (policy move, first legal move, `(none)`). Every path owes one bestmove: a
        failure before any search started (a broken install, say) is said and answered with the first
        legal move."""
        try:
            self._go(go, received)
        except Exception as e:
            if self.searching:
                raise  # a search runs: it answers
            self.r.error(f"go: {type(e).__name__}: {one_line(e)}")
            self.fallback_bestmove(go.searchmoves)

    def _go(self, go: GoParams, received: Optional[float]) -> None:
        self.abort_and_wait()
        if self.position is None and self.position_error is not None:
            self.r.error(f"no position to search ({self.position_error})")
            self.r.bestmove(None, None)
            return
        if self.position is None:
            self.position = self._parse_position(None, [])
        self.recover_from_fault()
        if not self.ensure_net():
            self.r.error("no network loaded; cannot search")
            self.fallback_bestmove(go.searchmoves)
            return
        bg = self.compile
        if self.algorithm == MCTS and bg is not None and not bg.ready.is_set():
            if self._has_clock(go):
                from .jit import is_compiled

                if not bg.ready.wait(1.0 if is_compiled() else 0.0):  # compiled, and loading: a second at most
                    self.answer_with_policy_move(go)
                    return
            else:  # nodes, depth, mate, infinite, ponder: waits for the compile in its own thread
                self.r.note("waiting for the search's first-start compile")
                self.go_params = go
                aborted = self._search_aborted = threading.Event()
                self.search = DeferredSearch(self, go, received, aborted)
                self.search.start()
                return
        self.start_search(go, received)

    def _has_clock(self, go: GoParams) -> bool:
        import chess

        black = self.position.board.turn == chess.BLACK
        clock = go.movetime is not None or (go.btime if black else go.wtime) is not None
        return clock and not go.infinite and not go.ponder

    def start_search(self, go: GoParams, received: Optional[float] = None,
                     aborted: Optional[threading.Event] = None) -> None:
        """Start the search of `go` (a search thread; its bestmove through the responder); a search
        that cannot start is answered with the first legal move."""
        try:
            if self.algorithm == MCTS:
                self._start_mcts(go, received, aborted)
            else:
                self._start_instamove(go, aborted)
        except Exception as e:  # the GUI still gets its bestmove: the first legal move
            msg = one_line(e)
            self.r.error(msg if isinstance(e, Lc0RocmError) else f"search failed to start: {type(e).__name__}: {msg}")
            self.fallback_bestmove(go.searchmoves)

    def _answer(self, aborted: threading.Event, best, ponder) -> None:
        with self._bestmove_lock:
            if not aborted.is_set():
                self.r.bestmove(best, ponder)

    def _start_mcts(self, go: GoParams, received: Optional[float], aborted: Optional[threading.Event]) -> None:
        import chess

        from .search.search import Search
        from .search.tree import NodeTree

        pos = self.position
        board = pos.board
        black = board.turn == chess.BLACK
        searchmoves = []
        for tok in go.searchmoves:
            try:
                move = board.parse_uci(tok)
            except ValueError:
                move = None
            if not move:  # python-chess parses `0000` as the null move, which is no root move
                self.r.error(f"go searchmoves: {tok!r} is not a legal move here; ignored")
                continue
            searchmoves.append(move)
        tablebases = self.ensure_tablebases()
        params = self.search_params(go, black)
        if self.opt("ContemptMode") == "play" and go.infinite and params.wdl_rescale_diff != 0.0:
            self.r.info_string("WARNING: Contempt mode set to 'disable' as 'play' not supported for infinite search.")
        tm = self.time_manager()
        self.sync_evaluator()
        if self.tree is None:
            self.tree = NodeTree()
        start_key = f"{pos.fen or 'startpos'}|{pos.chess960}"
        self.tree.set_position(start_key, pos.moves, pos.history.last, chess960=pos.chess960)
        last = self._last_game
        if last is not None and not (last[0] == start_key and pos.moves[:len(last[1])] == last[1]):
            tm.new_game()  # lc0 makes a new time manager when a position does not continue the game
        self._last_game = (start_key, list(pos.moves))
        limits = tm.limits(go, self.game_ply(), black, tree_nodes=int(self.tree.root.n))
        self.go_params = go
        if aborted is None:
            aborted = self._search_aborted = threading.Event()
        search = None

        def on_bestmove(best, ponder):
            if search is not None:
                tm.search_done(search.limits, (time.monotonic() - search.limits_origin) * 1000.0,
                               total_nodes=search.root.n)
                self.note_search_error(search.error)
            self._answer(aborted, best, ponder)

        def on_info(lines):
            self.r.infos(lines)
            s = search
            if self.opt("LogLiveStats") and s is not None and s.running:
                for line in s.verbose_stats_lines():  # Nibbler's live move table
                    self.r.info_string(line)

        search = Search(
            self.tree, board, pos.history.first, self.evaluator, params, limits,
            has_wdl=self.net.has_wdl, has_mlh=self.net.has_moves_left, searchmoves=searchmoves,
            on_info=on_info, on_bestmove=on_bestmove,
            on_stats=lambda lines: [self.r.info_string(x) for x in lines],
            verbose_stats=bool(self.opt("VerboseMoveStats")),
            score_type=self.opt("ScoreType"),
            tablebases=tablebases, game_board=pos.history.board,
        )
        if received is not None:  # the time limits count from the `go`, not from the search's start
            search.limits_origin = min(search.limits_origin, received)
        if not isinstance(self.search, DeferredSearch) or self.search.go is not go:
            self.search = search
        else:
            self.search.real = search
        search.start()

    def _start_instamove(self, go: GoParams, aborted: Optional[threading.Event]) -> None:
        from .instamove import InstamoveSearch

        self.sync_evaluator()
        self.go_params = go
        if aborted is None:
            aborted = self._search_aborted = threading.Event()
        holder: list = []

        def on_bestmove(best, ponder) -> None:
            if holder:
                self.note_search_error(holder[0].error)
            self._answer(aborted, best, ponder)

        self.search = InstamoveSearch(self.algorithm, self.evaluator, self.position.history,
                                      go.infinite or go.ponder, self.r.instamove_info, on_bestmove)
        holder.append(self.search)
        self.search.start()

    def answer_with_policy_move(self, go: GoParams, aborted: Optional[threading.Event] = None) -> None:
        """The answer to a `go` before the compiled search is loaded: `policy_answer`'s move and
        score. The first legal move should that fail."""
        aborted = aborted if aborted is not None else threading.Event()
        try:
            t0 = time.monotonic()
            move, cp = self.policy_answer(go)
            self.r.info_string("the search is still being compiled (first start only): "
                               "playing the network's policy move")
            if move is None:
                self._answer(aborted, None, None)
                return
            ms = int((time.monotonic() - t0) * 1000)
            with self._bestmove_lock:
                if not aborted.is_set():
                    self.r.policy_move(move, cp, ms)
                    self.r.bestmove(move, None)
        except Exception as e:  # the GUI still gets its bestmove
            self.r.error(f"search failed to start: {type(e).__name__}: {one_line(e)}")
            with self._bestmove_lock:
                if not aborted.is_set():
                    self.fallback_bestmove(go.searchmoves)

    def policy_answer(self, go: GoParams) -> tuple:
        """(the network's most likely move of the position, of `searchmoves` when given, or None
        without a legal move; the network's value in lc0's `centipawn` formula) after one
        evaluation, ScoreType WDL_mu's rescaling being compiled code."""
        from .api import Evaluator
        from .search.score import uci_score

        e = Evaluator(self.net, self.backend).evaluate(self.position.history.board)
        allowed = {m.lower() for m in go.searchmoves}
        moves = [m for m in e.policy if not allowed or m.uci() in allowed] or list(e.policy)
        d = e.wdl[1] if e.wdl is not None else 0.0
        return (moves[0] if moves else None), uci_score("centipawn", e.q, d, e.wdl is not None)

    def compile_progress(self) -> str:
        """How far the first start's compile is: its time so far and the compiled functions the
        cache holds (numba writes an index file for each as it is compiled)."""
        from .jit import cache_dir

        try:
            done = sum(1 for _ in cache_dir().glob("*.nbi"))
        except OSError:
            done = 0
        return (f"the search is being compiled for this machine (first start only): "
                f"{time.monotonic() - self.compile_started:.0f} s, {done} functions so far; "
                "the search starts when it is done")

    def fallback_bestmove(self, searchmoves: tuple = ()) -> None:
        """The answer to a `go` that could not search: the first legal move of the position (of its
        legal `searchmoves`, if any), or `(none)` without a position or a legal move."""
        legal = None
        if self.position is not None:
            board = self.position.board
            legal = next(iter(board.legal_moves), None)
            for tok in searchmoves:
                try:
                    move = board.parse_uci(tok)
                except ValueError:
                    continue
                if move:
                    legal = move
                    break
        elif self.position_error is None:
            import chess

            legal = next(iter(chess.Board().legal_moves), None)
        self.r.bestmove(legal, None)

    @property
    def searching(self) -> bool:
        return self.search is not None and self.search.running

    def stop(self) -> None:
        """`stop`: never blocks; the stopped search still owes its bestmove."""
        if self.search is not None:
            with self._bestmove_lock:
                # a stopped search owes its bestmove: a `go` that follows at once must not abort it
                self._search_aborted = None
            self.search.stop()

    def ponderhit(self) -> None:
        import chess

        s = self.search
        if s is None or not s.running or self.go_params is None or not self.go_params.ponder:
            return
        go = GoParams(**{**self.go_params.__dict__, "ponder": False})
        board = self.position.board
        s.ponderhit(self.time_manager().limits(go, self.game_ply(), board.turn == chess.BLACK,
                                               tree_nodes=s.initial_visits))

    def stop_and_wait(self) -> None:
        s = self.search
        if s is not None and s.running:
            s.stop()
            s.wait()

    def abort_and_wait(self) -> None:
        """Stop a running search without its bestmove (lc0's Search::Abort); a bestmove already
        being sent (the search ended on its own) still goes out, before this returns."""
        s = self.search
        if s is not None and s.running:
            with self._bestmove_lock:
                if self._search_aborted is not None:
                    self._search_aborted.set()
            s.stop()
            s.wait()

    def close(self) -> None:
        """`quit`: stop the search (its bestmove still goes out), close the evaluator and tables."""
        self.stop_and_wait()
        if self.evaluator is not None:
            self.evaluator.close()
        if self.tablebases is not None:
            self.tablebases.close()


class DeferredSearch:
    """A clock-less `go` (nodes, depth, mate, infinite, ponder) that came while the first start's
    compile runs: a thread waits for the compile, then starts the real search (`real`), whose
    bestmove answers the `go`. While it waits, it sends an `info` line every INFO_INTERVAL_S, the
    first at once (the network's policy move as the PV, its value as the score, one node) and an
    `info string` with the compile's progress, so that a GUI sees an engine at work, not a hung one.
    `stop` or `ponderhit` before the compile is done answers with the policy move (a clock now runs,
    and the search is not there yet). Driven like search.Search."""

    POLL_S = 0.05
    INFO_INTERVAL_S = 1.0

    def __init__(self, engine: Engine, go: GoParams, received: Optional[float], aborted: threading.Event):
        self.engine, self.go, self.received, self.aborted = engine, go, received, aborted
        self.real = None
        self.initial_visits = 0
        self.error: Optional[BaseException] = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="lc0-rocm-deferred-go", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        ready = self.engine.compile.ready
        t0 = self.received if self.received is not None else time.monotonic()
        answer = None
        next_info = 0.0
        while not ready.is_set() and not self._stop.is_set():
            if time.monotonic() >= next_info:
                next_info = time.monotonic() + self.INFO_INTERVAL_S
                answer = self._send_waiting_info(answer, t0)
            ready.wait(self.POLL_S)
        with self._lock:
            stopped = self._stop.is_set()
            if not stopped:
                self.engine.start_search(self.go, self.received, self.aborted)
        if stopped and not self.aborted.is_set():  # an aborted go owes nothing
            self.engine.answer_with_policy_move(self.go, self.aborted)

    def _send_waiting_info(self, answer, t0: float):
        """One `info` line of the policy move and the compile's `info string` (not after an abort);
        `answer`: policy_answer's, evaluated on the first call (False when that failed)."""
        engine = self.engine
        if answer is None:
            try:
                answer = engine.policy_answer(self.go)
            except Exception:  # the wait goes on without it: the search or `stop` answers the go
                answer = False
        with engine._bestmove_lock:
            if self.aborted.is_set():
                return answer
            if answer and answer[0] is not None:
                engine.r.policy_move(answer[0], answer[1], int((time.monotonic() - t0) * 1000))
            engine.r.info_string(engine.compile_progress())
        return answer

    def stop(self) -> None:
        with self._lock:
            self._stop.set()
            real = self.real
        if real is not None:
            real.stop()

    def ponderhit(self, limits=None) -> None:
        with self._lock:
            real = self.real
            if real is None:
                self._stop.set()
        if real is not None:
            real.ponderhit(limits)

    def wait(self, timeout: Optional[float] = None) -> bool:
        self._thread.join(timeout)
        if self._thread.is_alive():
            return False
        real = self.real
        return True if real is None else real.wait(timeout)

    @property
    def running(self) -> bool:
        real = self.real
        return self._thread.is_alive() or (real is not None and real.running)


def search_params(options, go: GoParams, black_to_move: bool):
    """SearchParams from engine options (`engine_options.Options`): lc0's BaseSearchParams, the
    contempt (WDL rescaling) and the side it favours in this `go`."""
    from .search.params import SearchParams, contempt_value, wdl_rescale_params

    o = options.__getitem__
    contempt = contempt_value(o("UCI_Opponent"), o("Contempt"), o("UCI_RatingAdv"))
    ratio, diff = wdl_rescale_params(
        contempt, draw_rate_target=o("WDLDrawRateTarget"), draw_rate_reference=o("WDLDrawRateReference"),
        book_exit_bias=o("WDLBookExitBias"), contempt_max=o("ContemptMaxValue"),
        attenuation=o("WDLContemptAttenuation"), calibration_elo=o("WDLCalibrationElo"))
    at_root = o("FpuStrategyAtRoot")
    return SearchParams(
        cpuct=o("CPuct"), cpuct_base=o("CPuctBase"), cpuct_factor=o("CPuctFactor"),
        fpu_value=o("FpuValue"), fpu_absolute=o("FpuStrategy") == "absolute",
        fpu_value_at_root=None if at_root == "same" else o("FpuValueAtRoot"),
        fpu_absolute_at_root=None if at_root == "same" else at_root == "absolute",
        policy_temperature=o("PolicyTemperature"), minibatch_size=o("MinibatchSize"),
        max_collision_visits=o("MaxCollisionVisits"),
        max_collision_visits_scaling_start=o("MaxCollisionVisitsScalingStart"),
        max_collision_visits_scaling_end=o("MaxCollisionVisitsScalingEnd"),
        max_collision_visits_scaling_power=o("MaxCollisionVisitsScalingPower"),
        max_out_of_order_factor=o("MaxOutOfOrderEvalsFactor"), out_of_order_eval=o("OutOfOrderEval"),
        smart_pruning_factor=o("SmartPruningFactor"),
        smart_pruning_minimum_batches=o("SmartPruningMinimumBatches"),
        two_fold_draws=o("TwoFoldDraws"), sticky_endgames=o("StickyEndgames"),
        pipeline=o("Threads") != 1, threads=o("Threads"), multipv=o("MultiPV"), per_pv_counters=o("PerPVCounters"),
        moves_left_max_effect=o("MovesLeftMaxEffect"), moves_left_threshold=o("MovesLeftThreshold"),
        moves_left_slope=o("MovesLeftSlope"), moves_left_constant_factor=o("MovesLeftConstantFactor"),
        moves_left_scaled_factor=o("MovesLeftScaledFactor"),
        moves_left_quadratic_factor=o("MovesLeftQuadraticFactor"),
        draw_score=o("DrawScore"), wdl_rescale_ratio=ratio, wdl_rescale_diff=diff, wdl_max_s=o("WDLMaxS"),
        wdl_eval_objectivity=o("WDLEvalObjectivity"),
        contempt_mode=contempt_mode(o("ContemptMode"), go, black_to_move),
        syzygy_fast_play=o("SyzygyFastPlay"), nps_limit=o("NodesPerSecondLimit"),
        ram_limit_mb=o("RamLimitMb"), solid_tree_threshold=o("SolidTreeThreshold"),
    )


def search_params_from(settings: dict, go: Optional[GoParams] = None, black_to_move: bool = False):
    """SearchParams of the engine's defaults with `settings` ({option name: value}, engine_options'
    names and parser) applied: how tools and analyse build their searches, e.g.
    `{"MinibatchSize": 32, "SmartPruningFactor": 0, "Threads": 1}`. EngineError on a bad one."""
    options = eo.Options()
    for name, value in settings.items():
        try:
            options.set(name, value)
        except eo.OptionError as e:
            raise EngineError(str(e)) from None
    return search_params(options, go if go is not None else GoParams(), black_to_move)


def contempt_mode(mode: str, go: GoParams, black_to_move: bool) -> str:
    """The side contempt favours in this search: "white", "black" or "none" (lc0's Search
    constructor: "play" means the side to move, the other side when pondering, none when infinite)."""
    if mode == "disable":
        return "none"
    if mode == "white_side_analysis":
        return "white"
    if mode == "black_side_analysis":
        return "black"
    if go.infinite:
        return "none"
    return "black" if black_to_move != bool(go.ponder) else "white"


def max_batch_option(options: str) -> int:
    """The max_batch a GPU backend opens with under these options (its default when absent or bad)."""
    from .backends.options import int_option, parse_backend_options
    from .backends.rocm import DEFAULT_MAX_BATCH

    try:
        return int_option(parse_backend_options(options), "max_batch", DEFAULT_MAX_BATCH)
    except BackendError:
        return DEFAULT_MAX_BATCH
