"""The local run of `lc0-rocm analyse`: games stream from the reader into full batches on the backend,
with parsing and writing overlapped with the network.

Three stages, each on its own thread, joined by bounded queues (so memory stays flat at any input
size and a slow stage holds the others back):

  reader thread   reads units of games (`reader.read_units`) and prepares them (`work.prepare`:
                  parse, select, encode, legal moves), in `workers` processes when there are any;
  main thread     cuts the prepared rows into batches of exactly `batch_size` positions (across game
                  and unit boundaries; only the last batch is smaller), keeps two batches in flight on
                  the backend (`submit`/`collect`: a GPU computes one while the next is assembled),
                  and scatters the outputs back to their games, keeping only what the records need
                  (the legal moves' logits, WDL, Q, moves-left);
  writer thread   turns each finished unit into records and text (`work.finish`, in the worker
                  processes when there are any) and hands the games, in order, to the output sink.

The backend is the `Evaluator`'s from `lc0_rocm.api.open_backend` (all GPUs of the host with
`--backend-opts gpus=0,1,…`: the multi-GPU backend splits every batch). It may still be starting
(`Opening`: the backend's start on its own thread, from the net already loaded): the reader stage
starts at once and prepares games while the backend converts the net, prepares the GPU and checks the
start position; the first batch goes when both are ready, on the first GPU ready (`early_start_options`:
the other GPUs join the batches as they come up). Search mode is `search_mode.run_search_mode`,
with the same reader and writer stages.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import queue
import signal
import threading
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

import numpy as np

from .reader import read_units
from .work import FinishConfig, RowOutputs, WorkConfig, finish, prepare

_END = object()
CPU_BATCH = 256  # default batch on the CPU backend (it evaluates in chunks of 64 anyway)


@dataclass
class RunConfig:
    inputs: list
    fmt: str = "auto"
    work: WorkConfig = WorkConfig()
    finish: FinishConfig = FinishConfig()
    batch_size: int = 0  # 0: the backend's default (`default_batch_size`)
    workers: int = 0  # worker processes for prepare/finish (0: threads of this process)
    after_game: int = 0  # resume: games up to this one are skipped
    max_games: Optional[int] = None
    games_per_unit: int = 16
    units: Optional[Iterable] = None  # units to analyse instead of reading `inputs` (Ray actors)
    pool: object = None  # worker processes already started (`make_pool`), else started here


def default_batch_size(backend) -> int:
    """The batch the backend is fastest at that the API would use: its `max_batch` (1024 positions per
    GPU, times the GPUs), CPU_BATCH on the CPU."""
    if getattr(backend, "name", "") == "cpu":
        return CPU_BATCH
    return max(1, int(backend.max_batch))


def check_batch(batch_size: int) -> Callable:
    """The batch the start position is checked in on a backend (`api.open_backend`'s `check_batch`):
    on a GPU the run's batch (`batch_size`, 0: `default_batch_size`), so that the GPU tunes its GEMMs
    and captures its graphs for the size the run uses and no other (a batch of 1 costs a tuning and a
    capture of its own); one position elsewhere (the CPU's time grows with the positions)."""

    def size(backend) -> int:
        if not str(getattr(backend, "name", "")).startswith("rocm"):
            return 1
        return batch_size or default_batch_size(backend)

    return size


def early_start_options(options: str) -> str:
    """The backend options raw mode opens its backend with: `early_start=true` added unless the user
    chose (the multi-GPU backend takes batches once its first GPU is ready, the others joining as they
    come up, `backends/rocm.py`); the other backends ignore it."""
    from ..backends.options import parse_backend_options

    if "early_start" in parse_backend_options(options):
        return options
    return f"{options},early_start=true" if options.strip() else "early_start=true"


class _Ready:
    """A value already computed, with AsyncResult's `get`."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def get(self, timeout=None):
        return self.value


class _Later:
    """fn(*args) computed by whoever calls `get` (the writer thread when there are no workers)."""

    __slots__ = ("fn", "args")

    def __init__(self, fn, *args):
        self.fn, self.args = fn, args

    def get(self, timeout=None):
        return self.fn(*self.args)


# worker-process side ---------------------------------------------------------------------------


def _init_worker() -> None:
    """A worker's start: Ctrl-C is the main process's to handle; the encoder, the policy tables and
    the record code are imported and run once on a short game (loading compiled code from numba's
    cache), while the main process loads the net."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .reader import RawGame, Selection

    warm = prepare(RawGame(0, "", 1, "pgn", "1. e4 e5 *\n"), WorkConfig("raw", Selection(), 1, 5))
    out = RowOutputs(np.zeros(warm.n_rows, np.float32), None, None, np.zeros(len(warm.gather_col), np.float32))
    finish(warm, out, FinishConfig())


def make_pool(workers: int):
    """`workers` worker processes (None for 0), started at once: their start-up overlaps whatever
    the caller does next (loading the net)."""
    if workers <= 0:
        return None
    ctx = multiprocessing.get_context("spawn")  # never fork a process that holds a GPU
    return ctx.Pool(workers, initializer=_init_worker)


def prepare_unit(unit, cfg: WorkConfig):
    return [prepare(g, cfg) for g in unit.games]


def finish_unit(tasks, outs, cfg: FinishConfig):
    return [finish(t, o, cfg) for t, o in zip(tasks, outs)]


class Opening:
    """`open()` (an Evaluator) run on its own thread from construction: `result()` waits for it and
    raises its error; `close()` waits and closes what it opened. A daemon thread, so that Ctrl-C
    during a GPU's start does not wait for it."""

    def __init__(self, open_fn: Callable):
        self.value = None
        self.error: Optional[BaseException] = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(open_fn,), name="analyse-open", daemon=True)
        self._thread.start()

    def _run(self, open_fn) -> None:
        try:
            self.value = open_fn()
        except BaseException as e:  # noqa: BLE001 - raised by result() on the main thread
            self.error = e
        finally:
            self._done.set()

    def result(self):
        while not self._done.wait(0.1):  # a wait in slices: Ctrl-C reaches the main thread
            pass
        if self.error is not None:
            raise self.error
        return self.value

    def close(self) -> None:
        self._done.wait()
        if self.value is not None:
            self.value.close()


# the stages ------------------------------------------------------------------------------------


class Stages:
    """The reader and writer threads and the worker pool of one run; `sink(unit, outputs)` writes."""

    def __init__(self, cfg: RunConfig, sink: Callable, depth: int = 0):
        self.cfg = cfg
        self.sink = sink
        self.stop = threading.Event()
        self.error: Optional[BaseException] = None
        self.pool = cfg.pool if cfg.pool is not None else make_pool(cfg.workers)
        workers = cfg.workers if self.pool is not None else 0
        depth = depth or max(4, 2 * workers + 2)
        self.prepared: queue.Queue = queue.Queue(maxsize=depth)
        self.finished: queue.Queue = queue.Queue(maxsize=depth)
        self._reader = threading.Thread(target=self._read, name="analyse-reader", daemon=True)
        self._writer = threading.Thread(target=self._write, name="analyse-writer", daemon=True)
        self._reader.start()
        self._writer.start()

    def _put(self, q: queue.Queue, item) -> bool:
        while not self.stop.is_set():
            try:
                q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _read(self) -> None:
        cfg = self.cfg
        try:
            units = cfg.units if cfg.units is not None else read_units(
                cfg.inputs, cfg.fmt, cfg.games_per_unit, after_game=cfg.after_game, max_games=cfg.max_games)
            for unit in units:
                if self.pool is not None:
                    item = self.pool.apply_async(prepare_unit, (unit, cfg.work))
                else:
                    item = _Ready(prepare_unit(unit, cfg.work))
                if not self._put(self.prepared, (unit, item)):
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the main thread
            self._fail(e)
        self._put(self.prepared, _END)

    def _write(self) -> None:
        try:
            while True:
                item = self._get(self.finished)
                if item is _END or item is None:
                    return
                unit, result = item
                outputs = result.get()
                if self.stop.is_set():
                    return
                self.sink(unit, outputs)
        except BaseException as e:  # noqa: BLE001
            self._fail(e)

    def _get(self, q: queue.Queue):
        while True:
            try:
                return q.get(timeout=0.1)
            except queue.Empty:
                if self.stop.is_set():
                    return None

    def _fail(self, e: BaseException) -> None:
        if self.error is None:
            self.error = e
        self.stop.set()

    # main-thread side
    def units(self) -> Iterable:
        """(unit, [GameTask]) in input order."""
        while True:
            item = self._get(self.prepared)
            if item is _END or item is None:
                return
            unit, result = item
            yield unit, result.get()

    def finish(self, unit, tasks, outs) -> None:
        """Hand a unit whose outputs are complete to the writer (formatted in a worker if any)."""
        if self.pool is not None:
            item = self.pool.apply_async(finish_unit, (tasks, outs, self.cfg.finish))
        else:
            item = _Later(finish_unit, tasks, outs, self.cfg.finish)
        self._put(self.finished, (unit, item))

    def close(self, interrupted: bool = False) -> None:
        """Wait for the writer (all units handed over written) unless interrupted; stop everything."""
        if interrupted:
            self.stop.set()
        else:
            self._put(self.finished, _END)
        while self._writer.is_alive():
            self._writer.join(0.1)
        self.stop.set()
        self._reader.join(5)
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
        if self.error is not None and not interrupted:
            raise self.error


# the raw-mode main loop -------------------------------------------------------------------------


class _Open:
    """A unit whose rows are in batches but not all collected yet."""

    __slots__ = ("unit", "tasks", "outs", "remaining")

    def __init__(self, unit, tasks, net_has_wdl: bool, net_has_mlh: bool):
        self.unit, self.tasks = unit, tasks
        self.outs = []
        self.remaining = 0
        for t in tasks:
            n = t.n_rows
            self.remaining += n
            self.outs.append(RowOutputs(
                q=np.zeros(n, np.float32), wdl=np.zeros((n, 3), np.float32) if net_has_wdl else None,
                mlh=np.zeros(n, np.float32) if net_has_mlh else None,
                logits=np.zeros(0 if t.gather_col is None else len(t.gather_col), np.float32)))


def run_raw(evaluator, cfg: RunConfig, sink: Callable, on_batch: Optional[Callable[[int], None]] = None) -> None:
    """Analyse the inputs with raw network evaluations; games go to `sink(unit, [GameOutput])` in order.
    `evaluator`: an Evaluator, or an `Opening` of one (the reader starts before it is ready)."""
    from ..encoding.packed import PackedPlanes

    stages = Stages(cfg, sink)  # reading and preparing start now, beside a backend still opening
    try:
        if isinstance(evaluator, Opening):
            evaluator = evaluator.result()
        if evaluator.net.input_format != cfg.work.input_format:
            # the backend's view of the net has another input format (the random and trivial backends):
            # the units prepared so far are encoded for the wrong one, none has been written yet
            stages.close(interrupted=True)
            cfg = dataclasses.replace(cfg, work=dataclasses.replace(cfg.work, input_format=evaluator.net.input_format),
                                      pool=None)
            stages = Stages(cfg, sink)
    except BaseException:
        stages.close(interrupted=True)
        raise
    backend = evaluator.backend
    net = evaluator.net
    batch = cfg.batch_size or default_batch_size(backend)
    has_wdl, has_mlh = bool(net.has_wdl), bool(net.has_moves_left)
    opened: deque = deque()  # units in input order, not yet handed to the writer
    pieces: list = []  # (open unit, task index, first row, rows) waiting for a batch
    buffered = 0
    inflight: deque = deque()  # (handle, pieces)

    def submit(take: int) -> None:
        """Send the next `take` buffered rows as one batch, with the batch's legal-move gather (the
        policy entries every record needs, one fancy index for the whole batch at `collect`)."""
        nonlocal buffered
        parts, batch_pieces, left, off = [], [], take, 0
        g_rows, g_cols = [], []
        while left:
            o, ti, r0, n = pieces[0]
            k = min(n, left)
            task = o.tasks[ti]
            parts.append(task.planes.rows(r0, r0 + k))
            e0, e1 = np.searchsorted(task.gather_row, (r0, r0 + k))  # entries of rows r0..r0+k-1
            g_rows.append(task.gather_row[e0:e1] + (off - r0))
            g_cols.append(task.gather_col[e0:e1])
            batch_pieces.append((o, ti, r0, k, off, int(e0), int(e1)))
            if k == n:
                pieces.pop(0)
                task.planes = None  # every row is in a batch: the finishing worker does not need them
            else:
                pieces[0] = (o, ti, r0 + k, n - k)
            left -= k
            off += k
        buffered -= take
        planes = parts[0] if len(parts) == 1 else PackedPlanes.concat(parts)
        gather = (np.concatenate(g_rows), np.concatenate(g_cols))
        inflight.append((backend.submit(planes), batch_pieces, gather))
        if on_batch is not None:
            on_batch(take)

    def collect() -> None:
        handle, batch_pieces, (g_rows, g_cols) = inflight.popleft()
        out = backend.collect(handle)
        logits = np.asarray(out.policy[g_rows, g_cols], dtype=np.float32)
        at = 0
        for o, ti, r0, k, off, e0, e1 in batch_pieces:
            dst = o.outs[ti]
            dst.q[r0:r0 + k] = out.q[off:off + k]
            if dst.wdl is not None:
                dst.wdl[r0:r0 + k] = out.wdl[off:off + k]
            if dst.mlh is not None and out.mlh is not None:
                dst.mlh[r0:r0 + k] = out.mlh[off:off + k]
            dst.logits[e0:e1] = logits[at:at + e1 - e0]
            at += e1 - e0
            o.remaining -= k
        hand_over()

    def hand_over() -> None:
        while opened and opened[0].remaining == 0:
            o = opened.popleft()
            stages.finish(o.unit, o.tasks, o.outs)

    ok = False
    try:
        for unit, tasks in stages.units():
            o = _Open(unit, tasks, has_wdl, has_mlh)
            opened.append(o)
            for ti, t in enumerate(tasks):
                if t.n_rows:
                    pieces.append((o, ti, 0, t.n_rows))
                    buffered += t.n_rows
            while buffered >= batch:
                submit(batch)
                if len(inflight) >= 2:
                    collect()
            hand_over()
        if not stages.stop.is_set():
            if buffered:
                submit(buffered)
            while inflight:
                collect()
            hand_over()
        ok = True
    finally:
        for handle, *_ in inflight:
            try:
                backend.collect(handle)
            except Exception:  # noqa: BLE001 - already failing or interrupted
                pass
        stages.close(interrupted=not ok)
