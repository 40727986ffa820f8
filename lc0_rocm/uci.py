"""The UCI engine: a blocking stdin loop, one search thread, answers on stdout.

Commands: uci, isready, setoption, ucinewgame, position (startpos | fen ... [moves ...]), go (wtime
btime winc binc movestogo nodes movetime depth mate infinite searchmoves ponder), stop, ponderhit,
quit (and `debug`, accepted and ignored). `go` starts a search thread and returns at once, `stop`
never blocks, `isready` answers readyok while a search runs. A `go` that arrives while a search runs
aborts that search without a bestmove, as lc0 v0.32.1 does (its new Search replaces the running
one, whose destructor calls Abort(), which marks the bestmove as sent): the one bestmove answers
the last `go`. The network is loaded on the first `isready` or `go` (and again after WeightsFile,
Backend or BackendOptions change).

stdout carries UCI only: progress and notes (loading the net, the CPU fallback, the first-start
compile) go to stderr, as lc0 writes them.

A machine's first start compiles the search (search/precompile.py) in a background process, so
`isready` is answered as soon as the net is loaded. Until the compiled search is loaded, a `go`
with a clock (movetime, or the side to move's time) is answered at once with the network's policy
move (one evaluation: lc0's `go nodes 1`), and any other `go` (nodes, depth, mate, infinite,
ponder) waits for the compile. A malformed command, an illegal move in `position`, an
unknown option or a bad value is answered with `info string error: ...` and the loop goes on; a net
that cannot be loaded is reported the same way and `go` then answers `bestmove (none)`. End of
input is `quit`. LogFile copies the dialogue to a file (`<stderr>`: to the console).

Options: `engine_options` (lc0's names, defaults and flags). Nothing heavy is imported before
`uciok`: chess, numpy, numba and the backends load on the first `isready`, `position` or `go`.
"""

from __future__ import annotations

import io
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional, TextIO

from . import __version__
from . import engine_options as eo
from .errors import BackendError, GpuOutOfMemoryError, Lc0RocmError, PositionError, one_line
from .search.timemgr import GoParams

NET_KEYS = ("WeightsFile", "Backend", "BackendOptions")
MIN_GPU_BATCH = 16  # the smallest device batch tried after the GPU runs out of memory


class UciError(Lc0RocmError):
    """A malformed UCI command or a bad option value (answered with `info string error`)."""


# --------------------------------------------------------------------------------------------
# Parsing


def _next_token(text: str) -> tuple[str, str]:
    """(first word, rest): both "" for an empty or whitespace-only line."""
    parts = text.strip().split(None, 1)
    if not parts:
        return "", ""
    return parts[0], (parts[1] if len(parts) > 1 else "")


GO_INT_KEYS = ("wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes", "mate", "movetime")


def parse_go(args: str) -> GoParams:
    """GoParams from the words after `go`; UciError on an unknown word or a bad number."""
    go = GoParams()
    tokens = args.split()
    i = 0
    while i < len(tokens):
        tok = tokens[i].lower()
        if tok in GO_INT_KEYS:
            if i + 1 >= len(tokens):
                raise UciError(f"go: {tok} needs a value")
            try:
                value = int(tokens[i + 1])
            except ValueError:
                raise UciError(f"go: {tok} expects an integer, got {tokens[i + 1]!r}") from None
            setattr(go, tok, value)
            i += 2
        elif tok == "infinite":
            go.infinite = True
            i += 1
        elif tok == "ponder":
            go.ponder = True
            i += 1
        elif tok == "searchmoves":
            i += 1
            while i < len(tokens) and tokens[i].lower() not in GO_INT_KEYS + ("infinite", "ponder"):
                go.searchmoves.append(tokens[i])
                i += 1
        else:
            raise UciError(f"go: unexpected token {tokens[i]!r}")
    return go


def parse_setoption(args: str) -> tuple[str, str]:
    """(name, value) of `setoption name <name words> [value <value words>]`."""
    tokens = args.split()
    if not tokens or tokens[0].lower() != "name":
        raise UciError("setoption: expected 'setoption name <name> [value <value>]'")
    name_words, value_words, target = [], [], None
    for tok in tokens[1:]:
        if tok.lower() == "value" and target is None:
            target = value_words
            continue
        (name_words if target is None else value_words).append(tok)
    if not name_words:
        raise UciError("setoption: missing option name")
    return " ".join(name_words), " ".join(value_words)


def parse_position_command(args: str) -> tuple[Optional[str], list[str]]:
    """(fen or None for startpos, moves) of the words after `position`."""
    head, rest = _next_token(args)
    head = head.lower()
    if head == "startpos":
        fen = None
    elif head == "fen":
        words = rest.split()
        lower = [w.lower() for w in words]
        cut = lower.index("moves") if "moves" in lower else len(words)
        if cut == 0:
            raise UciError("position fen: missing FEN")
        fen = " ".join(words[:cut])
        rest = " ".join(words[cut:])
    else:
        raise UciError("position: expected 'startpos' or 'fen <fen>'")
    word, tail = _next_token(rest)
    if word == "":
        return fen, []
    if word.lower() != "moves":
        raise UciError(f"position: unexpected token {word!r} (expected 'moves')")
    return fen, tail.split()


# --------------------------------------------------------------------------------------------
# The engine


@dataclass
class _Position:
    fen: Optional[str]
    moves: list[str]
    history: object  # encoding.history.History
    chess960: bool
    board: object = None  # chess.Board


class _Log:
    """LogFile: the dialogue copied to a file (`<stderr>`: the console), one timestamped line each,
    `>>` for what the GUI sent and `<<` for what the engine answered (lc0's markers)."""

    def __init__(self):
        self.path = ""
        self._f = None
        self._lock = threading.Lock()

    def open(self, path: str) -> None:
        self.close()
        self.path = path
        if not path:
            return
        if path == "<stderr>":
            self._f = sys.stderr
            return
        try:
            self._f = open(path, "a", encoding="utf-8", buffering=1)
        except OSError as e:
            self.path = ""
            raise UciError(f"LogFile {path}: {e.strerror}") from None

    def write(self, marker: str, line: str) -> None:
        f = self._f
        if f is None:
            return
        now = time.time()
        stamp = time.strftime("%m%d %H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1e6):06d}"
        with self._lock:
            try:
                f.write(f"{stamp} {marker} {line}\n")
                f.flush()
            except (OSError, ValueError):
                pass

    def close(self) -> None:
        f, self._f = self._f, None
        if f is not None and f is not sys.stderr:
            try:
                f.close()
            except OSError:
                pass


class UciEngine:
    """Reads UCI commands from `inp`, writes answers to `out` (one search thread at a time).

    `settings`: (option name, value) pairs from the command line (flags, config file), applied in
    order; `overrides`: the same as a dict (None values skipped)."""

    def __init__(self, inp: TextIO = None, out: TextIO = None, overrides: Optional[dict] = None,
                 settings: Optional[list] = None):
        self.inp = inp if inp is not None else _stdin_text()
        self.out = out if out is not None else sys.stdout
        self._out_lock = threading.Lock()
        self._bestmove_lock = threading.Lock()  # orders a search's bestmove against its abort
        self._search_aborted: Optional[threading.Event] = None
        self.log = _Log()
        self.options = eo.Options()
        self.net = None
        self.backend = None
        self.evaluator = None
        self.tablebases = None
        self._tb_key = None
        self._loaded_key = None
        self.position: Optional[_Position] = None
        self.position_error: Optional[str] = None
        self.tree = None
        self.search = None
        self.go_params: Optional[GoParams] = None
        self._tm_key = None
        self.time_manager = None
        self._last_game = None  # (start, moves) of the last search: does the next continue it?
        # GPU faults: the fault that ended the last search (the next `go` reopens the backend), the
        # max_batch after running out of memory, and whether `auto` fell back to the CPU
        self._backend_fault: Optional[BaseException] = None
        self._max_batch_cap: Optional[int] = None
        self._on_cpu_fallback = False
        self._fault_state_key = None  # the net settings that cap and fallback belong to
        self._compile = None  # search.precompile.Background while a first start compiles the search
        pairs = list(settings or []) + [(k, v) for k, v in (overrides or {}).items() if v is not None]
        for name, value in pairs:
            self._set_option(name, value)
        if self.opt("WeightsFile") == "<default>":
            from .default_net import default_net_path

            self.options.set("WeightsFile", str(default_net_path()))
        self.handlers: dict[str, Callable[[str], Optional[bool]]] = {
            "uci": self.cmd_uci,
            "isready": self.cmd_isready,
            "setoption": self.cmd_setoption,
            "ucinewgame": self.cmd_ucinewgame,
            "position": self.cmd_position,
            "go": self.cmd_go,
            "stop": self.cmd_stop,
            "ponderhit": self.cmd_ponderhit,
            "quit": self.cmd_quit,
            "debug": lambda args: None,  # UCI's debug on/off: accepted, nothing to switch
        }

    # ---- output
    def send(self, line: str) -> None:
        with self._out_lock:
            try:
                self.out.write(line + "\n")
                self.out.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass
        self.log.write("<<", line)

    def info_string(self, text: str) -> None:
        for part in str(text).splitlines() or [""]:
            self.send(f"info string {part}")

    def error(self, text: str) -> None:
        self.info_string(f"error: {' '.join(str(text).split())}")

    def note(self, text: str) -> None:
        """A diagnostic for the person at the console (stderr), never on the UCI channel."""
        line = f"lc0-rocm: {text}"
        try:
            print(line, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass
        if self.log.path != "<stderr>":
            self.log.write("##", line)

    def opt(self, name: str):
        return self.options[name]

    # ---- the loop
    def run(self) -> int:
        try:
            while True:
                line = self.inp.readline()
                if not line:  # end of input
                    self.cmd_quit("")
                    return 0
                self.log.write(">>", line.rstrip("\r\n"))
                if self.handle(line) is False:
                    return 0
        finally:
            self.log.close()

    def handle(self, line: str) -> Optional[bool]:
        """Handle one line; False means quit."""
        cmd, args = _next_token(line)
        if not cmd:
            return None
        handler = self.handlers.get(cmd)
        if handler is None:
            self.error(f"unknown command {cmd!r}")
            return None
        try:
            return handler(args)
        except Lc0RocmError as e:
            self.error(str(e).splitlines()[0] if str(e) else type(e).__name__)
        except eo.OptionError as e:
            self.error(str(e))
        except Exception as e:  # never die on one bad line
            self.error(f"{cmd}: {type(e).__name__}: {e}")
        return None

    # ---- commands
    def cmd_uci(self, args: str) -> None:
        self.send(f"id name lc0-rocm {__version__}")
        self.send("id author the lc0-rocm authors (search and nets after The LCZero Authors)")
        for line in self.options.declarations():
            self.send(line)
        self.send("uciok")

    def cmd_isready(self, args: str) -> None:
        try:
            if self.search is None or not self.search.running:
                self.ensure_net()
        except Exception as e:  # reported; the GUI still gets its readyok (it waits for one)
            self.error(f"isready: {type(e).__name__}: {one_line(e)}")
        self.send("readyok")

    def cmd_setoption(self, args: str) -> None:
        name, value = parse_setoption(args)
        self._set_option(name, value)

    def _set_option(self, name: str, value) -> None:
        try:
            previous = self.options[name]
            name, value = self.options.set(name, value)
        except eo.OptionError as e:
            raise UciError(str(e)) from None
        if name == "LogFile":
            self.log.open(value)
        elif name == "TimeManager":
            from .search.timemgr import make_time_manager

            try:
                make_time_manager(value, self.opt("MoveOverheadMs"))
            except ValueError as e:
                self.options.set("TimeManager", previous)
                raise UciError(f"option TimeManager: {e}") from None
        elif name == "Contempt":
            from .search.params import contempt_value

            try:  # every entry read now (a `name=value` one as if that opponent played), not at `go`
                for entry in value.split(","):
                    contempt_value(entry.split("=", 1)[0] if "=" in entry else "", entry, 0.0)
            except ValueError as e:
                self.options.set("Contempt", previous)
                raise UciError(f"option Contempt: {e}") from None
        elif name == "WeightsFile" and value in ("", "<default>", "<autodiscover>"):
            from .default_net import default_net_path

            self.options.set("WeightsFile", str(default_net_path()))

    def cmd_ucinewgame(self, args: str) -> None:
        self._stop_and_wait()
        if self.evaluator is not None:
            self.evaluator.cache.clear()  # as lc0: a new game starts with an empty NN cache
        self.tree = None
        self.position = None
        self.position_error = None
        self._last_game = None
        if self.time_manager is not None:
            self.time_manager.new_game()

    def cmd_position(self, args: str) -> None:
        self._stop_and_wait()
        try:
            fen, moves = parse_position_command(args)
            self.position = self._parse_position(fen, moves)
            self.position_error = None
        except Lc0RocmError as e:
            self.position = None
            self.position_error = str(e).splitlines()[0]
            raise

    def _parse_position(self, fen: Optional[str], moves: list[str]) -> _Position:
        from .encoding.position import parse_position

        chess960 = bool(self.opt("UCI_Chess960"))
        if not chess960:
            history = parse_position(fen, moves)
        else:
            history = _parse_position_960(fen, moves)
        board = history.board.copy(stack=False)
        board.chess960 = chess960
        return _Position(fen, list(moves), history, chess960, board)

    def cmd_go(self, args: str) -> None:
        received = time.monotonic()  # the clock counts from here, as the GUI's does
        try:
            go = parse_go(args)
        except UciError as e:
            if self.search is not None and self.search.running:
                raise  # a malformed go leaves a running search alone: that search answers
            self.error(str(e))
            self._send_fallback_bestmove()
            return
        self._abort_and_wait()
        if self.position is None and self.position_error is not None:
            self.error(f"no position to search ({self.position_error})")
            self.send("bestmove (none)")
            return
        if self.position is None:
            self.position = self._parse_position(None, [])
        self._recover_from_fault()
        if not self.ensure_net():
            self.error("no network loaded; cannot search")
            self._send_fallback_bestmove(go.searchmoves)
            return
        if not self._search_compiled_for(go):
            return
        try:
            self._start_search(go, received)
        except Exception as e:  # the GUI still gets its bestmove: the first legal move
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            self.error(msg if isinstance(e, Lc0RocmError) else f"search failed to start: {type(e).__name__}: {msg}")
            self._send_fallback_bestmove(go.searchmoves)

    def _search_compiled_for(self, go: GoParams) -> bool:
        """Whether `go` may search now (the compiled search is loaded). While the first start's
        compile still runs, a `go` with a clock is answered at once with the network's policy move
        (False), and any other `go` waits for the compile."""
        import chess

        from .search.jit import is_compiled

        bg = self._compile
        if bg is None or bg.ready.is_set():
            return True
        black = self.position.board.turn == chess.BLACK
        clock = go.movetime is not None or (go.btime if black else go.wtime) is not None
        if clock and not go.infinite and not go.ponder:
            if bg.ready.wait(1.0 if is_compiled() else 0.0):  # compiled, and loading: a second at most
                return True
            try:
                self._send_policy_move(go)
            except Exception as e:  # the GUI still gets its bestmove
                self.error(f"search failed to start: {type(e).__name__}: {one_line(e)}")
                self._send_fallback_bestmove(go.searchmoves)
            return False
        self.note("waiting for the search's first-start compile")
        bg.ready.wait()
        return True

    def _send_policy_move(self, go: GoParams) -> None:
        """The answer to a `go` with a clock before the compiled search is loaded: the network's most
        likely move (of `searchmoves`, when given), after one evaluation; the score in lc0's
        `centipawn` formula (ScoreType WDL_mu's rescaling is compiled code)."""
        from .api import Evaluator
        from .search.score import uci_score

        t0 = time.monotonic()
        pos = self.position
        e = Evaluator(self.net, self.backend).evaluate(pos.history.board)
        allowed = {m.lower() for m in go.searchmoves}
        moves = [m for m in e.policy if not allowed or m.uci() in allowed] or list(e.policy)
        self.info_string("the search is still being compiled (first start only): "
                         "playing the network's policy move")
        if not moves:
            self.send("bestmove (none)")
            return
        best = _uci(moves[0], pos.chess960)
        d = e.wdl[1] if e.wdl is not None else 0.0
        cp = uci_score("centipawn", e.q, d, e.wdl is not None)
        ms = int((time.monotonic() - t0) * 1000)
        self.send(f"info depth 1 seldepth 1 time {ms} nodes 1 score cp {cp} pv {best}")
        self.send(f"bestmove {best}")

    def _send_fallback_bestmove(self, searchmoves: tuple = ()) -> None:
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
        self.send(f"bestmove {legal.uci()}" if legal is not None else "bestmove (none)")

    def cmd_stop(self, args: str) -> None:
        if self.search is not None:
            with self._bestmove_lock:
                # a stopped search owes its bestmove: a `go` that follows at once must not abort it
                self._search_aborted = None
            self.search.stop()

    def cmd_ponderhit(self, args: str) -> None:
        import chess

        s = self.search
        if s is None or not s.running or self.go_params is None or not self.go_params.ponder:
            return
        go = GoParams(**{**self.go_params.__dict__, "ponder": False})
        board = self.position.board
        s.ponderhit(self._time_manager().limits(go, self._game_ply(), board.turn == chess.BLACK,
                                                tree_nodes=s.initial_visits))

    def cmd_quit(self, args: str) -> bool:
        self._stop_and_wait()
        if self.evaluator is not None:
            self.evaluator.close()
        if self.tablebases is not None:
            self.tablebases.close()
        return False

    # ---- network, tablebases, time manager
    def ensure_net(self) -> bool:
        """Load the network / create the backend if the options changed. False (reported) on failure."""
        from .api import open_backend
        from .search.evaluator import NNEvaluator
        from .search.jit import is_compiled
        from .search.precompile import Background
        from .search.search import prepare_backend, warm_up

        key = tuple(self.opt(k) for k in NET_KEYS)
        if self._loaded_key == key and self.evaluator is not None:
            self._sync_evaluator()
            return True
        self._unload()
        if self._fault_state_key != key:  # new net or backend settings: the GPU gets another chance
            self._fault_state_key = key
            self._on_cpu_fallback = False
            self._max_batch_cap = None
        path, backend_name, backend_opts = key
        try:
            self.note(f"Loading weights file from: {path}")
            t0 = time.monotonic()
            handle = self._open_backend(open_backend, path, backend_name, backend_opts)
        except (Lc0RocmError, OSError) as e:
            msg = getattr(e, "strerror", None) and f"{e.strerror}: {e.filename}" or str(e)
            self.error(f"cannot load network {path}: {msg.splitlines()[0] if msg else type(e).__name__}")
            return False
        except Exception as e:
            self.error(f"cannot load network {path}: {type(e).__name__}: {e}")
            return False
        net, backend = handle.net, handle.backend
        net_s = time.monotonic() - t0
        self.net = net
        self.backend = backend
        self.evaluator = NNEvaluator(backend, net.input_format, self.opt("NNCacheSize"),
                                     self.opt("PolicyTemperature"))
        self._sync_evaluator()
        minibatch = int(self.opt("MinibatchSize"))
        t1 = time.monotonic()
        try:
            bg = self._compile
            compiled = (bg is None and is_compiled()) or (bg is not None and bg.ready.is_set())
            if compiled:
                warm_up(self.evaluator, net.has_wdl, net.has_moves_left, minibatch)  # about a second
            else:  # a first start: the search compiles in the background; isready does not wait
                prepare_backend(self.evaluator, minibatch)
                if bg is None:
                    self.note("compiling the search for this machine in the background (first start "
                              "only, about a minute); until then a go with a clock plays the policy move")
                    self._compile = Background(self.note)
                    self._compile.begin()
        except Exception as e:
            self._unload()
            if self._gpu_failed_at_start(e, backend.name, key[1]):
                return self.ensure_net()  # a smaller device batch, or the cpu (bounded: both only shrink)
            self.error(f"cannot start the search: {type(e).__name__}: {e}")
            return False
        self._loaded_key = key
        self.tree = None
        body = "attention body" if net.is_attention_body else "residual tower"
        self.note(f"Network loaded in {net_s:.2f}s: {body}, input format "
                  f"{net.input_format}, {'WDL' if net.has_wdl else 'value'}"
                  f"{', moves-left' if net.has_moves_left else ''}; backend {backend.name}")
        self.note(f"Search ready in {time.monotonic() - t1:.2f}s (batch sizes prepared, compiled search loaded)"
                  if compiled else f"Batch sizes prepared in {time.monotonic() - t1:.2f}s")
        return True

    def _open_backend(self, open_backend, path: str, name: str, options: str):
        """open_backend with the engine's GPU fault policy: after running out of GPU memory, halve the
        device batch (`max_batch`) down to MIN_GPU_BATCH; when the GPU still fails and Backend is
        `auto`, use the CPU and say so in an `info string`."""
        if self._on_cpu_fallback and name == "auto":
            return open_backend(path, backend="cpu", options=options)
        while True:
            try:
                return open_backend(path, backend=name, options=options, max_batch=self._max_batch_cap)
            except BackendError as e:
                if name == "cpu":
                    raise
                if isinstance(e, GpuOutOfMemoryError) and self._shrink_device_batch():
                    continue
                if name != "auto":
                    self._max_batch_cap = None  # not the batch's fault: the next attempt starts afresh
                    raise
                self._fall_back_to_cpu(e)
                return open_backend(path, backend="cpu", options=options)

    def _gpu_failed_at_start(self, error: BaseException, backend: str, requested: str) -> bool:
        """The GPU failed while preparing its batch sizes at `isready`: True (try again) when a smaller
        device batch is left to try after out-of-memory, or when `auto` may fall back to the cpu."""
        if not backend.startswith("rocm"):
            return False
        if isinstance(error, GpuOutOfMemoryError) and self._shrink_device_batch():
            return True
        if requested == "auto" and not self._on_cpu_fallback:
            self._fall_back_to_cpu(error)
            return True
        return False

    def _recover_from_fault(self) -> None:
        """After a search ended in a GPU fault: reopen the backend for this `go` (with half the device
        batch after running out of memory). Should the GPU fail again, `_open_backend` decides."""
        fault, self._backend_fault = self._backend_fault, None
        if fault is None or self.backend is None or not self.backend.name.startswith("rocm"):
            return
        shrunk = isinstance(fault, GpuOutOfMemoryError) and self._shrink_device_batch(quiet=True)
        note = f" with max_batch {self._max_batch_cap}" if shrunk else ""
        self.info_string(f"retrying on the GPU{note} after the last search's fault")
        self._unload()

    def _shrink_device_batch(self, quiet: bool = False) -> bool:
        """After the GPU ran out of memory: halve the device batch (max_batch, per device) down to
        MIN_GPU_BATCH. False when it is already there."""
        cap = self._max_batch_cap or _max_batch_option(self.opt("BackendOptions"))
        if cap <= MIN_GPU_BATCH:
            return False
        self._max_batch_cap = max(MIN_GPU_BATCH, cap // 2)
        if not quiet:
            self.info_string(f"GPU out of memory with max_batch {cap}; trying max_batch {self._max_batch_cap}")
        return True

    def _fall_back_to_cpu(self, error: BaseException) -> None:
        """Backend `auto` after the GPU failed: the cpu from now on (until the net settings change)."""
        self.info_string(f"the GPU backend failed ({one_line(error)}); using the cpu backend")
        self._on_cpu_fallback = True

    def _sync_evaluator(self) -> None:
        ev = self.evaluator
        ev.set_policy_temperature(self.opt("PolicyTemperature"))
        ev.set_cache_size(self.opt("NNCacheSize"))
        if ev.cache_history_length != self.opt("CacheHistoryLength"):
            ev.cache_history_length = self.opt("CacheHistoryLength")
            ev.cache.clear()
        ev.fill = self.opt("HistoryFill")

    def _unload(self) -> None:
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

    def _ensure_tablebases(self):
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
                self.error(str(problem))
            if self.tablebases is not None:
                self.note(f"Syzygy tablebases found: up to {self.tablebases.max_pieces} pieces")
        return self.tablebases

    def _game_ply(self) -> int:
        """The game ply lc0's time managers see (the start FEN's fullmove number plus the moves)."""
        from .search.timemgr import lc0_game_ply

        pos = self.position
        return lc0_game_ply(pos.history.board.root().fullmove_number, len(pos.moves))

    def _time_manager(self):
        """The TimeManager option's manager (made again when the option changes; its saved time
        lasts the game otherwise)."""
        from .search.timemgr import make_time_manager

        from .search.timemgr import engine_move_overhead_ms

        key = self.opt("TimeManager")
        overhead = engine_move_overhead_ms(self.opt("MoveOverheadMs"))  # our own latency kept back too
        if self.time_manager is None or key != self._tm_key:
            try:
                self.time_manager = make_time_manager(key, overhead)
            except ValueError as e:
                raise UciError(f"option TimeManager: {e}") from None
            self._tm_key = key
        self.time_manager.move_overhead_ms = overhead
        return self.time_manager

    # ---- search
    def _params(self, go: GoParams, black_to_move: bool):
        from .search.params import SearchParams, contempt_value, wdl_rescale_params

        o = self.opt
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
            contempt_mode=_contempt_mode(o("ContemptMode"), go, black_to_move),
            syzygy_fast_play=o("SyzygyFastPlay"), nps_limit=o("NodesPerSecondLimit"),
            ram_limit_mb=o("RamLimitMb"), solid_tree_threshold=o("SolidTreeThreshold"),
        )

    def _start_search(self, go: GoParams, received: Optional[float] = None) -> None:
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
                self.error(f"go searchmoves: {tok!r} is not a legal move here; ignored")
                continue
            searchmoves.append(move)
        tablebases = self._ensure_tablebases()
        params = self._params(go, black)
        if self.opt("ContemptMode") == "play" and go.infinite and params.wdl_rescale_diff != 0.0:
            self.info_string("WARNING: Contempt mode set to 'disable' as 'play' not supported for infinite search.")
        tm = self._time_manager()
        self._sync_evaluator()
        if self.tree is None:
            self.tree = NodeTree()
        start_key = f"{pos.fen or 'startpos'}|{pos.chess960}"
        self.tree.set_position(start_key, pos.moves, pos.history.last, chess960=pos.chess960)
        last = self._last_game
        if last is not None and not (last[0] == start_key and pos.moves[:len(last[1])] == last[1]):
            tm.new_game()  # lc0 makes a new time manager when a position does not continue the game
        self._last_game = (start_key, list(pos.moves))
        limits = tm.limits(go, self._game_ply(), black, tree_nodes=int(self.tree.root.n))
        self.go_params = go
        chess960 = pos.chess960
        aborted = self._search_aborted = threading.Event()

        def on_bestmove(best, ponder, _limits=limits):
            s = self.search
            if s is not None:
                tm.search_done(s.limits, (time.monotonic() - s.limits_origin) * 1000.0, total_nodes=s.root.n)
                if s.error is not None:
                    self.error(f"search failed: {type(s.error).__name__}: {s.error}")
                    if isinstance(s.error, (BackendError, MemoryError)):
                        self._backend_fault = s.error
            with self._bestmove_lock:
                if not aborted.is_set():
                    send_bestmove(best, ponder)

        def send_bestmove(best, ponder):
            if best is None:
                self.send("bestmove (none)")
            elif ponder is not None:
                self.send(f"bestmove {_uci(best, chess960)} ponder {_uci(ponder, chess960)}")
            else:
                self.send(f"bestmove {_uci(best, chess960)}")

        self.search = Search(
            self.tree, board, pos.history.first, self.evaluator, params, limits,
            has_wdl=self.net.has_wdl, has_mlh=self.net.has_moves_left, searchmoves=searchmoves,
            on_info=lambda lines: self._send_infos(lines, chess960),
            on_bestmove=on_bestmove,
            on_stats=lambda lines: [self.info_string(x) for x in lines],
            verbose_stats=bool(self.opt("VerboseMoveStats")),
            score_type=self.opt("ScoreType"),
            tablebases=tablebases, game_board=pos.history.board,
        )
        if received is not None:  # the time limits count from the `go`, not from the search's start
            self.search.limits_origin = min(self.search.limits_origin, received)
        self.search.start()

    def _send_infos(self, lines, chess960: bool) -> None:
        show_wdl = bool(self.opt("UCI_ShowWDL"))
        show_ml = bool(self.opt("UCI_ShowMovesLeft"))
        for info in lines:
            if info.comment:
                self.info_string(info.comment)
                continue
            parts = ["info", "depth", str(info.depth), "seldepth", str(info.seldepth), "time", str(info.time_ms),
                     "nodes", str(info.nodes), "score", info.score[0], str(info.score[1])]
            if show_wdl:
                parts += ["wdl", *map(str, info.wdl)]
            if show_ml and info.moves_left is not None:
                parts += ["movesleft", str(info.moves_left)]
            if info.nps is not None:
                parts += ["nps", str(info.nps)]
            parts += ["tbhits", str(info.tbhits)]
            if info.multipv is not None:
                parts += ["multipv", str(info.multipv)]
            parts += ["pv", *(_uci(m, chess960) for m in info.pv)]
            self.send(" ".join(parts))
        s = self.search
        if self.opt("LogLiveStats") and s is not None and s.running:
            for line in s.verbose_stats_lines():  # Nibbler's live move table
                self.info_string(line)

    def _stop_and_wait(self) -> None:
        s = self.search
        if s is not None and s.running:
            s.stop()
            s.wait()

    def _abort_and_wait(self) -> None:
        """Stop a running search without its bestmove (lc0's Search::Abort); a bestmove already
        being sent (the search ended on its own) still goes out, before this returns."""
        s = self.search
        if s is not None and s.running:
            with self._bestmove_lock:
                if self._search_aborted is not None:
                    self._search_aborted.set()
            s.stop()
            s.wait()


def _max_batch_option(options: str) -> int:
    """The max_batch a GPU backend opens with under these options (its default when absent or bad)."""
    from .backends.options import int_option, parse_backend_options
    from .backends.rocm import DEFAULT_MAX_BATCH

    try:
        return int_option(parse_backend_options(options), "max_batch", DEFAULT_MAX_BATCH)
    except BackendError:
        return DEFAULT_MAX_BATCH


def _contempt_mode(mode: str, go: GoParams, black_to_move: bool) -> str:
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


def _stdin_text() -> TextIO:
    """Standard input as UTF-8 text whatever the locale, with undecodable bytes replaced: one bad
    byte from a GUI must not end the engine."""
    try:
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace", newline=None,
                                line_buffering=False)
    except (AttributeError, ValueError):  # stdin replaced by an object without a byte buffer
        return sys.stdin


def _uci(move, chess960: bool) -> str:
    """UCI text of a move from our boards: e1g1 castling, or king-takes-rook in Chess960 mode."""
    return move.uci()


def _parse_position_960(fen: Optional[str], moves: list[str]):
    """History of a Chess960 game (castling given as king-takes-rook)."""
    import chess

    from .encoding.history import History

    text = chess.STARTING_FEN if fen is None else " ".join(fen.split())
    try:
        board = chess.Board(text, chess960=True)
    except ValueError as e:
        raise PositionError(f"invalid FEN '{text}': {' '.join(str(e).split())}") from None
    if not board.is_valid():
        raise PositionError(f"illegal FEN '{text}'")
    for n, tok in enumerate(moves, 1):
        try:
            board.push(board.parse_uci(tok))
        except ValueError:
            raise PositionError(f"illegal move '{tok}' (move {n}) in position '{board.fen()}'") from None
    return History.from_board(board)


def main(argv: Optional[list] = None) -> int:
    """`lc0-rocm [flags]`: lc0's flags (and its config file) set the options, then UCI on stdio."""
    try:
        settings, extra = eo.settings_from_command_line(sys.argv[1:] if argv is None else argv)
    except eo.OptionError as e:
        print(f"lc0-rocm: error: {e}", file=sys.stderr)
        return 2
    if extra["help"]:
        print(eo.help_text(extra["show_hidden"]))
        return 0
    try:
        engine = UciEngine(settings=settings)
    except (UciError, eo.OptionError) as e:
        print(f"lc0-rocm: error: {e}", file=sys.stderr)
        return 2
    return engine.run()
