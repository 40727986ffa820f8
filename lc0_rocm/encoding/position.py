"""Parse a user position (FEN or start position + UCI moves) into a History, with clear errors.

`parse_position(fen_or_None, moves)` validates with python-chess: a malformed or illegal FEN, a
malformed UCI move string or an illegal move raises `PositionError` with a one-line message that
names the bad token. Castling may be given as e1g1 or as king-takes-rook (e1h1), as lc0 accepts.

A position is also refused when its counters do not fit where they go: the halfmove clock into the
search tree's int16 `rule50` column (search/tree.py; the search adds one to it past 100 at most,
as a node with rule50 >= 100 is a draw and not extended), the fullmove number into lc0's `int`
(src/chess/board.cc: ChessBoard::SetFromFen refuses a larger one). With moves, the counters the
last position may reach are checked (the clock plus one per move, the fullmove number plus one per
move of Black), so no move of the line can carry them past the limits.
"""

from __future__ import annotations

from typing import Iterable, Optional

import chess
import numpy as np

from ..errors import PositionError, one_line
from .history import History, PositionState

_STATUS_TEXT = (
    (chess.STATUS_NO_WHITE_KING, "no white king"),
    (chess.STATUS_NO_BLACK_KING, "no black king"),
    (chess.STATUS_TOO_MANY_KINGS, "too many kings"),
    (chess.STATUS_TOO_MANY_WHITE_PAWNS, "too many white pawns"),
    (chess.STATUS_TOO_MANY_BLACK_PAWNS, "too many black pawns"),
    (chess.STATUS_PAWNS_ON_BACKRANK, "pawns on the first or last rank"),
    (chess.STATUS_TOO_MANY_WHITE_PIECES, "too many white pieces"),
    (chess.STATUS_TOO_MANY_BLACK_PIECES, "too many black pieces"),
    (chess.STATUS_BAD_CASTLING_RIGHTS, "castling rights without king/rook on their squares"),
    (chess.STATUS_INVALID_EP_SQUARE, "invalid en-passant square"),
    (chess.STATUS_OPPOSITE_CHECK, "the side not to move is in check"),
    (chess.STATUS_TOO_MANY_CHECKERS, "too many checkers"),
    (chess.STATUS_IMPOSSIBLE_CHECK, "impossible check"),
)


HALFMOVE_CLOCK_MAX = int(np.iinfo(np.int16).max) - 1  # the tree's rule50 (int16), less the search's one step
FULLMOVE_NUMBER_MAX = 2**31 - 1  # lc0's int


def check_counters(board: chess.Board, moves: int = 0) -> None:
    """PositionError when the halfmove clock or the fullmove number of `board`, or what `moves`
    more moves may carry them to, pass the limits the search and lc0 can hold."""
    after = f" + {moves} move{'s' if moves != 1 else ''}" if moves else ""
    if board.halfmove_clock + moves > HALFMOVE_CLOCK_MAX:
        raise PositionError(f"invalid FEN '{board.fen()}': halfmove clock {board.halfmove_clock}{after} is over "
                            f"{HALFMOVE_CLOCK_MAX}")
    black_moves = (moves + (board.turn == chess.BLACK)) // 2  # each adds one to the fullmove number
    if board.fullmove_number + black_moves > FULLMOVE_NUMBER_MAX:
        raise PositionError(f"invalid FEN '{board.fen()}': fullmove number {board.fullmove_number}{after} is over "
                            f"{FULLMOVE_NUMBER_MAX}")


def parse_board(fen: Optional[str], chess960: bool = False) -> chess.Board:
    """A validated python-chess board from a FEN (None or "startpos" = the start position);
    `chess960`: castling rights and moves in Chess960's notation (king takes rook)."""
    if fen is None or fen.strip() in ("", "startpos"):
        return chess.Board(chess960=chess960)
    fen = one_line(fen)
    try:
        board = chess.Board(fen, chess960=chess960)
    except ValueError as e:
        raise PositionError(f"invalid FEN '{fen}': {one_line(e)}") from None
    status = board.status()
    if status != chess.STATUS_VALID:
        problems = [text for flag, text in _STATUS_TEXT if status & flag] or ["invalid position"]
        raise PositionError(f"illegal FEN '{fen}': {', '.join(problems)}")
    check_counters(board)
    return board


def parse_position(fen: Optional[str], moves: Iterable[str] = (), chess960: bool = False) -> History:
    """History from a FEN (None = start position) and UCI moves (absolute notation, e.g. e2e4, e7e8q;
    with `chess960`, castling as king takes rook)."""
    board = parse_board(fen, chess960)
    moves = list(moves)
    check_counters(board, len(moves))
    root_ep = -1 if board.ep_square is None else board.ep_square & 7
    node = PositionState.from_board(board, None, ep_file=root_ep)
    for n, tok in enumerate(moves, 1):
        if not isinstance(tok, str):
            raise PositionError(f"move {n} is not a string: {tok!r}")
        text = tok.strip()
        try:
            move = chess.Move.from_uci(text)
        except ValueError:
            raise PositionError(f"bad UCI move '{tok}' (move {n})") from None
        if not move:  # null move "0000"
            raise PositionError(f"null move '{tok}' is not allowed (move {n})")
        try:
            move = board.parse_uci(text)
        except ValueError:
            raise PositionError(f"illegal move '{tok}' (move {n}) in position '{board.fen()}'") from None
        board.push(move)
        node = PositionState.from_board(board, node)
    return History(node, board)
