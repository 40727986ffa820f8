"""Varied test positions (FEN + UCI moves) and lc0-oracle helpers shared by the reference tests.

The positions cover: start position with and without history, both sides to move, castling rights
in all combinations, en passant, promotions for both colours (incl. under-promotions and captures),
repetitions, a high half-move clock, sparse endgames (which trigger canonical transforms) and
crowded middlegames.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from chess import STARTING_FEN

REPO = Path(__file__).resolve().parent.parent
SHARED_WEIGHTS = REPO.parent / "shared" / "weights"
MAIA = [SHARED_WEIGHTS / f"maia-{elo}.pb.gz" for elo in range(1100, 2000, 100)]

# (fen, moves); FENs all have half-move clock 0 unless noted (V2 formats crash lc0 0.32.1 otherwise).
POSITIONS: list[tuple[str, list[str]]] = [
    (STARTING_FEN, []),
    (STARTING_FEN, ["e2e4"]),
    (STARTING_FEN, ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4", "f3d4", "g8f6", "b1c3", "a7a6"]),
    (STARTING_FEN, ["g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8"]),  # repetitions
    (STARTING_FEN, ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "f8c5", "e1g1", "g8f6", "d2d3", "e8g8"]),  # both castled
    (STARTING_FEN, ["e2e4", "a7a6", "e4e5", "d7d5"]),  # en passant e5d6 available
    ("r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 0 1", []),
    ("r3k2r/pppq1ppp/2npbn2/2b1p3/2B1P3/2NPBN2/PPPQ1PPP/R3K2R b Kq - 0 1", []),
    ("r3k2r/8/8/8/8/8/8/R3K2R w Qk - 0 1", ["a1b1", "h8g8"]),
    ("8/P1k5/8/8/8/8/5Kp1/8 w - - 0 1", []),  # promotions for both
    ("8/P1k5/8/8/8/8/5Kp1/8 b - - 0 1", []),
    ("1n2k3/2P5/8/8/8/8/8/4K3 w - - 0 1", []),  # capture-promotions
    ("4k3/8/8/8/8/8/8/4K2R w K - 0 1", []),
    ("8/8/8/8/8/2k5/7K/6Q1 w - - 0 1", []),  # pawnless, transform with transpose in canonical formats
    ("8/8/4k3/8/8/8/1K6/8 b - - 0 1", []),
    ("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1", ["d1d8"]),  # mate
    ("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 0 1", []),
    ("rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 1", []),  # ep from FEN
    ("2kr3r/ppp2ppp/2n5/2b1p3/4P1b1/2NP1N2/PPP2PPP/R1B1KB1R w KQ - 0 1", ["h2h3", "g4h5", "g2g4"]),
    ("8/8/8/3k4/8/8/3K4/8 w - - 37 80", []),  # rule50 > 0 (skipped for V2 formats)
    ("r1b1k2r/ppppnppp/2n2q2/2b5/3NP3/2P1B3/PP3PPP/RN1QKB1R w KQkq - 0 1", ["d4c6", "f6c6"]),
    ("3r1rk1/p4ppp/1p2p3/2q5/2P5/1P3NP1/P3QPKP/3R1R2 b - - 0 1", []),
    ("7k/8/8/8/8/8/8/K7 w - - 0 1", ["a1b2", "h8g7", "b2c3"]),
    (STARTING_FEN, ["d2d4", "d7d5", "c2c4", "e7e6", "b1c3", "g8f6", "c1g5", "f8e7", "e2e3", "e8g8", "g1f3", "b8d7"]),
]

V2_FORMATS = (5, 133)


def positions_for(input_format: int, limit: int | None = None) -> list[tuple[str, list[str]]]:
    """The positions lc0 0.32.1 can encode for this input format (V2 + FEN rule50 > 0 segfaults)."""
    out = [p for p in POSITIONS if not (input_format in V2_FORMATS and int(p[0].split()[4]) > 0)]
    return out[:limit] if limit else out


def oracle_eval(path, positions, options: str = ""):
    """Evaluate positions with lc0's eigen backend.

    Returns (packed_planes, logits [N, 1858] float64, q [N], d [N], m [N]); the planes are decoded
    from lc0's own `Input` objects, so the reference gets exactly lc0's inputs.
    """
    from lc0_oracle import require_lczero
    from lc0_rocm.encoding.packed import PackedPlanes

    lb = require_lczero()

    weights = lb.Weights(str(path))
    backend = lb.Backend(weights=weights, backend="eigen", options=options)
    inputs = [lb.GameState(fen=fen, moves=list(moves)).as_input(backend) for fen, moves in positions]
    masks = np.array([[i.mask(p) for p in range(112)] for i in inputs], dtype=np.uint64)
    values = np.array([[i.val(p) for p in range(112)] for i in inputs], dtype=np.float32)
    planes = PackedPlanes(masks, values, np.zeros(len(inputs), dtype=np.int32))
    outs = backend.evaluate(*inputs)
    logits = np.array([o.p_raw(*range(1858)) for o in outs], dtype=np.float64)
    q = np.array([o.q() for o in outs])
    d = np.array([o.d() for o in outs])
    m = np.array([o.m() for o in outs])
    return planes, logits, q, d, m
