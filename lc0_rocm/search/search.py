"""One `go`: the search loop's control and its reports (lc0's `Search`, `src/search/classic/search.cc`).

Python keeps control; the per-playout work runs compiled (search/core/: `worker` and the picking,
extension and backup modules it calls). The reports are search/report.py's, the batch buffers and
the search threads' gate search/lanes.py's. In its own thread a `Search` repeats:
  1. gather a minibatch of leaves (`worker.gather`, GIL released) into one of a few batch buffers;
  2. hand it to the backend at once: an asynchronous backend (a GPU) then holds up to two batches
     while the next is gathered, a synchronous one computes on the evaluator's worker thread;
  3. collect the oldest batch, expand its leaves and back their values up (`backup.apply`);
  4. ask the `Stopper` (time, nodes, depth, smart pruning) whether to stop; send `info` lines.
Without pipelining (Threads 1) each batch is gathered, evaluated and applied before the next: then
the tree is lc0's visit for visit (tests/test_search.py). With Threads > 1 (and Threads 0 where
`params.search_threads` picks several) several threads share the tree instead, as lc0's search
threads do: each gathers, evaluates and applies batches of its own (`_run_lanes`,
search/core/shared_worker.py), and this one also asks the stoppers and sends the info lines; with
a backend whose evaluation is compiled (random, trivial) each thread's whole cycle is one compiled
call and this one only watches (search/compiled_lanes.py, search/core/cycle.py).

A `stop` before the root has been evaluated waits for that one evaluation, so the move played is
always one the search looked at. The best move is the most visited root child (shorter proven win /
longer proven loss first; equal visits: higher Q, then higher prior), so `go nodes 1` plays the move
of highest prior, like lc0.
"""

from __future__ import annotations

import functools
import threading
import time
from collections import deque
from typing import Callable, Optional

import chess
import numpy as np

from .. import score as sc
from ..board import rules
from ..encoding.history import PositionState
from ..encoding.outputs import POLICY_SIZE, NetOutputs
from . import report as rp
from .compiled_lanes import compiled_cycle, has_compiled_cycle
from .core import backup as bk
from .core import batch as bt
from .core import cycle as cy
from .core import pick as pk
from .core import shared_worker as sw
from .core import spinlock
from .core import worker as wk
from .core import counters as ct
from .core.counters import CTR_SIZE
from .core.packed_params import P_TB_PIECES
from .core.team import new_team
from .core.tree import M_ALONE, M_TOP
from .leaf_evaluator import LeafEvaluator
from .lanes import AutoInline, Gate, Lane, Slot
from .limits import IterationStats, SearchLimits
from .params import SearchParams, batches_in_flight, search_threads, suggested_minibatch, task_workers
from .report import InfoLine
from .stoppers import Stopper
from .tree import EDGES_PER_ROW, NodeTree, NodeView

DEADLINE_WATCH_MAX_WAIT_S = 0.1  # the deadline's watcher looks at least this often (lc0's kMaxWaitTimeMs)
INFO_MIN_INTERVAL_S = 1.0  # an info line at least this often while the best move is unchanged
_NO_STOP = np.zeros(bt.FLAGS_SIZE, dtype=np.int32)
NO_TEAM = new_team(0)  # batches gathered through Python: no task workers (those serve the compiled cycle)
_NO_OUTPUTS = NetOutputs(policy=np.zeros((0, POLICY_SIZE), np.float32), q=np.zeros(0, np.float32),
                         d=np.zeros(0, np.float32), wdl=None, mlh=None)


class Search:
    """One search from the root of `tree`; `run()` blocks, `start()` runs it in a thread. Built by
    search/factory.py's `new_search`."""

    def __init__(self, tree: NodeTree, root_board: chess.Board, first_state: PositionState,
                 evaluator: LeafEvaluator, params: SearchParams, limits: SearchLimits,
                 has_wdl: bool = True, has_mlh: bool = False,
                 searchmoves: Optional[list[chess.Move]] = None,
                 on_info: Optional[Callable[[list[InfoLine]], None]] = None,
                 on_bestmove: Optional[Callable[[Optional[chess.Move], Optional[chess.Move]], None]] = None,
                 on_stats: Optional[Callable[[list[str]], None]] = None,
                 verbose_stats: bool = False, score_type: str = sc.DEFAULT_SCORE_TYPE, tablebases=None,
                 game_board: Optional[chess.Board] = None, origin: Optional[float] = None):
        self.tree = tree
        self.board = root_board.copy(stack=False)
        self.first_state = first_state
        self.ev = evaluator
        self.params = params
        self.limits = limits
        self.stopper = Stopper(limits, params.smart_pruning_factor, params.smart_pruning_minimum_batches)
        self.has_wdl = has_wdl
        self.mlh_enabled = has_mlh
        self.root_filter = set(searchmoves or ())
        # lc0's MakeRootMoveFilter: without searchmoves, the tablebases may restrict the root (the
        # game's move stack, `game_board`, tells whether a position repeated since the last zeroing)
        self.tablebases = tablebases
        self._tb_hits_start = tablebases.hits if tablebases is not None else 0
        self.root_in_dtz = False
        if tablebases is not None and not self.root_filter:
            moves, self.root_in_dtz = tablebases.root_moves(game_board if game_board is not None else root_board,
                                                            params.syzygy_fast_play)
            self.root_filter = set(moves or ())
        self.on_info = on_info
        self.on_bestmove = on_bestmove
        self.on_stats = on_stats
        self.verbose_stats = verbose_stats
        self.score_type = score_type
        mb = params.minibatch_size or suggested_minibatch(evaluator.backend)
        self.minibatch = max(1, min(mb, evaluator.backend.max_batch))
        self.stats = np.zeros(bt.STATS_SIZE, dtype=np.int64)
        self._edge_n = np.zeros(bt.MAX_MOVES, dtype=np.int64)  # root children's visits (root_report)
        self._report = np.zeros(pk.REPORT_SIZE)  # the rest of root_report (pick.R_*)
        self._stop_flag = np.zeros(bt.FLAGS_SIZE, dtype=np.int32)  # read by the compiled gatherer (bt.F_*)
        self._stop = threading.Event()
        self._ponderhit = threading.Event()
        self._done = threading.Event()
        self._tb_lock = threading.Lock()  # the tablebases' probes, one thread at a time
        self._cache_lock = spinlock.new_lock()  # the NN cache's entries (compiled code)
        self._lanes: list[Lane] = []  # several search threads sharing the tree (see _run_lanes)
        self.compiled_lanes = None  # their batch cycle in compiled code (search/compiled_lanes.py), if so
        # each search thread's cycle counters (search/core/counters.py; tools/search_bench.py --counters):
        # set before `run`, read by `cycle_counts` after it
        self.cycle_counters = False
        self._thread: Optional[threading.Thread] = None
        self.start_time = time.monotonic()
        # the time limits count from `origin` (when the `go` came), not from the search's start
        self.limits_origin = self.start_time if origin is None else min(self.start_time, origin)
        self.first_batch_time: Optional[float] = None
        self._initial_visits = self.root.n
        self.gathers_while_evaluating = 0
        self.remaining_playouts = float("inf")
        self.bestmove: Optional[chess.Move] = None
        self.pondermove: Optional[chess.Move] = None
        self.stop_reason = ""
        self.error: Optional[BaseException] = None
        self._last_info_time = 0.0
        self._last_info_key = None
        self._packed = params.packed(has_mlh, evaluator.input_format, evaluator.fill, evaluator.cache_history_length)
        self.display = rp.display(params, self.board.turn == chess.BLACK)
        if tablebases is not None and not self.root_in_dtz:
            self._packed[P_TB_PIECES] = tablebases.max_pieces
        self._puct = _puct_table(params.cpuct, params.cpuct_base, params.cpuct_factor)
        legal = [m for m in self.root_filter if self.board.is_legal(m)]
        self._allowed = np.array([rules.move_to_code(self.board, m) for m in legal] or [-1], dtype=np.int16)
        self._use_allowed = bool(self.root_filter)

    # ---- counters (kept by the compiled worker)
    playouts = property(lambda self: int(self.stats[bt.S_PLAYOUTS]))
    batches = property(lambda self: int(self.stats[bt.S_BATCHES]))
    nn_evals = property(lambda self: int(self.stats[bt.S_NN_EVALS]))
    cache_hits = property(lambda self: int(self.stats[bt.S_CACHE_HITS]))
    collisions = property(lambda self: int(self.stats[bt.S_COLLISIONS]))
    descents = property(lambda self: int(self.stats[bt.S_DESCENTS]))
    cum_depth = property(lambda self: int(self.stats[bt.S_CUM_DEPTH]))
    max_depth = property(lambda self: int(self.stats[bt.S_MAX_DEPTH]))
    in_flight = property(lambda self: int(self.stats[bt.S_IN_FLIGHT]))

    def cycle_counts(self) -> np.ndarray:
        """[threads, counters.CTR_SIZE] int64: each search thread's cycle counters (zeros unless
        `cycle_counters` was set before `run`; none without several threads or the compiled cycle)."""
        rows = [lane.ctr for lane in self._lanes if len(lane.ctr)]
        return np.array(rows, np.int64).reshape(len(rows), CTR_SIZE)

    @property
    def initial_visits(self) -> int:
        """Visits the root had from earlier searches (tree reuse), less two-fold draws taken back."""
        return self._initial_visits - int(self.stats[bt.S_REVERTED])

    @property
    def tb_hits(self) -> int:
        """Tablebase probes that gave a result in this search (lc0's tbhits)."""
        tb = self.tablebases
        return 0 if tb is None else int(tb.hits - self._tb_hits_start)

    @property
    def root(self) -> NodeView:
        return self.tree.root

    # ---- control (any thread)
    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="search", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the search to finish; returns at once (bestmove follows from the search thread)."""
        self._stop.set()
        self._stop_flag[bt.F_STOP] = 1  # the one place that writes F_STOP

    def ponderhit(self, limits: SearchLimits) -> None:
        """The pondered move was played: continue with normal limits counted from now."""
        self.limits = limits
        self.limits_origin = time.monotonic()
        self.stopper = Stopper(limits, self.params.smart_pruning_factor, self.params.smart_pruning_minimum_batches)
        self._ponderhit.set()

    def wait(self, timeout: Optional[float] = None) -> bool:
        return self._done.wait(timeout)

    @property
    def running(self) -> bool:
        return not self._done.is_set()

    # ---- the search loop (search thread)
    def run(self) -> None:
        if self.limits.deadline_ms is not None or self.limits.hold_bestmove:  # ponder: a ponderhit sets one
            threading.Thread(target=self._watch_deadline, name="search-deadline", daemon=True).start()
        try:
            self._run()
        except BaseException as e:  # reported by the caller; a GUI still gets its bestmove
            self.error = e
        finally:
            try:
                self._finish()
            finally:
                self._done.set()

    def _watch_deadline(self) -> None:
        """lc0's Search::WatchdogThread, for the hard deadline: the stoppers are asked after each
        batch, so a batch still being evaluated when `limits.deadline_ms` passes would carry the
        search and its bestmove past it. This thread stops the search at the deadline instead (the
        batches in flight are dropped). A search holding its bestmove (ponder) waits for a ponderhit."""
        while True:
            lim = self.limits
            wait_s = DEADLINE_WATCH_MAX_WAIT_S  # limits and their origin may change (ponderhit)
            if lim.deadline_ms is not None and not lim.hold_bestmove:
                left_s = lim.deadline_ms / 1000.0 - (time.monotonic() - self.limits_origin)
                if left_s <= 0:
                    self.stop()
                    return
                wait_s = min(wait_s, max(left_s, 0.001))
            if self._done.wait(wait_s):
                return

    def _root_row(self) -> int:
        return self.tree.root_row

    def _stopping(self) -> bool:
        """`stop` arrived and the root has its evaluation (without one, lc0 still evaluates it)."""
        return self._stop.is_set() and self.tree.arrays.n[self._root_row()] > 0

    def _run(self) -> None:
        if self._root_is_finished():
            return
        async_backend = self.ev.backend.is_async
        pipeline = self.params.pipeline
        self._max_in_flight = batches_in_flight(self.params)
        cap = self.minibatch
        self._max_ooo = max(1, int(self.params.max_out_of_order_factor * self.minibatch))
        lanes = search_threads(self.params, self.ev.backend)
        # one search thread: visits in flight and new rows without atomics (core/tree.py's M_ALONE)
        self.tree.arrays.meta[M_ALONE] = int(lanes == 1)
        # Threads 0 where it keeps one thread (one core): with a compiled evaluation that thread runs the
        # compiled cycle too, not this loop's Python per batch (1.3-1.5x on the 2-core VM: docs/perf.md)
        if lanes > 1 or (self.params.threads == 0 and self.params.pipeline and has_compiled_cycle(self)):
            self._run_lanes(lanes)
            return
        self._slots = [Slot(cap) for _ in range(self._max_in_flight + 1)]
        self._in_flight: deque = deque()
        self._work = wk.new_work(max(cap, self._max_ooo), 64)
        self._apply_work = bk.new_apply_work()
        allowed, use_allowed = self._root_allowed()
        pk.root_report(self.tree.arrays, self._packed, allowed, use_allowed, self._edge_n, self._report)
        try:
            self._loop(pipeline, async_backend)
        finally:
            while self._in_flight:
                slot = self._in_flight.popleft()
                self._revert(slot)

    def _loop(self, pipeline: bool, async_backend: bool) -> None:
        stalled = False  # the last round gathered nothing and nothing is in flight
        # one batch at a time on a synchronous backend: nothing to overlap, so the search thread
        # evaluates it itself (handing it to the evaluator's thread and back cost more than the
        # random backend's whole evaluation on a loaded 2-core VM: docs/perf.md)
        inline = self._max_in_flight == 1 and not async_backend
        # Threads 0 (automatic) on a synchronous backend: the first AUTO_WATCH_BATCHES batches after
        # the root's go through the evaluator's thread and are timed; if the evaluations took under
        # AUTO_TRIAL_SHARE of that time (a cheap backend), as many batches are then evaluated inline,
        # one at a time, and the faster way (playouts per second) is kept for the rest of the search:
        # handing batches over costs more than the overlap gains on a busy host (docs/perf.md)
        auto = AutoInline(self.params.threads == 0 and not inline and not async_backend)
        # a root with visits from an earlier search: the stoppers are asked before the first gathering
        # (lc0's watchdog asks them as the search starts), so a deadline already past or a node limit
        # already reached answers without a batch
        ask_first = self.tree.arrays.n[self._root_row()] > 0
        while not self._stopping():
            if ask_first or (not pipeline and (self.playouts > 0 or stalled)):
                ask_first = False
                # lc0's order without pipelining: gather, evaluate, back up, then ask the stoppers, so
                # that no further gathering (and its out-of-order visits) happens after the last batch
                stop = self._check_stop()
                if stop or self._stopping():
                    if self._hold_until_stop_or_ponderhit(stop):
                        continue
                    return
            gathered = 0
            if len(self._in_flight) < self._max_in_flight and not self._stopping():
                if self._in_flight:
                    self.gathers_while_evaluating += 1
                slot = self._free_slot()
                gathered = self._gather(slot)
                if gathered and inline:
                    self._apply(slot, self.ev.backend.evaluate(slot.planes()))
                    inline = self._auto_choice(auto, 0.0, inline)
                    if self.params.nps_limit > 0:
                        self._throttle()
                elif gathered:
                    slot.pending = self.ev.submit(slot.planes())
                    self._in_flight.append(slot)
            if self._in_flight and (len(self._in_flight) >= self._max_in_flight or gathered == 0
                                    or not pipeline):
                slot = self._in_flight[0]
                out = slot.pending.result(self._stop if self.tree.arrays.n[self._root_row()] > 0 else None)
                if out is None:  # stopped while the network was busy: drop the batches
                    return
                self._in_flight.popleft()
                eval_s = slot.pending.eval_s
                self._apply(slot, out)
                inline = self._auto_choice(auto, eval_s, inline)
                if self.params.nps_limit > 0:
                    self._throttle()
            elif not self._in_flight and gathered == 0 and self.in_flight == 0 and self.root.n == 0:
                time.sleep(0.001)  # nothing to do yet (cannot normally happen)
            # nothing gathered, nothing pending: only the stoppers can end this (e.g. a node limit a
            # reused tree already reached), so the next round asks them first
            stalled = gathered == 0 and not self._in_flight
            root_n = int(self.tree.arrays.n[self._root_row()])
            if pipeline or root_n == 0:
                stop = self._check_stop() if root_n > 0 else ""
                if stop or self._stopping():
                    if self._hold_until_stop_or_ponderhit(stop):
                        continue
                    return
            self._maybe_send_info()

    # ---- several search threads on one tree (lc0's Threads > 1)
    def _run_lanes(self, count: int) -> None:
        """`count` search threads (this one and count - 1 more), each gathering, evaluating and backing
        up batches of its own on the shared tree (search/core/shared_worker.py) until the stoppers, a
        `stop` or an error end the search; `go infinite` and ponder then wait here as in `_loop`. With a
        compiled evaluation (search/compiled_lanes.py) every thread's cycle stays compiled and this one
        only watches: the stoppers, the info lines."""
        self._lock_word = spinlock.new_lock()
        self._gate = Gate()
        self._halt = threading.Event()
        self._halt_reason = ""
        self._in_flight = deque()
        helpers = task_workers(self.params, self.ev.backend, count)
        self._lanes = [Lane(self.minibatch, self._max_ooo, self.cycle_counters, helpers) for _ in range(count)]
        allowed, use_allowed = self._root_allowed()
        root_row = self._root_row()
        t = self.tree.arrays
        if t.n[root_row] > 0:  # a reused tree: its stale two-fold draws undone before threads pick together
            rows = int(t.meta[M_TOP]) - root_row + 1
            sw.revert_stale_two_folds(t, self.stats, root_row, np.zeros(rows, np.int64), np.zeros(rows, np.int64))
        pk.root_report(t, self._packed, allowed, use_allowed, self._edge_n, self._report)
        if t.n[root_row] > 0:  # visits from an earlier search: the stoppers first (see _loop)
            stop = self._check_stop()
            if stop and not self._hold_until_stop_or_ponderhit(stop):
                return
        first = self._lanes[0]
        while not self._stopping() and self.tree.arrays.n[root_row] == 0:  # the root alone, first
            try:
                if not self._lane_batch(first):
                    return
            except BaseException:
                if first.slot.count:  # the root's visit in flight off the tree
                    self._revert(first.slot, first)
                raise
        # a backend with a compiled evaluation: each thread's whole batch cycle in one compiled call
        self.compiled_lanes = compiled_cycle(self)
        while not self._stopping():
            self._halt.clear()
            self._halt_reason = ""
            self._stop_flag[bt.F_HALT] = 0  # no search thread runs: a new round (a `stop` stays in F_STOP)
            if self.compiled_lanes is not None:
                self.compiled_lanes.run_round()
            else:
                self._lanes_round()
            if self.error is not None:
                raise self.error
            if self._stopping() or not self._hold_until_stop_or_ponderhit(self._halt_reason):
                return

    def _lanes_round(self) -> None:
        """One round of the search threads through Python (`_lane_loop`), this one the main one."""
        helpers = [threading.Thread(target=self._lane_loop, args=(lane,), name=f"search-{k + 1}", daemon=True)
                   for k, lane in enumerate(self._lanes[1:])]
        for h in helpers:
            h.start()
        try:
            self._lane_loop(self._lanes[0], main=True)
        finally:
            self._halt.set()
            self._stop_flag[bt.F_HALT] = 1
            for h in helpers:
                h.join()

    def _lane_room(self) -> np.ndarray:
        """What every search thread inside the gate at once may take (search/core/cycle.py's `room`):
        a gathering's tree rows (EDGES_PER_ROW edges each: a batch's expansion too), two batches' cache
        entries each, and the cache's table at full size."""
        rows = len(self._lanes) * (self.minibatch + self._max_ooo + 16)
        return np.array([rows, rows * EDGES_PER_ROW, 2 * rows, self.ev.cache.slot_limit], np.int64)

    def _lanes_have_room(self) -> bool:
        """The compiled threads' own test (`cy.has_room`), so that the gate and they agree."""
        return bool(cy.has_room(self.tree.arrays, self.ev.cache.arrays, self._lane_room()))

    def _make_room_for_lanes(self) -> None:
        room = self._lane_room()
        self.tree.reserve(int(room[cy.R_ROWS]), int(room[cy.R_EDGES]))
        self.ev.cache.make_room(int(room[cy.R_ENTRIES]))

    def _lane_loop(self, lane: Lane, main: bool = False) -> None:
        """One search thread's batches until the search halts; the `main` one (this search's own thread)
        also asks the stoppers and sends the info lines after each of its batches (the others would
        only wait for the GIL and the tree's lock to do the same); the first error halts every thread."""
        try:
            while not self._halt.is_set() and not self._stopping():
                if not self._lane_batch(lane):
                    break
                if main:
                    stop = self._locked(self._check_stop)
                    if stop:
                        self._halt_reason = stop
                        self._halt.set()
                        self._stop_flag[bt.F_HALT] = 1
                        break
                    self._locked(self._maybe_send_info)
                if self.params.nps_limit > 0:
                    self._throttle()
        except BaseException as e:
            if self.error is None:
                self.error = e
            self._halt.set()
            self._stop_flag[bt.F_HALT] = 1
            if lane.slot.count:  # its virtual loss off the tree (a reused tree must not keep it)
                try:
                    self._revert(lane.slot, lane)
                except Exception:
                    pass

    def _lane_batch(self, lane: Lane) -> bool:
        """Gather, evaluate and back up one batch of `lane`; False when a stop came during the evaluation."""
        slot = lane.slot
        if self._gather(slot, lane) == 0:
            time.sleep(0.0002)  # the tree had nothing for this thread (all in flight): let the others run
            return True
        backend = self.ev.backend
        if backend.concurrent:
            out = backend.evaluate(slot.planes())
        else:
            slot.pending = self.ev.submit(slot.planes())
            out = slot.pending.result(self._stop if self.tree.arrays.n[self._root_row()] > 0 else None)
            if out is None:
                self._revert(slot, lane)
                return False
        self._apply(slot, out, lane)
        return True

    def _locked(self, read: Callable[[], object]):
        """`read()` holding the tree's lock (the stoppers' and info lines' view of a shared tree)."""
        sw.locked(self._lock_word)
        try:
            return read()
        finally:
            sw.released(self._lock_word)

    def _free_slot(self) -> Slot:
        busy = {id(s) for s in self._in_flight}
        for s in self._slots:
            if id(s) not in busy:
                return s
        raise RuntimeError("no free batch buffer")

    def _hold_until_stop_or_ponderhit(self, stop: str) -> bool:
        """The stoppers said stop: for go infinite / ponder the bestmove waits for `stop` or a
        ponderhit (True: a ponderhit gave new limits, search on); otherwise False (finish)."""
        if stop and self.limits.hold_bestmove and not self._stop.is_set():
            while self._in_flight:  # nothing half-done while waiting
                self._revert(self._in_flight.popleft())
            self._send_info()
            return self._wait_for_stop_or_ponderhit()
        return False

    def _wait_for_stop_or_ponderhit(self) -> bool:
        """Idle until `stop` (False) or a `ponderhit` that gives new limits (True: search on)."""
        while not self._stop.is_set():
            if self._ponderhit.is_set():
                self._ponderhit.clear()
                if self._check_stop():
                    if self.limits.hold_bestmove:
                        continue
                    return False
                return True
            self._stop.wait(0.005)
        return False

    def _root_is_finished(self) -> bool:
        """A root without legal moves (mate or stalemate) needs no search."""
        root = self.root
        return root.moves is None and root.n == 0 and not any(self.board.generate_legal_moves())

    # ---- gathering and applying (the compiled worker does the work)
    def _root_allowed(self):
        """(move codes of `searchmoves`, whether they restrict the root)."""
        return self._allowed, self._use_allowed

    def _auto_choice(self, auto: AutoInline, eval_s: float, inline: bool) -> bool:
        """After a batch under Threads 0: whether batches go on inline (and the batches in flight that
        follow from it) once `auto` has decided; `inline` unchanged until then."""
        if auto.watching and auto.batch_done(self.playouts, eval_s) is not None:
            inline = auto.inline
            self._max_in_flight = 1 if inline else batches_in_flight(self.params)
        return inline

    def _gather(self, slot: Slot, lane: Optional[Lane] = None) -> int:
        """Gather a batch into `slot`: the one search thread's (`lane` None), or a lane's when several
        search threads share the tree."""
        tree = self.tree
        root = self._root_row()
        cap = self.minibatch
        t = tree.arrays
        if self.params.exact_node_limit:
            cap = min(cap, self.limits.nodes - int(t.n[root]) - self.in_flight)
        if cap <= 0:
            slot.count = 0
            return 0
        self.remaining_playouts = self.stopper.remaining_playouts
        allowed, use_allowed = self._root_allowed()
        collisions_left = cy.collision_budget(self._packed, float(min(int(t.n[root]), self.remaining_playouts)))
        work = self._work if lane is None else lane.work
        if len(work.kept_node) < collisions_left + 2:
            work = wk.new_work(len(work.out_node) - 16, max(collisions_left + 2, 2 * len(work.kept_node)))
            if lane is None:
                self._work = work
            else:
                lane.work = work
        remaining = self.remaining_playouts
        # before the root has its evaluation a `stop` does not cut the gathering (the root is in it)
        stop_flag = self._stop_flag if t.n[root] > 0 else _NO_STOP
        grow = cap + self._max_ooo + 16
        if lane is None:
            tree.reserve(grow, grow * EDGES_PER_ROW)
            self.ev.cache.make_room(2 * grow)  # this gathering's and the batch in flight's entries
            count = wk.gather(tree.arrays, self.stats, self._packed, self.ev.cache.arrays, slot.arrays, self._puct,
                              allowed, use_allowed, float(remaining), cap, self._max_ooo, collisions_left,
                              int(min(self.limits.nodes, 2**62)), stop_flag, work, self._edge_n, self._report)
        else:
            with self._gate.inside(self._lanes_have_room, self._make_room_for_lanes):
                t0 = _stamp(lane)
                count = sw.gather_shared(tree.arrays, self.stats, self._packed, self.ev.cache.arrays, slot.arrays,
                                         self._puct, allowed, use_allowed, float(remaining), cap, self._max_ooo,
                                         collisions_left, int(min(self.limits.nodes, 2**62)), stop_flag, work,
                                         self._edge_n, self._report, self._lock_word, self._cache_lock,
                                         lane.ctr, NO_TEAM)
                _count_total(lane, t0)
        slot.count = int(count)
        if self._packed[P_TB_PIECES] > 0:
            self._probe_tablebases(slot)
        if slot.count == 0 and slot.arrays.dcount[0] > 0:
            self._apply(slot, None, lane)  # only terminals and cache hits kept in order (OutOfOrderEval off)
        return slot.count

    def _probe_tablebases(self, slot: Slot) -> None:
        """Probe the batch's tablebase candidates (lc0 does it in ExtendNode): a result makes the
        leaf a terminal when the batch is applied; a failed probe leaves it to the network."""
        b = slot.arrays
        t = self.tree.arrays
        with self._tb_lock:
            for j in np.flatnonzero(b.tb[:slot.count] == bt.TB_PENDING).tolist():
                node = int(b.node[j])
                board = rules.board_from_arrays(t.bbs[node], bool(t.black[node]), int(t.ep[node]),
                                                int(t.rule50[node]))
                r = self.tablebases.probe_leaf(board, self.root_in_dtz)
                b.tb[j] = 0 if r is None else bt.TB_RESULT + r

    def _apply(self, slot: Slot, out, lane: Optional[Lane] = None) -> None:
        if self.first_batch_time is None:
            self.first_batch_time = time.monotonic()
        tree = self.tree
        if out is None:
            out = _NO_OUTPUTS
        mlh = out.mlh if out.mlh is not None else out.q
        allowed, use_allowed = self._root_allowed()
        args = (np.ascontiguousarray(out.policy, dtype=np.float32), np.ascontiguousarray(out.q, dtype=np.float32),
                np.ascontiguousarray(out.d, dtype=np.float32), np.ascontiguousarray(mlh, dtype=np.float32),
                out.mlh is not None, self.ev.index_tables)
        if lane is None:
            tree.reserve(0, slot.count * EDGES_PER_ROW)
            wk.apply_batch(tree.arrays, self.stats, self._packed, self.ev.cache.arrays, slot.arrays, slot.count,
                           *args, self._apply_work, allowed, use_allowed, self._edge_n, self._report,
                           self._cache_lock)
        else:
            with self._gate.inside(self._lanes_have_room, self._make_room_for_lanes):
                t0 = _stamp(lane)
                sw.apply_shared(tree.arrays, self.stats, self._packed, self.ev.cache.arrays, slot.arrays, slot.count,
                                *args, False, lane.apply_work, allowed, use_allowed, self._edge_n, self._report,
                                self._lock_word, self._cache_lock, lane.ctr)
                _count_total(lane, t0)
        slot.count = 0
        slot.pending = None

    def _revert(self, slot: Slot, lane: Optional[Lane] = None) -> None:
        if slot.pending is not None:
            slot.pending.discard()
        if lane is None:
            bk.revert_batch(self.tree.arrays, self.stats, slot.arrays, slot.count)
        else:
            with self._gate.inside(lambda: True, lambda: None):
                sw.revert_shared(self.tree.arrays, self.stats, slot.arrays, slot.count, self._lock_word)
        slot.count = 0
        slot.pending = None

    # ---- stopping
    def _stats(self) -> IterationStats:
        """The stoppers' view of the search; the root's part comes from the compiled `root_report`
        that ended the last gathering or batch."""
        t = self.tree.arrays
        row = self._root_row()
        playouts = self.playouts
        s = IterationStats(
            time_ms=(time.monotonic() - self.limits_origin) * 1000.0,
            total_nodes=int(t.n[row]),
            playouts=playouts,
            batches=self.batches,
            average_depth=self.cum_depth / playouts if playouts else 0.0,
        )
        r = self._report
        ne = int(r[pk.R_EDGES])
        if ne >= 0:
            s.edge_n = self._edge_n[:ne].tolist()
            s.num_losing_edges = int(r[pk.R_LOSING])
            s.may_resign = r[pk.R_MAY_RESIGN] != 0.0
            if r[pk.R_WIN] != 0.0:
                s.win_found = True
                s.mate_depth = sc.mate_score(float(r[pk.R_WIN_M]), 1.0)
        return s

    def _throttle(self) -> None:
        """NodesPerSecondLimit: sleep until the playouts so far fit the limit (counted from the
        first batch, as lc0 counts nps)."""
        if self.first_batch_time is None:
            return
        ahead = self.playouts / self.params.nps_limit - (time.monotonic() - self.first_batch_time)
        if ahead > 0:
            self._stop.wait(min(ahead, 1.0))

    def memory_in_use(self) -> int:
        """Bytes of the tree in use plus the NN cache's arrays (what RamLimitMb limits)."""
        c = self.ev.cache.arrays
        return self.tree.bytes_in_use() + sum(a.nbytes for a in c)

    def _check_stop(self) -> str:
        t = self.tree.arrays
        row = self._root_row()
        if t.n[row] > 0 and t.first_edge[row] < 0 and t.term[row]:
            return "terminal"
        if self.params.ram_limit_mb > 0 and self.memory_in_use() >= self.params.ram_limit_mb * 1_000_000:
            self.stop_reason = "ram limit"
            return "ram limit"
        if self.stopper.check(self._stats()):
            self.stop_reason = self.stopper.reason
            return self.stopper.reason or "limit"
        return ""

    # ---- reporting (search/report.py)
    def info_lines(self) -> list[InfoLine]:
        return rp.info_lines(self)

    def _send_info(self) -> None:
        if self.on_info is None or self.root.n == 0:
            return
        lines = self.info_lines()
        if lines:
            self._last_info_time = time.monotonic()
            self.on_info(lines)

    def _maybe_send_info(self) -> None:
        t = self.tree.arrays
        row = self._root_row()
        if self.on_info is None or t.n[row] == 0 or t.first_edge[row] < 0:
            return
        best = int(self._report[pk.R_BEST])  # the root's best edge after the last batch (root_report)
        playouts = self.playouts
        depth = self.cum_depth // playouts if playouts else 0
        key = (best if best >= 0 else None, depth, self.max_depth)
        now = time.monotonic()
        if key != self._last_info_key or now - self._last_info_time >= INFO_MIN_INTERVAL_S:
            self._last_info_key = key
            self._send_info()

    def verbose_stats_lines(self) -> list[str]:
        """lc0's VerboseMoveStats table for the root (one string per move, best last, then the node)."""
        return rp.verbose_stats_lines(self)

    def _finish(self) -> None:
        root = self.root
        self.bestmove, self.pondermove = rp.best_and_ponder(self)
        # the reports must not keep the bestmove from the GUI (a net giving NaN makes scores fail)
        try:
            if root.n > 0 and self.on_info is not None:
                self._send_info()
            if self.verbose_stats and self.on_stats is not None:
                self.on_stats(self.verbose_stats_lines())
        except Exception as e:
            if self.error is None:
                self.error = e
        if self.on_bestmove is not None:
            self.on_bestmove(self.bestmove, self.pondermove)


def _stamp(lane: Lane) -> int:
    """A lane's cycle counter stamp before a compiled call from Python (0: not counting)."""
    return int(ct.now()) if len(lane.ctr) else 0


def _count_total(lane: Lane, t0: int) -> None:
    """The call since `t0` into the lane's K_TOTAL, as `run_lane` counts its own (search/core/counters.py)."""
    if len(lane.ctr):
        lane.ctr[ct.K_TOTAL] += int(ct.now()) - t0


@functools.lru_cache(maxsize=4)
def _puct_table(cpuct: float, base: float, factor: float) -> np.ndarray:
    """cpuct(N) * sqrt(N - 1) for N < 65536 (shared by the searches of the same settings)."""
    table = pk.puct_table(SearchParams(cpuct=cpuct, cpuct_base=base, cpuct_factor=factor).packed(False, 1, "no", 7))
    table.setflags(write=False)
    return table
