"""The worker processes of an `lc0-rocm analyse` run from the host (its cores) and the GPUs the backend
splits its batches over: `default_workers`, the one home of the rule (`--workers N` overrides it).

Measured (docs/perf.md, "Analyse: worker count and batch size from the host"):
  - one worker process prepares and finishes about WORKER_POSITIONS_S positions a second with the
    compiled per-game work: 115 µs a position (prepare 54, finish 62) on a loaded core of the 2-core
    VM, 8.7k/s; 138,304 positions/s from 14 workers on the 16-core H200 host, 9.9k/s a worker;
  - analyse feeds one GPU 33-35k positions/s of a T82-class net (H100, H200; BT4 21k), so
    GPU_POSITIONS_S (rounded up) is what a GPU asks of the host;
  - on the 2-core VM the pipeline with no worker process beat one and two (17.9k steady against 9.2k
    and 16.2k): a worker pays the pickling of its games and needs a core the main process lacks then.
Rule: enough workers for the GPUs at GPU_POSITIONS_S each (4 a GPU), at most one per core less
MAIN_CORES (the main process's batching thread, its reader and writer) and MAX_WORKERS; none where
fewer than 2 cores are spare and none on the cpu backend (the network is slower than the main process
alone by far). The random and trivial backends answer at once, so the host is the limit: every spare
core. Smaller nets (Maia: 850k positions/s on one H100 at batch 1024) outrun any host: pass
`--workers` up to the cores less two there.

The batch needs no rule of its own: it is the backend's max batch (1024 positions a GPU, times the
GPUs: `pipeline.default_batch_size`), the size the analyse measurements above ran at.
"""

from __future__ import annotations

import os
from typing import Optional

WORKER_POSITIONS_S = 10_000  # positions/s one worker process prepares and finishes (measured, above)
GPU_POSITIONS_S = 40_000  # positions/s one GPU takes of a T82-class net in analyse (33-35k measured)
MAIN_CORES = 2  # the main process: batching thread, reader and writer
MAX_WORKERS = 32
_HOST_BOUND = ("random", "trivial")  # no network work: the host pipeline sets the speed


def gpu_count(backend_name: str, options: str = "") -> int:
    """GPUs the backend splits a batch over: the `gpus` list's entries (a device may repeat: a runner
    each) on a GPU backend (`auto` counted as one: it takes the GPU when one is usable), else 0."""
    if backend_name == "cpu" or backend_name in _HOST_BOUND:
        return 0
    from ..backends.options import gpu_list, parse_backend_options

    return len(gpu_list(parse_backend_options(options)))


def default_workers(backend_name: str, options: str = "", cores: Optional[int] = None) -> int:
    """Worker processes for a run on `backend_name` with these backend options on a host of `cores`
    cores (default: this one's)."""
    cores = cores if cores is not None else (os.cpu_count() or 1)
    spare = min(MAX_WORKERS, cores - MAIN_CORES)
    if backend_name == "cpu" or spare < 2:
        return 0
    if backend_name in _HOST_BOUND:
        return spare
    want = -(-gpu_count(backend_name, options) * GPU_POSITIONS_S // WORKER_POSITIONS_S)
    return min(spare, want)
