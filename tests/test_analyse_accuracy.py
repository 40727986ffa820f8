"""lichess's accuracy (`lc0_rocm.analyse.accuracy`) against lichess's own test cases (lila
`modules/analyse/src/test/AccuracyPercentTest.scala`: the centipawns after each move, the expected
accuracy and its tolerance), against values worked out by hand from the published formulas
(`modules/tree/src/main/WinPercent.scala`, `modules/analyse/src/main/AccuracyPercent.scala`), and the
judgement thresholds by name."""

from __future__ import annotations

import math

import pytest

from lc0_rocm.analyse.accuracy import lichess_game_accuracy, move_accuracy, win_percent

# (cps after each move, white moves first, (white, tolerance), (black, tolerance)); None: no accuracy
LICHESS_CASES = [
    ([], True, None, None),
    ([15], True, None, None),
    ([15, 15], True, (100, 1), (100, 1)),
    ([-900, -900], True, (10, 5), (100, 1)),
    ([15, 900], True, (100, 1), (10, 5)),
    ([-900, 0], True, (10, 5), (10, 5)),
    ([15] * 20, True, (100, 1), (100, 1)),
    ([15] * 20 + [-900], True, (50, 5), (100, 1)),
    ([15] * 21 + [900], True, (100, 1), (50, 5)),
    ([-50, 15] * 5, True, (76, 8), (76, 8)),
    ([-50, 15] * 50, True, (76, 8), (76, 8)),
    ([-135, 15] * 50, True, (54, 8), (54, 8)),
    ([-435, 15] * 50, True, (20, 8), (20, 8)),
    ([], False, None, None),
    ([15], False, None, None),
    ([15, 15], False, (100, 1), (100, 1)),
    ([900, 900], False, (100, 1), (10, 5)),
    ([15, -900], False, (10, 5), (100, 1)),
    ([900, 0], False, (10, 5), (10, 5)),
]


@pytest.mark.parametrize("cps,white_first,white,black", LICHESS_CASES)
def test_lichess_test_cases(cps, white_first, white, black):
    got = lichess_game_accuracy(cps, white_first)
    for value, want in zip(got, (white, black)):
        if want is None:
            assert value is None
        else:
            assert abs(value - want[0]) <= want[1], (cps[:4], got)


def by_hand_win(cp: float) -> float:
    """WinPercent.scala: 50 + 50 * (2 / (1 + exp(-0.00368208 * cp)) - 1), cp within ±1000."""
    cp = max(-1000, min(1000, cp))
    return 50 + 50 * (2 / (1 + math.exp(-0.00368208 * cp)) - 1)


def by_hand_move(before: float, after: float) -> float:
    """AccuracyPercent.fromWinPercents."""
    if after >= before:
        return 100.0
    return min(100.0, max(0.0, 103.1668100711649 * math.exp(-0.04354415386753951 * (before - after))
                          - 3.166924740191411 + 1))


def test_hand_worked_values():
    # one move a side: the weighted and the harmonic mean are that move's accuracy
    w, b = lichess_game_accuracy([-900, -900])
    assert abs(w - by_hand_move(by_hand_win(15), by_hand_win(-900))) < 0.01 and b == 100.0
    assert abs(w - 10.664) < 0.01
    w, b = lichess_game_accuracy([-900, 0])
    assert abs(b - by_hand_move(100 - by_hand_win(-900), 100 - by_hand_win(0))) < 0.01
    # alternating evaluations: every window has the same spread, so equal weights; every move of a
    # side has the same accuracy, so both means are it
    drop = by_hand_move(by_hand_win(15), by_hand_win(-50))
    for n in (5, 50):
        w, b = lichess_game_accuracy([-50, 15] * n)
        assert abs(w - drop) < 0.01 and abs(b - drop) < 0.01
    assert abs(drop - 77.383) < 0.01
    # the clamp: beyond 1000 cp nothing changes; a mate counts as 1000
    assert win_percent(5000) == win_percent(1000) == by_hand_win(1000)
    assert move_accuracy(60, 60) == 100 and move_accuracy(60, 70) == 100 and move_accuracy(100, 0) == 0


def test_weights_and_harmonic_floor_by_hand():
    # White: 15 -> 1000 (100 %), Black: 1000 -> 1000 (100 %), White: 1000 -> -1000 (win% 97.5 -> 2.5:
    # 0 %). Windows of 2 (3 moves // 10, at least 2): weights |a - b| / 2 clamped to [0.5, 12] are 12,
    # 0.5, 12. White: weighted (100 * 12 + 0 * 12) / 24 = 50; harmonic 2 / (1/100 + 1/max(1, 0)) =
    # 1.980198 (lila Maths.harmonicMean floors each term at 1); (50 + 1.980198) / 2 = 25.990099.
    assert by_hand_move(by_hand_win(1000), by_hand_win(-1000)) == 0.0
    w, b = lichess_game_accuracy([1000, 1000, -1000])
    assert abs(w - 25.990099) < 0.01 and b == 100.0


def test_threshold_names():
    from lc0_rocm.analyse.records import THRESHOLDS, Thresholds

    assert THRESHOLDS["lichess"] == Thresholds(0.05, 0.10, 0.15) == Thresholds()  # the default
    assert THRESHOLDS["chesscom"] == Thresholds(0.05, 0.10, 0.20)
    t = THRESHOLDS["lichess"]
    assert [t.nag(x) for x in (0.0499, 0.05, 0.0999, 0.10, 0.1499, 0.15, 0.9)] == [None, "?!", "?!", "?", "?", "??", "??"]


def by_hand_game(wps: list, white_first: bool = True) -> tuple:
    """AccuracyPercent.gameAccuracy on a win% sequence (White's view, the start position first), by
    hand: windows of len/10 moves clamped to [2, 8] (the first repeated so that every move has one),
    weights = population standard deviation clamped to [0.5, 12], per side the mean of the weighted
    mean and the harmonic mean (terms floored at 1) of its moves' accuracies."""
    n = len(wps) - 1
    size = max(2, min(8, n // 10))
    windows = [wps[:size]] * (min(size, len(wps)) - 2) + [wps[i:i + size] for i in range(max(1, len(wps) - size + 1))]
    weights = []
    for w in windows:
        mean = sum(w) / len(w)
        weights.append(max(0.5, min(12.0, math.sqrt(sum((x - mean) ** 2 for x in w) / len(w)))))
    sides = {True: [], False: []}
    for i in range(n):
        white = (i % 2 == 0) == white_first
        before, after = (wps[i], wps[i + 1]) if white else (100 - wps[i], 100 - wps[i + 1])
        sides[white].append((by_hand_move(before, after), weights[i]))
    out = []
    for white in (True, False):
        accs = sides[white]
        weighted = sum(a * w for a, w in accs) / sum(w for _, w in accs)
        harmonic = len(accs) / sum(1 / max(1.0, a) for a, _ in accs)
        out.append((weighted + harmonic) / 2)
    return tuple(out)


def search_record(ply: int, best: float, played: float, mate=None, after_mate=None) -> dict:
    """A search-mode record as `search_mode` writes it before judging (expected scores, side to move)."""
    white = ply % 2 == 1
    return {"game": 1, "ply": ply, "turn": "w" if white else "b", "played": "e2e4", "best": "d2d4",
            "best_score": best, "played_score": played, "q": 2 * best - 1, "mate": mate,
            "white_score": best if white else 1 - best,
            "_after": None if after_mate is None else (0.0, None, after_mate if white else -after_mate)}


def test_search_mode_accuracy_from_the_sequence_of_positions():
    """Each position's own search value, not the played move's child value at the root before it:
    a move's accuracy goes from its position's value to the next position's (the last move's: its
    played value), and the game's accuracy is lichess's on that sequence."""
    from lc0_rocm.analyse.records import THRESHOLDS, judge_game
    from lc0_rocm.analyse.summary import game_summary

    # (best_score, played_score) per ply, side to move's view: the played values disagree with the
    # next position's own value, as a search's child value and the next search's root often do
    values = [(0.55, 0.50), (0.47, 0.40), (0.70, 0.52), (0.52, 0.52), (0.40, 0.21), (0.83, 0.80)]
    recs = [search_record(p, b, s) for p, (b, s) in enumerate(values, 1)]
    judge_game(recs, THRESHOLDS["lichess"], "search")
    movers = [100 * b for b, _ in values]  # each position's win% for its side to move
    afters = [100 - m for m in movers[1:]] + [100 * values[-1][1]]
    for r, before, after in zip(recs, movers, afters):
        assert r["accuracy"] == pytest.approx(by_hand_move(before, after), abs=1e-9), r["ply"]
        assert r["loss"] == pytest.approx(r["best_score"] - r["played_score"])  # the loss stays the search's
    white_wps = [m if i % 2 == 0 else 100 - m for i, m in enumerate(movers)] + [100 - afters[-1]]
    want = by_hand_game(white_wps)
    s = game_summary(recs, {}, 1, 6)
    assert (s["white_accuracy"], s["black_accuracy"]) == (round(want[0], 1), round(want[1], 1))
    # the same records judged as raw mode keep the played value (raw's next record is that evaluation)
    raw = [search_record(p, b, s) for p, (b, s) in enumerate(values, 1)]
    judge_game(raw, THRESHOLDS["lichess"], "raw")
    assert [r["accuracy"] for r in raw] == [by_hand_move(100 * b, 100 * s) for b, s in values]


def test_mate_judgements_by_hand():
    """Advice.scala's MateAdvice: mate created judged by the evaluation before (below -999 cp:
    inaccuracy, below -700: mistake, else blunder), mate lost by the evaluation after (above 999:
    inaccuracy, above 700: mistake, else blunder; a mate against counts as 0 cp); a mate kept,
    delayed or escaped is no judgement. Evaluations are win% (by_hand_win of the centipawns)."""
    from lc0_rocm.analyse.accuracy import mate_judgement

    w = by_hand_win
    cases = [  # (mate before, mate after, cp before, cp after, judgement), mover's view
        (None, -3, -1200, -1000, "?!"), (None, -3, -800, -1000, "?"), (None, -1, -100, -1000, "??"),
        (None, -2, 300, -1000, "??"),
        (2, None, 1000, 1200, "?!"), (2, None, 1000, 800, "?"), (1, None, 1000, 300, "??"), (1, None, 1000, -50, "??"),
        (3, -2, 1000, -1000, "??"),
        (3, 5, 1000, 1000, None), (4, 2, 1000, 1000, None), (-2, -1, -1000, -1000, None), (-2, None, -1000, -200, None),
        (None, 3, 200, 1000, None), (None, None, 100, -900, None),
    ]
    for prev, nxt, before, after, want in cases:
        assert mate_judgement(prev, nxt, w(before), w(after)) == want, (prev, nxt, before, after)


def test_mate_judgements_replace_the_loss_in_a_game():
    """Search records with proven mates: lichess judges a move by the mate rules when either
    position has a mate (no loss-based judgement then), by the loss otherwise; `blunder` is `??`."""
    from lc0_rocm.analyse.records import THRESHOLDS, judge_game

    recs = [search_record(1, 0.99, 0.96, mate=2),  # White had mate in 2 and lets it go, still 96 %
            search_record(2, 0.04, 0.04),  # Black, lost anyway: no judgement (loss 0)
            search_record(3, 0.97, 0.30),  # White blunders by the loss (no mate either side)
            search_record(4, 0.70, 0.30, after_mate=-1)]  # Black's last move walks into a mate: created
    judge_game(recs, THRESHOLDS["lichess"], "search")
    # ply 1: mate lost, after = 100 - 100 * 0.04 = 96 % > win% of 999 cp (97.5 %)? no; of 700 cp (93 %): mistake
    assert by_hand_win(700) < 96 < by_hand_win(999)
    assert [r["nag"] for r in recs] == ["?", None, "??", "??"]
    assert [r["blunder"] for r in recs] == [False, False, True, True]


def test_mate_created_in_the_annotated_pgn_uses_lichess_words():
    """1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6?? (4. Qxf7#): Black's last move lets White mate (proven after
    it, White's view +1): lichess's "Checkmate is now unavoidable" and `??` in the annotated PGN."""
    import chess

    from lc0_rocm.analyse.formats import pgn_text
    from lc0_rocm.analyse.records import THRESHOLDS, judge_game
    from lc0_rocm.analyse.work import GameTask

    moves = ["e2e4", "e7e5", "d1h5", "b8c6", "f1c4", "g8f6"]
    board, recs = chess.Board(), []
    for ply, uci in enumerate(moves, 1):
        last = ply == len(moves)
        r = search_record(ply, 0.45, 0.45 if not last else 0.0, after_mate=-1 if last else None)
        r.update(played=uci, best="g7g6" if last else uci, fen=board.fen())
        recs.append(r)
        board.push_uci(uci)
    judge_game(recs, THRESHOLDS["lichess"], "search")
    assert [r["nag"] for r in recs] == [None] * 5 + ["??"]
    task = GameTask(1, "t", 1, "pgn", headers=[("Event", "mate")], moves=moves)
    text = pgn_text(task, recs, "test")
    assert "Nf6 $4 { [%eval #1] Checkmate is now unavoidable. g6 was best. }" in " ".join(text.split())
