"""The engine controller: the options, the position, the net/backend lifecycle, the GPU fault policy
and the `go`s' start, stop and abort — everything a `go` needs except the protocol and the search
algorithm, which is a searcher (lc0_rocm/searchers/, lc0's `SearchBase` behind `src/engine.cc`)
picked by name from the registry: the MCTS, or lc0's instamove modes.

`Engine` answers through a `Responder` (uci.py's UciEngine formats its calls as UCI lines; a tool
can collect them): `infos` (a search's info lines), `instamove_info`, `policy_move`, `bestmove`,
`info_string`, `error` (one line each) and `note` (stderr diagnostics). A bestmove is owed for every
`start` and sent once, unless `abort` took it back (lc0's Search::Abort).

The GPU fault policy: after the GPU runs out of memory (at open, while preparing batch sizes, or
during a search) the device batch (`max_batch`) is halved down to MIN_GPU_BATCH; when the GPU fails
otherwise and Backend is `auto`, the cpu backend is used from then on (until the net settings
change); after a search ended in a GPU fault, the next `go` reopens the backend.

The first start's compile of the MCTS and the `go`s that come before it is done are the MCTS
searcher's (searchers/mcts.py, searchers/first_start.py); the instamove modes never compile it.
"""

from __future__ import annotations

import threading
import time
from typing import Optional, Protocol

from . import engine_options as eo
from .errors import BackendError, GpuOutOfMemoryError, Lc0RocmError, one_line
from .search.limits import GoParams
from .searchers import DEFAULT as MCTS
from .searchers import SEARCHERS, make_searcher
from .searchers.base import GoReply, first_legal_move

NET_KEYS = ("WeightsFile", "Backend", "BackendOptions")
MIN_GPU_BATCH = 16  # the smallest device batch tried after the GPU runs out of memory


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


class Engine:
    """The options (`options`), the loaded net, backend and evaluator, the position, the searcher
    (`searcher`, named by `algorithm` in searchers.SEARCHERS: MCTS, or lc0's instamove modes
    "policyhead" / "valuehead"); `opener`: how a backend is opened (api.open_backend's signature;
    tests give one that fails as a GPU does). The searchers' host (searchers.base.SearchHost)."""

    def __init__(self, responder: Responder, algorithm: str = MCTS, opener=None):
        if algorithm not in SEARCHERS:
            raise EngineError(f"unknown search algorithm {algorithm!r} (one of {', '.join(SEARCHERS)})")
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
        self.position = None  # search.factory.GamePosition
        self.position_error: Optional[str] = None
        self._bestmove_lock = threading.Lock()  # orders a search's bestmove against its abort
        self._reply: Optional[GoReply] = None  # the running `go`'s answer, until `stop` (then it is owed)
        # GPU faults: the fault that ended the last search (the next `go` reopens the backend), the
        # max_batch after running out of memory, and whether `auto` fell back to the CPU
        self.backend_fault: Optional[BaseException] = None
        self.max_batch_cap: Optional[int] = None
        self.on_cpu_fallback = False
        self._fault_state_key = None  # the net settings that cap and fallback belong to
        self.searcher = make_searcher(algorithm, self)

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

    def option_declarations(self) -> list[str]:
        """The `option name ...` lines `uci` lists: every declared option, or the searcher's few (lc0's
        instamove modes declare only what they read)."""
        shown = self.searcher.options
        return [line for line in self.options.declarations()
                if shown is None or line.split()[2] in shown]  # "option name <Name> type ..."

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
        self.position = None
        self.position_error = None
        self.searcher.new_game()

    def set_position(self, fen: Optional[str], moves: list[str]) -> None:
        """The position to search (PositionError, kept as `position_error`, for a bad one)."""
        self.stop_and_wait()
        try:
            self.position = self._parse_position(fen, moves)
            self.position_error = None
        except Lc0RocmError as e:
            self.no_position(one_line(e))
            raise

    def no_position(self, error: str) -> None:
        """A `position` command that could not be read: `go` answers `(none)` until the next one."""
        self.position = None
        self.position_error = error

    def _parse_position(self, fen: Optional[str], moves: list[str]):
        from .search.factory import GamePosition

        return GamePosition.parse(fen, moves, bool(self.opt("UCI_Chess960")))

    # ---- network and tablebases
    def ensure_net(self) -> bool:
        """Load the network / create the backend if the options changed. False (reported) on failure."""
        from .search.leaf_evaluator import LeafEvaluator

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
        self.evaluator = LeafEvaluator(backend, net.input_format, self.opt("NNCacheSize"),
                                       self.opt("PolicyTemperature"))
        self.sync_evaluator()
        minibatch = int(self.opt("MinibatchSize"))
        t1 = time.monotonic()
        try:
            compiled = self.searcher.prepare(minibatch)
        except Exception as e:
            self.unload()
            if self.gpu_failed_at_start(e, backend.name, backend_name):
                return self.ensure_net()  # a smaller device batch, or the cpu (bounded: both only shrink)
            self.r.error(f"cannot start the search: {type(e).__name__}: {one_line(e)}")
            return False
        self._loaded_key = key
        self.searcher.backend_changed()
        body = "attention body" if net.is_attention_body else "residual tower"
        self.r.note(f"Network loaded in {net_s:.2f}s: {body}, input format "
                    f"{net.input_format}, {'WDL' if net.has_wdl else 'value'}"
                    f"{', moves-left' if net.has_moves_left else ''}; backend {backend.name}")
        self.r.note(f"Search ready in {time.monotonic() - t1:.2f}s (batch sizes prepared, compiled search loaded)"
                    if compiled else f"Batch sizes prepared in {time.monotonic() - t1:.2f}s")
        return True

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
        self.searcher.backend_changed()

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

    # ---- search
    def search_params(self, go: Optional[GoParams] = None, black_to_move: bool = False):
        """SearchParams from the options (lc0's BaseSearchParams and the contempt of this `go`)."""
        from .search.params import params_from_options

        return params_from_options(self.options, go, black_to_move)

    @property
    def search(self):
        """The searcher's running (or last) search."""
        return self.searcher.search

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
        self.start_search(go, received)

    def start_search(self, go: GoParams, received: Optional[float] = None) -> None:
        """Start the search of `go` (the searcher's; its bestmove through the responder); a search
        that cannot start is answered with the first legal move."""
        with self._bestmove_lock:
            reply = self._reply = GoReply(self.r, self._bestmove_lock)
        try:
            self.searcher.start(self.position, go, received, reply)
        except Exception as e:
            self.failed_to_start(e, go)

    def failed_to_start(self, error: BaseException, go: GoParams) -> None:
        """A search that could not start: said, and the GUI still gets its bestmove (the first legal move)."""
        msg = one_line(error)
        self.r.error(msg if isinstance(error, Lc0RocmError) else f"search failed to start: {type(error).__name__}: {msg}")
        self.fallback_bestmove(go.searchmoves)

    def fallback_bestmove(self, searchmoves: tuple = ()) -> None:
        """The answer to a `go` that could not search: the first legal move of the position (of its
        legal `searchmoves`, if any), or `(none)` without a position or a legal move."""
        legal = None
        if self.position is not None:
            legal = first_legal_move(self.position.board, searchmoves)
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
                self._reply = None
            self.search.stop()

    def ponderhit(self) -> None:
        self.searcher.ponderhit()

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
                if self._reply is not None:
                    self._reply.aborted.set()
            s.stop()
            s.wait()

    def close(self) -> None:
        """`quit`: stop the search (its bestmove still goes out), close the evaluator and tables."""
        self.stop_and_wait()
        if self.evaluator is not None:
            self.evaluator.close()
        if self.tablebases is not None:
            self.tablebases.close()

def max_batch_option(options: str) -> int:
    """The max_batch a GPU backend opens with under these options (its default when absent or bad)."""
    from .backends.options import int_option, parse_backend_options
    from .backends.rocm import DEFAULT_MAX_BATCH

    try:
        return int_option(parse_backend_options(options), "max_batch", DEFAULT_MAX_BATCH)
    except BackendError:
        return DEFAULT_MAX_BATCH
