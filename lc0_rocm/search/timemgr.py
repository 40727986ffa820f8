"""When a search stops: `go` parameters, lc0's "legacy" time manager and the chain of stoppers.

`GoParams` holds one optional field per UCI `go` keyword (times in milliseconds, as the protocol
sends them). `TimeManager.limits(go, ply, black_to_move)` turns them into a `SearchLimits` for one
search, following lc0's defaults (stoppers/legacy.cc and common.cc, read for the formulas):

- clock (wtime/btime, winc/binc, movestogo): the expected number of moves still to play comes from
  a log-logistic model of game length (median 51.5 moves, steepness 7), capped by movestogo; the
  remaining time plus the increments of those moves, less MoveOverheadMs, is split evenly; the first
  move of a game gets a bonus (1.8 + 0.25 per book ply, up to 12 plies); time a search did not use
  is saved and spent on the next move; the deadline never exceeds time - MoveOverheadMs.
- movetime: a deadline of movetime - MoveOverheadMs. `nodes`: visits in the tree (reused ones
  count). `depth`: average depth of the new playouts. `infinite` / `ponder`: none of the above
  intrinsic stops, only `stop` (or the explicit nodes/depth limits).
- smart pruning (SmartPruningFactor 1.33): stop once no other root move can catch the most
  visited one with the playouts still expected in the remaining time or node budget; also stop at
  once with a single legal move, a proven win, or at most one move that does not lose.

`Stopper.check(stats)` is called by the search after every batch; it returns True to stop and keeps
`remaining_playouts` up to date, which the search uses to skip hopeless root moves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

DEFAULT_MOVE_OVERHEAD_MS = 200
DEFAULT_SMART_PRUNING_FACTOR = 1.33
SMART_PRUNING_TOLERANCE_MS = 200
SMART_PRUNING_TOLERANCE_NODES = 300
NODE_LIMIT_MAX = 4_000_000_000


@dataclass
class GoParams:
    """One `go` command: every field optional, times in milliseconds (UCI units)."""

    wtime: Optional[int] = None
    btime: Optional[int] = None
    winc: Optional[int] = None
    binc: Optional[int] = None
    movestogo: Optional[int] = None
    depth: Optional[int] = None
    nodes: Optional[int] = None
    mate: Optional[int] = None
    movetime: Optional[int] = None
    infinite: bool = False
    ponder: bool = False
    searchmoves: list[str] = field(default_factory=list)


@dataclass
class SearchLimits:
    """What stops one search; None means "no such limit"."""

    deadline_ms: Optional[float] = None  # since the search started
    nodes: int = NODE_LIMIT_MAX  # visits in the tree, reused ones included
    depth: Optional[int] = None
    infinite: bool = False  # no intrinsic stops (smart pruning): infinite, ponder, mate
    hold_bestmove: bool = False  # go infinite / ponder: bestmove only after stop (or ponderhit)
    mate: Optional[int] = None  # go mate N: stop once a mate in <= N moves is proven
    from_clock: bool = False  # the deadline came from the clock (unused time is saved)


@dataclass
class IterationStats:
    """What the search reports to the stoppers after each batch."""

    time_ms: float = 0.0  # since the search started
    total_nodes: int = 0  # root N: new playouts + reused visits
    playouts: int = 0  # new playouts of this search
    batches: int = 0
    average_depth: float = 0.0
    edge_n: list[int] = field(default_factory=list)  # visits of each (allowed) root move
    win_found: bool = False
    num_losing_edges: int = 0
    may_resign: bool = True
    mate_depth: Optional[int] = None  # shortest proven mate (moves) among the root moves


def estimated_moves_to_go(ply: int, midpoint: float = 51.5, steepness: float = 7.0) -> float:
    """Median remaining moves of a game at `ply`, log-logistic model (lc0 legacy time manager)."""
    move = ply / 2.0
    return midpoint * math.pow(1 + 2 * math.pow(move / midpoint, steepness), 1 / steepness) - move


class TimeManager:
    """Per-game state of lc0's legacy time manager (saved time, first move of the game)."""

    def __init__(self, move_overhead_ms: int = DEFAULT_MOVE_OVERHEAD_MS):
        self.move_overhead_ms = move_overhead_ms
        self.first_move_bonus = 1.8
        self.book_ply_bonus = 0.25
        self.spend_saved_time = 1.0
        self.new_game()

    def new_game(self) -> None:
        self.first_move_of_game = True
        self.time_spared_ms = 0.0

    def limits(self, go: GoParams, ply: int, black_to_move: bool) -> SearchLimits:
        """The limits of the search this `go` starts (ply = half-moves played since the start)."""
        infinite = go.infinite or go.ponder or go.mate is not None
        lim = SearchLimits(infinite=infinite, hold_bestmove=go.infinite or go.ponder, mate=go.mate)
        if go.nodes is not None:
            lim.nodes = max(0, min(int(go.nodes), NODE_LIMIT_MAX))
        if go.depth is not None:
            lim.depth = int(go.depth)
        if go.movetime is not None and not infinite:
            lim.deadline_ms = float(go.movetime - self.move_overhead_ms)
        clock = self._clock_deadline(go, ply, black_to_move)
        if clock is not None:
            if lim.deadline_ms is None or clock < lim.deadline_ms:
                lim.deadline_ms = clock
                lim.from_clock = True
        return lim

    def _clock_deadline(self, go: GoParams, ply: int, black: bool) -> Optional[float]:
        time = go.btime if black else go.wtime
        if go.infinite or go.ponder or time is None:
            return None
        inc = go.binc if black else go.winc
        increment = max(0, inc) if inc is not None else 0
        movestogo = estimated_moves_to_go(ply)
        if go.movestogo is not None and 0 < go.movestogo < movestogo:
            movestogo = float(go.movestogo)
        total = max(0.0, time + increment * (movestogo - 1) - self.move_overhead_ms)
        squander = 0.0
        if self.time_spared_ms > 0:
            total = max(0.0, total - self.time_spared_ms)
            squander = self.time_spared_ms * self.spend_saved_time
            self.time_spared_ms -= squander
        this_move = total / movestogo
        if self.first_move_of_game:
            this_move *= 1.0 + self.first_move_bonus + self.book_ply_bonus * min(12, ply)
            self.first_move_of_game = False
        this_move += squander
        return float(min(int(this_move), time - self.move_overhead_ms))

    def search_done(self, limits: SearchLimits, elapsed_ms: float) -> None:
        """Save the unused part of a clock budget for the next move (lc0's piggy bank)."""
        if limits.from_clock and limits.deadline_ms is not None:
            self.time_spared_ms += limits.deadline_ms - elapsed_ms


class Stopper:
    """Decides after each batch whether the search is done (lc0's chained stoppers)."""

    def __init__(self, limits: SearchLimits, smart_pruning_factor: float = DEFAULT_SMART_PRUNING_FACTOR):
        self.limits = limits
        self.smart_pruning_factor = 0.0 if limits.infinite else smart_pruning_factor
        self.first_eval_time_ms: Optional[float] = None
        self.remaining_playouts: float = float("inf")  # hint for the search (root move pruning)
        self.reason = ""

    def check(self, s: IterationStats) -> bool:
        """True when the search should stop now; `reason` says why."""
        lim = self.limits
        self.remaining_playouts = float("inf")
        if s.total_nodes == 0:
            return False  # never before the root has been evaluated
        remaining_time_ms = float("inf")
        if lim.deadline_ms is not None:
            remaining_time_ms = lim.deadline_ms - s.time_ms
            if remaining_time_ms <= 0:
                self.reason = "time"
                return True
        if s.total_nodes >= lim.nodes:
            self.reason = "nodes"
            return True
        if self.smart_pruning_factor > 0:
            self.remaining_playouts = float(lim.nodes - s.total_nodes)
        if lim.depth is not None and s.average_depth >= lim.depth:
            self.reason = "depth"
            return True
        if lim.mate is not None and s.mate_depth is not None and s.mate_depth <= lim.mate:
            self.reason = "mate"
            return True
        return self._smart_pruning(s, remaining_time_ms)

    def _smart_pruning(self, s: IterationStats, remaining_time_ms: float) -> bool:
        factor = self.smart_pruning_factor
        if factor <= 0:
            return False
        if len(s.edge_n) == 1:
            self.reason = "only move"
            return True
        if len(s.edge_n) <= s.num_losing_edges + (0 if s.may_resign else 1):
            self.reason = "at most one move does not lose"
            return True
        if s.win_found:
            self.reason = "proven win"
            return True
        if s.playouts > 0 and self.first_eval_time_ms is None:
            self.first_eval_time_ms = s.time_ms
            return False
        if self.first_eval_time_ms is None or not s.edge_n:
            return False
        if s.time_ms < self.first_eval_time_ms + SMART_PRUNING_TOLERANCE_MS:
            return False
        nodes = s.playouts + SMART_PRUNING_TOLERANCE_NODES
        elapsed = s.time_ms - self.first_eval_time_ms
        nps = 1000.0 * nodes / elapsed + 1
        remaining = min(remaining_time_ms / 1000.0 * nps / factor, self.remaining_playouts / factor)
        self.remaining_playouts = remaining
        largest = second = 0
        for n in s.edge_n:
            if n > largest:
                largest, second = n, largest
            elif n > second:
                second = n
        if remaining < largest - second:
            self.reason = "smart pruning"
            return True
        return False
