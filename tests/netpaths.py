"""Where the test nets live: the committed random-weight nets and the real maia nets in ../shared."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # the tests of tools/ import it as a package of the checkout (tools.match)
    sys.path.append(str(REPO))
WEIGHTS_DIR = REPO / "weights"
SHARED_WEIGHTS_DIR = REPO.parent / "shared" / "weights"
COMMITTED_NETS = sorted(WEIGHTS_DIR.glob("*.pb.gz"))
MAIA_NETS = [SHARED_WEIGHTS_DIR / f"maia-{elo}.pb.gz" for elo in range(1100, 2000, 100)]


def require_shared(path: Path) -> Path:
    """`path` from ../shared (real nets, tables), or a skip that says where it comes from; under
    CI=true, where ../shared is part of the contract, its absence fails instead."""
    if path.exists():
        return path
    msg = f"{path.name} not present: real nets and tables come from ../shared beside the clone (see its README)"
    if os.environ.get("CI") == "true":
        pytest.fail(msg)
    pytest.skip(msg)
