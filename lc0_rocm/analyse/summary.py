"""One game's summary from its records: players, result, plies, and per side lichess's game accuracy
(`accuracy.game_accuracy`), the average loss (expected score, as the records' `loss`) and the counts
of inaccuracies, mistakes and blunders (`?!`, `?`, `??`).

The same dict goes to `--summary FILE` (CSV or JSON by extension), the annotated PGN's tags and
the HTML report. Keys, in order: SUMMARY_KEYS. Accuracies have one decimal, losses four.
"""

from __future__ import annotations

from typing import Optional

from .accuracy import game_accuracy
from .records import score_win_percent

SUMMARY_KEYS = ("game", "white", "black", "result", "event", "date", "plies",
                "white_accuracy", "black_accuracy", "white_avg_loss", "black_avg_loss",
                "white_inaccuracies", "white_mistakes", "white_blunders",
                "black_inaccuracies", "black_mistakes", "black_blunders")
# the annotated PGN's tags for the summary's per-side values
PGN_TAGS = {"white_accuracy": "WhiteAccuracy", "black_accuracy": "BlackAccuracy",
            "white_avg_loss": "WhiteAvgLoss", "black_avg_loss": "BlackAvgLoss",
            "white_inaccuracies": "WhiteInaccuracies", "white_mistakes": "WhiteMistakes",
            "white_blunders": "WhiteBlunders", "black_inaccuracies": "BlackInaccuracies",
            "black_mistakes": "BlackMistakes", "black_blunders": "BlackBlunders"}


def game_summary(records: list, headers, game: Optional[int] = None, plies: Optional[int] = None) -> dict:
    """The summary dict of a game (keys SUMMARY_KEYS) from its judged records (in ply order) and its
    PGN tags (a dict or (tag, value) pairs)."""
    tags = dict(headers or {})
    moves = [r for r in records if r.get("played_score") is not None]
    out = {"game": game if game is not None else (records[0]["game"] if records else None),
           "white": tags.get("White"), "black": tags.get("Black"), "result": tags.get("Result"),
           "event": tags.get("Event"), "date": tags.get("Date"),
           "plies": plies if plies is not None else max((r["ply"] for r in records), default=0)}
    # White's win% at each position: before every judged move, then after the last one
    wps = [score_win_percent(r["best_score"] if r["turn"] == "w" else 1.0 - r["best_score"]) for r in moves]
    if moves:
        last = moves[-1]
        wps.append(score_win_percent(last["played_score"] if last["turn"] == "w" else 1.0 - last["played_score"]))
    white_acc, black_acc = game_accuracy(wps, [r["turn"] == "w" for r in moves], [r.get("accuracy") for r in moves])
    out["white_accuracy"] = None if white_acc is None else round(white_acc, 1)
    out["black_accuracy"] = None if black_acc is None else round(black_acc, 1)
    for side, turn in (("white", "w"), ("black", "b")):
        mine = [r for r in moves if r["turn"] == turn and r.get("loss") is not None]
        out[f"{side}_avg_loss"] = round(sum(r["loss"] for r in mine) / len(mine), 4) if mine else None
        for nag, name in (("?!", "inaccuracies"), ("?", "mistakes"), ("??", "blunders")):
            out[f"{side}_{name}"] = sum(1 for r in records if r["turn"] == turn and r.get("nag") == nag)
    return {k: out[k] for k in SUMMARY_KEYS}
