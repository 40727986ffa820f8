"""Policy indices of the search's move codes against encoding.legal_policy (the board version).

For positions of both colours, every canonical transform and Chess960 castling, the index table of
board.move_codes must give each legal move the policy index that `legal_move_indices` gives it.
"""

from __future__ import annotations

import chess
import numpy as np
import pytest

from lc0_rocm.encoding.history import PositionState
from lc0_rocm.encoding.policy_map import legal_move_indices
from lc0_rocm.board import rules
from lc0_rocm.board.move_codes import index_tables

FENS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 b kq - 0 1",  # black promotions
    "8/8/8/4k3/8/8/3QK3/8 w - - 0 1",
    "8/8/2k5/8/8/5N2/1K3B2/8 b - - 3 60",
    "7k/8/8/8/8/8/1r6/K7 w - - 0 1",
]


def _codes(board: chess.Board) -> np.ndarray:
    s = PositionState.from_board(board)
    out = np.zeros(256, dtype=np.int16)
    n, _ = rules.legal_moves(np.array(s.bbs, dtype=np.uint64), s.black_to_move, np.uint64(s.castling),
                             s.ep_file, board.chess960, out)
    return out[:n]


@pytest.mark.parametrize("fen", FENS)
def test_indices_match_the_board_version_for_every_transform(fen):
    board = chess.Board(fen)
    codes = _codes(board)
    black = board.turn == chess.BLACK
    tables = index_tables(tuple(range(16)))
    for t in range(8 if not board.castling_rights else 1):  # lc0 transforms only boards without castling
        moves, idx = legal_move_indices(board, t)
        assert [rules.code_to_move(int(c)) for c in codes] == moves
        assert (tables[black * 8 + t][codes] == idx).all(), (fen, t)


@pytest.mark.parametrize("fen,castles", [
    ("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", False),
    ("rk2r3/8/8/8/8/8/8/RK2R3 w KQkq - 0 1", True),
    ("1r2k1r1/8/8/8/8/8/8/1R2K1R1 b BGbg - 0 1", True),
])
def test_chess960_castling_uses_the_king_takes_rook_index(fen, castles):
    board = chess.Board(fen, chess960=True)
    codes = _codes(board)
    moves, idx = legal_move_indices(board, 0)
    assert [rules.code_to_move(int(c), True) for c in codes] == moves
    assert (index_tables()[(board.turn == chess.BLACK) * 8][codes] == idx).all()
    assert any(board.is_castling(m) for m in moves) == castles
