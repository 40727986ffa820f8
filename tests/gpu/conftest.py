"""GPU test fixtures: `gpu` is the opened device, or the test skips with the reason no GPU is usable.

Skips cleanly without hip-python, without libamdhip64.so (hip-python cannot dlopen it), and without a
device. The kernel and GEMM caches go to a per-session temporary folder ($LC0_ROCM_CACHE).
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory):
    old = os.environ.get("LC0_ROCM_CACHE")
    os.environ["LC0_ROCM_CACHE"] = str(tmp_path_factory.mktemp("lc0-rocm-cache"))
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
