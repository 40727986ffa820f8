"""The search's side of the network: the backend, the NN cache, and batches in flight.

`LeafEvaluator` evaluates the search's leaves (gathered and encoded by the compiled worker, looked up
in the NN cache there, sent here in batches): the search's own, not the public API's `api.Evaluator`
(positions given by a user). It owns what outlives one search: the backend, the NN cache
(`search.core.nncache`), the policy tables the worker reads (policy index of every move code by side
to move and transform), and one worker thread that runs a synchronous backend's `evaluate` while the
search gathers the next batch. `Pending` is one batch on its way through the network.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Optional

from ..backends.base import Backend
from ..board.move_codes import index_tables
from ..engine_options import default as _d
from ..encoding.outputs import NetOutputs
from ..encoding.packed import PackedPlanes
from .core.nncache import NNCache


class LeafEvaluator:
    """The search's leaf evaluation: owns the backend, the NN cache and one worker thread running
    `backend.evaluate`."""

    def __init__(self, backend: Backend, input_format: int, cache_size: int = _d("NNCacheSize"),
                 policy_temperature: float = _d("PolicyTemperature")):
        self.backend = backend
        self.input_format = input_format
        self.policy_temperature = policy_temperature
        self.fill = _d("HistoryFill")  # HistoryFill; part of the planes, hence of the cache key
        # What identifies a cached evaluation: 7 = the whole network input (exact); L < 7 = the last
        # L + 1 positions and their repetition counts (0, lc0's default: the current position only).
        self.cache_history_length = _d("CacheHistoryLength")
        self.cache = NNCache(cache_size)
        self.index_tables = index_tables(tuple(range(16)))  # [black * 8 + transform, move code]
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nn-eval")

    @property
    def cache_size(self) -> int:
        return self.cache.size

    def set_policy_temperature(self, t: float) -> None:
        if t != self.policy_temperature:
            self.policy_temperature = t
            self.cache.clear()

    def set_cache_size(self, n: int) -> None:
        self.cache.resize(n)

    def submit(self, planes: PackedPlanes) -> "Pending":
        """Start evaluating a batch: on the backend itself if it is asynchronous (a GPU queues the
        work and returns), else on the worker thread (numpy releases the GIL while it computes)."""
        backend = self.backend
        if backend.is_async:
            return Pending(backend, backend.submit(planes), None)
        return Pending(backend, None, self._pool.submit(_timed, backend.evaluate, planes))

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _timed(evaluate, planes: PackedPlanes) -> tuple[NetOutputs, float]:
    t0 = time.perf_counter()
    out = evaluate(planes)
    return out, time.perf_counter() - t0


class Pending:
    """A batch on its way through the network: an asynchronous backend's handle or a worker future.
    `eval_s`: how long the worker thread's `evaluate` took (0 for an asynchronous backend)."""

    __slots__ = ("backend", "handle", "future", "collected", "eval_s")

    def __init__(self, backend: Backend, handle, future: Optional[Future]):
        self.backend = backend
        self.handle = handle
        self.future = future
        self.collected = False
        self.eval_s = 0.0

    def result(self, stop: Optional[threading.Event] = None) -> Optional[NetOutputs]:
        """The outputs; None if `stop` is set while a worker thread still computes them."""
        if self.future is None:
            self.collected = True
            return self.backend.collect(self.handle)  # a device batch takes milliseconds: just wait
        while True:
            try:
                out, self.eval_s = self.future.result(timeout=0.005)
                return out
            except TimeoutError:
                if stop is not None and stop.is_set():
                    return None

    def discard(self) -> None:
        """Collect and drop a batch nobody will use (frees an asynchronous backend's buffers)."""
        if self.future is not None:
            self.future.cancel()  # still queued behind another batch: never computed
        elif not self.collected:
            self.collected = True
            try:
                self.backend.collect(self.handle)
            except Exception:
                pass
