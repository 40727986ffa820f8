"""Several search threads on one tree whose batch cycle never leaves compiled code (lc0's Threads > 1, with a
backend whose evaluation is compiled: lc0's random and trivial, and the GPU, each thread with a network
runner of its own whose captured graphs it launches from compiled code: backends/compiled_eval.py).

Each search thread makes one compiled call (search/core/cycle.py's `run_lane`: gather, evaluate, back
up, batch after batch, GIL released) and comes back to Python only when that call returns: a stop flag,
the tree or the NN cache needing room (grown here behind the search's `Gate`, then the call again),
its collision list too short, `go nodes` reached, nothing to pick for a while, or (a GPU lane) a batch
whose run size has no captured graphs yet (evaluated here the runner's own way, which captures them) or
whose HIP call failed (its visits taken back, the runtime's typed error raised). Python only starts,
stops and reports: the search's own thread wakes every WATCH_INTERVAL_S (and at once when a thread
has reached `go nodes`), asks the stoppers and sends the info lines from the counters the threads
publish (the stats words, read unlocked; the root report, read under the tree's shared lock: the
table in search/core/tree.py), hands the stoppers' remaining playouts (smart pruning) and `go nodes`
(changed by a ponderhit: the threads hold to the new one from the watcher's next look, within 5 ms) to
the threads, and sets F_HALT when the stoppers say stop. A `stop` reaches the threads directly (F_STOP).

Not for tablebases (probed in Python between gathering and backing up), NodesPerSecondLimit (a sleep
between batches) or a backend without a compiled evaluation: those keep `Search._lane_loop`.
"""

from __future__ import annotations

import queue
import threading
from typing import Optional

import numpy as np

from ..backends.compiled_eval import NO_GRAPH, CompiledEval
from .core import batch as bt
from .core import cycle as cy
from .core import team as tmw
from .core import worker as wk
from .core.packed_params import P_TB_PIECES

# lc0's watchdog (`Search::WatchdogThread`) waits 1-100 ms between its looks, and its search threads
# ask the stoppers after every batch themselves; ours cannot (the stoppers are Python), so the watcher
# is the only asker. 5 ms: a time limit is met within 5 ms (the hard deadline has its own watcher),
# `go nodes` is exact by the threads' reservation and wakes the watcher at once, and a look (the
# stoppers and, when it changed, an info line, under the tree's shared lock) costs ~0.1 ms of one core
# on the 2-core VM: 2 % of a core, where 1 ms would take a tenth of the core a search thread needs.
WATCH_INTERVAL_S = 0.005
IDLE_WAIT_S = 0.0002  # RC_IDLE: the others hold the tree's leaves in flight; back after this
NODES_WAIT_S = 0.001  # RC_NODES: the visits allowed are all taken; back after this (until the halt)


def compiled_cycle(search) -> Optional["CompiledLanes"]:
    """The compiled cycle for `search`'s threads, or None where batches must pass through Python."""
    if not _cycle_allowed(search):
        return None
    entries = search.ev.backend.compiled_lanes(len(search._lanes), search.minibatch)
    return None if entries is None else CompiledLanes(search, entries)


def has_compiled_cycle(search) -> bool:
    """Whether `search`'s one thread (Threads 0 on two cores) runs the compiled cycle: with a kernel on
    the host (random, trivial) one thread is faster there than through Python's batch loop
    (search/params.py's `search_threads`); a GPU's one thread keeps two batches in flight through
    Python instead (the card computes one while the thread gathers the next)."""
    return _cycle_allowed(search) and search.ev.backend.compiled_eval() is not None


def _cycle_allowed(search) -> bool:
    return search._packed[P_TB_PIECES] == 0 and search.params.nps_limit <= 0


class CompiledLanes:
    """The search threads of `Search._run_lanes` (its `_lanes`, `_gate`, `_halt`, lock words) running
    search/core/cycle.py's `run_lane`; `run_round` is one round (until the stoppers, a stop or an error)."""

    def __init__(self, search, entries: list[CompiledEval]):
        self.search = search
        self.entries = entries
        rows = search.minibatch
        # compact policies (row j: its legal moves' logits; cycle.run_lane), q, d, moves left
        self.outputs = [(np.zeros((rows, bt.MAX_MOVES), np.float32), np.zeros(rows, np.float32),
                         np.zeros(rows, np.float32), np.zeros(rows, np.float32)) for _ in entries]
        # each thread's fixed policy row if its kernel has one (CompiledEval.policy_row), else empty
        self.fixed = [np.zeros(0, np.float32) if e.policy_row is None else e.policy_row for e in entries]
        self.held = [np.zeros(cy.HELD_SIZE, np.int64) for _ in entries]
        self.wanted = [(np.zeros((search.minibatch, bt.MAX_MOVES), np.int32), np.zeros(search.minibatch, np.int32))
                       for _ in search._lanes]
        self.ctl = np.zeros(cy.CTL_SIZE, np.float64)
        self.room = np.zeros(cy.ROOM_SIZE, np.int64)
        self.wake = threading.Event()
        self.returns = np.zeros(cy.RC_EVAL + 1, np.int64)  # how often the threads came back, by code

    def run_round(self) -> None:
        s = self.search
        self.room[:] = s._lane_room()
        self._publish()
        self.teams = [[_TaskWorker(f"search-{k + 1}-task-{i + 1}") for i in range(len(lane.helper_work))]
                      for k, lane in enumerate(s._lanes)]
        threads = [threading.Thread(target=self._lane, args=(k,), name=f"search-{k + 1}", daemon=True)
                   for k in range(len(s._lanes))]
        for th in threads:
            th.start()
        try:
            self._watch()
        finally:
            s._halt.set()
            s._stop_flag[bt.F_HALT] = 1
            for th in threads:
                th.join()
            for team in self.teams:
                for h in team:
                    h.close()

    def _watch(self) -> None:
        """The search's own thread during a round: the stoppers and info lines, every WATCH_INTERVAL_S."""
        s = self.search
        while not s._halt.is_set() and not s._stopping():
            self.wake.clear()
            stop = s._locked(self._look)
            self._publish()
            if stop:
                s._halt_reason = stop
                return
            self.wake.wait(WATCH_INTERVAL_S)

    def _look(self) -> str:
        """The stoppers' answer and, when they let the search go on, an info line if one is due:
        one pass under the tree's shared lock."""
        s = self.search
        stop = s._check_stop()
        if not stop:
            s._maybe_send_info()
        return stop

    def _publish(self) -> None:
        """The stoppers' hint and `go nodes` (new after a ponderhit) for the threads' next batches."""
        s = self.search
        self.ctl[cy.C_REMAINING] = s.stopper.remaining_playouts
        self.ctl[cy.C_NODE_LIMIT] = float(min(s.limits.nodes, 2**62))

    def _lane(self, k: int) -> None:
        s = self.search
        lane = s._lanes[k]
        policy, q, d, m = self.outputs[k]
        want, nwant = self.wanted[k]
        e = self.entries[k]
        held = self.held[k]
        allowed, use_allowed = s._root_allowed()
        try:
            if e.host is not None:
                e.host.enter()
            while not s._halt.is_set():
                with s._gate.inside(s._lanes_have_room, s._make_room_for_lanes):
                    # the task workers start on the same arrays (the gate keeps them while this thread is
                    # inside) and return with run_lane (core/team.py)
                    seen = tmw.epoch(lane.team)
                    for h, w2 in zip(self.teams[k], lane.helper_work):
                        h.start((s.tree.arrays, s._packed, s.ev.cache.arrays, lane.slot.arrays, lane.work,
                                 s.ev.index_tables, e.kind, e.ints, e.words, e.floats, self.fixed[k], want, nwant,
                                 policy, q, d, m, e.has_mlh, w2, s._cache_lock, lane.team, seen))
                    try:
                        rc = cy.run_lane(s.tree.arrays, s.stats, s._packed, s.ev.cache.arrays, lane.slot.arrays,
                                         s._puct, allowed, use_allowed, self.ctl, s.minibatch, s._max_ooo,
                                         s._stop_flag, lane.work, lane.apply_work,
                                         s._edge_n, s._report, s._lock_word, s._cache_lock, s.ev.index_tables,
                                         e.kind, e.ints, e.words, e.floats, self.fixed[k], want, nwant, policy, q, d,
                                         m, e.has_mlh, self.room, held, lane.ctr, lane.team)
                    except BaseException:
                        tmw.quit_team(lane.team)  # the call never ran: its task workers wait for a job
                        raise
                    finally:
                        for h in self.teams[k]:
                            h.wait()
                    for h in self.teams[k]:
                        if h.error is not None:
                            raise h.error
                self.returns[rc] += 1
                if rc == cy.RC_STOP:
                    return
                if rc == cy.RC_EVAL:
                    self._held_batch(lane, e, held)
                if rc == cy.RC_WORK:
                    lane.work = wk.new_work(len(lane.work.out_node) - 16, 2 * len(lane.work.kept_node))
                elif rc == cy.RC_NODES:
                    self.wake.set()  # the watcher asks the stoppers now
                    s._halt.wait(NODES_WAIT_S)
                elif rc == cy.RC_IDLE:
                    s._halt.wait(IDLE_WAIT_S)
                # RC_ROOM: the gate makes room before the next call
        except BaseException as exc:
            if s.error is None:
                s.error = exc
            s._halt.set()
            s._stop_flag[bt.F_HALT] = 1
            self.wake.set()

    def _held_batch(self, lane, e: CompiledEval, held: np.ndarray) -> None:
        """RC_EVAL: the batch the thread still holds, evaluated the runner's own way (its run size had
        no graphs: this captures them) and applied; or, after a failed HIP call, its visits taken back
        and the runtime's typed error raised."""
        s = self.search
        slot = lane.slot
        slot.count = int(held[cy.H_COUNT])
        status = int(held[cy.H_STATUS])
        if status != NO_GRAPH:
            s._revert(slot, lane)
            raise e.host.error(status)
        try:
            out = e.host.evaluate_eager(slot.arrays.masks[: slot.count], slot.arrays.values[: slot.count])
        except BaseException:
            s._revert(slot, lane)
            raise
        s._apply(slot, out, lane)


class _TaskWorker:
    """A helper thread of one search thread (search/core/team.py): each `start` runs one compiled
    `cycle.run_helper` call on the arguments given, which returns when the search thread's `run_lane`
    does; `wait` waits for that. A call that fails (it cannot inside compiled code; a call with the
    wrong types would) leaves the work to the others: `team.stand_in` says done to every job, claiming
    none, so the search thread does that job's items itself."""

    def __init__(self, name: str):
        self._calls: queue.SimpleQueue = queue.SimpleQueue()
        self._done = threading.Semaphore(0)
        self.error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def start(self, args: tuple) -> None:
        self._calls.put(args)

    def wait(self) -> None:
        self._done.acquire()

    def close(self) -> None:
        self._calls.put(None)
        self._thread.join()

    def _serve(self) -> None:
        while True:
            args = self._calls.get()
            if args is None:
                return
            try:
                cy.run_helper(*args)
            except BaseException as exc:
                self.error = exc
                *_, team, seen = args  # run_helper's last two: the team word, the epoch it starts from
                tmw.stand_in(team, seen)
            finally:
                self._done.release()
