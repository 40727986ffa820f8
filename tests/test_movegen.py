"""The search's bitboard move generator against python-chess (the truth for moves, order and positions).

Along seeded random games from the perft test positions (castling both ways, en passant with pins
and rank skewers, promotions and under-promotions, checks and double checks) and along the famous
games of tests/data/games.json: the legal moves must be python-chess's, in python-chess's order
(the search breaks prior ties by it), with the policy indices of `legal_move_indices`; the check
flag, lc0's mating-material rule and every child position (bitboards, castling rights, lc0's
en-passant flag, rule 50, repetitions) must equal what python-chess boards give.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import chess
import pytest

from lc0_rocm.encoding.history import PositionState
from lc0_rocm.encoding.policy_map import legal_move_indices
from lc0_rocm.search import movegen as mg
from lc0_rocm.search.mcts import has_mating_material

GAMES = Path(__file__).resolve().parent / "data" / "games.json"

STARTS = [
    chess.STARTING_FEN,
    "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",  # kiwipete
    "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",  # en passant pins and skewers
    "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",  # promotions, checks
    "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
    "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
    "4k3/8/8/2KPp2r/8/8/8/8 w - e6 0 1",  # e.p. capture that would expose the king on the rank
    "8/8/3k4/8/2pP4/8/8/3KQ3 b - d3 0 1",  # e.p. out of a check by the pushed pawn
]


def _root_state(board: chess.Board) -> PositionState:
    ep = board.ep_square & 7 if board.ep_square is not None else -1
    return PositionState.from_board(board, None, ep_file=ep)


def _check_position(board: chess.Board, state: PositionState) -> list[chess.Move]:
    ref_moves, ref_idx = legal_move_indices(board, 0)
    codes, check = mg.legal_moves(state)
    assert [mg.MOVES[c] for c in codes] == ref_moves, board.fen()
    assert mg.policy_indices(codes, state.black_to_move) == ref_idx.tolist(), board.fen()
    assert mg.board_codes(board) == (codes, check)
    assert check == board.is_check(), board.fen()
    assert mg.in_check(state) == board.is_check(), board.fen()
    assert mg.has_mating_material(state) == has_mating_material(board), board.fen()
    return ref_moves


def _step(board: chess.Board, state: PositionState, move: chess.Move) -> PositionState:
    child = mg.child_state(state, move)
    after = board.copy(stack=False)
    after.push(move)
    ref = PositionState.from_board(after, state)
    assert (child.key, child.rule50, child.repetitions) == (ref.key, ref.rule50, ref.repetitions), (board.fen(), move)
    board.push(move)
    return child


def test_random_games_match_python_chess():
    rng = random.Random(20261125)
    positions = 0
    seen = {"castle": 0, "ep": 0, "promo": 0, "under": 0, "check": 0, "mate": 0}
    for g in range(64):
        board = chess.Board(STARTS[g % len(STARTS)])
        state = _root_state(board)
        for _ in range(120):
            moves = _check_position(board, state)
            positions += 1
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
            state = _step(board, state, move)
            if board.halfmove_clock >= 100 or board.is_insufficient_material():
                break
    assert positions > 4000
    assert all(v > 0 for v in seen.values()), seen  # every special rule was exercised


def test_famous_games_match_python_chess():
    games = json.loads(GAMES.read_text())["games"]
    for name, game in games.items():
        board = chess.Board()
        state = _root_state(board)
        for uci in game["uci"].split():
            _check_position(board, state)
            state = _step(board, state, chess.Move.from_uci(uci))
        assert _check_position(board, state) == list(board.legal_moves)


def test_repetitions_are_counted_through_child_states():
    board = chess.Board()
    state = _root_state(board)
    for uci in ["g1f3", "g8f6", "f3g1", "f6g8"] * 2:
        state = _step(board, state, chess.Move.from_uci(uci))
    assert state.repetitions == 2


@pytest.mark.parametrize("fen", [
    "8/8/8/4k3/8/8/3QK3/8 w - - 0 1",
    "8/8/2k5/8/8/5N2/1K3B2/8 b - - 3 60",
    "7k/8/8/8/8/8/1r6/K7 w - - 0 1",
])
def test_transformed_indices_match_the_board_version(fen):
    board = chess.Board(fen)
    state = _root_state(board)
    codes, _ = mg.legal_moves(state)
    for t in range(1, 8):
        assert mg.policy_indices(codes, state.black_to_move, t) == legal_move_indices(board, t)[1].tolist()
        assert (mg.index_tables([state.black_to_move * 8 + t])[state.black_to_move * 8 + t][codes]
                == legal_move_indices(board, t)[1]).all()


@pytest.mark.parametrize("fen,castles", [
    ("bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9", False),
    ("rk2r3/8/8/8/8/8/8/RK2R3 w KQkq - 0 1", True),
    ("1r2k1r1/8/8/8/8/8/8/1R2K1R1 b BGbg - 0 1", True),
])
def test_chess960_boards_get_codes_and_indices_of_their_own(fen, castles):
    board = chess.Board(fen, chess960=True)
    codes, check = mg.board_codes(board)
    assert [mg.MOVES[c] for c in codes] == list(board.legal_moves) and check == board.is_check()
    assert mg.policy_indices(codes, board.turn == chess.BLACK) == legal_move_indices(board, 0)[1].tolist()
    assert any(board.is_castling(m) for m in board.legal_moves) == castles
