"""Stopping one search: lc0's chain of stoppers, asked after every batch.

`Stopper.check(stats)` is called by the search after every batch with an `IterationStats`; it
returns True to stop (and says why in `reason`) and keeps `remaining_playouts` up to date, which
the search uses to skip hopeless root moves. A time manager that watches the search itself (smooth)
hangs a per-search `SmoothStopper` on `SearchLimits.clock_stopper`, which `Stopper.check` consults
first, as lc0 puts the time manager's stopper first in its chain. Smart pruning (SmartPruningFactor
1.33): stop once no other root move can catch the most visited one with the playouts still expected
in the remaining time or node budget; also stop at once with a single legal move, a proven win, or
at most one move that does not lose.
"""

from __future__ import annotations

from typing import Optional

from .limits import (DEFAULT_SMART_PRUNING_FACTOR, SMART_PRUNING_TOLERANCE_MS, SMART_PRUNING_TOLERANCE_NODES,
                     IterationStats, SearchLimits, to_int64)


class _VisitsTrend:
    """Root visit counts at a few moments, to tell whether another move is catching up with the
    best one fast enough to overtake it before a given time (smooth.cc: VisitsTrendWatcher; its
    window update is reproduced as lc0 has it)."""

    def __init__(self, period_ms: float, bestmove_optimism: float, overtaker_optimism: float):
        self.period_ms = period_ms
        self.bestmove_optimism = bestmove_optimism
        self.overtaker_optimism = overtaker_optimism
        self.prev_t = self.cur_t = self.last_t = 0
        self.prev: list[int] = []
        self.cur: list[int] = []
        self.last: list[int] = []

    def update(self, t: int, visits: list[int]) -> None:
        if t <= self.last_t:
            return
        if not self.prev:
            self.prev, self.cur = list(visits), list(visits)
            self.prev_t = self.cur_t = t
        self.last_t = t
        self.last = list(visits)
        if self.cur_t + self.period_ms >= t:
            self.prev_t, self.prev = self.cur_t, self.cur
            self.cur, self.cur_t = list(self.last), self.last_t

    def best_may_be_overtaken(self, by_t: int) -> bool:
        if self.prev_t >= self.last_t or by_t <= self.last_t or not self.last:
            return False
        span = self.last_t - self.prev_t
        k = min(len(self.last), len(self.prev))
        rate = [(self.last[i] - self.prev[i]) / span for i in range(k)] + [0.0] * (len(self.last) - k)
        best = max(range(len(self.last)), key=lambda i: (self.last[i], -i))
        ahead = by_t - self.last_t
        best_then = self.last[best] + self.bestmove_optimism * rate[best] * ahead
        return any(self.last[i] + self.overtaker_optimism * rate[i] * ahead > best_then
                   for i in range(len(self.last)) if i != best)


class SmoothStopper:
    """The smooth manager's watcher of one search (smooth.cc: SmoothStopper). `Stopper.check`
    calls `check(stats)` after every batch; `SmoothTimeManager.search_done` calls `done`."""

    def __init__(self, manager: "SmoothTimeManager", deadline_ms: int, allowed_piggybank_ms: int):
        self.manager = manager
        self.game = manager.game
        self.deadline_ms = deadline_ms
        self.allowed_piggybank_ms = allowed_piggybank_ms
        self.forced_piggybank_ms = manager.force_piggybank_ms
        self.trend = _VisitsTrend(manager.trend_nps_update_period_ms, manager.bestmove_optimism,
                                  manager.overtaker_optimism)
        self.used_piggybank = False
        self.first_batch_ms: Optional[float] = None
        self.last_total_nodes = 0
        self.finished = False

    def check(self, s: IterationStats) -> tuple[bool, float, float]:
        """(stop now, time left in ms, nps estimate for smart pruning)."""
        elapsed = to_int64(s.time_ms)
        # lc0 starts its nps clock at the first look that finds new playouts (time 0 then)
        since_first_batch = 0
        if self.first_batch_ms is None:
            if s.playouts > 0:
                self.first_batch_ms = s.time_ms
        else:
            since_first_batch = to_int64(s.time_ms - self.first_batch_ms)
        self.last_total_nodes = s.total_nodes
        nps = self.manager.update_nps(since_first_batch, s.playouts)
        self.trend.update(elapsed, s.edge_n)
        with_piggybank = self.deadline_ms + self.allowed_piggybank_ms
        use_piggybank = (s.need_more_time or since_first_batch <= self.forced_piggybank_ms
                         or self.trend.best_may_be_overtaken(with_piggybank))
        limit = with_piggybank if use_piggybank else self.deadline_ms
        if use_piggybank and elapsed >= self.deadline_ms:
            self.used_piggybank = True
        return elapsed >= limit, float(limit - elapsed), nps

    def done(self, elapsed_ms: float, total_nodes: Optional[int] = None) -> None:
        if self.finished:
            return
        self.finished = True
        nodes = self.last_total_nodes if total_nodes is None else int(total_nodes)
        self.manager.update_end_of_move(to_int64(elapsed_ms), self.used_piggybank, self.deadline_ms, nodes)


class Stopper:
    """Decides after each batch whether the search is done (lc0's chained stoppers)."""

    def __init__(self, limits: SearchLimits, smart_pruning_factor: float = DEFAULT_SMART_PRUNING_FACTOR,
                 minimum_batches: int = 0):
        self.limits = limits
        self.smart_pruning_factor = 0.0 if limits.infinite else smart_pruning_factor
        self.minimum_batches = minimum_batches
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
        nps_hint: Optional[float] = None
        if lim.clock_stopper is not None:  # the time manager's own stopper comes first, as in lc0
            stop, remaining_time_ms, nps_hint = lim.clock_stopper.check(s)
            if stop:
                self.reason = "time"
                return True
        if lim.deadline_ms is not None:
            remaining_time_ms = min(remaining_time_ms, lim.deadline_ms - s.time_ms)
            if lim.deadline_ms - s.time_ms <= 0:
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
        return self._smart_pruning(s, remaining_time_ms, nps_hint)

    def _smart_pruning(self, s: IterationStats, remaining_time_ms: float, nps_hint: Optional[float] = None) -> bool:
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
        if nps_hint is not None:
            nps = nps_hint
        else:
            nodes = s.playouts + SMART_PRUNING_TOLERANCE_NODES
            elapsed = s.time_ms - self.first_eval_time_ms
            nps = 1000.0 * nodes / elapsed + 1
        remaining = min(remaining_time_ms / 1000.0 * nps / factor, self.remaining_playouts / factor)
        self.remaining_playouts = remaining
        if s.batches < self.minimum_batches:
            return False
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
