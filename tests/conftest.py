"""Shared test fixtures: where the committed nets and the real (shared) nets live, and the compiled
search, compiled once per machine and sources. On a machine's first run (an empty cache, as on CI)
it compiles in the background from the end of collection while the modules that never run the
search go first; every other module waits for it. The AMD compile gate also starts in the
background once the tests are collected, and its test runs last (tests/gate_background.py)."""

from __future__ import annotations

from pathlib import Path

import shutil

import pytest

import gate_background
from netpaths import SHARED_WEIGHTS_DIR, WEIGHTS_DIR


# Modules that never run the compiled search, in this process or in a child: checked on a cold cache
# with numba's Dispatcher.compile made to record and fail (none of these compiled anything). A module
# listed here by mistake still passes, only slower (its process, or its engine, compiles or waits).
SEARCH_FREE = frozenset({
    "test_analyse_accuracy.py", "test_api.py", "test_api_types.py", "test_encoding_oracle.py", "test_engine_values.py",
    "test_eval_cli.py", "test_fault_policy.py", "test_gpu_host_logic.py", "test_hip_on_cuda.py",
    "test_compile_key.py", "test_layering.py", "test_make_net.py", "test_net_errors.py", "test_net_hardening.py",
    "test_net_loader.py", "test_net_streams.py", "test_onnx_export.py", "test_policy_map.py", "test_position_errors.py",
    "test_reference_oracle.py", "test_syzygy.py", "test_timemgr.py", "test_torch_bench.py",
    "test_winograd.py", "test_fp16_twin.py",
})


def _search_free(path: Path) -> bool:
    return path.name in SEARCH_FREE


def pytest_collection_modifyitems(config, items):
    """The modules that never run the search first (they overlap a first run's compile), the
    compile gate's test last (it then waits only for what is left of the gate)."""
    items.sort(key=lambda item: (item.nodeid.endswith(gate_background.TEST), not _search_free(item.path)))


def pytest_collection_finish(session):
    """Start the compile gate beside the other tests when its test will run and the compilers are
    here (without them its test skips, or fails under CI=true, as before)."""
    if any(item.nodeid.endswith(gate_background.TEST) for item in session.items) and all(
            shutil.which(tool) for tool in gate_background.COMPILERS):
        gate_background.start()
    if all(_search_free(item.path) for item in session.items):
        return  # numba is imported only where the search runs: these modules run without it
    from lc0_rocm import jit
    from lc0_rocm.search import precompile

    if not jit.is_compiled():
        precompile.start_process()  # as an engine's first start does


def pytest_sessionfinish(session):
    gate_background.stop()


@pytest.fixture(scope="session")
def weights_dir() -> Path:
    """The repository's weights/ folder (committed random-weight nets)."""
    return WEIGHTS_DIR


@pytest.fixture(scope="session")
def shared_weights_dir() -> Path:
    """../shared/weights (real maia nets); tests using it skip when it is absent."""
    if not SHARED_WEIGHTS_DIR.is_dir():
        pytest.skip("../shared/weights not present")
    return SHARED_WEIGHTS_DIR


@pytest.fixture(scope="session")
def compiled_search():
    """The search compiled into the cache and marked ready (once per machine and sources; later runs
    load it): every engine the tests start then loads it, as every start after a machine's first
    does, and no timed `go` meets a search still compiling. Waits for the background compile
    started at collection (or compiles here should it have failed).
    tests/test_first_start.py covers the first start itself."""
    from lc0_rocm.search import precompile

    assert precompile.ensure_compiled(wait=True)


@pytest.fixture(scope="module", autouse=True)
def _search_ready(request):
    """Before a module that runs the search (and before its own module fixtures, which may start an
    engine): the compiled search."""
    if not _search_free(request.node.path):
        request.getfixturevalue("compiled_search")
