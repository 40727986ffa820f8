"""analyse's default worker count from the host (`analyse.sizing.default_workers`): 4 workers a GPU (a
GPU takes ~40k positions/s of a T82-class net, a worker gives ~10k, docs/perf.md), at most one per core
less two, none on a host without two spare cores or on the cpu backend, every spare core where the
backend answers at once (random, trivial); a few host shapes."""

from __future__ import annotations

import pytest

from lc0_rocm.analyse.sizing import GPU_POSITIONS_S, WORKER_POSITIONS_S, default_workers, gpu_count
from lc0_rocm.errors import BackendError


@pytest.mark.parametrize("backend, options, cores, want", [
    ("rocm-fp16", "", 2, 0),  # the 2-core VM: the main process alone beat one and two workers there
    ("auto", "", 3, 0),  # one spare core
    ("auto", "", 4, 2),
    ("rocm-fp16", "", 8, 4),  # a desktop with one card: 4 x 10k feeds a T82's 35k
    ("rocm-fp16", "", 16, 4),  # one H200 of the 16-core host (was 14: the cores less two)
    ("rocm-fp16", "gpus=0,1", 16, 8),
    ("rocm-fp16", "gpus=0:1", 8, 6),  # two GPUs on a desktop: the cores are the limit
    ("rocm", "gpus=0:0", 32, 8),  # two runners on one GPU count as two
    ("rocm-fp16", "gpus=0,1,2,3,4,5,6,7", 128, 32),  # the cap
    ("cpu", "", 64, 0),  # the network is the bottleneck
    ("random", "", 16, 14),  # no network work: every spare core
    ("trivial", "", 64, 32),
    ("random", "", 2, 0),
])
def test_default_workers_by_host(backend, options, cores, want):
    assert default_workers(backend, options, cores=cores) == want


def test_the_rule_is_the_measured_rates():
    assert default_workers("rocm", "", cores=64) == -(-GPU_POSITIONS_S // WORKER_POSITIONS_S) == 4
    assert gpu_count("auto") == 1 and gpu_count("rocm", "gpu=3") == 1 and gpu_count("cpu", "gpus=0,1") == 0


def test_a_bad_gpus_option_is_the_backend_options_one_line():
    with pytest.raises(BackendError, match="gpus"):
        default_workers("rocm", "gpus=x", cores=16)
