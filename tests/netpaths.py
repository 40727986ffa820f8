"""Where the test nets live: the committed random-weight nets and the real maia nets in ../shared."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WEIGHTS_DIR = REPO / "weights"
SHARED_WEIGHTS_DIR = REPO.parent / "shared" / "weights"
COMMITTED_NETS = sorted(WEIGHTS_DIR.glob("*.pb.gz"))
MAIA_NETS = [SHARED_WEIGHTS_DIR / f"maia-{elo}.pb.gz" for elo in range(1100, 2000, 100)]
