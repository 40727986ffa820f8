"""GPU test fixtures: `gpu` is the opened device, or the test skips with the reason no GPU is usable.

Skips cleanly without hip-python, without libamdhip64.so (hip-python cannot dlopen it), and without a
device. The kernel and GEMM caches go to a per-session temporary folder ($LC0_ROCM_CACHE, set only
while a GPU module runs).
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def _session_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("lc0-rocm-cache")


@pytest.fixture(scope="module", autouse=True)
def _isolated_cache(_session_cache):
    """One cache folder for all GPU tests, set only while a GPU module runs: the tests after
    tests/gpu/ (and their subprocesses) see the environment they started with."""
    old = os.environ.get("LC0_ROCM_CACHE")
    os.environ["LC0_ROCM_CACHE"] = str(_session_cache)
    yield
    if old is None:
        os.environ.pop("LC0_ROCM_CACHE", None)
    else:
        os.environ["LC0_ROCM_CACHE"] = old


@pytest.fixture(scope="session")
def gpu():
    from lc0_rocm.gpu.runtime.device import gpu_available, get_device

    ok, reason = gpu_available()
    if not ok:
        pytest.skip(f"no usable GPU: {reason}")
    return get_device(0)
