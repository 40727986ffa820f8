"""The backendbench measuring loop: warm-up, then `batches` timed evaluations per batch size.

Follows lc0's `backendbench` with one benchmarking thread:
- warm-up: 2 batches of the largest size (brings a GPU from idle to full clocks, compiles, allocates);
- batch sizes start, start + step, … ≤ max; for each, `batches` sequential batches; the first one is
  kept apart (lc0 excludes it: queues and caches refill after a size change) and reported as the
  cold-start columns; the other batches-1 give the statistics (`stats.size_stats`).

Timing, by default lc0's: the wall clock (`time.perf_counter`) from before a batch is built to its
finished outputs. Inside it, as lc0 adds every copy of the position to its computation
(`EncodePositionForNN` for each one, then `ComputeBlocking`), the position (--fen) is encoded into
every row of a fresh batch (`BatchEncoder`) and the batch is evaluated synchronously (`evaluate`
returns finished host arrays). The numbers therefore include our host-side cost per position.

A backend that can time itself on the device offers the optional method

    evaluate_timed(planes) -> (NetOutputs, seconds)

(seconds of device time for that batch, between two events on its stream around the whole
evaluation, uploads and downloads included); the bench then evaluates through it, inside the same
wall-clock timing, and keeps the device times as a second timing of the same batches: an extra
column, or the table's timing with `primary="device"` (--device-time; the wall clock becomes the
extra column). A batch larger than the backend's `max_batch` is evaluated whole: the backend runs it
in passes (backends/base.py's batch contract) and its device time covers them all.

Sizing: lc0's defaults (100 batches of every size 1..256) suit a GPU; on a CPU they take hours.
`estimate_seconds` predicts a run from a per-position time (each batch costs that much per position,
a lower bound where small batches carry fixed costs), `fit_config` picks sizes for a time budget.

`make_timer` / `measure_size` time a ready, pre-encoded batch instead (device time when offered):
for kernel work such as tools/perf_suite.py, not lc0's measurement.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional, Protocol, runtime_checkable

import numpy as np

from ..backends.base import Backend
from ..encoding.outputs import NetOutputs
from ..encoding.history import STARTPOS_FEN, History  # noqa: F401  (STARTPOS_FEN: tools import it from here)
from ..encoding.packed import NUM_PLANES, PackedPlanes
from .stats import SizeStats, size_stats, with_extra

WARMUP_BATCHES = 2
CPU_BUDGET_S = 60.0  # what a CPU run without explicit sizes aims at
CPU_BATCHES = 10
MAX_BATCH_SIZE = 1024  # lc0's limits on the flags
MAX_BATCH_STEP = 256


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


def estimate_seconds(config: BenchConfig, per_position_s: float, warm_up: bool = True) -> float:
    """Seconds a run of `config` takes when a batch costs `per_position_s` per position."""
    positions = config.batches * sum(config.sizes()) + (WARMUP_BATCHES * config.max_batch_size if warm_up else 0)
    return positions * per_position_s


def fit_config(per_position_s: float, budget_s: float = CPU_BUDGET_S, batches: int = CPU_BATCHES) -> BenchConfig:
    """Sizes from 1 that fit `budget_s`: the largest max batch size (256, 128, ...) with the smallest
    step (1, 2, 4, ...) whose estimate fits; one batch size of 1 if nothing does."""
    for top in (256, 128, 64, 32, 16, 8, 4, 2):
        for step in (1, 2, 4, 8, 16, 32, 64, 128):
            if step >= top:
                break
            c = BenchConfig(batches, 1, top, step)
            if estimate_seconds(c, per_position_s) <= budget_s:
                return c
    return BenchConfig(batches, 1, 1, 1)


def replicate(planes: PackedPlanes, n: int) -> PackedPlanes:
    """A batch of n copies of the first position of `planes`."""
    return PackedPlanes(
        np.ascontiguousarray(np.repeat(planes.masks[:1], n, axis=0)),
        np.ascontiguousarray(np.repeat(planes.values[:1], n, axis=0)),
        np.ascontiguousarray(np.repeat(planes.transforms[:1], n, axis=0)),
    )


def position_history(fen: str) -> History:
    """The position to benchmark (a FEN, no moves); PositionError for a bad FEN."""
    from ..encoding.position import parse_position

    return parse_position(fen, [])


def encode_fen(fen: str, input_format: int) -> PackedPlanes:
    """The packed input of one position given by FEN (no moves), for the net's input format."""
    from ..encoding.planes import encode_positions

    return encode_positions([position_history(fen)], input_format)


class BatchEncoder:
    """Builds the batch lc0's backendbench times: `n` copies of one position, every row encoded by
    the search's compiled encoder (`board.encode`, the engine's own path; lc0 encodes in C++)."""

    def __init__(self, history: History, input_format: int, fill: str = "fen_only"):
        from ..encoding.planes import encode_positions
        from ..board import encode as enc
        from ..search.params import FILL_CODES
        from ..search.core.tree import M_STARTPOS
        from ..search.tree import NodeTree

        encode_positions([history], input_format)  # checks the input format once, outside any timing
        tree = NodeTree()
        tree.set_position("backendbench", [], history.last)
        self._t = tree.arrays
        self._root = tree.root_row
        self._startpos = bool(self._t.meta[M_STARTPOS])
        self._fill = FILL_CODES[fill]
        self._encode = enc.encode_copies
        self.history = history
        self.input_format = input_format
        self._rows(1)  # compiles or loads the encoder outside any timing

    def __call__(self, n: int) -> PackedPlanes:
        return self._rows(n)

    def _rows(self, n: int) -> PackedPlanes:
        t = self._t
        masks = np.zeros((n, NUM_PLANES), dtype=np.uint64)
        values = np.ones((n, NUM_PLANES), dtype=np.float32)
        transforms = np.empty(n, dtype=np.int32)
        self._encode(n, self._root, t.parent, t.bbs, t.castling, t.black, t.ep, t.rule50, t.reps, self._startpos,
                     self.input_format, self._fill, masks, values, transforms)
        return PackedPlanes(masks, values, transforms)


@dataclass(frozen=True)
class BatchTime:
    """Two timings of one batch (seconds)."""

    wall: float  # wall clock: encoding + blocking evaluation (lc0's)
    device: Optional[float]  # device time reported by evaluate_timed; None when the backend has none


def has_device_timer(backend: Backend) -> bool:
    return isinstance(backend, TimedBackend)


def timer_kind(backend: Backend, primary: str = "wall") -> str:
    """The timing the table will show: "wall" (lc0's), or "device" when asked for and offered."""
    return "device" if primary == "device" and has_device_timer(backend) else "wall"


def batch_timer(backend: Backend, encoder: Callable[[int], PackedPlanes],
                clock: Callable[[], float] = time.perf_counter) -> Callable[[int], BatchTime]:
    """A function building (with `encoder`) and evaluating one batch of n positions, timed lc0's way:
    the wall clock around both; with the device time too when the backend offers it."""
    device = has_device_timer(backend)

    def timed(n: int) -> BatchTime:
        t0 = clock()
        planes = encoder(n)
        if device:
            seconds = float(backend.evaluate_timed(planes)[1])
        else:
            seconds = None
            backend.evaluate(planes)
        return BatchTime(clock() - t0, seconds)

    return timed


def measure_batches(timed: Callable[[int], BatchTime], size: int, batches: int, primary: str = "wall") -> SizeStats:
    """`batches` batches of `size`; the first one is reported apart, not measured. The table's statistics
    come from the `primary` timing ("wall" or "device"); the other one, when there is one, rides along."""
    times = [timed(size) for _ in range(batches)]
    main = [getattr(t, primary) for t in times]
    if main[0] is None:
        raise ValueError("device timing needs a backend with evaluate_timed")
    s = size_stats(size, main[0], main[1:])
    other = "device" if primary == "wall" else "wall"
    extra = [getattr(t, other) for t in times]
    return s if extra[0] is None else with_extra(s, other, extra[0], extra[1:])


def make_timer(backend: Backend, clock: Callable[[], float] = time.perf_counter) -> Callable[[PackedPlanes], float]:
    """A function evaluating one READY batch and returning its time in seconds (device time when
    offered, else the wall clock around `evaluate`); no encoding is timed. For kernel work."""
    if has_device_timer(backend):

        def timed(planes: PackedPlanes) -> float:
            return float(backend.evaluate_timed(planes)[1])

    else:

        def timed(planes: PackedPlanes) -> float:
            t0 = clock()
            backend.evaluate(planes)
            return clock() - t0

    return timed


def measure_size(timed: Callable[[PackedPlanes], float], position: PackedPlanes, size: int, batches: int) -> SizeStats:
    """`make_timer`'s counterpart of `measure_batches`: `batches` evaluations of `size` ready copies."""
    batch = replicate(position, size)
    times = [timed(batch) for _ in range(batches)]
    return size_stats(size, times[0], times[1:])


def run_bench(
    backend: Backend,
    position: History,
    config: BenchConfig,
    on_size: Optional[Callable[[SizeStats], None]] = None,
    clock: Callable[[], float] = time.perf_counter,
    primary: str = "wall",
    encoder: Optional[Callable[[int], PackedPlanes]] = None,
    on_warm: Optional[Callable[[list[float]], None]] = None,
) -> tuple[list[float], list[SizeStats]]:
    """Warm up, then measure every batch size of `config`; `on_warm` sees the warm-up times (s, by the
    primary timing), `on_size` each size's result as it comes.

    `primary`: the table's timing, "wall" (lc0's, the default) or "device" (ValueError when the
    backend cannot time itself). `encoder` (default `BatchEncoder(position, net input format)`) builds
    each timed batch. Returns (warm-up times in s by the primary timing, one SizeStats per size).
    """
    config.validate()
    if primary not in ("wall", "device"):
        raise ValueError(f"primary timing must be 'wall' or 'device', got {primary!r}")
    if primary == "device" and not has_device_timer(backend):
        raise ValueError(f"device timing needs a backend that times itself; {backend.name} does not")
    timed = batch_timer(backend, encoder or BatchEncoder(position, backend.net.input_format), clock)
    warm = [getattr(timed(config.max_batch_size), primary) for _ in range(WARMUP_BATCHES)]
    if on_warm is not None:
        on_warm(warm)
    results = []
    for size in config.sizes():
        s = measure_batches(timed, size, config.batches, primary)
        results.append(s)
        if on_size is not None:
            on_size(s)
    return warm, results
