"""User positions: bad FENs, bad UCI strings and illegal moves give a one-line PositionError naming
the bad token; good input gives the same history whichever way castling is written."""

from __future__ import annotations

import numpy as np
import pytest
from chess import STARTING_FEN

from lc0_rocm.encoding.planes import encode_position
from lc0_rocm.encoding.position import parse_position
from lc0_rocm.errors import Lc0RocmError, PositionError

def _err(fen, moves=()):
    with pytest.raises(PositionError) as ei:
        parse_position(fen, list(moves))
    msg = str(ei.value)
    assert "\n" not in msg and msg
    return msg


@pytest.mark.parametrize(
    "fen, fragment",
    [
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP w KQkq - 0 1", "invalid FEN"),  # 7 ranks
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNX w KQkq - 0 1", "invalid FEN"),  # bad piece
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR x KQkq - 0 1", "invalid FEN"),  # bad side
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - zero 1", "invalid FEN"),
        ("hello", "invalid FEN"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQQBNR w KQkq - 0 1", "no white king"),
        ("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBKKBNR w - - 0 1", "too many kings"),
        ("4k3/8/8/8/8/8/8/P3K3 w - - 0 1", "pawns on the first or last rank"),
        ("4k3/4Q3/8/8/8/8/8/4K3 w - - 0 1", "not to move is in check"),
        ("4k3/8/8/8/8/8/8/4K3 w K - 0 1", "castling rights"),
        ("4k3/8/8/8/8/8/8/4K3 w - e6 0 1", "en-passant"),
    ],
)
def test_bad_fen(fen, fragment):
    msg = _err(fen)
    assert fragment in msg
    assert fen.split()[0] in msg  # names the bad FEN


@pytest.mark.parametrize("tok", ["e2e9", "xyz", "e2", "e7e8k", "e2e4e5", "", "E2E4"])
def test_bad_uci_token(tok):
    msg = _err(None, ["e2e4", "e7e5", tok])
    assert f"'{tok}'" in msg and "move 3" in msg


@pytest.mark.parametrize(
    "fen, moves, bad",
    [
        (None, ["e2e5"], "e2e5"),
        (None, ["e2e4", "e2e4"], "e2e4"),  # moving from an empty square
        (None, ["e2e4", "e7e5", "e1g1"], "e1g1"),  # castling through pieces
        ("4k3/8/8/8/8/8/4r3/4K3 w - - 0 1", ["e1e2", "e8d8", "e2e3", "d8c8", "a1a2"], "a1a2"),
        ("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1", ["b7b8"], "b7b8"),  # promotion piece missing
        ("4k3/8/8/8/8/8/8/4K2R w K - 0 1", ["h1h2", "e8e7", "h2h1", "e7e8", "e1g1"], "e1g1"),  # right lost
    ],
)
def test_illegal_move(fen, moves, bad):
    msg = _err(fen, moves)
    assert f"illegal move '{bad}'" in msg


def test_null_and_non_string_moves():
    assert "null move" in _err(None, ["0000"])
    assert "not a string" in _err(None, ["e2e4", 42])


def test_position_error_hierarchy():
    assert issubclass(PositionError, Lc0RocmError) and issubclass(PositionError, ValueError)


def test_good_positions():
    h = parse_position(None, [])
    assert len(h) == 1 and h.last.is_startpos_board
    h = parse_position("startpos", ["e2e4"])
    assert len(h) == 2 and h.black_to_move
    h = parse_position("  " + STARTING_FEN + "  ", [" e2e4 "])
    assert len(h) == 2
    # castling accepted as e1g1 and as king-takes-rook e1h1, giving the same encoding
    pre = ["e2e4", "e7e5", "g1f3", "b8c6", "f1c4", "g8f6"]
    a = parse_position(None, pre + ["e1g1"])
    b = parse_position(None, pre + ["e1h1"])
    assert a.board.fen() == b.board.fen()
    assert np.array_equal(encode_position(a, 2).masks, encode_position(b, 2).masks)
