"""lichess's accuracy: win% of an evaluation, a move's accuracy from its win% drop, and a game's
accuracy per side (the mean of a volatility-weighted mean and a harmonic mean of its moves').

The formulas and constants are lichess's, from its public source:
- win% (lila `modules/tree/src/main/WinPercent.scala`): 50 + 50 (2 / (1 + exp(-0.00368208 cp)) - 1),
  cp clamped to ±1000 (scalachess `core/src/main/scala/eval.scala`: `Eval.Cp.CEILING` 1000); a
  mate counts as ±1000; the start position is `Eval.Cp.initial`, 15 cp.
- move accuracy (lila `modules/analyse/src/main/AccuracyPercent.scala`, `fromWinPercents`): 100 when
  the mover's win% does not drop, else 103.1668100711649 exp(-0.04354415386753951 drop)
  - 3.166924740191411 + 1, clamped to [0, 100].
- game accuracy (same file, `gameAccuracy`): windows of the win% sequence (start position included)
  of size cps/10 clamped to [2, 8], the first window repeated so each move has one; a move's weight
  is its window's population standard deviation clamped to [0.5, 12]; per side the mean of the
  weighted mean and the harmonic mean (each term max(1, accuracy): lila
  `modules/common/src/main/Maths.scala`) of its moves' accuracies.

- mate judgements (lila `modules/tree/src/main/Advice.scala`, `MateAdvice`): from the mover's view,
  a move after which the mover is mated by force when it was not before ("mate created") is an
  inaccuracy when its evaluation before was below -999 cp, a mistake below -700 cp, else a blunder;
  a move after which a forced mate of the mover's is gone ("mate lost": no mate, or a mate against)
  is an inaccuracy when its evaluation after is above 999 cp, a mistake above 700 cp, else a blunder
  (a mate against counts as 0 cp). A longer or shorter mate kept is no judgement. lichess judges the
  other moves by their win% drop only when neither position has a mate.

lichess's win% is its model of the expected score of a Stockfish centipawn evaluation. `lc0-rocm
analyse` has the expected score itself (W + D/2 of the net or the search), so it gives the formulas
100 × expected score as the win% (`records.score_win_percent`), and the first position of a game is
the net's value of it rather than lichess's fixed 15 cp. `win_percent` and `lichess_game_accuracy`
are lichess's functions of centipawns, for checks against lichess's own cases.
"""

from __future__ import annotations

import math
from typing import Optional, Sequence

CP_CEILING = 1000
CP_INITIAL = 15
WIN_MULTIPLIER = -0.00368208


def win_percent(cp: float) -> float:
    """White's (or the side's) win% of a centipawn evaluation from that side's view."""
    c = max(-CP_CEILING, min(CP_CEILING, cp))
    return 50.0 + 50.0 * max(-1.0, min(1.0, 2.0 / (1.0 + math.exp(WIN_MULTIPLIER * c)) - 1.0))


MATE_CREATED_CP = (-999, -700)  # evaluation before below these: inaccuracy, mistake (else blunder)
MATE_LOST_CP = (999, 700)  # evaluation after above these: inaccuracy, mistake (else blunder)


MATE_SEQUENCES = {"created": "Checkmate is now unavoidable", "lost": "Lost forced checkmate sequence"}  # lichess's words


def mate_sequence(prev_mate: Optional[int], next_mate: Optional[int]) -> Optional[str]:
    """"created", "lost" or None (`MATE_SEQUENCES`): what a move did to proven mates, from the mover's
    view (moves to mate before and after it; negative: the mover is mated; None: none proven)."""
    if prev_mate is None and next_mate is not None and next_mate < 0:
        return "created"
    if prev_mate is not None and prev_mate > 0 and (next_mate is None or next_mate < 0):
        return "lost"
    return None


def mate_judgement(prev_mate: Optional[int], next_mate: Optional[int], before: float,
                   after: float) -> Optional[str]:
    """lichess's judgement ("?!", "?", "??" or None) of a move where a proven mate is in play, all from
    the mover's view: `prev_mate`/`next_mate` moves to mate before and after the move (negative: the
    mover is mated; None: no proven mate), `before`/`after` the win% there. The centipawn limits
    are compared as win% (`win_percent` of them), the unit of the evaluations here."""
    sequence = mate_sequence(prev_mate, next_mate)
    if sequence == "created":
        if before < win_percent(MATE_CREATED_CP[0]):
            return "?!"
        return "?" if before < win_percent(MATE_CREATED_CP[1]) else "??"
    if sequence == "lost":
        wp = after if next_mate is None else win_percent(0)
        if wp > win_percent(MATE_LOST_CP[0]):
            return "?!"
        return "?" if wp > win_percent(MATE_LOST_CP[1]) else "??"
    return None


def move_accuracy(before: float, after: float) -> float:
    """A move's accuracy (0-100) from the mover's win% before and after it."""
    if after >= before:
        return 100.0
    raw = 103.1668100711649 * math.exp(-0.04354415386753951 * (before - after)) - 3.166924740191411
    return max(0.0, min(100.0, raw + 1.0))


def _windows(values: Sequence[float], size: int) -> list:
    """Scala's `sliding(size)`: one window of all values when there are fewer than `size`."""
    if len(values) <= size:
        return [list(values)]
    return [list(values[i:i + size]) for i in range(len(values) - size + 1)]


def _stdev(xs: Sequence[float]) -> float:
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def game_accuracy(win_percents: Sequence[float], white_moves: Sequence[bool],
                  accuracies: Optional[Sequence[float]] = None) -> tuple[Optional[float], Optional[float]]:
    """(White's, Black's) game accuracy, None for a side without a move. `win_percents`: White's
    win% at each position, the start one first (one more than the moves); `white_moves[i]`: move i
    was White's; `accuracies[i]`: its accuracy when known otherwise (else from the sequence)."""
    n = len(win_percents) - 1
    if n < 1:
        return None, None
    size = max(2, min(8, n // 10))
    windows = [list(win_percents[:size])] * max(0, min(size, len(win_percents)) - 2) + _windows(win_percents, size)
    weights = [max(0.5, min(12.0, _stdev(w))) for w in windows]
    per_side: dict = {True: [], False: []}
    for i, white in enumerate(white_moves[:n]):
        if i >= len(weights):
            break
        if accuracies is not None:
            acc = accuracies[i]
        else:
            prev, nxt = win_percents[i], win_percents[i + 1]
            acc = move_accuracy(prev, nxt) if white else move_accuracy(100.0 - prev, 100.0 - nxt)
        if acc is not None:
            per_side[white].append((acc, weights[i]))

    def side(moves) -> Optional[float]:
        total = sum(w for _, w in moves)
        if not moves or total == 0:
            return None
        weighted = sum(a * w for a, w in moves) / total
        harmonic = len(moves) / sum(1.0 / max(1.0, a) for a, _ in moves)
        return (weighted + harmonic) / 2

    return side(per_side[True]), side(per_side[False])


def lichess_game_accuracy(cps: Sequence[float], white_first: bool = True) -> tuple[Optional[float], Optional[float]]:
    """lichess's `gameAccuracy(startColor, cps)`: `cps` are White's centipawns after each move, the
    start position is 15 cp; (White's, Black's) accuracy."""
    wps = [win_percent(c) for c in [CP_INITIAL, *cps]]
    white, black = game_accuracy(wps, [(i % 2 == 0) == white_first for i in range(len(cps))])
    return (white, black) if white is not None and black is not None else (None, None)  # lichess: both or none
