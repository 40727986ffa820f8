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
