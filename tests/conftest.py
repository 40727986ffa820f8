"""Shared test fixtures: where the committed nets and the real (shared) nets live."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
WEIGHTS_DIR = REPO / "weights"
SHARED_WEIGHTS_DIR = REPO.parent / "shared" / "weights"
COMMITTED_NETS = sorted(WEIGHTS_DIR.glob("*.pb.gz"))
MAIA_NETS = [SHARED_WEIGHTS_DIR / f"maia-{elo}.pb.gz" for elo in range(1100, 2000, 100)]


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
