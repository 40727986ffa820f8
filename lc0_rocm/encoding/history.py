"""A game as lc0 sees it: the list of positions from the start (or a FEN) to now.

Each `PositionState` keeps what the encoder needs of one position, in absolute (white-at-bottom)
coordinates: the twelve piece bitboards, side to move, castling rights (as python-chess rook
squares), lc0's en-passant flag, the rule-50 half-move count and the repetition count.

lc0 rules reproduced here (`src/chess/position.cc`: `Position`, `PositionHistory::ComputeLastMoveRepetitions`):
* En-passant flag: after a double pawn push it is set only if an enemy pawn stands right next to
  the pushed pawn (a pseudo-legal capture; pins are ignored). For the first position it is the
  FEN's en-passant field (already validated by `position.parse_position`).
* Repetitions: when a position with rule50 >= 4 is appended, positions len-5, len-7, ... (same side
  to move) are scanned; the first equal one (pieces, side to move, castling rights, en-passant flag)
  gives 1 + its repetitions; the scan gives 0 once a scanned position has rule50 < 2. The first
  position has 0.

Histories are persistent: `History.push(move)` returns a new History sharing all earlier positions
(a linked list through `PositionState.prev`), so a search tree can extend one cheaply.
"""

from __future__ import annotations

import struct
from typing import Iterator, Optional

import chess
import numpy as np

from .transforms import MASK64

_PACK13 = struct.Struct("<13Q")
_PACK13_BE = struct.Struct(">13Q")
STARTPOS_FEN = chess.STARTING_FEN  # the one home of the start position's FEN (lc0's `startpos`)
_START_BOARD = chess.Board()


def _lc0_ep_file(board: chess.Board) -> int:
    """lc0's en-passant flag of a position reached by a move: file of the double-pushed pawn if an
    enemy pawn stands beside it, else -1."""
    ep = board.ep_square
    if ep is None:
        return -1
    # The pawn that just moved belongs to the side NOT to move.
    pushed = ep + 8 if board.turn == chess.BLACK else ep - 8
    f = ep & 7
    beside = 0
    if f > 0:
        beside |= 1 << (pushed - 1)
    if f < 7:
        beside |= 1 << (pushed + 1)
    return f if beside & board.pawns & board.occupied_co[board.turn] else -1


class PositionState:
    """One position of a history (absolute coordinates). Treat as immutable."""

    __slots__ = ("bbs", "black_to_move", "castling", "ep_file", "rule50", "repetitions", "prev",
                 "index", "key", "_frames", "_is_startpos")

    def __init__(self, bbs, black_to_move, castling, ep_file, rule50, prev, is_startpos=False):
        self.bbs = bbs  # (wP, wN, wB, wR, wQ, wK, bP, bN, bB, bR, bQ, bK) python ints
        self.black_to_move = black_to_move
        self.castling = castling  # python-chess castling_rights (rook squares)
        self.ep_file = ep_file  # -1 or 0..7 (lc0 flag)
        self.rule50 = rule50
        self.prev: Optional[PositionState] = prev
        self.index = 0 if prev is None else prev.index + 1
        self.key = (bbs, black_to_move, castling, ep_file)
        self._frames = [None, None, None, None]  # frame arrays (white, black ours), then their bytes
        self._is_startpos = is_startpos
        self.repetitions = 0 if prev is None else self._compute_repetitions()

    @staticmethod
    def from_board(board: chess.Board, prev: "Optional[PositionState]" = None,
                   ep_file: Optional[int] = None) -> "PositionState":
        w = board.occupied_co[chess.WHITE]
        b = board.occupied_co[chess.BLACK]
        kinds = (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings)
        bbs = tuple(k & w for k in kinds) + tuple(k & b for k in kinds)
        if ep_file is None:
            ep_file = _lc0_ep_file(board)
        castling = board.clean_castling_rights()
        startpos = False
        if prev is None:
            startpos = (board.turn == chess.WHITE and ep_file < 0 and castling == _START_BOARD.castling_rights
                        and board.board_fen() == _START_BOARD.board_fen())
        return PositionState(bbs, board.turn == chess.BLACK, castling, ep_file, board.halfmove_clock, prev,
                             startpos)

    def _compute_repetitions(self) -> int:
        if self.rule50 < 4:
            return 0
        p = self.prev
        steps = 1
        while p is not None:
            if steps >= 4 and steps % 2 == 0:
                if p.key == self.key:
                    return 1 + p.repetitions
                if p.rule50 < 2:
                    return 0
            p = p.prev
            steps += 1
        return 0

    @property
    def is_startpos_board(self) -> bool:
        """True if this is the first position and equals lc0's start board (pieces, side, castling, ep)."""
        return self._is_startpos

    def frame(self, black_ours: bool) -> np.ndarray:
        """The 13 planes (12 piece masks + repetition mask) of this position drawn in the frame of
        a current side to move: ours = black pieces with ranks mirrored if `black_ours`, else white."""
        fr = self._frames[black_ours]
        if fr is None:
            fr = np.frombuffer(self.frame_bytes(black_ours), dtype=np.uint64)  # read-only
            self._frames[black_ours] = fr
        return fr

    def frame_bytes(self, black_ours: bool) -> bytes:
        """`frame(black_ours)` as 104 little-endian bytes (for encoders that assemble raw rows)."""
        raw = self._frames[2 + black_ours]
        if raw is None:
            bb = self.bbs
            rep = MASK64 if self.repetitions >= 1 else 0
            if black_ours:  # big-endian packing reverses the bytes of each mask: ranks mirrored
                raw = _PACK13_BE.pack(*bb[6:], *bb[:6], rep)
            else:
                raw = _PACK13.pack(*bb, rep)
            self._frames[2 + black_ours] = raw
        return raw


class History:
    """Positions of a game from its first position (start or FEN) to the current one."""

    __slots__ = ("last", "first", "_board")

    def __init__(self, last: PositionState, board: Optional[chess.Board] = None):
        self.last = last
        p = last
        while p.prev is not None:
            p = p.prev
        self.first = p
        self._board = board

    @staticmethod
    def from_board(board: chess.Board) -> "History":
        """History of a python-chess board: its root position (ep flag as in its FEN) + move stack.

        Only the board's own move stack is history: a board with an empty stack (e.g. `History.board`
        after `push`) gives a one-position History."""
        root = board.root()
        ep = -1
        if root.ep_square is not None and not root.status() & chess.STATUS_INVALID_EP_SQUARE:
            ep = root.ep_square & 7  # lc0 takes a (valid) FEN en-passant field as the flag
        node = PositionState.from_board(root, None, ep_file=ep)
        for mv in board.move_stack:
            root.push(mv)
            node = PositionState.from_board(root, node)
        h = History.__new__(History)
        h.last = node
        p = node
        while p.prev is not None:
            p = p.prev
        h.first = p
        h._board = board.copy()
        return h

    @property
    def board(self) -> chess.Board:
        """The current position as a python-chess board. Do not mutate. Its move stack is only
        complete for Histories made by `parse_position`/`from_board`; after `push` it may be empty
        (the History itself is the record of the game)."""
        if self._board is None:
            raise ValueError("this History was built without a board")
        return self._board

    def push(self, move: chess.Move, board_after: Optional[chess.Board] = None) -> "History":
        """New History one move longer (the move must be legal; not checked here).

        Pass `board_after` (the board after the move) to skip copying the current board; otherwise
        the board is copied without its move stack (a stack copy costs ~100 us in python-chess)."""
        if board_after is None:
            board_after = self.board.copy(stack=False)
            board_after.push(move)
        h = History.__new__(History)
        h.last = PositionState.from_board(board_after, self.last)
        h.first = self.first
        h._board = board_after
        return h

    def __len__(self) -> int:
        return self.last.index + 1

    def __iter__(self) -> Iterator[PositionState]:
        return iter(self.positions())

    def positions(self) -> list[PositionState]:
        """All positions, first to last."""
        out = []
        p = self.last
        while p is not None:
            out.append(p)
            p = p.prev
        out.reverse()
        return out

    def __getitem__(self, i: int) -> PositionState:
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError(i)
        p = self.last
        for _ in range(n - 1 - i):
            p = p.prev
        return p

    @property
    def black_to_move(self) -> bool:
        return self.last.black_to_move
