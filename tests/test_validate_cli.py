"""`lc0-rocm validate` on the CPU: argument errors, the comparison arithmetic and the table.

The GPU comparison itself runs in tests/gpu/test_network_gpu.py; here the comparison and limit logic
are checked on constructed outputs with known differences, and the CLI end to end with the cpu backend
against the float64 reference (it must come out equal up to float32 rounding, and not exactly equal:
the cpu backend is never compared with itself), positions from a PGN file
(counted against python-chess) and the search comparison (`--nodes`: the cpu backend must choose the
reference's move everywhere).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lc0_rocm import validation_positions
from lc0_rocm.encoding.outputs import NetOutputs
from lc0_rocm.cli import main
from lc0_rocm.commands import validate as v

from netpaths import WEIGHTS_DIR

BT_SMALL = WEIGHTS_DIR / "bt-small-smolgen-pedense.pb.gz"
SE_CLASSICAL = WEIGHTS_DIR / "se-classical-small.pb.gz"


def _outputs(rng, n, mlh=True):
    wdl = rng.dirichlet([1, 1, 1], size=n).astype(np.float32)
    return NetOutputs(policy=rng.standard_normal((n, 1858)).astype(np.float32), wdl=wdl, q=wdl[:, 0] - wdl[:, 2],
                      d=wdl[:, 1].copy(), mlh=(rng.random(n) * 50).astype(np.float32) if mlh else None)


def _copy(o, **changes):
    fields = {k: (None if getattr(o, k) is None else getattr(o, k).copy()) for k in ("policy", "wdl", "q", "d", "mlh")}
    fields.update(changes)
    return NetOutputs(**fields)


def test_compare_measures_known_differences():
    rng = np.random.default_rng(7)
    n = 10
    ref = _outputs(rng, n)
    legal = [np.array([3, 17, 400]) for _ in range(n)]
    legal[4] = np.zeros(0, dtype=np.int32)  # a checkmate: no policy metrics for it
    policy = ref.policy.copy()
    worst = int(legal[0][np.argmin(ref.policy[0, legal[0]])])
    policy[0, worst] = policy[0, legal[0]].max() + 5.0  # position 0: its worst move becomes the best
    q = ref.q.copy()
    q[2] += 0.25
    out = _copy(ref, policy=policy, q=q)
    c = v.compare(ref, out, legal)
    assert c.positions == 10 and c.scored == 9
    assert c.top1 == pytest.approx(8 / 9)
    assert c.max_abs["Q"] == pytest.approx(0.25, abs=1e-6)
    assert c.mean_abs["Q"] == pytest.approx(0.025, abs=1e-6)
    assert c.max_abs["logits"] == pytest.approx(abs(policy[0, worst] - ref.policy[0, worst]), rel=1e-6)
    assert c.max_abs["W"] == 0 and c.max_abs["MLH"] == 0 and c.nan == 0
    assert c.max_abs["policy"] > 0.1  # the boosted move takes most of position 0's probability


def test_nan_counts_and_fails_every_precision():
    rng = np.random.default_rng(8)
    ref = _outputs(rng, 4)
    policy = ref.policy.copy()
    policy[1, 5] = np.nan
    mlh = ref.mlh.copy()
    mlh[3] = np.nan
    c = v.compare(ref, _copy(ref, policy=policy, mlh=mlh), [np.array([5, 6])] * 4)
    assert c.nan == 2
    assert c.max_abs["MLH"] == np.inf
    for precision in ("fp32", "fp16"):
        assert any("NaN" in r for r in v.failures(c, precision))


def test_limits_per_precision():
    rng = np.random.default_rng(9)
    ref = _outputs(rng, 200, mlh=False)
    legal = [np.arange(20)] * 200
    q = ref.q + 0.004  # mean 0.004: inside fp16's 0.005, far outside fp32's 1e-4
    c = v.compare(ref, _copy(ref, q=q), legal)
    assert v.failures(c, "fp16") == []
    assert any("Q" in r for r in v.failures(c, "fp32"))
    q2 = ref.q.copy()
    q2[0] += 0.05  # one position off by more than fp16's max
    assert any("max |ΔQ|" in r for r in v.failures(v.compare(ref, _copy(ref, q=q2), legal), "fp16"))
    policy = ref.policy.copy()
    for i in range(3):  # 3 of 200 positions change their best move: 98.5% < 99%
        policy[i, np.argmin(policy[i, :20])] = 100.0
    c3 = v.compare(ref, _copy(ref, policy=policy), legal)
    assert c3.top1 == pytest.approx(197 / 200)
    assert any("top-1" in r for r in v.failures(c3, "fp16"))


def test_table_format_lists_every_quantity_and_limit():
    rng = np.random.default_rng(10)
    ref = _outputs(rng, 3)
    c = v.compare(ref, _copy(ref), [np.array([1, 2])] * 3)
    lines = v.format_table(c, "fp16").splitlines()
    assert lines[0].split() == ["quantity", "max", "|Δ|", "mean", "|Δ|", "limit"]
    labels = [ln[:17].strip() for ln in lines[1:]]
    assert labels == ["policy (probs)", "policy (logits)", "W", "D", "L", "Q", "moves left", "top-1 agreement",
                      "NaN values"]
    q_line = next(ln for ln in lines if ln.startswith("Q "))
    assert "max 0.03, mean 0.005" in q_line
    assert "100.00%" in next(ln for ln in lines if ln.startswith("top-1"))


def test_cli_cpu_backend_matches_the_float64_reference(capsys):
    assert main(["validate", "--weights", str(BT_SMALL), "--backend", "cpu", "--positions", "6", "--batch", "4"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("validate: cpu (fp32) vs cpu reference (float64)") and "6 positions" in out[0]
    rows = {ln[:17].strip(): ln[17:].split() for ln in out[1:-1]}
    for q in ("policy (probs)", "policy (logits)", "W", "D", "L", "Q", "moves left"):
        assert 0.0 <= float(rows[q][1]) <= float(rows[q][0]) <= 1e-5  # float32 rounding
    for q in ("policy (logits)", "W", "Q"):
        assert float(rows[q][0]) > 0.0  # float32 against float64: not the backend against itself
    assert rows["NaN values"][0] == "0"
    assert out[-1] == "result: PASS"


def test_cli_tanh_value_net_has_no_wdl_rows(capsys):
    assert main(["validate", "-w", str(SE_CLASSICAL), "-b", "cpu", "-n", "3"]) == 0
    out = capsys.readouterr().out
    assert "\nQ " in out and "\nW " not in out and "moves left" not in out


@pytest.mark.parametrize("argv,message", [
    (["--positions", "0"], "--positions must be >= 1"),
    (["--batch", "0"], "--batch must be >= 1"),
    (["--backend", "gpu9"], "unknown backend 'gpu9'"),
    (["--backend-opts", "nonsense"], "bad backend option"),
    (["--backend-opts", "policy_head=nope"], "policy head"),
])
def test_cli_argument_errors_are_one_line(capsys, argv, message):
    # one position (argv's own --positions comes later and wins): the error needs no 512-position suite
    assert main(["validate", "-w", str(BT_SMALL), "-b", "cpu", "-n", "1"] + argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("lc0-rocm: error: ") and message in err and len(err.strip().splitlines()) == 1


def test_cli_missing_weights_file(capsys, tmp_path):
    assert main(["validate", "-w", str(tmp_path / "nope.pb.gz"), "-b", "cpu", "-n", "1"]) == 1
    assert "lc0-rocm: error:" in capsys.readouterr().err


def test_position_suite_is_legal_varied_and_stable():
    suite = validation_positions.suite(600)
    assert len(suite) == 600 and suite[:100] == validation_positions.suite(100)  # seeded: the same again, a prefix of a longer one
    assert validation_positions.suite(5) == list(validation_positions.CURATED[:5])
    boards = validation_positions.boards(60)  # the suite's positions as boards (the first 60: each call replays the games)
    assert [(b.root().fen(), tuple(m.uci() for m in b.move_stack)) for b in boards] == suite[:60]
    boards = validation_positions.to_boards(suite)
    black = sum(not b.turn for b in boards)
    assert 200 < black < 400
    assert sum(any(m.promotion for m in b.legal_moves) for b in boards) >= 8
    assert sum(b.is_checkmate() for b in boards) >= 2
    assert len({b.fen() for b in boards}) > 560
    with pytest.raises(ValueError):
        validation_positions.suite(0)


# --------------------------------------------------------------------------------------------
# Positions from a PGN, and the search comparison

import chess  # noqa: E402
import chess.pgn  # noqa: E402

from lc0_rocm.backends.factory import create_backend  # noqa: E402
from lc0_rocm.net.loader import load_net  # noqa: E402

GAMES_PGN = Path(__file__).resolve().parent / "data" / "games.pgn"


def _python_chess_positions(path):
    """Every position along every game, counted and listed with python-chess alone."""
    fens = []
    with open(path, encoding="utf-8") as f:
        while (game := chess.pgn.read_game(f)) is not None:
            board = game.board()
            fens.append(board.fen())
            for move in game.mainline_moves():
                board.push(move)
                fens.append(board.fen())
    return fens


def test_pgn_positions_are_every_position_of_every_game():
    boards = validation_positions.pgn_boards(GAMES_PGN)
    fens = _python_chess_positions(GAMES_PGN)
    assert len(boards) == len(fens) == 357  # 7 games, 350 moves
    assert [b.fen() for b in boards] == fens
    assert boards[0].move_stack == [] and len(boards[33].move_stack) == 33  # Opera game: 33 plies, then the next game
    assert boards[33].is_checkmate() and boards[34].move_stack == []
    assert [b.fen() for b in validation_positions.pgn_boards(GAMES_PGN, 50)] == fens[:50]


def test_cli_pgn_positions_and_search_agreement_with_the_reference(capsys):
    argv = ["validate", "-w", str(SE_CLASSICAL), "-b", "cpu", "--pgn", str(GAMES_PGN), "--max-positions", "36",
            "--nodes", "24", "--minibatch", "8"]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(f"36 positions from {GAMES_PGN}")
    searched = sum(any(b.legal_moves) for b in validation_positions.pgn_boards(GAMES_PGN, 36))
    assert searched == 35  # the Opera game's final position is mate
    row = next(ln for ln in out if ln.startswith("search bestmove"))
    assert row.split()[2] == "100.00%" and f"({searched}/{searched} positions, 24 nodes)" in row
    assert out[-1] == "result: PASS"


def test_search_bestmoves_is_deterministic_and_tells_nets_apart():
    boards = validation_positions.pgn_boards(GAMES_PGN, 12)
    net_a, net_b = load_net(SE_CLASSICAL), load_net(BT_SMALL)
    a = create_backend("cpu", net_a)
    first = v.search_bestmoves(a, net_a, boards, 16, 4)
    assert first == v.search_bestmoves(a, net_a, boards, 16, 4)
    assert all(m in b.legal_moves for m, b in zip(first, boards))
    other = v.search_bestmoves(create_backend("cpu", net_b), net_b, boards, 16, 4)
    assert sum(x != y for x, y in zip(first, other)) >= 3  # two random nets: different choices


@pytest.mark.parametrize("content,message", [
    (b"this is not a chess game\nat all\n", "no game with moves found"),
    (b"1. e4 e5 2. Kxe8 *\n", "game 1: illegal san: 'Kxe8'"),
    (b'[FEN "not a fen"]\n\n1. e4 *\n', "game 1:"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "cannot read PGN"),
    (b'[Variant "Crazyhouse"]\n\n1. e4 e5 *\n', "variant"),
    (b"", "no game with moves found"),
])
def test_cli_bad_pgn_is_one_line_exit_1(capsys, tmp_path, content, message):
    bad = tmp_path / "bad.pgn"
    bad.write_bytes(content)
    assert main(["validate", "-w", str(BT_SMALL), "-b", "cpu", "--pgn", str(bad)]) == 1
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.startswith("lc0-rocm: error: ") and message in cap.err and len(cap.err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv,message", [
    (["--pgn", "/nonexistent/games.pgn"], "No such file"),
    (["--max-positions", "5"], "--max-positions needs --pgn"),
    (["--pgn", str(GAMES_PGN), "--max-positions", "0"], "--max-positions must be >= 1"),
    (["--nodes", "0"], "--nodes must be >= 1"),
    (["--nodes", "5", "--minibatch", "0"], "--minibatch must be >= 1"),
])
def test_cli_pgn_and_search_argument_errors(capsys, argv, message):
    assert main(["validate", "-w", str(BT_SMALL), "-b", "cpu"] + argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("lc0-rocm: error: ") and message in err and len(err.strip().splitlines()) == 1


def test_cli_default_backend_is_auto(capsys):
    from lc0_rocm.backends.factory import gpu_usable

    ok, why = gpu_usable()
    if ok:
        pytest.skip("a GPU is usable here")
    assert main(["validate", "-w", str(SE_CLASSICAL), "-n", "2"]) == 0
    cap = capsys.readouterr()
    assert [x for x in cap.err.splitlines() if not x.startswith("lc0-rocm: validate: ")] == [
        f"lc0-rocm: {why}; using the cpu backend"]
    assert cap.out.startswith("validate: cpu (fp32) vs cpu reference (float64)") and cap.out.endswith("result: PASS\n")
    q_max = float(next(ln for ln in cap.out.splitlines() if ln.startswith("Q ")).split()[1])
    assert 0.0 < q_max <= 1e-5


def test_progress_goes_to_stderr_stage_by_stage(capsys):
    """A line as each stage starts and as it ends (one a second at most between): the run is never
    silent for long, and stdout keeps the table alone."""
    assert main(["validate", "-w", str(SE_CLASSICAL), "-b", "cpu", "-n", "5", "--batch", "2", "--nodes", "2"]) == 0
    cap = capsys.readouterr()
    err = cap.err.splitlines()
    assert all(x.startswith("lc0-rocm: validate: ") for x in err), err
    stages = ["cpu evaluates", "cpu searches 2 nodes", "the cpu reference (float64) evaluates",
              "the cpu reference (float64) searches 2 nodes"]
    ends = [x.split(": ", 2)[2].rsplit(" (", 1)[0] for x in err if "5/5 positions" in x]
    assert ends == [f"{name}: 5/5 positions" for name in stages], err
    assert cap.out.startswith("validate: cpu (fp32) vs cpu reference (float64)") and "lc0-rocm:" not in cap.out
