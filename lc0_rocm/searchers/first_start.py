"""A `go` before the first start's compile of the search is done (searchers/mcts.py starts it).

A `go` with a clock is answered at once with the network's policy move (one evaluation: lc0's
`go nodes 1`). Any other `go` becomes a `DeferredSearch`: it waits in its own thread (the UCI loop
keeps answering `stop`, `isready`, `quit`), sending an `info` line of the policy move and the
compile's progress every second, then runs the real search; should `stop` or `ponderhit` come
first, it answers with the policy move.
"""

from __future__ import annotations

import threading
import time
from typing import Optional

from ..errors import one_line
from ..search.limits import GoParams
from .base import GoReply


def has_clock(go: GoParams, board) -> bool:
    """Whether the `go` runs on a clock (movetime, or the side to move's time, and no ponder)."""
    import chess

    black = board.turn == chess.BLACK
    clock = go.movetime is not None or (go.btime if black else go.wtime) is not None
    return clock and not go.infinite and not go.ponder


def policy_answer(host, position, go: GoParams) -> tuple:
    """(the network's most likely move of the position, of `searchmoves` when given, or None
    without a legal move; the network's value in lc0's `centipawn` formula) after one
    evaluation, ScoreType WDL_mu's rescaling being compiled code."""
    from ..api import Evaluator
    from ..score import uci_score

    e = Evaluator(host.net, host.backend).evaluate(position.history.board)
    allowed = {m.lower() for m in go.searchmoves}
    moves = [m for m in e.policy if not allowed or m.uci() in allowed] or list(e.policy)
    d = e.wdl[1] if e.wdl is not None else 0.0
    return (moves[0] if moves else None), uci_score("centipawn", e.q, d, e.wdl is not None)


def answer_with_policy_move(searcher, position, go: GoParams, reply: GoReply) -> None:
    """The answer to a `go` before the compiled search is loaded: `policy_answer`'s move and
    score. The first legal move should that fail."""
    from .base import first_legal_move

    r = searcher.host.r
    try:
        t0 = time.monotonic()
        move, cp = policy_answer(searcher.host, position, go)
        r.info_string("the search is still being compiled (first start only): playing the network's policy move")
        if move is None:
            reply.bestmove(None, None)
            return
        ms = int((time.monotonic() - t0) * 1000)
        with reply.open() as wanted:
            if wanted:
                r.policy_move(move, cp, ms)
                r.bestmove(move, None)
    except Exception as e:  # the GUI still gets its bestmove
        r.error(f"search failed to start: {type(e).__name__}: {one_line(e)}")
        reply.bestmove(first_legal_move(position.board, go.searchmoves), None)


def compile_progress(searcher) -> str:
    """How far the first start's compile is: its time so far and the compiled functions the
    cache holds (numba writes an index file for each as it is compiled)."""
    from ..jit import cache_dir

    try:
        done = sum(1 for _ in cache_dir().glob("*.nbi"))
    except OSError:
        done = 0
    return (f"the search is being compiled for this machine (first start only): "
            f"{time.monotonic() - searcher.compile_started:.0f} s, {done} functions so far; "
            "the search starts when it is done")


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

    def __init__(self, searcher, position, go: GoParams, received: Optional[float], reply: GoReply):
        self.searcher, self.position, self.go, self.received, self.reply = searcher, position, go, received, reply
        self.real = None
        self.initial_visits = 0
        self.error: Optional[BaseException] = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="lc0-rocm-deferred-go", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        ready = self.searcher.compile.ready
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
                try:
                    self.real = self.searcher.new_search(self.position, self.go, self.received, self.reply)
                    self.real.start()
                except Exception as e:  # the GUI still gets its bestmove
                    self.real = None
                    self.searcher.host.failed_to_start(e, self.go)
        if stopped and not self.reply.aborted.is_set():  # an aborted go owes nothing
            answer_with_policy_move(self.searcher, self.position, self.go, self.reply)

    def _send_waiting_info(self, answer, t0: float):
        """One `info` line of the policy move and the compile's `info string` (not after an abort);
        `answer`: policy_answer's, evaluated on the first call (False when that failed)."""
        r = self.searcher.host.r
        if answer is None:
            try:
                answer = policy_answer(self.searcher.host, self.position, self.go)
            except Exception:  # the wait goes on without it: the search or `stop` answers the go
                answer = False
        with self.reply.open() as wanted:
            if not wanted:
                return answer
            if answer and answer[0] is not None:
                r.policy_move(answer[0], answer[1], int((time.monotonic() - t0) * 1000))
            r.info_string(compile_progress(self.searcher))
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
