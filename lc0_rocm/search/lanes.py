"""The batch buffers of a search and what its search threads share besides the tree: `Slot` (a
batch buffer and its batch), `Lane` (one of several search threads on one tree: its buffer and
scratch arrays), `Gate` (the threads' way past a growth of the tree's arrays) and `AutoInline`
(Threads 0 on a synchronous backend: batches on the evaluator's thread or inline, measured)."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Callable, Optional

import numpy as np

from ..encoding.packed import PackedPlanes
from .core import backup as bk
from .core import batch as bt
from .core import team as tmw
from .core import worker as wk
from .core.counters import CTR_SIZE

AUTO_WATCH_BATCHES = 8  # Threads 0, synchronous backend: batches timed each way (see Search._loop)
AUTO_TRIAL_SHARE = 0.5


class Slot:
    """A batch buffer and what is known of the batch in it."""

    __slots__ = ("arrays", "count", "pending")

    def __init__(self, capacity: int):
        self.arrays = bt.new_batch(capacity)
        self.count = 0
        self.pending = None

    def planes(self) -> PackedPlanes:
        a, k = self.arrays, self.count
        return PackedPlanes(a.masks[:k], a.values[:k], a.transform[:k])


class Lane:
    """One of several search threads sharing the tree: its batch buffer and scratch arrays, its cycle
    counters (search/core/counters.py; empty unless `counting`), and its team word and its task
    workers' scratch (search/core/team.py; `helpers` of them, each with an expansion scratch of its own)."""

    __slots__ = ("slot", "work", "apply_work", "ctr", "team", "helper_work")

    def __init__(self, capacity: int, max_ooo: int, counting: bool = False, helpers: int = 0):
        self.slot = Slot(capacity)
        self.work = wk.new_work(max(capacity, max_ooo), 64)
        self.apply_work = bk.new_apply_work()
        self.ctr = np.zeros(CTR_SIZE if counting else 0, np.int64)
        self.team = tmw.new_team(helpers)
        self.helper_work = [bk.new_apply_work() for _ in range(helpers)]


class Gate:
    """Search threads sharing the tree pass through `inside` around each compiled call on it; making
    room (the tree's or the cache's arrays replaced by larger ones) waits until no thread is inside,
    and no thread enters meanwhile."""

    def __init__(self):
        self._cond = threading.Condition()
        self._inside = 0
        self._growing = False

    @contextlib.contextmanager
    def inside(self, has_room: Callable[[], bool], make_room: Callable[[], None]):
        with self._cond:
            while True:
                if self._growing:
                    self._cond.wait()
                    continue
                if has_room():
                    break
                self._growing = True
                try:
                    while self._inside > 0:
                        self._cond.wait()
                    make_room()
                finally:
                    self._growing = False
                    self._cond.notify_all()
            self._inside += 1
        try:
            yield
        finally:
            with self._cond:
                self._inside -= 1
                if self._inside == 0:
                    self._cond.notify_all()


class AutoInline:
    """Threads 0 on a synchronous backend: batches on the evaluator's thread, or inline, whichever
    gives more playouts a second (see `Search._loop`). `batch_done` after every batch applied; when it
    returns a choice, `inline` says which way to go on."""

    def __init__(self, watching: bool):
        self.watching = watching
        self.inline = False
        self.batches = -1  # the root's batch is not typical: the first window starts after it
        self.start = (0.0, 0)
        self.eval_s = 0.0
        self.pooled_rate = 0.0

    def batch_done(self, playouts: int, eval_s: float) -> Optional[bool]:
        now = time.perf_counter()
        self.batches += 1
        self.eval_s += eval_s
        if self.batches == 0:
            self.start, self.eval_s = (now, playouts), 0.0
            return None
        if self.batches < AUTO_WATCH_BATCHES:
            return None
        t0, p0 = self.start
        rate = (playouts - p0) / max(now - t0, 1e-9)
        if not self.inline:  # the pooled window is over: try inline if the evaluations were cheap
            if self.eval_s >= AUTO_TRIAL_SHARE * (now - t0):
                self.watching = False
                return False
            self.pooled_rate, self.inline = rate, True
            self.batches, self.start = 0, (now, playouts)
            return True
        self.watching = False
        self.inline = rate > self.pooled_rate
        return self.inline

