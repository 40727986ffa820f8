"""Shared test fixtures: where the committed nets and the real (shared) nets live."""

from __future__ import annotations

from pathlib import Path

import pytest

from netpaths import SHARED_WEIGHTS_DIR, WEIGHTS_DIR


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
