"""The UCI engine: a blocking stdin loop, one search thread, answers on stdout.

Commands: uci, isready, setoption, ucinewgame, position (startpos | fen ... [moves ...]), go (wtime
btime winc binc movestogo nodes movetime depth mate infinite searchmoves ponder), stop, ponderhit,
quit (and `debug`, accepted and ignored). `go` starts a search thread and returns at once, `stop` never blocks, `isready` answers
readyok while a search runs. A `go` that arrives while a search runs aborts that search without a
bestmove, as lc0 v0.32.1 does (its new Search replaces the running one, whose destructor calls
Abort(), which marks the bestmove as sent): the one bestmove answers the last `go`. The network is
loaded on the first `isready` or `go` (and again after WeightsFile, Backend or BackendOptions
change), with `info string` progress.

Every line is handled in try/except: a malformed command, an illegal move in `position`, an
unknown option or a bad value is answered with `info string error: ...` and the loop goes on. A net
that cannot be loaded is reported the same way; `go` then answers `bestmove (none)`. End of input
is `quit`.

Options carry lc0's names and (where they mean the same) lc0's defaults; UCI has no float type, so
float options are declared `type string` as lc0 does. Differences from lc0: NNCacheSize defaults to
200000 (Python entries are larger), CacheHistoryLength to 7 (the whole network input is the cache
key; 0 gives lc0's current-position key), Threads 1 means "no pipelining" (any other value: the
next batch is gathered while the backend evaluates the current one). VerboseMoveStats and
LogLiveStats print lc0's per-move table, which Nibbler reads.
"""

from __future__ import annotations

import io
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, TextIO

import chess

from . import __version__
from .default_net import default_net_path
from .errors import Lc0RocmError, PositionError
from .search import score as sc
from .search.timemgr import GoParams, TimeManager

BACKEND_CHOICES = ("rocm-auto", "rocm", "rocm-fp16", "cpu")
HISTORY_FILL = ("no", "fen_only", "always")


class UciError(Lc0RocmError):
    """A malformed UCI command or a bad option value (answered with `info string error`)."""


# --------------------------------------------------------------------------------------------
# Options


@dataclass
class Option:
    """One UCI option: kind is check, spin, combo, string (floats are strings with a range)."""

    name: str
    kind: str
    default: object
    min: Optional[float] = None
    max: Optional[float] = None
    choices: tuple = ()
    is_float: bool = False
    value: object = None

    def __post_init__(self):
        self.value = self.default

    def declaration(self) -> str:
        default = self.default
        if self.kind == "check":
            default = "true" if default else "false"
        elif self.is_float:
            default = f"{default:.6f}"
        text = f"option name {self.name} type {self.kind} default {default}"
        if self.kind == "spin":
            text += f" min {int(self.min)} max {int(self.max)}"
        if self.kind == "combo":
            text += "".join(f" var {c}" for c in self.choices)
        return text

    def parse(self, raw: str):
        """The typed value of `raw`, or UciError naming the option, the value and what is allowed."""
        raw = raw.strip()
        if self.kind == "check":
            low = raw.lower()
            if low in ("true", "false"):
                return low == "true"
            raise UciError(f"option {self.name}: expected true or false, got {raw!r}")
        if self.kind == "spin" or self.is_float:
            try:
                v = int(raw) if self.kind == "spin" else float(raw)
            except ValueError:
                what = "an integer" if self.kind == "spin" else "a number"
                raise UciError(f"option {self.name}: expected {what}, got {raw!r}") from None
            if v != v or (self.min is not None and v < self.min) or (self.max is not None and v > self.max):
                raise UciError(f"option {self.name}: {raw} is out of range [{_num(self.min)}, {_num(self.max)}]")
            return v
        if self.kind == "combo":
            for c in self.choices:
                if c.lower() == raw.lower():
                    return c
            raise UciError(f"option {self.name}: {raw!r} is not one of {', '.join(self.choices)}")
        return raw


def _num(x) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def default_options() -> list[Option]:
    f = dict(kind="string", is_float=True)
    return [
        Option("WeightsFile", "string", str(default_net_path())),
        Option("Backend", "combo", "rocm-auto", choices=BACKEND_CHOICES),
        Option("BackendOptions", "string", ""),
        Option("Threads", "spin", 0, 0, 128),
        Option("MinibatchSize", "spin", 0, 0, 1024),
        Option("NNCacheSize", "spin", 200000, 0, 999999999),
        Option("CacheHistoryLength", "spin", 7, 0, 7),
        Option("CPuct", default=1.745, min=0.0, max=100.0, **f),
        Option("CPuctBase", default=38739.0, min=1.0, max=1e9, **f),
        Option("CPuctFactor", default=3.894, min=0.0, max=1000.0, **f),
        Option("FpuValue", default=0.330, min=-100.0, max=100.0, **f),
        Option("PolicyTemperature", default=1.359, min=0.1, max=10.0, **f),
        Option("SmartPruningFactor", default=1.33, min=0.0, max=10.0, **f),
        Option("MultiPV", "spin", 1, 1, 500),
        Option("MoveOverheadMs", "spin", 200, 0, 100000000),
        Option("HistoryFill", "combo", "fen_only", choices=HISTORY_FILL),
        Option("ScoreType", "combo", sc.DEFAULT_SCORE_TYPE, choices=sc.SCORE_TYPES),
        Option("VerboseMoveStats", "check", False),
        Option("LogLiveStats", "check", False),
        Option("Ponder", "check", False),
        Option("UCI_ShowWDL", "check", False),
        Option("UCI_ShowMovesLeft", "check", False),
        Option("UCI_Chess960", "check", False),
    ]


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
    board: chess.Board = field(repr=False, default=None)


class UciEngine:
    """Reads UCI commands from `inp`, writes answers to `out` (one search thread at a time)."""

    def __init__(self, inp: TextIO = None, out: TextIO = None, overrides: Optional[dict] = None):
        self.inp = inp if inp is not None else _stdin_text()
        self.out = out if out is not None else sys.stdout
        self._out_lock = threading.Lock()
        self._bestmove_lock = threading.Lock()  # orders a search's bestmove against its abort
        self._search_aborted: Optional[threading.Event] = None
        self.options = {o.name.lower(): o for o in default_options()}
        for name, value in (overrides or {}).items():
            if value is not None:
                self._set_option(name, str(value))
        self.net = None
        self.backend = None
        self.evaluator = None
        self._loaded_key = None
        self.position: Optional[_Position] = None
        self.position_error: Optional[str] = None
        self.tree = None
        self.search = None
        self.go_params: Optional[GoParams] = None
        self.time_manager = TimeManager(self.opt("MoveOverheadMs"))
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

    def info_string(self, text: str) -> None:
        for part in str(text).splitlines() or [""]:
            self.send(f"info string {part}")

    def error(self, text: str) -> None:
        self.info_string(f"error: {' '.join(str(text).split())}")

    def opt(self, name: str):
        return self.options[name.lower()].value

    # ---- the loop
    def run(self) -> int:
        while True:
            line = self.inp.readline()
            if not line:  # end of input
                self.cmd_quit("")
                return 0
            if self.handle(line) is False:
                return 0

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
        except Exception as e:  # never die on one bad line
            self.error(f"{cmd}: {type(e).__name__}: {e}")
        return None

    # ---- commands
    def cmd_uci(self, args: str) -> None:
        self.send(f"id name lc0-rocm {__version__}")
        self.send("id author the lc0-rocm authors (search and nets after The LCZero Authors)")
        for o in self.options.values():
            self.send(o.declaration())
        self.send("uciok")

    def cmd_isready(self, args: str) -> None:
        if self.search is None or not self.search.running:
            self.ensure_net()
        self.send("readyok")

    def cmd_setoption(self, args: str) -> None:
        name, value = parse_setoption(args)
        self._set_option(name, value)

    def _set_option(self, name: str, value: str) -> None:
        o = self.options.get(name.lower())
        if o is None:
            raise UciError(f"unknown option {name!r}")
        o.value = o.parse(value)
        if o.name == "MoveOverheadMs":
            self.time_manager.move_overhead_ms = o.value

    def cmd_ucinewgame(self, args: str) -> None:
        self._stop_and_wait()
        if self.evaluator is not None:
            self.evaluator.cache.clear()  # as lc0: a new game starts with an empty NN cache
        self.tree = None
        self.position = None
        self.position_error = None
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
        go = parse_go(args)  # a malformed go leaves a running search alone
        self._abort_and_wait()
        if self.position is None and self.position_error is not None:
            self.error(f"no position to search ({self.position_error})")
            self.send("bestmove (none)")
            return
        if self.position is None:
            self.position = self._parse_position(None, [])
        if not self.ensure_net():
            self.error("no network loaded; cannot search")
            self.send("bestmove (none)")
            return
        self._start_search(go)

    def cmd_stop(self, args: str) -> None:
        if self.search is not None:
            self.search.stop()

    def cmd_ponderhit(self, args: str) -> None:
        s = self.search
        if s is None or not s.running or self.go_params is None or not self.go_params.ponder:
            return
        go = GoParams(**{**self.go_params.__dict__, "ponder": False})
        board = self.position.board
        s.ponderhit(self.time_manager.limits(go, board.ply(), board.turn == chess.BLACK))

    def cmd_quit(self, args: str) -> bool:
        self._stop_and_wait()
        if self.evaluator is not None:
            self.evaluator.close()
        return False

    # ---- network
    def ensure_net(self) -> bool:
        """Load the network / create the backend if the options changed. False (reported) on failure."""
        from .backends.factory import create_backend, gpu_usable, head_options, parse_backend_options
        from .net.loader import load_net
        from .search.evaluator import NNEvaluator
        from .search.jit import is_compiled
        from .search.search import warm_up

        path = str(self.opt("WeightsFile"))
        backend_name = self.opt("Backend")
        backend_opts = self.opt("BackendOptions")
        key = (path, backend_name, backend_opts)
        if self._loaded_key == key and self.evaluator is not None:
            self._sync_evaluator()
            return True
        self._unload()
        try:
            self.info_string(f"Loading weights file from: {path}")
            t0 = time.monotonic()
            opts = parse_backend_options(backend_opts)
            net = load_net(path, **head_options(opts))
            name = backend_name
            if name == "rocm-auto":
                ok, why = gpu_usable()
                if not ok:
                    self.info_string(f"{why}; using the cpu backend")
                    name = "cpu"
            backend = create_backend(name, net, backend_opts)
        except (Lc0RocmError, OSError) as e:
            msg = getattr(e, "strerror", None) and f"{e.strerror}: {e.filename}" or str(e)
            self.error(f"cannot load network {path}: {msg.splitlines()[0] if msg else type(e).__name__}")
            return False
        except Exception as e:
            self.error(f"cannot load network {path}: {type(e).__name__}: {e}")
            return False
        self.net = net
        self.backend = backend
        self.evaluator = NNEvaluator(backend, net.input_format, self.opt("NNCacheSize"),
                                     self.opt("PolicyTemperature"))
        self._sync_evaluator()
        try:
            if not is_compiled():
                print("lc0-rocm: compiling the search for this machine (first start only, about a minute)",
                      file=sys.stderr, flush=True)
            warm_up(self.evaluator, net.has_wdl, net.has_moves_left, int(self.opt("MinibatchSize")))
        except Exception as e:
            self.error(f"cannot start the search: {type(e).__name__}: {e}")
            self._unload()
            return False
        self._loaded_key = key
        self.tree = None
        body = "attention body" if net.is_attention_body else "residual tower"
        self.info_string(f"Network loaded in {time.monotonic() - t0:.2f}s: {body}, input format "
                         f"{net.input_format}, {'WDL' if net.has_wdl else 'value'}"
                         f"{', moves-left' if net.has_moves_left else ''}; backend {backend.name}")
        return True

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

    # ---- search
    def _params(self):
        from .search.params import SearchParams

        return SearchParams(
            cpuct=self.opt("CPuct"), cpuct_base=self.opt("CPuctBase"), cpuct_factor=self.opt("CPuctFactor"),
            fpu_value=self.opt("FpuValue"), policy_temperature=self.opt("PolicyTemperature"),
            minibatch_size=self.opt("MinibatchSize"), smart_pruning_factor=self.opt("SmartPruningFactor"),
            multipv=self.opt("MultiPV"), pipeline=self.opt("Threads") != 1,
        )

    def _start_search(self, go: GoParams) -> None:
        from .search.search import Search
        from .search.tree import NodeTree

        pos = self.position
        board = pos.board
        searchmoves = []
        for tok in go.searchmoves:
            try:
                searchmoves.append(board.parse_uci(tok))
            except ValueError:
                self.error(f"go searchmoves: {tok!r} is not a legal move here; ignored")
        self._sync_evaluator()
        if self.tree is None:
            self.tree = NodeTree()
        start_key = f"{pos.fen or 'startpos'}|{pos.chess960}"
        self.tree.set_position(start_key, pos.moves, pos.history.last, chess960=pos.chess960)
        limits = self.time_manager.limits(go, board.ply(), board.turn == chess.BLACK)
        self.go_params = go
        chess960 = pos.chess960
        aborted = self._search_aborted = threading.Event()

        def on_bestmove(best, ponder, _limits=limits):
            s = self.search
            if s is not None:
                self.time_manager.search_done(s.limits, (time.monotonic() - s.limits_origin) * 1000.0)
                if s.error is not None:
                    self.error(f"search failed: {type(s.error).__name__}: {s.error}")
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
            self.tree, board, pos.history.first, self.evaluator, self._params(), limits,
            has_wdl=self.net.has_wdl, has_mlh=self.net.has_moves_left, searchmoves=searchmoves,
            on_info=lambda lines: self._send_infos(lines, chess960),
            on_bestmove=on_bestmove,
            on_stats=lambda lines: [self.info_string(x) for x in lines],
            verbose_stats=bool(self.opt("VerboseMoveStats")),
            score_type=self.opt("ScoreType"),
        )
        self.search.start()

    def _send_infos(self, lines, chess960: bool) -> None:
        show_wdl = bool(self.opt("UCI_ShowWDL"))
        show_ml = bool(self.opt("UCI_ShowMovesLeft"))
        for info in lines:
            parts = ["info", "depth", str(info.depth), "seldepth", str(info.seldepth), "time", str(info.time_ms),
                     "nodes", str(info.nodes), "score", info.score[0], str(info.score[1])]
            if show_wdl:
                parts += ["wdl", *map(str, info.wdl)]
            if show_ml and info.moves_left is not None:
                parts += ["movesleft", str(info.moves_left)]
            if info.nps is not None:
                parts += ["nps", str(info.nps)]
            parts += ["tbhits", "0"]
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


def _stdin_text() -> TextIO:
    """Standard input as UTF-8 text whatever the locale, with undecodable bytes replaced: one bad
    byte from a GUI must not end the engine."""
    try:
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace", newline=None,
                                line_buffering=False)
    except (AttributeError, ValueError):  # stdin replaced by an object without a byte buffer
        return sys.stdin


def _uci(move: chess.Move, chess960: bool) -> str:
    """UCI text of a move from our boards: e1g1 castling, or king-takes-rook in Chess960 mode."""
    return move.uci()


def _parse_position_960(fen: Optional[str], moves: list[str]):
    """History of a Chess960 game (castling given as king-takes-rook)."""
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


def main(overrides: Optional[dict] = None) -> int:
    return UciEngine(overrides=overrides).run()
