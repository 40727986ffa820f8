"""Move codes of the compiled search and the policy index of each code.

A move is an int16 code: from * 64 + to + 4096 * slot, slot 0 a plain move (a Chess960 castling
as king-takes-rook), 1..4 a promotion to Q R B N, 5 a standard castling (e1g1 ...). `MOVES[code]` is
the shared python-chess `Move`; `index_tables()` the int32 [16, NUM_CODES] table of policy indices by
(black * 8 + canonical transform, code), so the compiled worker maps a position's legal moves to
the network's 1858 outputs with one lookup each (castling: the king-takes-rook index, as lc0).
tests/test_move_codes.py checks the indices against encoding.legal_policy for every transform.
"""

from __future__ import annotations

from functools import lru_cache

import chess
import numpy as np

from ..encoding.policy_map import _abs_tables

# Move codes: from * 64 + to + 4096 * slot, slot 0 a plain move (castling king-takes-rook in Chess960),
# 1..4 a promotion to Q R B N, 5 standard castling (e1g1 ...: policy index of king-takes-rook).
PLAIN, PROMO_Q, PROMO_R, PROMO_B, PROMO_N, CASTLE = 0, 4096, 8192, 12288, 16384, 20480
NUM_CODES = 6 * 4096
_PROMO_PIECES = (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)  # python-chess's order
_SLOT_OF_PROMO = {chess.QUEEN: PROMO_Q, chess.ROOK: PROMO_R, chess.BISHOP: PROMO_B, chess.KNIGHT: PROMO_N}
_CASTLES = ((chess.E1, chess.G1, chess.H1), (chess.E1, chess.C1, chess.A1),
            (chess.E8, chess.G8, chess.H8), (chess.E8, chess.C8, chess.A8))


def _build_moves() -> list:
    """Shared, never-mutated python-chess Move objects by code (None where no move has that code)."""
    moves: list = [chess.Move(a, b) for a in range(64) for b in range(64)] + [None] * (NUM_CODES - 4096)
    for a in list(range(8, 16)) + list(range(48, 56)):
        for b in range(64):
            if abs((b >> 3) - (a >> 3)) == 1 and abs((b & 7) - (a & 7)) <= 1 and b >> 3 in (0, 7):
                for p in _PROMO_PIECES:
                    moves[_SLOT_OF_PROMO[p] + a * 64 + b] = chess.Move(a, b, p)
    for k, g, _ in _CASTLES:
        moves[CASTLE + k * 64 + g] = chess.Move(k, g)
    return moves


MOVES: list = _build_moves()


@lru_cache(maxsize=None)
def index_table(black: bool, transform: int = 0) -> np.ndarray:
    """int32 [NUM_CODES]: policy index of each move code for the side to move and canonical transform
    (entries of impossible codes are -1)."""
    plain, promo = _abs_tables(bool(black), int(transform), False)
    table = np.full(NUM_CODES, -1, dtype=np.int32)
    table[:4096] = plain
    table[PROMO_N:PROMO_N + 4096] = plain  # a knight promotion uses the plain from-to index
    for (a, b, p), idx in promo.items():
        table[_SLOT_OF_PROMO[p] + a * 64 + b] = idx
    for k, g, rook in _CASTLES:
        table[CASTLE + k * 64 + g] = plain[k * 64 + rook]
    table.setflags(write=False)
    return table


_ALL_TABLES = np.full((16, NUM_CODES), -1, dtype=np.int32)  # [black * 8 + transform, code]
_READY = [False] * 16


def index_tables(combos=()) -> np.ndarray:
    """The int32 [16, NUM_CODES] table of policy indices by (black * 8 + transform, code), with the
    rows of `combos` (and of transform 0) filled in."""
    for c in (0, 8, *combos):
        if not _READY[c]:
            _ALL_TABLES[c] = index_table(bool(c >> 3), c & 7)
            _READY[c] = True
    return _ALL_TABLES


def policy_indices(codes: list, black: bool, transform: int = 0) -> list:
    """Policy indices of move codes (a list of python ints)."""
    table = index_table(black, transform)
    return table[np.asarray(codes, dtype=np.int64)].tolist() if codes else []
