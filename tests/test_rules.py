"""The compiled chess rules (lc0_rocm/board/rules.py) against python-chess, the truth for moves,
their order, check and the position after each move.

Along seeded random games from the start position, from the perft test positions (castling, en
passant with pins and rank skewers, promotions and under-promotions, checks and double checks),
from Chess960 starts (`chess.Board.from_chess960_pos`, some with an emptied back rank so that castling
comes early) and from hand-made Chess960 castling positions: the legal move codes must be
python-chess's `generate_legal_moves()` order mapped by `move_to_code` (and back by `code_to_move`),
the check flag `board.is_check()`, every `make_move` result `PositionState.from_board` of the board
after the push (bitboards, castling rights, lc0's en-passant flag, rule 50), and the mating-material
rule lc0's (written out on python-chess boards). Perft counts (standard and Chess960) use only the compiled functions.
"""

from __future__ import annotations

import random
import time

import chess
import numpy as np
import pytest

from lc0_rocm.encoding.history import PositionState
from lc0_rocm.board import rules as R

STARTS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",  # kiwipete
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",  # en passant pins and skewers
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",  # promotions, checks
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
    "4k3/8/8/2KPp2r/8/8/8/8 w - e6 0 1",  # e.p. capture that would expose the king on the rank
    "8/8/3k4/8/2pP4/8/8/3KQ3 b - d3 0 1",  # e.p. out of a check by the pushed pawn
    "rnbqkb1r/ppppp1pp/7n/4Pp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # plain e.p.
    "4k3/8/8/8/8/8/8/R3K2R w KQ - 0 1",  # castling, both sides
    "r3k2r/8/8/8/8/8/8/4K3 b kq - 0 1",
    "3k4/8/8/8/8/8/8/R3K2R w KQ - 0 1",
    "4k3/1P6/8/8/8/8/1p6/4K3 w - - 0 1",  # promotions both sides
]

CHESS960_FENS = [
    "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9",
    "2nnrbkr/p1qppppp/8/1ppb4/6PP/3PP3/PPP2P2/BQNNRBKR w HEhe - 1 9",
    "rk2r3/pppppppp/8/8/8/8/PPPPPPPP/RK2R3 w EAea - 0 1",  # king b1 next to its a-side rook
    "r5kr/pppppppp/8/8/8/8/PPPPPPPP/R5KR w HAha - 0 1",  # h-side castling: the king stays on g1
    "1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 b GBgb - 0 1",
    "2r2kr1/8/8/8/8/8/8/2R2KR1 w GCgc - 0 1",  # king and h-side rook swap squares
    "1rk4r/8/8/8/8/8/8/1RK4R w HBhb - 0 1",  # a-side rook passes over the king
    "1r1k3r/8/8/8/8/8/8/qRK4R w HBhb - 0 1",  # the leaving a-side rook would uncover the king on c1
    "rk5r/8/8/8/8/8/8/RK3r2 w Aa - 0 1",  # in check along the back rank: no castling
]


def _arrays(state: PositionState):
    return (np.array(state.bbs, dtype=np.uint64), state.black_to_move, np.uint64(state.castling),
            state.ep_file, state.rule50)


def _mating_material(board: chess.Board) -> bool:
    """lc0's ChessBoard::HasMatingMaterial written on a python-chess board (queens count as rooks)."""
    if board.rooks or board.queens or board.pawns:
        return True
    if chess.popcount(board.occupied) < 4:
        return False
    if board.knights:
        return True
    return bool(board.bishops & chess.BB_LIGHT_SQUARES) and bool(board.bishops & chess.BB_DARK_SQUARES)


_OUT = np.zeros(256, dtype=np.int16)
_CHILD = np.zeros(12, dtype=np.uint64)


def _check_position(board: chess.Board, keys: dict | None = None) -> list[chess.Move]:
    """Compare everything rules.py says about `board` (and each of its moves) with python-chess."""
    state = PositionState.from_board(board)
    bbs, black, castling, ep, r50 = _arrays(state)
    c960 = board.chess960
    n, check = R.legal_moves(bbs, black, castling, ep, c960, _OUT)
    codes = _OUT[:n].tolist()
    ref = list(board.generate_legal_moves())
    assert codes == [R.move_to_code(board, m) for m in ref], board.fen()
    assert [R.code_to_move(c, c960) for c in codes] == ref, board.fen()
    assert check == board.is_check() == R.in_check(bbs, black), board.fen()
    assert R.has_mating_material(bbs) == _mating_material(board), board.fen()
    for code, move in zip(codes, ref):
        castling2, ep2, r502 = R.make_move(bbs, black, castling, ep, r50, code, c960, _CHILD)
        board.push(move)
        after = PositionState.from_board(board)
        board.pop()
        got = (tuple(_CHILD.tolist()), int(castling2), int(ep2), int(r502))
        assert got == (after.bbs, after.castling, after.ep_file, after.rule50), (board.fen(), move.uci())
    if keys is not None:
        key = int(R.position_key(bbs, black, castling, ep))
        assert keys.setdefault(key, state.key) == state.key, board.fen()  # no collision
    return ref


def _play(board: chess.Board, rng: random.Random, plies: int, seen: dict, keys: dict) -> int:
    """A random game from `board` (special moves favoured), every position checked; returns positions."""
    count = 0
    for _ in range(plies):
        moves = _check_position(board, keys)
        count += 1
        seen["check"] += board.is_check()
        if not moves:
            seen["mate"] += board.is_checkmate()
            break
        special = [m for m in moves if board.is_capture(m) or m.promotion or board.is_castling(m)]
        move = rng.choice(special if special and rng.random() < 0.4 else moves)
        seen["castle"] += board.is_castling(move)
        seen["ep"] += board.is_en_passant(move)
        seen["promo"] += move.promotion is not None
        seen["under"] += move.promotion not in (None, chess.QUEEN)
        board.push(move)
        if board.halfmove_clock >= 100 or board.is_insufficient_material():
            break
    return count


def _seen() -> dict:
    return {"castle": 0, "ep": 0, "promo": 0, "under": 0, "check": 0, "mate": 0}


def test_random_games_match_python_chess():
    rng = random.Random(20261126)
    seen, keys, positions = _seen(), {}, 0
    for g in range(52):
        positions += _play(chess.Board(STARTS[g % len(STARTS)]), rng, 100, seen, keys)
    assert positions > 3000
    assert all(v > 0 for v in seen.values()), seen  # every special rule was exercised


def test_chess960_games_match_python_chess():
    rng = random.Random(960)
    seen, keys, positions = _seen(), {}, 0
    for i in range(0, 960, 9):
        positions += _play(chess.Board.from_chess960_pos(i), rng, 30, seen, keys)
    for i in range(3, 960, 16):  # back ranks without minor pieces and queen: castling comes early
        board = chess.Board.from_chess960_pos(i)
        for sq in list(chess.SquareSet(board.occupied & (chess.BB_RANK_1 | chess.BB_RANK_8))):
            if board.piece_type_at(sq) not in (chess.KING, chess.ROOK):
                board.remove_piece_at(sq)
        positions += _play(board, rng, 30, seen, keys)
    for fen in CHESS960_FENS:
        for _ in range(6):
            positions += _play(chess.Board(fen, chess960=True), rng, 20, seen, keys)
    assert positions > 3000
    assert seen["castle"] > 50 and seen["check"] > 0, seen


@pytest.mark.parametrize("fen", CHESS960_FENS)
def test_chess960_castling_is_king_takes_rook(fen):
    board = chess.Board(fen, chess960=True)
    moves = _check_position(board)
    state = PositionState.from_board(board)
    n, _ = R.legal_moves(*_arrays(state)[:4], True, _OUT)
    castles = [c for c in _OUT[:n].tolist() if board.is_castling(R.code_to_move(c, True))]
    assert castles == [R.move_to_code(board, m) for m in moves if board.is_castling(m)]
    for c in castles:
        king, rook = c >> 6, c & 63
        assert c < 4096 and board.piece_type_at(king) == chess.KING
        assert board.piece_type_at(rook) == chess.ROOK and board.color_at(rook) == board.turn


def test_standard_castling_codes():
    board = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1")
    state = PositionState.from_board(board)
    n, _ = R.legal_moves(*_arrays(state)[:4], False, _OUT)
    codes = _OUT[:n].tolist()
    assert R.CASTLE + chess.E1 * 64 + chess.G1 in codes and R.CASTLE + chess.E1 * 64 + chess.C1 in codes
    assert R.code_to_move(R.CASTLE + chess.E1 * 64 + chess.G1, False) == chess.Move(chess.E1, chess.G1)
    assert R.code_to_move(R.CASTLE + chess.E1 * 64 + chess.G1, True) == chess.Move(chess.E1, chess.H1)
    # both python-chess spellings of a castling move give the same code, on either kind of board
    assert R.move_to_code(board, chess.Move(chess.E1, chess.H1)) == R.CASTLE + chess.E1 * 64 + chess.G1
    assert R.move_to_code(board, chess.Move(chess.E1, chess.C1)) == R.CASTLE + chess.E1 * 64 + chess.C1
    b960 = chess.Board("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", chess960=True)
    assert R.move_to_code(b960, chess.Move(chess.E1, chess.G1)) == chess.E1 * 64 + chess.H1
    assert R.move_to_code(b960, chess.Move(chess.E1, chess.A1)) == chess.E1 * 64 + chess.A1
    # the same position as a Chess960 board castles king-takes-rook into the same child position
    bbs, black, castling, ep, r50 = _arrays(state)
    std = np.zeros(12, dtype=np.uint64)
    r1 = R.make_move(bbs, black, castling, ep, r50, R.CASTLE + chess.E1 * 64 + chess.G1, False, std)
    r2 = R.make_move(bbs, black, castling, ep, r50, chess.E1 * 64 + chess.H1, True, _CHILD)
    assert (std == _CHILD).all() and r1 == r2 and r1[2] == 1


@pytest.mark.parametrize("fen,mating", [
    ("8/8/8/4k3/8/8/4K3/8 w - - 0 1", False),
    ("8/8/8/4k3/8/8/3BK3/8 w - - 0 1", False),
    ("8/8/8/4k3/8/8/3NK3/8 w - - 0 1", False),
    ("8/8/8/4k3/8/8/2NNK3/8 w - - 0 1", True),
    ("8/8/8/4kb2/8/8/3BK3/8 w - - 0 1", True),  # opposite-coloured bishops
    ("8/8/8/4k1b1/8/8/3BK3/8 w - - 0 1", False),  # same colour
    ("8/8/8/4k3/8/8/3PK3/8 w - - 0 1", True),
    ("8/8/8/4k3/8/8/3QK3/8 w - - 0 1", True),
    ("8/8/8/4kn2/8/8/3BK3/8 w - - 0 1", True),
])
def test_mating_material(fen, mating):
    state = PositionState.from_board(chess.Board(fen))
    bbs = _arrays(state)[0]
    assert R.has_mating_material(bbs) == mating == _mating_material(chess.Board(fen))


def _key(board: chess.Board) -> int:
    bbs, black, castling, ep, _ = _arrays(PositionState.from_board(board))
    return int(R.position_key(bbs, black, castling, ep))


def test_position_key_transpositions():
    a, b = chess.Board(), chess.Board()
    for uci in ["g1f3", "g8f6", "b1c3", "b8c6"]:
        a.push_uci(uci)
    for uci in ["b1c3", "b8c6", "g1f3", "g8f6"]:
        b.push_uci(uci)
    assert _key(a) == _key(b)
    c = chess.Board()
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8"]:
        c.push_uci(uci)
    assert _key(c) == _key(chess.Board())  # a repetition
    keys = {_key(a), _key(chess.Board()),
            _key(chess.Board(chess.STARTING_FEN.replace(" w ", " b "))),  # side to move
            _key(chess.Board(chess.STARTING_FEN.replace("KQkq", "Qkq"))),  # castling
            _key(chess.Board("rnbqkbnr/pppp1ppp/8/8/3Pp3/8/PPP1PPPP/RNBQKBNR b KQkq - 0 1")),
            _key(chess.Board("rnbqkbnr/pppp1ppp/8/8/3Pp3/8/PPP1PPPP/RNBQKBNR b KQkq d3 0 1"))}  # lc0 ep flag
    assert len(keys) == 6


@pytest.mark.parametrize("fen,chess960,depth,nodes", [
    (chess.STARTING_FEN, False, 3, 8902),
    (chess.STARTING_FEN, False, 4, 197281),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", False, 2, 2039),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", False, 3, 97862),
    ("8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1", False, 4, 43238),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", False, 3, 9467),
    ("rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8", False, 3, 62379),
    ("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", True, 4, 326672),
    ("2nnrbkr/p1qppppp/8/1ppb4/6PP/3PP3/PPP2P2/BQNNRBKR w HEhe - 1 9", True, 4, 667366),
])
def test_perft(fen, chess960, depth, nodes):
    bbs, black, castling, ep, _ = _arrays(PositionState.from_board(chess.Board(fen, chess960=chess960)))
    assert R.perft(bbs, black, castling, ep, chess960, depth) == nodes


def test_chess960_start_perft():
    board = chess.Board.from_chess960_pos(0)  # bbqnnrkr
    bbs, black, castling, ep, _ = _arrays(PositionState.from_board(board))
    assert [R.perft(bbs, black, castling, ep, True, d) for d in (1, 2, 3)] == [20, 400, 9006]


def test_compiled_speed_is_sane():
    """perft 4 of Kiwipete (~4M leaves) runs in well under a second once compiled."""
    bbs, black, castling, ep, _ = _arrays(PositionState.from_board(chess.Board(STARTS[1])))
    R.perft(bbs, black, castling, ep, False, 1)
    t = time.perf_counter()
    assert R.perft(bbs, black, castling, ep, False, 4) == 4085603
    assert time.perf_counter() - t < 2.0
