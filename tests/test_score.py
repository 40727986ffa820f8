"""UCI scores, WDL triplets and lc0's fast math, checked against formulas and against the real lc0.

The oracle test runs lc0 0.32.1 (`lc0` binary, eigen backend, maia-1900) at `go nodes 1` with every
ScoreType: the edge it reports is unvisited, so its (wl, d) is the root's raw network output, which
the Python bindings give us independently; our `uci_score` / `wdl_triplet` must print the same
integers.
"""

from __future__ import annotations

import math
import subprocess

import numpy as np
import pytest

from lc0_oracle import require_lc0, require_lczero
from uci_pipe import UciPipe

from lc0_rocm import score as sc
from lc0_rocm.fastmath import fast_log_f64


def test_fast_exp_and_log_are_close_to_exact():
    for x in np.linspace(-20, 5, 101):
        assert abs(float(sc.fast_exp(x)) / math.exp(x) - 1) < 3e-3  # FastExp2: ~0.26% max error
    for x in (1e-3, 0.3, 0.5, 1.0, 1.7, 7.5, 123.0):
        assert abs(float(sc.fast_log(x)) - math.log(x)) < 6e-3
        assert abs(fast_log_f64(x) - float(sc.fast_log(x))) < 1e-5  # float32 input rounding only
    assert float(sc.fast_exp2(-200)) == 0.0
    assert float(sc.fast_exp2(3.0)) == 8.0  # exact at integers by construction
    assert float(sc.fast_logistic(30)) == 1.0 and float(sc.fast_logistic(-30)) == 0.0


def test_fast_exp_array_matches_scalar():
    xs = np.linspace(-130, 10, 997).astype(np.float32)
    vec = sc.fast_exp_array(xs)
    scal = np.array([sc.fast_exp(float(x)) for x in xs], dtype=np.float32)
    np.testing.assert_array_equal(vec, scal)


def test_softmax_policy_sums_to_one_and_respects_temperature():
    logits = np.array([2.0, 1.0, 0.0, -3.0], dtype=np.float32)
    p1 = sc.softmax_policy(logits, 1.0)
    exact = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(p1, exact, rtol=3e-3)
    assert abs(float(p1.sum()) - 1) < 1e-6
    p_hot = sc.softmax_policy(logits, 1.359)
    assert p_hot[0] < p1[0] and p_hot[-1] > p1[-1]  # a higher temperature flattens the policy
    assert sc.softmax_policy(np.zeros(0, np.float32), 1.0).size == 0


def test_compress_prior_is_lc0s_16_bit_rounding():
    p = np.array([1.0, 0.5, 0.24365234375, 0.0, 1e-12], dtype=np.float32)
    c = sc.compress_prior(p)
    assert c[0] == 1.0 and c[1] == 0.5 and c[2] == np.float32(0.24365234375)  # representable: unchanged
    assert c[3] == 2.0 ** -31 and c[4] == 2.0 ** -31  # 0 and tiny values read back as lc0's floor
    rng = np.random.default_rng(1)
    q = rng.random(1000).astype(np.float32)
    cq = sc.compress_prior(q)
    assert np.all(np.abs(cq - q) <= q * 2.0 ** -11 + 1e-9)  # 11 mantissa bits, rounded
    order = np.argsort(q)
    assert np.all(np.diff(cq[order]) >= 0)  # monotonic


def test_score_formulas():
    assert sc.uci_score("centipawn", 0.5, 0.3) == int(90 * math.tan(1.5637541897 * 0.5))
    assert sc.uci_score("win_percentage", 0.2, 0.3) == 6000
    assert sc.uci_score("W-L", -0.25, 0.3) == -2500
    assert sc.uci_score("Q", 0.1, 0.3) == 1000
    assert sc.uci_score("centipawn_2018", 0.0, 0.5) == 0
    with pytest.raises(ValueError):
        sc.uci_score("nonsense", 0.0, 0.0)
    # WDL_mu falls back to 45*tan(...) when W, D or L is extreme
    assert sc.uci_score("WDL_mu", 0.99995, 0.0) == int(np.float32(45 * math.tan(1.56728071628 * float(np.float32(0.99995)))))


def test_mate_scores_and_wdl_triplets():
    assert sc.mate_score(0.0, 1.0) == 1  # the child is checkmate: mate in 1
    assert sc.mate_score(2.0, 1.0) == 2
    assert sc.mate_score(1.0, -1.0) == -1
    assert sc.mate_score(3.0, -1.0) == -2
    for wl, d in ((0.3, 0.4), (-1.0, 0.0), (0.0, 1.0), (0.7, 0.29), (-0.02, 0.05)):
        for st in ("centipawn", "WDL_mu"):
            w, dd, l = sc.wdl_triplet(wl, d, st)
            assert w + dd + l == 1000 and min(w, dd, l) >= 0


# --------------------------------------------------------------------------------------------
# Against the real lc0

FENS = [
    ("startpos", ["e2e4"]),
    ("startpos", ["d2d4", "g8f6", "c2c4", "e7e6", "b1c3"]),
    ("8/5pk1/6p1/8/8/6P1/5PK1/4R3 w - - 0 40", []),
    ("r1bqkbnr/pppp1ppp/2n5/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4", []),
]


def _lc0_root_eval(weights):
    lczero = require_lczero()
    w = lczero.Weights(str(weights))
    b = lczero.Backend(weights=w, backend="eigen")
    out = []
    for fen, moves in FENS:
        g = lczero.GameState(fen=None if fen == "startpos" else fen, moves=moves)
        o = b.evaluate(g.as_input(b))[0]
        out.append((o.q(), o.d()))
    return out


def test_uci_scores_match_lc0_for_every_score_type(shared_weights_dir):
    weights = shared_weights_dir / "maia-1900.pb.gz"
    require_lc0()
    evals = _lc0_root_eval(weights)
    lines = ["setoption name UCI_ShowWDL value true", "isready"]
    for st in sc.SCORE_TYPES:
        lines.append(f"setoption name ScoreType value {st}")
        for fen, moves in FENS:
            pos = "startpos" if fen == "startpos" else f"fen {fen}"
            if moves:
                pos += " moves " + " ".join(moves)
            lines += ["ucinewgame", f"position {pos}", "go nodes 1", "isready"]
    out = _run_lc0(weights, lines)
    infos = [ln for ln in out if ln.startswith("info depth")]
    assert len(infos) == len(sc.SCORE_TYPES) * len(FENS)
    k = 0
    for st in sc.SCORE_TYPES:
        for (q, d) in evals:
            words = infos[k].split()
            k += 1
            cp = int(words[words.index("cp") + 1])
            wdl = tuple(int(x) for x in words[words.index("wdl") + 1: words.index("wdl") + 4])
            assert sc.uci_score(st, q, d) == cp, (st, q, d, infos[k - 1])
            assert sc.wdl_triplet(q, d, st) == wdl, (st, q, d, infos[k - 1])


def _run_lc0(weights, lines):
    # Each `go nodes 1` is followed by `isready`; lc0 answers readyok only after reading it, and we
    # wait for every bestmove before sending more, like a GUI.
    lc0 = UciPipe([require_lc0(), f"--weights={weights}", "--backend=eigen"], stderr=subprocess.DEVNULL)
    out = []
    try:
        for line in lines:
            if line.startswith("go"):
                out += lc0.answer(line)
            else:
                lc0.send(line)
    finally:
        lc0.close()
    return out
