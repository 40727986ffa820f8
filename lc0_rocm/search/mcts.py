"""PUCT Monte-Carlo tree search as lc0's classic search does it, on any `Backend`.

One `Search` runs one `go`: in its own thread it repeats
  1. gather a minibatch of leaves as lc0 0.32 does (GatherMinibatch / PickNodesToExtendTask): each
     pick sends several visits down from the root at once, every node handing its share to the
     child with the best PUCT score until another child would overtake it, adding the visits "in
     flight" on the way (virtual loss); visits that reach a leaf already waiting for the network
     are collisions (a budget that grows with the root's visits ends the gathering); terminal
     positions and NN-cache hits are evaluated out of order; with the same settings the tree is
     lc0's visit for visit (tests/test_search.py, MinibatchSize 1 and 16);
  2. while the backend evaluates that batch (an asynchronous backend such as the GPU through
     submit/collect, a synchronous one on the `NNEvaluator`'s worker thread), gather the next one;
     then expand the evaluated leaves and back their values up to the root;
  3. ask the `Stopper` (time, nodes, depth, smart pruning) whether to stop; send `info` lines.

PUCT (lc0 defaults): a child's score is Q + U with U = cpuct(N) * sqrt(N_children) * P / (1 + n),
cpuct(N) = CPuct + CPuctFactor * ln((N + CPuctBase) / CPuctBase); an unvisited child's Q is the
first-play-urgency value parent_Q - FpuValue * sqrt(sum of visited priors). Priors are the policy
softmax over the legal moves with PolicyTemperature (lc0's FastExp), stored with lc0's 16-bit
rounding and sorted high to low. With a moves-left head, lc0's M utility (prefer short wins, long
losses) is added once |Q| > 0.8.

Leaves need no python-chess board: positions are `PositionState` bitboards and legal moves come
from `movegen` (python-chess's order, checked against it); Chess960 keeps python-chess boards.

Terminal positions follow lc0's ExtendNode: checkmate and stalemate everywhere; below the root also
insufficient material, the 50-move rule, a threefold repetition, and a two-fold repetition whose
first occurrence lies inside the search (TwoFoldDraws); proven wins and losses propagate as bounds.

The best move is the most visited root child (shorter proven win / longer proven loss first; equal
visits: higher Q, then higher prior), so `go nodes 1` plays the move of highest prior, like lc0.
"""

from __future__ import annotations

import functools
import gc
import itertools
import math
import threading
import time
from heapq import heappush, heapreplace
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Optional

import chess
import numpy as np

from ..backends.base import Backend, NetOutputs
from ..encoding.history import History, PositionState
from ..encoding.packed import NUM_PLANES, PackedPlanes
from ..encoding.planes import encode_position_into
from ..encoding.policy_map import board_move_to_index
from . import score as sc
from .movegen import child_state, has_mating_material as state_has_mating_material
from .fast_encode import encode_row
from .movegen import MOVES, board_codes, index_tables
from .movegen import legal_moves as mg_legal_moves
from .node import DRAW, END_OF_GAME, LOSS, TWO_FOLD, WIN, Node, NodeTree
from .timemgr import IterationStats, SearchLimits, Stopper

MAX_OUT_OF_ORDER_FACTOR = 2.4  # lc0's MaxOutOfOrderEvalsFactor
SOLID_TREE_THRESHOLD = 100
BOARD_CACHE_VISITS = 32  # nodes with this many visits keep a board copy (~1 KB) for faster descents  # lc0's SolidTreeThreshold (only visible in VerboseMoveStats)
_fast_log = sc.fast_log_f64  # lc0 grows cpuct with its FastLog
PUCT_TABLE_SIZE = 1 << 16
ROW_BYTES = NUM_PLANES * 8  # one position's masks
RULE50_PLANE = 109
INFO_MIN_INTERVAL_S = 1.0  # an info line at least this often while the best move is unchanged
_NEG_INF = float("-inf")
_INT_MAX = 2**31 - 1


@dataclass
class SearchParams:
    """Search constants, named and defaulted as lc0's UCI options."""

    cpuct: float = 1.745
    cpuct_base: float = 38739.0
    cpuct_factor: float = 3.894
    fpu_value: float = 0.330  # FpuStrategy "reduction"; the root uses the same ("same")
    fpu_absolute: bool = False
    policy_temperature: float = 1.359
    minibatch_size: int = 0  # 0: the backend's suggestion (see `suggested_minibatch`)
    max_collision_visits: int = 80000  # lc0's MaxCollisionVisits and its scaling with the root's visits
    max_collision_visits_scaling_start: int = 28
    max_collision_visits_scaling_end: int = 145000
    max_collision_visits_scaling_power: float = 1.25
    exact_node_limit: bool = True  # never gather past `go nodes` (lc0 may overshoot by up to a batch)
    smart_pruning_factor: float = 1.33
    two_fold_draws: bool = True
    sticky_endgames: bool = True
    pipeline: bool = True  # gather the next batch while the backend evaluates this one
    multipv: int = 1
    moves_left_max_effect: float = 0.0345
    moves_left_threshold: float = 0.8
    moves_left_slope: float = 0.0027
    moves_left_constant_factor: float = 0.0
    moves_left_scaled_factor: float = 1.6521
    moves_left_quadratic_factor: float = -0.6521


def suggested_minibatch(backend: Backend) -> int:
    """Batch size used when MinibatchSize is 0: small on the CPU, larger on a GPU (capped by max_batch)."""
    preferred = getattr(backend, "preferred_batch", None)
    if not preferred:
        preferred = 16 if getattr(backend, "name", "") == "cpu" else 128
    return max(1, min(int(preferred), backend.max_batch))


def collision_budget(nodes: float, params: SearchParams) -> int:
    """lc0's CalculateCollisionsLeft: visits a gathering may lose to collisions, growing with the
    root's visits (`nodes`) from 1 (up to ScalingStart) to MaxCollisionVisits (from ScalingEnd)."""
    start, end = params.max_collision_visits_scaling_start, params.max_collision_visits_scaling_end
    if nodes >= end:
        return params.max_collision_visits
    if nodes <= start:
        return 1
    ratio = ((nodes - start) / (end - start)) ** params.max_collision_visits_scaling_power
    return int(math.floor(1 + (params.max_collision_visits - 1) * ratio + 0.5))


def has_mating_material(board: chess.Board) -> bool:
    """lc0's ChessBoard::HasMatingMaterial (queens count as rooks)."""
    if board.rooks or board.queens or board.pawns:
        return True
    if chess.popcount(board.occupied) < 4:
        return False
    if board.knights:
        return True
    bishops = board.bishops
    return bool(bishops & chess.BB_LIGHT_SQUARES) and bool(bishops & chess.BB_DARK_SQUARES)


def plies_since_repetition(state: PositionState) -> int:
    """Plies back to the previous occurrence of a repeated position (0 if it is not a repetition)."""
    if state.repetitions == 0:
        return 0
    p = state.prev
    steps = 1
    while p is not None:
        if steps >= 4 and steps % 2 == 0 and p.key == state.key:
            return steps
        p = p.prev
        steps += 1
    return 0


def _position_key(state: PositionState, history_length: int) -> tuple:
    """Cache key of the last `history_length` + 1 positions (board, side, castling, ep, repetitions).

    The tuple itself is the key: Python's hash of an int is the int modulo 2**61 - 1, so hashing
    bitboards (2 and 1 << 62 hash alike) would make distinct positions collide."""
    parts = []
    s = state
    for _ in range(history_length + 1):
        if s is None:
            break
        parts.append((s.key, s.repetitions))
        s = s.prev
    return tuple(parts)


# --------------------------------------------------------------------------------------------
# Network evaluation: encoding, cache, the worker thread


class CacheEntry:
    """A position's evaluation as the search needs it: legal moves sorted by prior, and values.

    `order` and `priors` are rows [a, b) of arrays shared by the whole batch it came from (sliced
    only when a cache hit needs them)."""

    __slots__ = ("_order", "_priors", "a", "b", "q", "d", "m")

    def __init__(self, order: np.ndarray, priors: np.ndarray, q: float, d: float, m: float,
                 a: int = 0, b: Optional[int] = None):
        self._order = order
        self._priors = priors
        self.a = a
        self.b = len(order) if b is None else b
        self.q, self.d, self.m = q, d, m

    @property
    def order(self) -> np.ndarray:
        """int16 permutation of the move generator's order, best prior first."""
        return self._order[self.a:self.b]

    @property
    def priors(self) -> np.ndarray:
        """float32 priors (lc0-rounded) in that order."""
        return self._priors[self.a:self.b]


class NNEvaluator:
    """Owns the backend, the NN cache and one worker thread running `backend.evaluate`."""

    def __init__(self, backend: Backend, input_format: int, cache_size: int = 200_000,
                 policy_temperature: float = 1.359):
        self.backend = backend
        self.input_format = input_format
        self.cache_size = max(0, int(cache_size))
        self.policy_temperature = policy_temperature
        self.fill = "fen_only"  # HistoryFill; part of the planes, hence of the cache key
        # What identifies a cached evaluation: 7 = the whole network input (exact); L < 7 = the last
        # L + 1 positions and their repetition counts (0 is lc0's key: the current position only).
        self.cache_history_length = 7
        self.cache: OrderedDict[object, CacheEntry] = OrderedDict()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nn-eval")

    def set_policy_temperature(self, t: float) -> None:
        if t != self.policy_temperature:
            self.policy_temperature = t
            self.cache.clear()

    def set_cache_size(self, n: int) -> None:
        self.cache_size = max(0, int(n))
        while len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)

    def lookup(self, key) -> Optional[CacheEntry]:
        e = self.cache.get(key)
        if e is not None:
            self.cache.move_to_end(key)
        return e

    def store(self, key, entry: CacheEntry) -> None:
        if self.cache_size == 0:
            return
        self.cache[key] = entry
        if len(self.cache) > self.cache_size:
            self.cache.popitem(last=False)

    def submit(self, planes: PackedPlanes) -> "Pending":
        """Start evaluating a batch: on the backend itself if it is asynchronous (a GPU queues the
        work and returns), else on the worker thread (numpy releases the GIL while it computes)."""
        backend = self.backend
        if getattr(backend, "is_async", False):
            return Pending(backend, backend.submit(planes), None)
        return Pending(backend, None, self._pool.submit(backend.evaluate, planes))

    def entries_from_outputs(self, out: NetOutputs, code_lists: list, blacks: list,
                             transforms: np.ndarray, expand: bool = False):
        """Cache entries for a batch: legal-move softmax, vectorised over the whole batch.

        code_lists[j]: the legal move codes (movegen) of position j, blacks[j]: black to move,
        transforms[j]: its canonical transform (policy indices come from movegen's tables).
        With `expand`: (entries, [(moves sorted by prior, their priors) per position])."""
        n = len(code_lists)
        counts = np.fromiter(map(len, code_lists), dtype=np.int64, count=n)
        total = int(counts.sum())
        rows = np.repeat(np.arange(n), counts)
        flat_codes = np.fromiter(itertools.chain.from_iterable(code_lists), dtype=np.int64, count=total)
        combo = np.fromiter(blacks, dtype=np.int64, count=n) * 8 + transforms[:n]
        tables = index_tables(np.unique(combo).tolist() if transforms[:n].any() else ())
        flat_idx = tables[combo[rows], flat_codes]
        logits = out.policy[rows, flat_idx].astype(np.float32)
        starts = np.zeros(n, dtype=np.int64)
        np.cumsum(counts[:-1], out=starts[1:])
        maxes = np.maximum.reduceat(logits, starts)
        inv_t = np.float32(1.0) / np.float32(self.policy_temperature)
        e = sc.fast_exp_array((logits - maxes[rows]) * inv_t)
        totals = np.add.reduceat(e, starts)  # sequential per segment, as lc0 sums
        scale = (np.float32(1.0) / totals).astype(np.float32)  # totals >= 1: the max term is exp(0)
        priors = sc.compress_prior((e * scale[rows]).astype(np.float32))
        order = np.lexsort((-priors, rows))  # per position: prior descending, ties in generator order
        local = (order - starts[rows]).astype(np.int16)  # rows stay in place: order[k] is in row rows[k]
        sorted_priors = priors[order]
        q = out.q.astype(np.float64).tolist()
        d = out.d.astype(np.float64).tolist()
        m = out.mlh.astype(np.float64).tolist() if out.mlh is not None else [0.0] * n
        st = starts.tolist()
        ends = (starts + counts).tolist()
        entries = [CacheEntry(local, sorted_priors, q[j], d[j], m[j], a, b) for j, (a, b) in enumerate(zip(st, ends))]
        if not expand:
            return entries
        moves = list(map(MOVES.__getitem__, flat_codes[order].tolist()))
        plist = sorted_priors.tolist()
        return entries, [(moves[a:b], plist[a:b]) for a, b in zip(st, ends)]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class Pending:
    """A batch on its way through the network: an asynchronous backend's handle or a worker future."""

    __slots__ = ("backend", "handle", "future", "collected")

    def __init__(self, backend: Backend, handle, future: Optional[Future]):
        self.backend = backend
        self.handle = handle
        self.future = future
        self.collected = False

    def done(self) -> bool:
        """False while the evaluation may still run (an asynchronous backend is not asked)."""
        return self.future.done() if self.future is not None else False

    def result(self, stop: threading.Event) -> Optional[NetOutputs]:
        """The outputs; None if `stop` is set while a worker thread still computes them."""
        if self.future is None:
            self.collected = True
            return self.backend.collect(self.handle)  # a device batch takes milliseconds: just wait
        while True:
            try:
                return self.future.result(timeout=0.005)
            except TimeoutError:
                if stop.is_set():
                    return None

    def discard(self) -> None:
        """Collect and drop an asynchronous batch nobody will use (frees the backend's buffers)."""
        if self.future is None and not self.collected:
            self.collected = True
            try:
                self.backend.collect(self.handle)
            except Exception:
                pass


# --------------------------------------------------------------------------------------------
# The search


class _Batch:
    """Leaves waiting for the network: their nodes, legal move codes, side to move, cache keys, planes."""

    __slots__ = ("nodes", "codes", "blacks", "keys", "masks", "values", "transforms", "future", "depths",
                 "mask_bytes")

    def __init__(self, capacity: int):
        self.nodes: list[Node] = []
        self.codes: list[list] = []  # legal move codes (movegen), generator order
        self.blacks: list[bool] = []
        self.keys: list = []
        self.depths: list[int] = []
        self.masks = np.zeros((capacity, NUM_PLANES), dtype=np.uint64)
        self.mask_bytes = memoryview(self.masks).cast("B")  # rows written as raw bytes (fast_encode)
        self.values = np.ones((capacity, NUM_PLANES), dtype=np.float32)
        self.transforms = np.zeros(capacity, dtype=np.int32)
        self.future: Optional[Pending] = None

    def __len__(self) -> int:
        return len(self.nodes)

    def planes(self) -> PackedPlanes:
        k = len(self.nodes)
        return PackedPlanes(self.masks[:k], self.values[:k], self.transforms[:k])


@dataclass
class EdgeInfo:
    """One root move as reported in `info`: move, visits, value (mover's view), proven state."""

    move: chess.Move
    n: int
    wl: float
    d: float
    m: float
    terminal: bool
    p: float


class Search:
    """One search from the root of `tree`; `run()` blocks, `start()` runs it in a thread."""

    def __init__(self, tree: NodeTree, root_board: chess.Board, first_state: PositionState,
                 evaluator: NNEvaluator, params: SearchParams, limits: SearchLimits,
                 has_wdl: bool = True, has_mlh: bool = False,
                 searchmoves: Optional[list[chess.Move]] = None,
                 on_info: Optional[Callable[[list["InfoLine"]], None]] = None,
                 on_bestmove: Optional[Callable[[Optional[chess.Move], Optional[chess.Move]], None]] = None,
                 on_stats: Optional[Callable[[list[str]], None]] = None,
                 verbose_stats: bool = False, score_type: str = sc.DEFAULT_SCORE_TYPE):
        self.tree = tree
        self.root = tree.root
        self.board = root_board.copy(stack=False)
        # Standard chess: positions, legal moves and terminal checks from bitboards (movegen);
        # Chess960: python-chess boards (slower).
        self._bitboards = not self.board.chess960
        self.first_state = first_state
        self.ev = evaluator
        self.params = params
        self.limits = limits
        self.stopper = Stopper(limits, params.smart_pruning_factor)
        self.has_wdl = has_wdl
        self.mlh_enabled = has_mlh
        self.root_filter = set(searchmoves or ())
        self.on_info = on_info
        self.on_bestmove = on_bestmove
        self.on_stats = on_stats
        self.verbose_stats = verbose_stats
        self.score_type = score_type
        mb = params.minibatch_size or suggested_minibatch(evaluator.backend)
        self.minibatch = max(1, min(mb, evaluator.backend.max_batch))
        self._max_limit = _INT_MAX
        self._puct_table: list[float] = []  # _puct(n) by n, filled as visits grow
        self._stop = threading.Event()
        self._ponderhit = threading.Event()
        self._done = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.start_time = time.monotonic()
        self.limits_origin = self.start_time
        self.first_batch_time: Optional[float] = None
        self.initial_visits = self.root.n
        self.playouts = 0
        self.batches = 0
        self.nn_evals = 0
        self.cache_hits = 0
        self.gathers_while_evaluating = 0
        self.descents = 0
        self.collisions = 0
        self.cum_depth = 0
        self.max_depth = 0
        self.in_flight = 0
        self.remaining_playouts = float("inf")
        self.bestmove: Optional[chess.Move] = None
        self.pondermove: Optional[chess.Move] = None
        self.stop_reason = ""
        self.error: Optional[BaseException] = None
        self._last_info_time = 0.0
        self._last_info_key = None

    # ---- control (any thread)
    def start(self) -> None:
        self._thread = threading.Thread(target=self.run, name="search", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the search to finish; returns at once (bestmove follows from the search thread)."""
        self._stop.set()

    def ponderhit(self, limits: SearchLimits) -> None:
        """The pondered move was played: continue with normal limits counted from now."""
        self.limits = limits
        self.limits_origin = time.monotonic()
        self.stopper = Stopper(limits, self.params.smart_pruning_factor)
        self._ponderhit.set()

    def wait(self, timeout: Optional[float] = None) -> bool:
        return self._done.wait(timeout)

    @property
    def running(self) -> bool:
        return not self._done.is_set()

    # ---- the search loop (search thread)
    def run(self) -> None:
        # The tree is a web of reference cycles (parent <-> children) that only grows during a
        # search; Python's cyclic collector would rescan it again and again (10-20 % of the time at
        # tens of thousands of nodes) and can free nothing in it. Off while searching, back after.
        # (Re-enabled after the bestmove is out: the first collection then may take a while.)
        gc_was_on = gc.isenabled()
        gc.disable()
        try:
            self._run()
        except BaseException as e:  # reported by the caller; a GUI still gets its bestmove
            self.error = e
        finally:
            try:
                self._finish()
            finally:
                self._done.set()
                if gc_was_on:
                    gc.enable()

    def _run(self) -> None:
        if self._root_is_finished():
            return
        self._pending: Optional[_Batch] = None
        self._next: Optional[_Batch] = None
        try:
            self._loop()
        finally:
            self._revert_batch(self._pending)
            self._revert_batch(self._next)
            self._pending = self._next = None

    def _loop(self) -> None:
        pipeline = self.params.pipeline
        while not self._stop.is_set():
            if not pipeline and self.playouts > 0:
                # lc0's order without pipelining: gather, evaluate, back up, then ask the stoppers, so
                # that no further gathering (and its out-of-order visits) happens after the last batch
                stop = self._check_stop()
                if stop or self._stop.is_set():
                    if self._hold_until_stop_or_ponderhit(stop):
                        continue
                    return
            if self._pending is not None and not self._pending.future.done():
                self.gathers_while_evaluating += 1
            self._next = self._gather()
            if self._pending is not None:
                out = self._wait_for(self._pending)
                if out is None:  # stopped while the network was busy: drop both batches
                    return
                if len(self._next) and not self._stop.is_set():
                    # the backend takes the next batch while this one is backed up (if the
                    # stoppers end the search now, that batch is dropped)
                    self._next.future = self.ev.submit(self._next.planes())
                self._apply(self._pending, out)
                self._pending = None
            stop = self._check_stop() if pipeline or self.root.n == 0 else ""
            if stop or self._stop.is_set():
                self._revert_batch(self._next)
                self._next = None
                if self._hold_until_stop_or_ponderhit(stop):
                    continue
                return
            if len(self._next):
                if self._next.future is None:
                    self._next.future = self.ev.submit(self._next.planes())
                self._pending, self._next = self._next, None
                if not pipeline:
                    out = self._wait_for(self._pending)
                    if out is None:
                        return
                    self._apply(self._pending, out)
                    self._pending = None
            elif self.in_flight == 0 and self.root.n == 0:
                time.sleep(0.001)  # nothing to do yet (cannot normally happen)
            self._maybe_send_info()

    def _hold_until_stop_or_ponderhit(self, stop: str) -> bool:
        """The stoppers said stop: for go infinite / ponder the bestmove waits for `stop` or a
        ponderhit (True: a ponderhit gave new limits, search on); otherwise False (finish)."""
        if stop and self.limits.hold_bestmove and not self._stop.is_set():
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
        if root.moves is None and root.n == 0:
            if not any(self.board.generate_legal_moves()):
                return True
        return False

    def _wait_for(self, batch: _Batch) -> Optional[NetOutputs]:
        """The batch's outputs, or None as soon as `stop` arrives (a worker thread finishes on its own)."""
        return batch.future.result(self._stop)

    # ---- gathering
    def _gather(self) -> _Batch:
        """Fill a batch as lc0's GatherMinibatch does: repeated multi-visit picks (`_pick_nodes`), each
        sending up to min(collisions left, room in the batch, out-of-order budget) visits down the tree
        at once. A picked leaf is extended: terminal positions and NN-cache hits are evaluated out of
        order (backed up right after the pick, newest first; if there were any, that pick's collisions
        are taken back) and end the gathering after MaxOutOfOrderEvalsFactor (2.4) x MinibatchSize of
        them; the rest go to the batch. Visits that run into a leaf already waiting for the network
        (collisions) keep their virtual loss until the batch is complete, so later picks spread out;
        the collision budget (1 visit up to 28 root visits, growing to 80000 at 145000, lc0's
        MaxCollisionVisits scaling) ends the gathering when spent."""
        root = self.root
        cap = self.minibatch
        if self.params.exact_node_limit:
            cap = min(cap, self.limits.nodes - root.n - self.in_flight)
        batch = _Batch(max(cap, 1))
        if cap <= 0:
            return batch
        self._prepare_root_pruning()
        max_ooo = max(1, int(MAX_OUT_OF_ORDER_FACTOR * self.minibatch))
        params = self.params
        collisions_left = collision_budget(min(root.n, self.remaining_playouts), params)
        kept: list = []  # collisions holding their virtual loss: [node, visits]
        ooo = 0
        stop = self._stop
        try:
            exact = params.exact_node_limit
            node_limit = self.limits.nodes
            while len(batch.nodes) < cap and ooo < max_ooo and not stop.is_set():
                limit = min(collisions_left, cap - len(batch.nodes), max_ooo - ooo)
                if exact:  # visits completed out of order count too: never past `go nodes`
                    room = node_limit - root.n - self.in_flight
                    if room <= 0:
                        break
                    if room < limit:
                        limit = room
                picks = self._pick_nodes(limit)
                self.descents += 1
                deferred: list = []
                for item in picks:
                    if item[2] == 0:  # a visit
                        node = item[0]
                        if node.n == 0 and not node.terminal:
                            self._extend(node, item[1], batch, deferred)
                        else:  # a terminal node visited again
                            deferred.append((node, item[1], None))
                if deferred:
                    # lc0 takes back all of this pick's collisions and backs the out-of-order visits up
                    # newest first
                    for item in picks:
                        if item[2] > 0:
                            self._cancel_path(item[0].parent, item[2])
                    for node, depth, entry in reversed(deferred):
                        if entry is None:
                            self._complete_visit(node, depth)
                        else:
                            self._backup(node, -entry.q, entry.d, entry.m, depth)
                    ooo += len(deferred)
                    continue
                done = False
                for item in picks:
                    visits = item[2]
                    if visits == 0:
                        continue
                    extra_max = item[3]
                    if extra_max > 0 and collisions_left > visits:  # grow it to end the gathering sooner
                        extra = min(extra_max, collisions_left) - visits
                        self._cancel_path(item[0].parent, -extra)
                        visits += extra
                    kept.append((item[0], visits))
                    self.collisions += visits
                    collisions_left -= visits
                    if collisions_left <= 0 or stop.is_set():
                        done = True
                        break
                if done:
                    break
        finally:
            for node, visits in kept:
                self._cancel_path(node.parent, visits)
        return batch

    def _prepare_root_pruning(self) -> None:
        root = self.root
        self._root_best_index = -1
        self.remaining_playouts = self.stopper.remaining_playouts
        if root.moves is None:
            return
        best = self._best_edges(root, 1, root_level=True)
        self._root_best_index = best[0] if best else -1

    def _pick_nodes(self, limit: int) -> list:
        """lc0's PickNodesToExtendTask from the root for `limit` visits: a list of (node, depth, 0, 0)
        for a visit to a leaf (a node never visited, or a terminal one) and (node, depth, k, max) for
        k visits that collided with a leaf already in flight (max > 0: may grow to that many)."""
        out: list = []
        root = self.root
        self._max_limit = _INT_MAX
        if root.n == 0 or root.terminal:
            cur = limit
            if not (root.n == 0 and root.n_in_flight > 0):
                root.n_in_flight += 1
                cur -= 1
                out.append((root, 1, 0, 0))
            if cur > 0:
                out.append((root, 1, cur, _INT_MAX if cur == limit else 0))
            return out
        root.n_in_flight += limit
        self._pick_level(root, limit, 1, True, limit, out)
        return out

    def _take_candidates(self, node, children, p, puct, fpu, m_on, skip, max_needed, started, util,
                         score, cand, last, first_unstarted):
        """Score children last+1, … into the candidate heap, up to the first one without visits
        started and one more (priors are sorted, so lc0's scan looks no further); returns the new
        (last, first_unstarted)."""
        while True:
            i = last + 1
            if i >= max_needed:
                break
            last = i
            if skip is not None and i in skip:
                continue
            c = children[i]
            if c is None:
                sc_i = p[i] * puct + fpu
            else:
                nv = c.n
                ns = started[i] = nv + c.n_in_flight
                if nv > 0:
                    q = c.wl
                    u = util[i] = q + self._m_utility(node, c, q) if m_on else q
                    sc_i = p[i] * puct / (1 + ns) + u
                else:
                    sc_i = p[i] * puct / (1 + ns) + fpu
            score[i] = sc_i
            heappush(cand, (-sc_i, i))
            if first_unstarted >= 0:
                break
            if started[i] == 0:
                first_unstarted = i
        return last, first_unstarted

    def _pick_level(self, node: Node, cur_limit: int, depth: int, is_root: bool, collision_limit: int,
                    out: list) -> None:
        """Distribute `cur_limit` visits over the children of an expanded non-terminal `node` by PUCT
        (each child gets visits until another child would score higher), then recurse into them.
        A single visit takes the fast path: a plain descent (same choices, no bookkeeping lists)."""
        params = self.params
        fpu_value = params.fpu_value
        fpu_absolute = params.fpu_absolute
        mlh = self.mlh_enabled
        m_threshold = params.moves_left_threshold
        table = self._puct_table
        skip = self._root_skip_set() if is_root else None
        # The estimate of visits before another child overtakes the best only matters for a
        # collision that takes every visit of the pick (lc0's max_limit): not once the pick split.
        want_estimate = collision_limit == 1
        while cur_limit == 1:
            p = node.p
            children = node.children
            vp = node.vp
            if vp is None:
                vp = 0.0
                for c in children:
                    if c is not None and c.n > 0:
                        vp += p[c.index]
                node.vp = vp
            wl = node.wl
            fpu = fpu_value if fpu_absolute else -wl - fpu_value * math.sqrt(vp)
            n = node.n
            puct = table[n] if n < len(table) else self._puct(n)
            m_on = mlh and (wl > m_threshold or -wl > m_threshold)
            max_needed = n + node.n_in_flight + 3
            if skip is not None and self.root_filter:
                max_needed = len(p)
            best = second = _NEG_INF
            best_i = -1
            has_second = False
            best_util = 0.0
            best_started = 0
            can_exit = False
            i = -1
            for c in children:
                i += 1
                if i == max_needed:
                    break
                if skip is not None and i in skip:
                    continue
                if c is None:
                    ns = 0
                    u = fpu
                else:
                    nv = c.n
                    ns = nv + c.n_in_flight
                    if nv > 0:
                        u = c.wl
                        if m_on:
                            u += self._m_utility(node, c, u)
                    else:
                        u = fpu
                sc_i = p[i] * puct / (1 + ns) + u
                if sc_i > best:
                    if best_i >= 0:
                        has_second = True
                    second = best
                    best = sc_i
                    best_i = i
                    best_util = u
                    best_started = ns
                elif sc_i > second:
                    second = sc_i
                    has_second = True
                if can_exit:
                    break
                if ns == 0:
                    can_exit = True
            if best_i < 0:  # every edge excluded (cannot happen: the best root move never is)
                self._cancel_path(node, 1)
                return
            if want_estimate and has_second and best_util < second:
                x = p[best_i] * puct / (second - best_util) - (best_started + 1) + 1
                estimate = 1 if x < 1.0 else (int(x) if x < 1e9 else 1000000000)
                if estimate < self._max_limit:
                    self._max_limit = estimate
            child = children[best_i]
            if child is None:
                child = Node(node, best_i)
                children[best_i] = child
            elif child.terminal == TWO_FOLD and depth < child.m:
                self._revert_two_fold(child, depth)
            depth += 1
            if child.n == 0 and child.n_in_flight > 0:  # collision
                mx = self._max_limit if (want_estimate and self._max_limit > 1) else 0
                out.append((child, depth, 1, mx))
                return
            child.n_in_flight += 1
            if child.n == 0 or child.terminal:
                out.append((child, depth, 0, 0))
                return
            node = child
            skip = None
        p = node.p
        children = node.children
        vp = node.vp
        if vp is None:  # sum of the priors of visited children, cached until one gets its first visit
            vp = 0.0
            for c in children:
                if c is not None and c.n > 0:
                    vp += p[c.index]
            node.vp = vp
        fpu = fpu_value if fpu_absolute else -node.wl - fpu_value * math.sqrt(vp)
        n = node.n
        puct = table[n] if n < len(table) else self._puct(n)
        m_on = mlh and abs(node.wl) > m_threshold
        max_needed = len(p)
        if skip is None or not self.root_filter:
            k = n + node.n_in_flight + cur_limit + 2
            if k < max_needed:
                max_needed = k
        # lc0 rescans the children for every share it hands out; here the children lc0's scan
        # would look at (up to the first one without visits started, and one more: priors are
        # sorted) are kept in a heap of (-score, index), so the best is its top and the second best
        # the better of the top's two children (ties: the lower index, as lc0's strict comparison).
        # Only the chosen child's score changes, and the set grows when the first unstarted child
        # gets started.
        started = [0] * max_needed
        util = [fpu] * max_needed
        score = [0.0] * max_needed
        cand: list = []
        last = -1  # highest index taken into `cand`
        first_unstarted = -1  # -1: none found yet among the taken ones
        # take children up to the first unstarted one and one more
        last, first_unstarted = self._take_candidates(
            node, children, p, puct, fpu, m_on, skip, max_needed, started, util, score, cand, last, first_unstarted)
        vtp = [0] * max_needed
        while cur_limit > 0 and cand:
            best_i = cand[0][1]
            best_util = util[best_i]
            nc = len(cand)
            if nc > 1:
                second = -(cand[1][0] if nc == 2 or cand[1] < cand[2] else cand[2][0])
                estimate = _INT_MAX
                if best_util < second:
                    x = p[best_i] * puct / (second - best_util) - (started[best_i] + 1) + 1
                    estimate = 1 if x < 1.0 else (int(x) if x < 1e9 else 1000000000)
                if estimate < self._max_limit:
                    self._max_limit = estimate
                new_visits = cur_limit if cur_limit < estimate else estimate
            else:
                new_visits = cur_limit
            child = children[best_i]
            if child is None:
                child = Node(node, best_i)
                children[best_i] = child
            elif child.terminal == TWO_FOLD and depth < child.m:
                self._revert_two_fold(child, depth)
            if child.n == 0 and child.n_in_flight > 0:
                # collision: nothing changes, so lc0's next rounds pick this child again and again
                # with the same estimate: every visit left waits at it (below)
                vtp[best_i] += cur_limit
                cur_limit = 0
                break
            vtp[best_i] += new_visits
            cur_limit -= new_visits
            child.n_in_flight += 1
            was_unstarted = started[best_i] == 0
            started[best_i] += 1
            new_visits -= 1
            if child.n > 0 and not child.terminal:
                child.n_in_flight += new_visits
                started[best_i] += new_visits
            else:
                vtp[best_i] -= 1
                out.append((child, depth + 1, 0, 0))
            sc_i = score[best_i] = p[best_i] * puct / (1 + started[best_i]) + util[best_i]
            heapreplace(cand, (-sc_i, best_i))
            if was_unstarted and best_i == first_unstarted:
                # the scan now reaches the next unstarted child and one more
                first_unstarted = -1
                j = best_i + 1
                while j <= last:  # children already taken after it
                    if not (skip is not None and j in skip) and started[j] == 0:
                        first_unstarted = j
                        break
                    j += 1
                last, first_unstarted = self._take_candidates(
                    node, children, p, puct, fpu, m_on, skip, max_needed, started, util, score, cand, last, first_unstarted)
        if cur_limit > 0:  # every edge excluded (cannot happen, see above): take the visits back
            self._cancel_path(node, cur_limit)
        for i in range(last + 1):
            k = vtp[i]
            if k > 0:
                child = children[i]
                if child.n == 0 or child.terminal:
                    mx = self._max_limit if (k == collision_limit and self._max_limit > k) else 0
                    out.append((child, depth + 1, k, mx))
                else:
                    self._pick_level(child, k, depth + 1, False, collision_limit, out)

    def _board_at(self, node: Node) -> chess.Board:
        """A fresh board of `node`'s position: the nearest ancestor's cached board (or the root's)
        plus the moves down to it; busy nodes on the way keep a copy for the next descents."""
        path = []
        n = node
        root = self.root
        while n is not root and n.board is None:
            path.append(n)
            n = n.parent
        board = (self.board if n is root else n.board).copy(stack=False)
        for m in reversed(path):
            board.push(m.parent.moves[m.index])
            if m is not node and m.n >= BOARD_CACHE_VISITS:
                m.board = board.copy(stack=False)
        return board

    def _puct(self, n: int) -> float:
        """cpuct(N) * sqrt(children visits) of a node with N visits; fills `_puct_table` up to N
        (for N < PUCT_TABLE_SIZE) so that later selections look it up."""
        params = self.params
        table = self._puct_table
        k = len(table) if n < PUCT_TABLE_SIZE else n
        while True:
            cpuct = params.cpuct
            if params.cpuct_factor:
                cpuct += params.cpuct_factor * _fast_log((k + params.cpuct_base) / params.cpuct_base)
            puct = cpuct * math.sqrt(k - 1 if k > 1 else 1)
            if k == n:
                if n < PUCT_TABLE_SIZE:
                    table.append(puct)
                return puct
            table.append(puct)
            k += 1

    def _root_skip_set(self) -> Optional[set]:
        """Root edges not to search: outside `searchmoves`, or hopeless under smart pruning."""
        root = self.root
        skip = None
        if self.root_filter:
            skip = {i for i, mv in enumerate(root.moves) if mv not in self.root_filter}
        rem = self.remaining_playouts
        bi = self._root_best_index
        if rem != float("inf") and bi >= 0:
            best_n = root.edge_n(bi)
            for i in range(len(root.moves)):
                if i != bi and rem < best_n - root.edge_n(i):
                    if skip is None:
                        skip = set()
                    skip.add(i)
        return skip

    def _m_utility(self, parent: Node, child: Node, q: float) -> float:
        params = self.params
        cap = params.moves_left_max_effect
        m = params.moves_left_slope * (child.m - parent.m)
        m = max(-cap, min(cap, m))
        m = -m if q > 0 or (q == 0 and math.copysign(1.0, q) > 0) else m  # FastSign(-q)
        thr = params.moves_left_threshold
        if 0.0 < thr < 1.0:
            q = max(0.0, abs(q) - thr) / (1.0 - thr)
        return m * (params.moves_left_constant_factor + params.moves_left_scaled_factor * abs(q)
                    + params.moves_left_quadratic_factor * q * q)

    def _extend(self, node: Node, depth: int, batch: _Batch, deferred: Optional[list] = None) -> int:
        """First visit of `node`: terminal check, NN cache, or a place in the batch (1). A terminal
        position or a cache hit is backed up at once (0), or, given `deferred`, appended there as
        (node, depth, cache entry or None) for the caller to back up."""
        is_root = node is self.root
        if self._bitboards:
            state = node.state
            if state is None:
                state = node.state = child_state(node.parent.state, node.parent.moves[node.index])
            codes, check = mg_legal_moves(state)
        else:  # Chess960: python-chess boards
            board = self.board if is_root else self._board_at(node)
            if node.state is None:
                node.state = PositionState.from_board(board, node.parent.state)
            state = node.state
            codes, check = board_codes(board)
        if not codes:
            node.make_terminal(WIN if check else DRAW)
            return self._terminal_visit(node, depth, deferred)
        if not is_root:
            result = self._draw_by_rule(state, depth)
            if result is not None:
                plies, kind = result
                node.make_terminal(DRAW, plies, kind)
                return self._terminal_visit(node, depth, deferred)
        j = len(batch.nodes)
        ev = self.ev
        black = state.black_to_move
        key = None
        if ev.cache_history_length < 7:
            key = _position_key(state, ev.cache_history_length)
            entry = ev.lookup(key)
            if entry is not None:
                return self._cache_hit(node, codes, entry, depth, deferred)
        row = encode_row(state, self.first_state, ev.input_format, ev.fill)
        if row is not None:
            raw, rule50, t = row
            if key is None:  # the whole network input is the key (SipHash of the bytes)
                key = hash((raw, rule50, black, state.ep_file))
                entry = ev.lookup(key)
                if entry is not None:
                    return self._cache_hit(node, codes, entry, depth, deferred)
            batch.mask_bytes[j * ROW_BYTES:(j + 1) * ROW_BYTES] = raw
            if rule50 != 1.0:
                batch.values[j, RULE50_PLANE] = rule50
        else:  # the general encoder (V2 formats, synthesized history, pawnless canonical positions)
            masks = batch.masks[j]
            values = batch.values[j]
            hist = History.__new__(History)
            hist.last = state
            hist.first = self.first_state
            hist._board = None
            t = encode_position_into(hist, ev.input_format, masks, values, ev.fill)
            if key is None:
                key = hash((masks.tobytes(), float(values[RULE50_PLANE]), black, state.ep_file))
                entry = ev.lookup(key)
                if entry is not None:
                    masks[:] = 0
                    values[:] = 1
                    return self._cache_hit(node, codes, entry, depth, deferred)
        batch.transforms[j] = t
        batch.nodes.append(node)
        batch.codes.append(codes)
        batch.blacks.append(black)
        batch.keys.append(key)
        batch.depths.append(depth)
        self.in_flight += 1
        return 1

    def _cache_hit(self, node: Node, codes: list, entry: CacheEntry, depth: int, deferred: Optional[list]) -> int:
        self._expand(node, codes, entry)
        self.cache_hits += 1
        if deferred is None:
            self._backup(node, -entry.q, entry.d, entry.m, depth)
        else:
            deferred.append((node, depth, entry))
        return 0

    def _terminal_visit(self, node: Node, depth: int, deferred: Optional[list]) -> int:
        if deferred is None:
            self._complete_visit(node, depth)
        else:
            deferred.append((node, depth, None))
        return 0

    def _draw_by_rule(self, state: PositionState, depth: int):
        """(plies_left, kind) if the position below the root is a draw by rule, else None."""
        if not state_has_mating_material(state):
            return 0.0, END_OF_GAME
        if state.rule50 >= 100:
            return 0.0, END_OF_GAME
        reps = state.repetitions
        if reps >= 2:
            return 0.0, END_OF_GAME
        if reps == 1 and self.params.two_fold_draws and depth - 1 >= 4:
            cycle = plies_since_repetition(state)
            if depth - 1 >= cycle:
                return float(cycle), TWO_FOLD
        return None

    @staticmethod
    def _expand(node: Node, codes: list, entry: CacheEntry) -> None:
        node.set_edges([MOVES[codes[k]] for k in entry.order.tolist()], entry.priors.tolist())

    def _complete_visit(self, node: Node, depth: int) -> None:
        """A visit that needs no network (terminal node): back it up now."""
        self._backup(node, node.wl, node.d, node.m, depth)

    def _cancel_path(self, node: Optional[Node], visits: int = 1) -> None:
        """Take `visits` visits in flight back from `node` and its ancestors (negative: add them)."""
        while node is not None:
            node.n_in_flight -= visits
            node = node.parent

    def _revert_batch(self, batch: Optional[_Batch]) -> None:
        if batch is None:
            return
        if batch.future is not None:
            batch.future.discard()
        for node in batch.nodes:
            self._cancel_path(node)
        self.in_flight -= len(batch.nodes)
        batch.nodes.clear()

    def _revert_two_fold(self, child: Node, depth: int) -> None:
        """A two-fold draw whose first occurrence is now above the root: undo it (tree reuse)."""
        wl, d, m, visits = child.wl, child.d, child.m, child.n
        counter = 0
        n = child
        while n is not None:
            n.revert_terminal_visits(wl, d, m + counter, visits)
            counter += 1
            if counter > depth:
                break
            n = n.parent
        child.make_not_terminal()
        self.initial_visits -= visits

    # ---- results
    def _apply(self, batch: _Batch, out: NetOutputs) -> None:
        if self.first_batch_time is None:
            self.first_batch_time = time.monotonic()
        entries, edges = self.ev.entries_from_outputs(out, batch.codes, batch.blacks, batch.transforms, expand=True)
        store = self.ev.store
        backup = self._backup
        for node, key, entry, (moves, priors), depth in zip(batch.nodes, batch.keys, entries, edges, batch.depths):
            store(key, entry)
            node.set_edges(moves, priors)
            backup(node, -entry.q, entry.d, entry.m, depth)
        self.nn_evals += len(batch.nodes)
        self.in_flight -= len(batch.nodes)
        self.batches += 1

    def _backup(self, node: Node, v: float, d: float, m: float, depth: int) -> None:
        """lc0's DoBackupUpdateSingleNode: values up to the root, proven results as bounds."""
        if node.v is None:
            node.v = v
        if node.n == 0 and node.parent is not None:
            node.parent.vp = None  # a child gets its first visit: the parent's visited policy changes
        sticky = self.params.sticky_endgames
        update_bounds = sticky and node.terminal != 0 and node.n == 0
        root = self.root
        if not update_bounds:
            # the common case (a network or cache value): no bounds to update, nothing to fix;
            # Node.finalize_score_update inlined
            n = node
            while True:
                if n.terminal:
                    v, d, m = n.wl, n.d, n.m
                n1 = n.n + 1
                n.wl += (v - n.wl) / n1
                n.d += (d - n.d) / n1
                n.m += (m - n.m) / n1
                n.n = n1
                n.n_in_flight -= 1
                p = n.parent
                if p is None or n is root:
                    break
                v = -v
                m += 1
                n = p
            self.playouts += 1
            self.cum_depth += depth
            if depth > self.max_depth:
                self.max_depth = depth
            return
        n_to_fix = 0
        v_delta = d_delta = m_delta = 0.0
        n = node
        while n is not None:
            p = n.parent
            if n.terminal:
                v, d, m = n.wl, n.d, n.m
            n.finalize_score_update(v, d, m)
            if n_to_fix > 0 and not n.terminal:
                n.adjust_for_terminal(v_delta, d_delta, m_delta, n_to_fix)
            if p is None or n is root:
                break
            if p.terminal:
                n_to_fix = 0
            if update_bounds and p is not root and not p.terminal:
                fix = self._maybe_set_bounds(p, m)
                update_bounds = fix is not None
                if fix is not None and fix[0] > 0:
                    n_to_fix, v_delta, d_delta, m_delta = fix
            else:
                update_bounds = False
            v = -v
            v_delta = -v_delta
            m += 1
            n = p
        self.playouts += 1
        self.cum_depth += depth
        if depth > self.max_depth:
            self.max_depth = depth

    @staticmethod
    def _maybe_set_bounds(p: Node, m: float):
        """Bounds of `p` from its children; makes it terminal when they meet. None: nothing set;
        else (n_to_fix, v_delta, d_delta, m_delta) with n_to_fix 0 when only bounds changed."""
        losing_m = 0.0
        lower = upper = LOSS
        children = p.children
        for i in range(len(p.moves)):
            c = children[i]
            if c is None:
                el, eu = LOSS, WIN
            else:
                el, eu = c.lower, c.upper
            if el > lower:
                lower = el
            if eu > upper:
                upper = eu
            if el == WIN:
                break
            if eu == LOSS and c is not None and c.n > 0 and c.m > losing_m:
                losing_m = c.m
        if lower == LOSS and upper == WIN:
            return None
        if lower == upper:
            n_to_fix = p.n
            cur_v, cur_d, cur_m = p.wl, p.d, p.m
            plies = (max(losing_m, m) if upper == LOSS else m) + 1.0
            p.make_terminal(-upper, plies, END_OF_GAME)
            return n_to_fix, -(p.wl - cur_v), p.d - cur_d, p.m - cur_m
        p.lower, p.upper = -upper, -lower
        return 0, 0.0, 0.0, 0.0

    # ---- stopping
    def _stats(self) -> IterationStats:
        root = self.root
        now = time.monotonic()
        s = IterationStats(
            time_ms=(now - self.limits_origin) * 1000.0,
            total_nodes=root.n,
            playouts=self.playouts,
            batches=self.batches,
            average_depth=self.cum_depth / self.playouts if self.playouts else 0.0,
        )
        if root.n > 0 and root.moves is not None:
            for c in root.children:  # all root moves, searchmoves or not (as lc0)
                n = c.n if c is not None else 0
                s.edge_n.append(n)
                if c is None or n == 0:
                    continue
                if c.terminal and c.wl > 0:
                    s.win_found = True
                    depth = sc.mate_score(c.m, 1.0)
                    if s.mate_depth is None or depth < s.mate_depth:
                        s.mate_depth = depth
                if c.terminal and c.wl < 0:
                    s.num_losing_edges += 1
                if c.wl > -0.98:
                    s.may_resign = False
        return s

    def _check_stop(self) -> str:
        if self.root.n > 0 and self.root.moves is None and self.root.terminal:
            return "terminal"
        if self.stopper.check(self._stats()):
            self.stop_reason = self.stopper.reason
            return self.stopper.reason or "limit"
        return ""

    # ---- reporting
    def _best_edges(self, node: Node, count: int, root_level: bool = False) -> list[int]:
        """Indices of the `count` best children in lc0's GetBestChildrenNoTemperature order."""
        if node.n == 0 or node.moves is None:
            return []
        idxs = range(len(node.moves))
        if root_level and self.root_filter:
            idxs = [i for i in idxs if node.moves[i] in self.root_filter]
        children = node.children
        p = node.p
        if count == 1:
            best = -1
            for i in idxs:
                if best < 0 or _prefer(children[i], p[i], children[best], p[best]) < 0:
                    best = i
            return [] if best < 0 else [best]
        order = sorted(idxs, key=functools.cmp_to_key(lambda a, b: _prefer(children[a], p[a], children[b], p[b])))
        return order[:count]

    def _edge_info(self, i: int) -> EdgeInfo:
        root = self.root
        c = root.children[i]
        if c is not None and c.n > 0:
            return EdgeInfo(root.moves[i], c.n, c.wl, c.d, c.m, bool(c.terminal), root.p[i])
        return EdgeInfo(root.moves[i], 0, -root.wl, root.d, 0.0, False, root.p[i])

    def _pv(self, i: int) -> list[chess.Move]:
        node = self.root
        pv = [node.moves[i]]
        node = node.children[i]
        while node is not None and node.n > 0 and node.moves is not None:
            best = self._best_edges(node, 1)
            if not best:
                break
            pv.append(node.moves[best[0]])
            node = node.children[best[0]]
        return pv

    def info_lines(self) -> list["InfoLine"]:
        root = self.root
        now = time.monotonic()
        elapsed_ms = int((now - self.start_time) * 1000)
        nps = None
        if self.first_batch_time is not None:
            ms = int((now - self.first_batch_time) * 1000)
            if ms > 0:
                nps = self.playouts * 1000 // ms
        depth = self.cum_depth // self.playouts if self.playouts else 0
        lines = []
        for k, i in enumerate(self._best_edges(root, max(1, self.params.multipv), root_level=True)):
            e = self._edge_info(i)
            if e.terminal and e.wl != 0:
                score = ("mate", sc.mate_score(e.m, e.wl))
            else:
                score = ("cp", sc.uci_score(self.score_type, e.wl, e.d, self.has_wdl))
            m = e.m if e.n > 0 else 1.0 + root.m  # lc0's default for an unvisited edge
            lines.append(InfoLine(
                depth=max(depth, 1), seldepth=self.max_depth, time_ms=elapsed_ms,
                nodes=self.playouts + self.initial_visits, score=score,
                wdl=sc.wdl_triplet(e.wl, e.d, self.score_type), nps=nps,
                multipv=k + 1 if self.params.multipv > 1 else None, pv=self._pv(i),
                moves_left=int((1.0 + m) / 2.0) if self.mlh_enabled else None))
        return lines

    def _send_info(self, force: bool = False) -> None:
        if self.on_info is None or self.root.n == 0:
            return
        lines = self.info_lines()
        if lines:
            self._last_info_time = time.monotonic()
            self.on_info(lines)

    def _maybe_send_info(self) -> None:
        if self.on_info is None or self.root.n == 0 or self.root.moves is None:
            return
        best = self._best_edges(self.root, 1, root_level=True)
        depth = self.cum_depth // self.playouts if self.playouts else 0
        key = (best[0] if best else None, depth, self.max_depth)
        now = time.monotonic()
        if key != self._last_info_key or now - self._last_info_time >= INFO_MIN_INTERVAL_S:
            self._last_info_key = key
            self._send_info()

    def verbose_stats_lines(self) -> list[str]:
        """lc0's VerboseMoveStats table for the root (one string per move, best last, then the node)."""
        root = self.root
        if root.moves is None:
            return []
        params = self.params
        vp = root.visited_policy()
        fpu = params.fpu_value if params.fpu_absolute else -root.wl - params.fpu_value * math.sqrt(vp)
        cpuct = params.cpuct
        if params.cpuct_factor:
            cpuct += params.cpuct_factor * _fast_log((root.n + params.cpuct_base) / params.cpuct_base)
        u_coeff = cpuct * math.sqrt(max(root.children_visits, 1))
        m_on = self.mlh_enabled and abs(root.wl) > params.moves_left_threshold
        rows = []
        for i in range(len(root.moves)):
            c = root.children[i]
            n = c.n if c is not None else 0
            nif = c.n_in_flight if c is not None else 0
            q = c.wl if (c is not None and n > 0) else fpu
            u = u_coeff * root.p[i] / (1 + n + nif)
            m = self._m_utility(root, c, q) if (m_on and n > 0) else 0.0
            rows.append((n, q + u, i, q, u, m, nif))
        rows.sort(key=lambda r: (r[0], r[1]))
        out = []
        for n, _, i, q, u, m, nif in rows:
            c = root.children[i]
            mv = root.moves[i]
            try:
                nn_index = board_move_to_index(self.board, mv, 0)
            except ValueError:
                nn_index = -1
            line = f"{_king_takes_rook(self.board, mv):<5} ({nn_index:<4}) N: {n:>7} (+{nif:>2}) (P: {_pct(root.p[i])}%) "
            line += _verbose_stats(c, q, solid=root.n >= SOLID_TREE_THRESHOLD)
            line += f"(U: {u:6.5f}) (S: {q + u + m:8.5f}) "
            line += _verbose_tail(c, 1)
            out.append(line)
        line = f"node  ({root.num_edges:>4}) N: {root.n:>7} (+{root.n_in_flight:>2}) (P: {_pct(vp)}%) "
        line += _verbose_stats(root, fpu, sign=-1) + _verbose_tail(root, -1)
        out.append(line)
        return out

    def _finish(self) -> None:
        root = self.root
        best = self._best_edges(root, 1, root_level=True) if root.moves is not None else []
        if best:
            i = best[0]
            self.bestmove = root.moves[i]
            c = root.children[i]
            if c is not None and c.n > 0 and c.moves is not None and c.n > 0:
                pb = self._best_edges(c, 1)
                if pb:
                    self.pondermove = c.moves[pb[0]]
        elif root.moves is None and root.n == 0:
            # Root never expanded (no legal moves, or stopped before the first evaluation).
            legal = list(self.board.legal_moves)
            if self.root_filter:
                legal = [m for m in legal if m in self.root_filter] or legal
            self.bestmove = legal[0] if legal else None
        if root.n > 0 and self.on_info is not None:
            self._send_info(force=True)
        if self.verbose_stats and self.on_stats is not None:
            self.on_stats(self.verbose_stats_lines())
        self.tree_elapsed_ms = (time.monotonic() - self.start_time) * 1000.0
        if self.on_bestmove is not None:
            self.on_bestmove(self.bestmove, self.pondermove)


_T_LOSS, _T_NON, _T_WIN = 0, 1, 2


def _rank(c: Optional[Node]) -> int:
    if c is None or c.n == 0 or not c.terminal or c.wl == 0:
        return _T_NON
    return _T_WIN if c.wl > 0 else _T_LOSS


def _prefer(a: Optional[Node], pa: float, b: Optional[Node], pb: float) -> int:
    """-1 if child a is a better move than child b, 1 if worse, 0 if equal (lc0's criteria)."""
    ra, rb = _rank(a), _rank(b)
    if ra != rb:
        return -1 if ra > rb else 1
    if ra == _T_NON:
        na = a.n if a is not None else 0
        nb = b.n if b is not None else 0
        if na and nb and a.terminal and b.terminal:  # two proven draws: the shorter one
            return (a.m > b.m) - (a.m < b.m)
        if na != nb:
            return -1 if na > nb else 1
        qa = a.wl if na else 0.0
        qb = b.wl if nb else 0.0
        if qa != qb:
            return -1 if qa > qb else 1
        return (pa < pb) - (pa > pb)
    if ra == _T_WIN:  # the shortest win
        return (a.m > b.m) - (a.m < b.m)
    return (a.m < b.m) - (a.m > b.m)  # the longest loss


def _king_takes_rook(board: chess.Board, mv: chess.Move) -> str:
    """Move text as lc0's verbose stats print it: castling as king-takes-rook (e1h1)."""
    if not board.chess960 and board.is_castling(mv):
        rook = (mv.to_square & ~7) | (7 if mv.to_square > mv.from_square else 0)
        return chess.Move(mv.from_square, rook).uci()
    return mv.uci()


def _pct(p: float) -> str:
    return f"{p * 100:5.{1 if p >= 0.99995 else 2}f}"


def _verbose_stats(n: Optional[Node], fpu: float, sign: int = 1, solid: bool = False) -> str:
    if n is None:
        if solid:  # lc0 allocates all children of a node with >= 100 visits: blank stats, not dashes
            return "(WL:  0.00000) (D: 0.000) (M:  0.0) (Q:  0.00000) "
        return f"(WL:  -.-----) (D: -.---) (M:  -.-) (Q: {fpu:8.5f}) "
    wl, d, _ = sc.wdl_rescale_display(sign * n.wl, n.d)
    return f"(WL: {float(wl):8.5f}) (D: {float(d):5.3f}) (M: {n.m:4.1f}) (Q: {float(wl):8.5f}) "


def _verbose_tail(n: Optional[Node], sign: int) -> str:
    v = None
    if n is not None:
        v = n.wl if n.terminal else n.v
    text = f"(V: {sign * v:7.4f}) " if v is not None else "(V:  -.----) "
    if n is not None:
        lo, up = (n.lower, n.upper) if sign > 0 else (-n.upper, -n.lower)
        if lo == up:
            text += "(T) "
        elif lo == DRAW and up == WIN:
            text += "(W) "
        elif lo == LOSS and up == DRAW:
            text += "(L) "
    return text


@dataclass
class InfoLine:
    """One `info` line of search progress (rendered by the UCI layer)."""

    depth: int
    seldepth: int
    time_ms: int
    nodes: int
    score: tuple  # ("cp", int) or ("mate", int)
    wdl: tuple
    nps: Optional[int]
    multipv: Optional[int]
    pv: list
    moves_left: Optional[int] = None  # expected moves to the end of the game (nets with MLH)
