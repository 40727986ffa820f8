"""The UCI protocol: commands read from stdin (by a reader thread, into a queue), answers on stdout;
the work is the engine controller's (lc0_rocm.engine), which answers through `UciEngine`'s
responder methods (`infos`, `bestmove`, `error`, ...), formatted here as UCI lines.

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
ponder) waits for the compile in a thread of its own, sending an `info` line of the policy move
and an `info string` of the compile's progress every second, while the loop goes on answering
`stop`, `isready` and `quit` (a `stop` or `ponderhit` before the compile is done plays the policy move). A malformed command, an illegal move in `position`, an
unknown option or a bad value is answered with `info string error: ...` and the loop goes on; a net
that cannot be loaded is reported the same way and `go` then answers `bestmove (none)`. End of
input is `quit`. LogFile copies the dialogue to a file (`<stderr>`: to the console).

Options: `engine_options` (lc0's names, defaults and flags). Nothing heavy is imported before
`uciok`: chess, numpy, numba and the backends load on the first `isready`, `position` or `go`.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from typing import Callable, Optional, TextIO

from .version import __version__
from . import engine_options as eo
from .engine import MCTS, Engine, EngineError
from .errors import Lc0RocmError, one_line
from .search.limits import GoParams


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
    """Reads UCI commands from `inp`, writes answers to `out`; the engine controller (`engine`,
    lc0_rocm.engine) does the work and answers through this object (the `Responder`).

    `settings`: (option name, value) pairs from the command line (flags, config file), applied in
    order; `overrides`: the same as a dict (None values skipped); `algorithm`: the engine's search
    (lc0's instamove modes: "policyhead", "valuehead")."""

    def __init__(self, inp: TextIO = None, out: TextIO = None, overrides: Optional[dict] = None,
                 settings: Optional[list] = None, algorithm: str = MCTS):
        self.inp = inp if inp is not None else _stdin_text()
        self.out = out if out is not None else sys.stdout
        self._out_lock = threading.Lock()
        self.log = _Log()
        self.engine = Engine(self, algorithm)
        self.options = self.engine.options
        pairs = list(settings or []) + [(k, v) for k, v in (overrides or {}).items() if v is not None]
        for name, value in pairs:
            self._set_option(name, value)
        self.engine.configure([])  # WeightsFile <default>: the bundled net
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

    @property
    def backend(self):
        return self.engine.backend

    def ensure_net(self) -> bool:
        return self.engine.ensure_net()

    # ---- output (the engine's Responder)
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
        self.info_string(f"error: {one_line(text)}")

    def note(self, text: str) -> None:
        """A diagnostic for the person at the console (stderr), never on the UCI channel."""
        line = f"lc0-rocm: {text}"
        try:
            print(line, file=sys.stderr, flush=True)
        except (OSError, ValueError):
            pass
        if self.log.path != "<stderr>":
            self.log.write("##", line)

    def bestmove(self, best, ponder) -> None:
        if best is None:
            self.send("bestmove (none)")
        elif ponder is not None:
            self.send(f"bestmove {_uci(best)} ponder {_uci(ponder)}")
        else:
            self.send(f"bestmove {_uci(best)}")

    def infos(self, lines) -> None:
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
            parts += ["pv", *(_uci(m) for m in info.pv)]
            self.send(" ".join(parts))

    def instamove_info(self, result) -> None:
        self.send(instamove_info_line(result, bool(self.opt("UCI_ShowWDL"))))

    def policy_move(self, best, cp: int, ms: int) -> None:
        self.send(f"info depth 1 seldepth 1 time {ms} nodes 1 score cp {cp} pv {_uci(best)}")

    def opt(self, name: str):
        return self.engine.opt(name)

    # ---- the loop
    def run(self) -> int:
        """Answer commands until `quit` or the end of input. Lines are read by a thread of their own
        into a queue, so that nothing the engine does holds back reading the input."""
        lines = _queued_lines(self.inp)
        try:
            while True:
                line = lines.get()
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
        except (Lc0RocmError, eo.OptionError) as e:
            self.error(one_line(e))
        except Exception as e:  # never die on one bad line
            self.error(f"{cmd}: {type(e).__name__}: {one_line(e)}")
        return None

    # ---- commands
    def cmd_uci(self, args: str) -> None:
        self.send(f"id name lc0-rocm {__version__}")
        self.send("id author the lc0-rocm authors (search and nets after The LCZero Authors)")
        for line in self.engine.option_declarations():
            self.send(line)
        self.send("uciok")

    def cmd_isready(self, args: str) -> None:
        try:
            if not self.engine.searching:
                self.ensure_net()
        except Exception as e:  # reported; the GUI still gets its readyok (it waits for one)
            self.error(f"isready: {type(e).__name__}: {one_line(e)}")
        self.send("readyok")

    def cmd_setoption(self, args: str) -> None:
        name, value = parse_setoption(args)
        self._set_option(name, value)

    def _set_option(self, name: str, value) -> None:
        try:
            name, value = self.engine.set_option(name, value)
        except EngineError as e:
            raise UciError(str(e)) from None
        if name == "LogFile":
            self.log.open(value)

    def cmd_ucinewgame(self, args: str) -> None:
        self.engine.new_game()

    def cmd_position(self, args: str) -> None:
        self.engine.stop_and_wait()
        try:
            fen, moves = parse_position_command(args)
        except UciError as e:
            self.engine.no_position(one_line(e))
            raise
        self.engine.set_position(fen, moves)

    def cmd_go(self, args: str) -> None:
        received = time.monotonic()  # the clock counts from here, as the GUI's does
        try:
            go = parse_go(args)
        except UciError as e:
            if self.engine.searching:
                raise  # a malformed go leaves a running search alone: that search answers
            self.error(str(e))
            self.engine.fallback_bestmove()
            return
        self.engine.go(go, received)

    def cmd_stop(self, args: str) -> None:
        self.engine.stop()

    def cmd_ponderhit(self, args: str) -> None:
        self.engine.ponderhit()

    def cmd_quit(self, args: str) -> bool:
        self.engine.close()
        return False


def instamove_info_line(result, show_wdl: bool) -> str:
    """lc0's `info` line of an instamove search: depth 1, seldepth 1, nodes, the score (cp or mate)
    and, with UCI_ShowWDL, the WDL in permille."""
    parts = ["info depth 1 seldepth 1 nodes", str(result.nodes)]
    if result.mate is not None:
        parts += ["score mate", str(result.mate)]
    elif result.cp is not None:
        parts += ["score cp", str(result.cp)]
    if show_wdl and result.wdl is not None:
        parts += ["wdl", *map(str, result.wdl)]
    return " ".join(parts)


def _queued_lines(inp: TextIO) -> "queue.Queue[str]":
    """The lines of `inp` in a queue, read by a daemon thread ("" at the end of input, or when
    reading fails)."""
    lines: "queue.Queue[str]" = queue.Queue()

    def read() -> None:
        try:
            while True:
                line = inp.readline()
                lines.put(line)
                if not line:
                    return
        except (OSError, ValueError):
            lines.put("")

    threading.Thread(target=read, name="lc0-rocm-uci-input", daemon=True).start()
    return lines


def _stdin_text():
    """Standard input as UTF-8 lines whatever the locale, with undecodable bytes replaced: one bad
    byte from a GUI must not end the engine. Read from the file descriptor itself (`_FdLines`), so
    the reader thread holds no lock of Python's buffered stdin when the engine exits."""
    try:
        return _FdLines(sys.stdin.fileno())
    except (AttributeError, ValueError, OSError):  # stdin replaced by an object without a descriptor
        return sys.stdin


class _FdLines:
    """`readline()` over a file descriptor: UTF-8 (bad bytes replaced), \\r\\n and \\r read as \\n,
    "" at the end of input."""

    def __init__(self, fd: int):
        self.fd = fd
        self.buf = b""
        self.eof = False

    def readline(self) -> str:
        while b"\n" not in self.buf and not self.eof:
            try:
                chunk = os.read(self.fd, 65536)
            except InterruptedError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                self.eof = True
            # a \r\n split between two reads gives an extra empty line, which the loop skips
            self.buf = (self.buf + chunk).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        line, sep, self.buf = self.buf.partition(b"\n")
        return (line + sep).decode("utf-8", errors="replace")


def _uci(move) -> str:
    """UCI text of a move from our boards. The notation of castling is the board's: a position's
    board has its chess960 flag set from UCI_Chess960 (engine.Engine.set_position), so its moves and
    the search's come as e1g1, or as king-takes-rook in Chess960 mode, and print as they are."""
    return move.uci()


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
