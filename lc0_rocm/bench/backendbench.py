"""The backendbench measuring loop: warm-up, then `batches` timed evaluations per batch size.

Follows lc0 master's `backendbench` (facts §8) with one benchmarking thread:
- the position (--fen) is encoded once and replicated to each batch size outside the timing;
- warm-up: 2 batches of the largest size (brings a GPU from idle to full clocks, compiles, allocates);
- batch sizes start, start + step, … ≤ max; for each, `batches` sequential evaluations; the first
  one is kept apart (lc0 excludes it: queues and caches refill after a size change) and reported
  as the cold-start columns; the other batches-1 give the statistics (`stats.size_stats`).

Timing: a backend that can time itself on the device offers the optional method

    evaluate_timed(planes) -> (NetOutputs, seconds)

(seconds of device time for that batch, e.g. between two events on its stream around the whole
evaluation, uploads and downloads included); the bench uses it when present. Otherwise the time is
the wall clock (`time.perf_counter`) around a synchronous `evaluate`, which returns finished host
arrays. Batches larger than the backend's `max_batch` are evaluated in pieces whose times are added.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Protocol, runtime_checkable

import numpy as np

from ..backends.base import Backend, NetOutputs
from ..encoding.packed import PackedPlanes
from .stats import SizeStats, size_stats

WARMUP_BATCHES = 2
MAX_BATCH_SIZE = 1024  # lc0's limits on the flags
MAX_BATCH_STEP = 256
STARTPOS_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"


@runtime_checkable
class TimedBackend(Protocol):
    """A backend that measures its own (device) time per evaluation."""

    def evaluate_timed(self, planes: PackedPlanes) -> tuple[NetOutputs, float]: ...


@dataclass(frozen=True)
class BenchConfig:
    batches: int = 100
    start_batch_size: int = 1
    max_batch_size: int = 256
    batch_step: int = 1

    def validate(self) -> None:
        """ValueError (one line) for values outside lc0's ranges, or too few batches to measure."""
        if not 2 <= self.batches <= 999_999_999:
            raise ValueError(f"--batches must be between 2 and 999999999 (the first batch of each size is not measured), got {self.batches}")
        if not 1 <= self.start_batch_size <= MAX_BATCH_SIZE:
            raise ValueError(f"--start-batch-size must be between 1 and {MAX_BATCH_SIZE}, got {self.start_batch_size}")
        if not 1 <= self.max_batch_size <= MAX_BATCH_SIZE:
            raise ValueError(f"--max-batch-size must be between 1 and {MAX_BATCH_SIZE}, got {self.max_batch_size}")
        if not 1 <= self.batch_step <= MAX_BATCH_STEP:
            raise ValueError(f"--batch-step must be between 1 and {MAX_BATCH_STEP}, got {self.batch_step}")
        if self.start_batch_size > self.max_batch_size:
            raise ValueError(
                f"--start-batch-size ({self.start_batch_size}) is larger than --max-batch-size ({self.max_batch_size})"
            )

    def sizes(self) -> range:
        return range(self.start_batch_size, self.max_batch_size + 1, self.batch_step)


def replicate(planes: PackedPlanes, n: int) -> PackedPlanes:
    """A batch of n copies of the first position of `planes`."""
    return PackedPlanes(
        np.ascontiguousarray(np.repeat(planes.masks[:1], n, axis=0)),
        np.ascontiguousarray(np.repeat(planes.values[:1], n, axis=0)),
        np.ascontiguousarray(np.repeat(planes.transforms[:1], n, axis=0)),
    )


def encode_fen(fen: str, input_format: int) -> PackedPlanes:
    """The packed input of one position given by FEN (no moves), for the net's input format."""
    from ..encoding.planes import encode_positions
    from ..encoding.position import parse_position

    return encode_positions([parse_position(fen, [])], input_format)


def timer_kind(backend: Backend) -> str:
    return "device" if isinstance(backend, TimedBackend) else "wall"


def make_timer(backend: Backend, clock: Callable[[], float] = time.perf_counter) -> Callable[[PackedPlanes], float]:
    """A function evaluating one batch and returning its time in seconds (device time when offered)."""
    limit = max(1, int(getattr(backend, "max_batch", MAX_BATCH_SIZE)))

    def pieces(planes: PackedPlanes) -> Iterator[PackedPlanes]:
        n = len(planes)
        if n <= limit:
            yield planes
            return
        for s in range(0, n, limit):
            e = min(n, s + limit)
            yield PackedPlanes(planes.masks[s:e], planes.values[s:e], planes.transforms[s:e])

    if isinstance(backend, TimedBackend):

        def timed(planes: PackedPlanes) -> float:
            return sum(float(backend.evaluate_timed(p)[1]) for p in pieces(planes))

    else:

        def timed(planes: PackedPlanes) -> float:
            total = 0.0
            for p in pieces(planes):
                t0 = clock()
                backend.evaluate(p)
                total += clock() - t0
            return total

    return timed


def warm_up(timed: Callable[[PackedPlanes], float], position: PackedPlanes, size: int, rounds: int = WARMUP_BATCHES) -> list[float]:
    """lc0's warm-up: `rounds` batches of the largest size; returns their times (s)."""
    batch = replicate(position, size)
    return [timed(batch) for _ in range(rounds)]


def measure_size(timed: Callable[[PackedPlanes], float], position: PackedPlanes, size: int, batches: int) -> SizeStats:
    """`batches` evaluations of `size` copies; the first one is reported apart, not measured."""
    batch = replicate(position, size)
    times = [timed(batch) for _ in range(batches)]
    return size_stats(size, times[0], times[1:])


def run_bench(
    backend: Backend,
    position: PackedPlanes,
    config: BenchConfig,
    on_size: Optional[Callable[[SizeStats], None]] = None,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[list[float], list[SizeStats]]:
    """Warm up, then measure every batch size of `config`; `on_size` sees each result as it comes.

    Returns (warm-up times in s, one SizeStats per size).
    """
    config.validate()
    timed = make_timer(backend, clock)
    warm = warm_up(timed, position, config.max_batch_size)
    results = []
    for size in config.sizes():
        s = measure_size(timed, position, size, config.batches)
        results.append(s)
        if on_size is not None:
            on_size(s)
    return warm, results
