"""The record schema of `lc0-rocm analyse`, and how values become scores, losses and NAGs.

One record per analysed position: the position before a played move (a FEN/EPD line, which has no
played move, gives one record with `played` null). JSONL keys, in this order (CSV: the same columns,
lists joined with spaces, the policy as `move:p` pairs):

    game          int     game number in the input, from 1 (across all input files)
    ply           int     the move about to be played, counted from 1 in the game
    fen           str     the position (FEN)
    turn          str     "w" or "b": the side to move
    played        str     the move played, UCI (null: none, a FEN/EPD line)
    played_san    str     the same in SAN
    best          str     raw: the policy's top move; search: the search's best move (UCI)
    q             float   W - L for the side to move (raw: the net's; search: the best move's)
    wdl           [w,d,l] for the side to move (null for a value-only net)
    white_score   float   White's expected score here, (1 + q) / 2 from White's view
    best_score    float   expected score of the best move for the side to move
    played_score  float   expected score of the played move for the side to move (null: unknown)
    loss          float   max(0, best_score - played_score) (null: unknown)
    nag           str     "?!", "?" or "??" by the loss thresholds, or by lichess's mate judgement
                          when a mate is proven before or after the move (search) (null: none)
    blunder       bool    nag is "??" (loss >= the blunder threshold, or lichess's mate rules)
    accuracy      float   the mover's move accuracy, 0-100, lichess's formula (`accuracy`) on the win%
                          of the position before the move (best_score) and after it (`judge_game`:
                          raw: played_score; search: the next position's own search value when the
                          next ply has a record, else played_score) (null: unknown)
  raw mode (`--nodes` not given) adds:
    policy        {uci: p} the top `--top` moves (all with --top 0), high to low, as `eval --json`
    mlh           float   moves left (null without a moves-left head)
    played_p      float   the played move's policy probability
    played_rank   int     its rank in the policy, 1 = the top move
  search mode (`--nodes N`) adds:
    nodes         int     visits of the root when the search stopped (reused visits included)
    pv            [uci]   the principal variation
    cp            int     lc0's centipawn score of the best move (null when `mate` is set)
    mate          int     moves to mate (negative: being mated), when the search proved it

Expected score = (1 + Q) / 2 = W + D / 2. Raw mode: `best_score` is the position's own value and
`played_score` that of the position after the move (the pipeline evaluates it, or the game's result
when the move ends the game); search mode takes both from the search's root children (a played move
the search never visited: the net's value of the position after it). The judgement thresholds
(`THRESHOLDS`): lichess's by default, loss ≥ 0.05 inaccuracy `?!`, ≥ 0.10 mistake `?`, ≥ 0.15
blunder `??` (lila `modules/tree/src/main/Advice.scala` judges a drop of its winning chances, in
[-1, 1], of 0.1, 0.2 and 0.3: half of that in expected score); `chesscom` has the blunder at 0.20.
lichess's win% is its model of the expected score of a Stockfish evaluation; the net gives the
expected score itself, so a position's win% here is 100 × its expected score (`score_win_percent`),
and lichess's judgement thresholds and accuracy formula apply to the same number as `loss`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

from .accuracy import mate_judgement, mate_sequence, move_accuracy

# keys in schema order; MODE_KEYS extend COMMON_KEYS
COMMON_KEYS = ("game", "ply", "fen", "turn", "played", "played_san", "best", "q", "wdl", "white_score",
               "best_score", "played_score", "loss", "nag", "blunder", "accuracy")
RAW_KEYS = ("policy", "mlh", "played_p", "played_rank")
SEARCH_KEYS = ("nodes", "pv", "cp", "mate")

NAG_CODES = {"?!": 6, "?": 2, "??": 4}  # PGN numeric annotation glyphs


@dataclass(frozen=True)
class Thresholds:
    """Expected-score losses from which a move is an inaccuracy, a mistake, a blunder."""

    inaccuracy: float = 0.05
    mistake: float = 0.10
    blunder: float = 0.15

    def nag(self, loss: Optional[float]) -> Optional[str]:
        if loss is None:
            return None
        if loss >= self.blunder:
            return "??"
        if loss >= self.mistake:
            return "?"
        if loss >= self.inaccuracy:
            return "?!"
        return None


THRESHOLDS = {"lichess": Thresholds(0.05, 0.10, 0.15), "chesscom": Thresholds(0.05, 0.10, 0.20)}


def keys(mode: str) -> tuple:
    """All keys of a record of `mode` ("raw" or "search"), in order."""
    return COMMON_KEYS + (RAW_KEYS if mode == "raw" else SEARCH_KEYS)


def expected_score(q: float) -> float:
    """W + D/2 of a value q = W - L (any side's view)."""
    return (1.0 + float(q)) / 2.0


def record(game: int, ply: int, fen: str, white: bool, played: Optional[str], played_san: Optional[str],
           best: Optional[str], q: float, wdl, after: tuple = (None, None), **mode_keys) -> dict:
    """A position's record, the one builder of both modes (raw mode's compiled and python-chess paths,
    search mode): the common keys with `white_score` and `best_score` from `q` (the side to move's),
    `loss`, `nag`, `blunder` and `accuracy` left for `judge`, then `mode_keys` (`RAW_KEYS` or `SEARCH_KEYS`);
    `after`: (`played_score`, `_after`) as `after_move` or `game_end` give them."""
    rec = {"game": game, "ply": ply, "fen": fen, "turn": "w" if white else "b", "played": played,
           "played_san": played_san, "best": best, "q": q, "wdl": wdl,
           "white_score": expected_score(q if white else -q), "best_score": expected_score(q),
           "played_score": after[0], "loss": None, "nag": None, "blunder": False, "accuracy": None}
    rec.update(mode_keys)
    rec["_after"] = after[1]
    return rec


def after_move(white: bool, q: float, wdl, mate: Optional[int] = None) -> tuple:
    """(`played_score`, `_after`) of a move from the value of the position after it, from the mover's
    view (`q`, `wdl` [w, d, l] or None, `mate` or None): the mover's expected score, and (q, wdl, mate)
    from White's view (`_after`: the annotated PGN's comment, the plot's last point, `judge_game`'s mate)."""
    sign = 1 if white else -1
    return expected_score(q), (sign * q, (wdl if white else wdl[::-1]) if wdl else None,
                               None if mate is None else sign * mate)


def game_end(score: float) -> tuple:
    """(`played_score`, `_after`) of a move that ended the game with the mover's expected `score` (1.0
    mate, 0.5 a draw): no evaluation after it; a draw's is known (q 0, a sure draw)."""
    return score, ((0.0, [0.0, 1.0, 0.0], None) if score == 0.5 else None)


def best_is(record: dict) -> str:
    """What a record's `best` is: raw mode's is the policy's top move (raw mode has values for the
    position and the one after the played move only, none of the other moves to find a best-valued
    one), search mode's the search's best move."""
    return "policy's top" if "policy" in record else "best"


def judge(record: dict, thresholds: Thresholds, after: Optional[float] = None,
          next_mate: Optional[int] = None) -> None:
    """Fill `loss`, `nag`, `blunder` and `accuracy` from `best_score` and `played_score`; `after`: the
    mover's expected score in the position after the move by that position's own evaluation
    (default `played_score`), `next_mate`: a mate proven there, from the mover's view. The NAG is
    lichess's mate judgement (`accuracy.mate_judgement`) when the record's `mate` or `next_mate` is
    set, else the loss's."""
    best, played = record.get("best_score"), record.get("played_score")
    loss = None if best is None or played is None else max(0.0, float(best) - float(played))
    after = played if after is None or played is None else after
    record["loss"] = loss
    nag = thresholds.nag(loss)
    if loss is not None and (record.get("mate") is not None or next_mate is not None):
        nag = mate_judgement(record.get("mate"), next_mate, score_win_percent(best), score_win_percent(after))
        record["_mate"] = mate_sequence(record.get("mate"), next_mate)  # the annotated PGN's words
    record["nag"] = nag
    record["blunder"] = nag == "??"
    record["accuracy"] = None if loss is None else move_accuracy(score_win_percent(best), score_win_percent(after))


def judge_game(records: list, thresholds: Thresholds, mode: str) -> None:
    """`judge` a game's records (in ply order) as lichess judges a game: from the sequence of its
    positions' evaluations. A move goes from its position's value (`best_score`) to the value of the
    position after it: in search mode that position's own search (the next record, when the next ply
    has one), else `played_score` (in raw mode the same evaluation as the next record's); a mate
    proven in either position gives lichess's mate judgement."""
    for i, r in enumerate(records):
        after, next_mate = None, None
        nxt = records[i + 1] if i + 1 < len(records) else None
        if mode == "search" and nxt is not None and nxt["ply"] == r["ply"] + 1 and nxt.get("best_score") is not None:
            after = 1.0 - nxt["best_score"]
            next_mate = None if nxt.get("mate") is None else -nxt["mate"]
        elif r.get("_after") is not None and r["_after"][2] is not None:  # (q, wdl, mate) from White's view
            next_mate = r["_after"][2] if r["turn"] == "w" else -r["_after"][2]
        judge(r, thresholds, after, next_mate)


def score_win_percent(score: float) -> float:
    """The win% (0-100) of an expected score, as lichess's accuracy formula takes it."""
    return 100.0 * float(score)


def centipawns(q: float) -> int:
    """lc0's `centipawn` score type of a value (90 tan(1.5637541897 q)), from the same view."""
    from ..score import uci_score

    q = max(-1.0, min(1.0, float(q)))
    return uci_score("centipawn", q, 0.0, has_wdl=False)


def pgn_eval(q: float, mate: Optional[int] = None) -> str:
    """The `[%eval …]` value from White's view: pawns with two decimals, or `#N` for a mate."""
    if mate is not None:
        return f"#{mate}"
    cp = centipawns(q)
    cp = max(-99_999, min(99_999, cp))
    return f"{cp / 100:.2f}"


def wdl_per_mille(wdl) -> tuple[int, int, int]:
    """(w, d, l) probabilities → integers per mille that add up to 1000."""
    w, d, l = (max(0.0, float(x)) for x in wdl)
    total = w + d + l
    if not total or not math.isfinite(total):
        return 0, 1000, 0
    wi, li = round(1000 * w / total), round(1000 * l / total)
    return wi, 1000 - wi - li, li
