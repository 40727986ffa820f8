"""Shared test fixtures: where the committed nets and the real (shared) nets live, and the compiled
search, compiled once for the whole run before any test. The AMD compile gate starts in the
background once the tests are collected, and its test runs last (tests/gate_background.py)."""

from __future__ import annotations

from pathlib import Path

import shutil

import pytest

import gate_background
from netpaths import SHARED_WEIGHTS_DIR, WEIGHTS_DIR


def pytest_collection_modifyitems(config, items):
    """The compile gate's test last: it then waits only for what is left of the gate."""
    items.sort(key=lambda item: item.nodeid.endswith(gate_background.TEST))


def pytest_collection_finish(session):
    """Start the compile gate beside the other tests when its test will run and the compilers are
    here (without them its test skips, or fails under CI=true, as before)."""
    if any(item.nodeid.endswith(gate_background.TEST) for item in session.items) and all(
            shutil.which(tool) for tool in gate_background.COMPILERS):
        gate_background.start()


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


@pytest.fixture(scope="session", autouse=True)
def compiled_search():
    """The search compiled into the cache and marked ready before the first test (once per machine
    and sources; later runs load it): every engine the tests start then loads it, as every start
    after a machine's first does, and no timed `go` meets a search still compiling.
    tests/test_first_start.py covers the first start itself."""
    from lc0_rocm.search import precompile

    assert precompile.ensure_compiled(wait=True)
