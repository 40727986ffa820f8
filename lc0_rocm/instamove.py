"""lc0's instamove searches (`src/search/instamove/instamove.cc`): one batch, no tree.

`policyhead` plays the legal move of highest policy (lc0's `PolicyHeadSearch`); `valuehead` plays the
move after which the value head likes the position best for the mover, one ply down
(`ValueHeadSearch`): a move that checkmates beats everything, a move that ends the game in a draw
(stalemate, no mating material, rule 50, third repetition: `PositionHistory::ComputeGameResult`)
scores 0, every other move the negated Q of the position after it. Ties go to the first move in
lc0's move-generation order (`lc0_move_order`), as `std::max_element` / `std::min_element` do there;
so the bestmove is lc0's move for move.

As in lc0 (0.32.1 and master), the game's positions carry no repetition counts: these searches take
them from `GameState::GetPositions`, which builds each `Position` from the last without
`PositionHistory::ComputeLastMoveRepetitions`. So the net sees no repetition planes for the game's
positions, and only the position after a valuehead move has its count, 1 at most: a third repetition
is never scored as a draw. `lc0_game` makes that history. The NN cache is not used: lc0's keys a
position by its board alone (CacheHistoryLength 0), so after a transposition lc0 may answer from an
evaluation made with another history, where this evaluates afresh.

It sits beside the UCI loop, not in `search/` (whose sources key the compiled search's disk cache).
`InstamoveSearch` has the control surface of `search.Search` (start, stop, wait, running,
ponderhit) so the UCI engine drives it the same way: it answers at once, or holds its bestmove
until `stop` / `ponderhit` for `go infinite` and `go ponder`, as lc0's `InstamoveSearch` does.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Callable, Optional

import chess
import numpy as np

from .board import rules
from .encoding.history import History, PositionState
from .encoding.legal_policy import softmax_logits
from .encoding.planes import encode_positions
from .encoding.policy_map import board_move_to_index
from .search.leaf_evaluator import LeafEvaluator

ALGORITHMS = ("policyhead", "valuehead")
_KING_STEPS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))  # (rank, file): kKingMoves
_PROMOTIONS = {chess.QUEEN: 0, chess.ROOK: 1, chess.BISHOP: 2, chess.KNIGHT: 3}  # kPromotions


@dataclass(frozen=True)
class InstamoveResult:
    """The move an instamove search plays and its one `info` line (lc0's ThinkingInfo)."""

    move: Optional[chess.Move]  # None without a legal move
    nodes: int
    cp: Optional[int] = None
    mate: Optional[int] = None
    wdl: Optional[tuple] = None  # (w, d, l) in permille


def lc0_move_order(board: chess.Board) -> list[chess.Move]:
    """The legal moves of `board` in the order of lc0's `ChessBoard::GenerateLegalMoves`
    (`src/chess/board.cc: GeneratePseudolegalMoves`): seen from the side to move (ranks mirrored for
    black), pieces by square a1..h8; a king's eight steps in kKingMoves order, then O-O-O, then O-O;
    a queen's rook moves before its bishop moves, each by destination square; a pawn's push, double
    push, capture towards the a-file, capture towards the h-file, promotions as Q, R, B, N; a knight's
    moves by destination square."""
    flip = 56 if board.turn == chess.BLACK else 0

    def key(m: chess.Move) -> tuple:
        a, b = m.from_square ^ flip, m.to_square ^ flip
        piece = board.piece_type_at(m.from_square)
        dr, df = (b >> 3) - (a >> 3), (b & 7) - (a & 7)
        if piece == chess.KING:
            if board.is_castling(m):
                return a, 8 + (not board.is_queenside_castling(m)), 0
            return a, _KING_STEPS.index((dr, df)), 0
        if piece == chess.PAWN:
            kind = (0 if abs(dr) == 1 else 1) if df == 0 else (2 if df < 0 else 3)
            return a, kind, _PROMOTIONS.get(m.promotion, 0)
        if piece == chess.QUEEN:
            return a, 0 if dr == 0 or df == 0 else 1, b
        return a, 0, b

    return sorted(board.legal_moves, key=key)


def lc0_game(history: History) -> History:
    """The history as lc0's GameState::GetPositions gives it: the same positions, every repetition
    count 0."""
    prev = None
    for p in history.positions():
        q = PositionState.__new__(PositionState)
        for name in PositionState.__slots__:
            setattr(q, name, getattr(p, name))
        q.prev, q.repetitions, q._frames = prev, 0, [None, None, None, None]  # the frames hold the repetition plane
        prev = q
    return History(prev, history.board)


def _round(x: float) -> int:
    """C++ std::round: halves away from zero."""
    return int(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)


def _cp(q: float) -> int:
    """lc0's instamove centipawns: 90 tan(1.5637541897 q), truncated to an int."""
    return int(90 * math.tan(1.5637541897 * q))


def _evaluate(evaluator: LeafEvaluator, histories: list[History]):
    """(NetOutputs, PackedPlanes) of the histories, on the evaluator's backend (no NN cache)."""
    planes = encode_positions(histories, evaluator.input_format, evaluator.fill)
    return evaluator.submit(planes).result(), planes


def policy_head(evaluator: LeafEvaluator, history: History) -> InstamoveResult:
    """lc0's PolicyHeadSearch::GetBestMove: the first legal move (lc0's order) of highest policy
    probability (softmax at PolicyTemperature, as lc0's backend gives it)."""
    history = lc0_game(history)
    board = history.board
    moves = lc0_move_order(board)
    if not moves:
        return InstamoveResult(None, 0)
    out, planes = _evaluate(evaluator, [history])
    t = int(planes.transforms[0])
    idx = np.array([board_move_to_index(board, m, t) for m in moves], dtype=np.int64)
    p = softmax_logits(out.policy[0, idx], evaluator.policy_temperature)
    q, d = float(out.q[0]), float(out.d[0])
    wdl = (_round(500 * (1 + q - d)), _round(1000 * d), _round(500 * (1 - q - d)))
    return InstamoveResult(moves[int(np.argmax(p))], 1, cp=_cp(q), wdl=wdl)


def value_head(evaluator: LeafEvaluator, history: History) -> InstamoveResult:
    """lc0's ValueHeadSearch::GetBestMove: every legal move one ply down; a mate first, else the lowest
    Q for the opponent (a drawn end counts 0, D 1); ties to the first move in lc0's order."""
    history = lc0_game(history)
    board = history.board
    moves = lc0_move_order(board)
    if not moves:
        return InstamoveResult(None, 0)
    scores = []  # (not mate, negative q, d) per move: the smallest wins
    pending = []  # (index into scores, History after the move)
    for m in moves:
        after = board.copy(stack=False)
        after.push(m)
        h = history.push(m, after)
        if not any(after.generate_legal_moves()):
            scores.append((0, -1.0, 0.0) if after.is_check() else (1, 0.0, 1.0))
        elif (not rules.has_mating_material(np.array(h.last.bbs, dtype=np.uint64)) or h.last.rule50 >= 100
              or h.last.repetitions >= 2):
            scores.append((1, 0.0, 1.0))
        else:
            scores.append(None)
            pending.append((len(scores) - 1, h))
    if pending:
        out, _ = _evaluate(evaluator, [h for _, h in pending])
        for j, (i, _) in enumerate(pending):
            scores[i] = (1, float(out.q[j]), float(out.d[j]))
    best = min(range(len(moves)), key=lambda i: (scores[i][0], scores[i][1] if scores[i][0] else 0.0))
    not_mate, nq, d = scores[best]
    if not not_mate:
        return InstamoveResult(moves[best], len(moves), mate=1)
    wdl = (_round(500 * (1 - nq - d)), _round(1000 * d), _round(500 * (1 + nq - d)))
    return InstamoveResult(moves[best], len(moves), cp=-_cp(nq), wdl=wdl)


class InstamoveSearch:
    """One `go` of an instamove algorithm, driven like `search.Search`. As lc0's InstamoveSearch it
    answers within `start()` (the UCI thread): `on_info(result)`, then `on_bestmove(move, None)`,
    which `go infinite` / `go ponder` hold until `stop()` or `ponderhit()`."""

    def __init__(self, algorithm: str, evaluator: LeafEvaluator, history: History, hold_bestmove: bool,
                 on_info: Callable[[InstamoveResult], None],
                 on_bestmove: Callable[[Optional[chess.Move], Optional[chess.Move]], None]):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"unknown instamove algorithm {algorithm!r}")
        self.choose = policy_head if algorithm == "policyhead" else value_head
        self.evaluator = evaluator
        self.history = history
        self.on_info = on_info
        self.on_bestmove = on_bestmove
        self.initial_visits = 0
        self.bestmove: Optional[chess.Move] = None
        self.error: Optional[BaseException] = None
        self._hold = hold_bestmove
        self._done = threading.Event()
        self._lock = threading.Lock()

    def start(self) -> None:
        try:
            result = self.choose(self.evaluator, self.history)
            self.bestmove = result.move
            if result.move is not None:  # no legal move: no info line, `bestmove (none)`
                self.on_info(result)
        except Exception as e:  # reported by the caller; the GUI still gets a legal bestmove
            self.error = e
            self.bestmove = next(iter(self.history.board.legal_moves), None)
        if not self._hold:
            self._respond()

    def _respond(self) -> None:
        with self._lock:
            if self._done.is_set():
                return
            try:
                self.on_bestmove(self.bestmove, None)
            finally:
                self._done.set()

    def stop(self) -> None:
        self._respond()

    def ponderhit(self, limits=None) -> None:
        self._respond()

    def wait(self, timeout: Optional[float] = None) -> bool:
        return self._done.wait(timeout)

    @property
    def running(self) -> bool:
        return not self._done.is_set()
