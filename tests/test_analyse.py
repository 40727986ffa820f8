"""`lc0-rocm analyse` end to end on the CPU backend with the bundled net: the records against the API's
evaluations and `lc0-rocm eval --json` for the same positions, the CSV against the JSONL, the annotated
PGN re-read by python-chess, selection, bad games, FEN/EPD/stdin inputs, worker processes, plots,
search mode, Ctrl-C and --resume."""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import subprocess
import sys
import time

import chess
import chess.pgn
import pytest

from lc0_rocm.analyse.records import pgn_eval, wdl_per_mille
from side_by_side import side_by_side

START_960_FREE = "r3k2r/pppq1ppp/2npbn2/4p3/4P3/2NPBN2/PPPQ1PPP/R3K2R w KQkq - 4 8"
TOL = 2e-5  # the CPU backend's results depend on the batch a position is in, in the last bits


def random_games(n: int, seed: int = 7, max_plies: int = 60) -> list[chess.pgn.Game]:
    rng = random.Random(seed)
    games = []
    for g in range(n):
        board = chess.Board(START_960_FREE) if g % 4 == 3 else chess.Board()
        target = rng.randint(12, max_plies)
        while not board.is_game_over() and board.ply() < target:
            board.push(rng.choice(list(board.legal_moves)))
        game = chess.pgn.Game.from_board(board)
        game.headers["White"] = f"white {g + 1}"
        game.headers["Round"] = str(g + 1)
        games.append(game)
    return games


def write_pgn(path, games) -> None:
    path.write_text("\n\n".join(str(g) for g in games) + "\n")


def analyse(*args, stdin=None, check=True) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "analyse", "--backend", "cpu", *map(str, args)],
                       input=stdin, capture_output=True, text=True, timeout=600)
    if check:
        assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr
    return p


def read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in open(path, encoding="utf-8")]


def close(a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and abs(a - b) <= TOL
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
    return a == b


def same_records(a: list[dict], b: list[dict]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for k in x:
            assert close(x[k], y[k]), (x["game"], x["ply"], k, x[k], y[k])


@pytest.fixture(scope="module")
def games():
    return random_games(5)


@pytest.fixture(scope="module")
def run_all(tmp_path_factory, games):
    d = tmp_path_factory.mktemp("analyse")
    write_pgn(d / "games.pgn", games)
    p = analyse(d / "games.pgn", "--top", "0", "--jsonl", d / "o.jsonl", "--csv", d / "o.csv",
                "--pgn-out", d / "o.pgn", "--inaccuracy", "0.02", "--mistake", "0.04", "--blunder", "0.08")
    return d, read_jsonl(d / "o.jsonl"), p


@pytest.fixture(scope="module")
def run_maia(tmp_path_factory, games):
    """A real net, whose evaluations make mistakes visible (the bundled random net sees every position
    as lost for the side to move)."""
    from netpaths import SHARED_WEIGHTS_DIR, require_shared

    net = require_shared(SHARED_WEIGHTS_DIR / "maia-1500.pb.gz")
    d = tmp_path_factory.mktemp("maia")
    write_pgn(d / "games.pgn", games)
    analyse(d / "games.pgn", "--weights", net, "--jsonl", d / "o.jsonl", "--pgn-out", d / "o.pgn",
            "--summary", d / "s.json", "--csv", d / "o.csv")
    return d, read_jsonl(d / "o.jsonl")


def game_moves(game) -> tuple:
    fen = game.headers.get("FEN")
    return fen, [m.uci() for m in game.mainline_moves()]


def test_jsonl_records_are_the_apis_evaluations(run_all, games):
    from lc0_rocm.api import open_backend

    _, recs, p = run_all
    assert sum(len(game_moves(g)[1]) for g in games) == len(recs)  # one record per played move
    with open_backend(None, "cpu") as ev:
        for game in games:
            fen, moves = game_moves(game)
            mine = [r for r in recs if r["game"] == games.index(game) + 1]
            assert [r["ply"] for r in mine] == list(range(1, len(moves) + 1))
            evals = ev.evaluate([(fen, moves[:k]) for k in range(len(moves) + 1)])
            board = chess.Board(fen) if fen else chess.Board()
            for r, e, after, move in zip(mine, evals, evals[1:], moves):
                truth = e.to_json()
                assert r["fen"] == board.fen() and r["played"] == move
                assert r["played_san"] == board.san(chess.Move.from_uci(move))
                assert close(r["q"], truth["q"]) and close(r["wdl"], truth["wdl"]) and close(r["mlh"], truth["mlh"])
                assert r["policy"].keys() == truth["policy"].keys() and close(r["policy"], truth["policy"])
                assert list(r["policy"]) == list(truth["policy"])  # the same order, high to low
                assert r["best"] == next(iter(truth["policy"]))
                assert r["played_p"] == r["policy"][move]
                assert r["played_rank"] == list(r["policy"]).index(move) + 1
                assert close(r["best_score"], (1 + truth["q"]) / 2)
                assert close(r["played_score"], (1 - after.q) / 2)
                assert close(r["loss"], max(0.0, r["best_score"] - r["played_score"]))
                white = board.turn == chess.WHITE
                assert close(r["white_score"], (1 + (truth["q"] if white else -truth["q"])) / 2)
                board.push(chess.Move.from_uci(move))


def test_records_equal_eval_json(run_all, games):
    _, recs, _ = run_all
    for r in (recs[0], recs[17], recs[-1]):
        fen, moves = game_moves(games[r["game"] - 1])
        cmd = [sys.executable, "-m", "lc0_rocm.cli", "eval", "--backend", "cpu", "--json", "--moves",
               *moves[: r["ply"] - 1]]
        if fen:
            cmd += ["--fen", fen]
        truth = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
        assert close(r["policy"], truth["policy"]) and list(r["policy"]) == list(truth["policy"])
        assert close(r["q"], truth["q"]) and close(r["wdl"], truth["wdl"]) and close(r["mlh"], truth["mlh"])


def test_jsonl_schema_and_csv_are_the_same_records(run_all):
    from lc0_rocm.analyse.records import keys

    d, recs, _ = run_all
    assert all(tuple(r) == keys("raw") for r in recs)
    rows = list(csv.DictReader(open(d / "o.csv", newline="", encoding="utf-8")))
    assert len(rows) == len(recs) and tuple(rows[0]) == keys("raw")
    for row, r in zip(rows, recs):
        assert int(row["game"]) == r["game"] and int(row["ply"]) == r["ply"] and row["fen"] == r["fen"]
        assert row["played"] == r["played"] and row["best"] == r["best"] and float(row["q"]) == r["q"]
        assert [float(x) for x in row["wdl"].split()] == r["wdl"]
        assert (row["nag"] or None) == r["nag"] and row["blunder"] == ("true" if r["blunder"] else "false")
        pol = dict(kv.split(":") for kv in row["policy"].split())
        assert list(pol) == list(r["policy"]) and [float(v) for v in pol.values()] == list(r["policy"].values())


def test_annotated_pgn_reread_by_python_chess(run_maia, games):
    d, recs = run_maia
    with open(d / "o.pgn", encoding="utf-8") as f:
        out = []
        while (g := chess.pgn.read_game(f)) is not None:
            assert not g.errors
            out.append(g)
    assert len(out) == len(games)
    nags = 0
    for n, (g, src) in enumerate(zip(out, games), 1):
        assert [m.uci() for m in g.mainline_moves()] == [m.uci() for m in src.mainline_moves()]
        assert g.headers["White"] == src.headers["White"] and "lc0-rocm" in g.headers["Annotator"]
        by_ply = {r["ply"]: r for r in recs if r["game"] == n}
        for ply, node in enumerate(g.mainline(), 1):
            r = by_ply[ply]
            codes = {2: "?", 4: "??", 6: "?!"}
            assert {codes[x] for x in node.nags} == ({r["nag"]} if r["nag"] else set())
            nags += bool(node.nags)
            nxt = by_ply.get(ply + 1)
            if nxt is None:  # the last move: the position after it was evaluated too, unless the game ended
                continue
            q = nxt["q"] if nxt["turn"] == "w" else -nxt["q"]
            wdl = nxt["wdl"] if nxt["turn"] == "w" else nxt["wdl"][::-1]
            assert f"[%eval {pgn_eval(q)}]" in node.comment
            assert "[%wdl {} {} {}]".format(*wdl_per_mille(wdl)) in node.comment
            score = node.eval()  # python-chess reads [%eval] as lichess does
            assert score is not None and abs(score.white().score() - round(100 * float(pgn_eval(q)))) <= 1
    assert nags > 0 and any(r["nag"] == "??" and r["blunder"] for r in recs)


def test_selection_plies_side_every(tmp_path, games):
    write_pgn(tmp_path / "g.pgn", games[:2])
    analyse(tmp_path / "g.pgn", "--plies", "3-11", "--side", "black", "--every", "2", "--jsonl", tmp_path / "s.jsonl")
    recs = read_jsonl(tmp_path / "s.jsonl")
    assert [(r["game"], r["ply"]) for r in recs] == [(1, 4), (1, 8), (2, 4), (2, 8)]
    assert all(r["turn"] == "b" and r["played_score"] is not None for r in recs)
    full = analyse(tmp_path / "g.pgn", "--plies", "4-4", "--jsonl", "-").stdout
    one = [json.loads(x) for x in full.splitlines()]
    assert [(r["game"], r["ply"]) for r in one] == [(1, 4), (2, 4)]
    assert close(one[0]["q"], recs[0]["q"]) and close(one[0]["played_score"], recs[0]["played_score"])


def test_bad_game_is_reported_and_skipped(tmp_path, games):
    good = [str(g) for g in games[:3]]
    bad = good[1].replace(" 3. ", " 3. Kd5 ", 1)
    text = "\n\n".join([good[0], bad, good[2]]) + "\n"
    (tmp_path / "b.pgn").write_text(text)
    p = analyse(tmp_path / "b.pgn", "--jsonl", tmp_path / "b.jsonl")
    line = text.splitlines().index(next(x for x in text.splitlines() if "Kd5" in x)) + 1
    assert "game 2 (" in p.stderr and f"line {line})" in p.stderr and "skipped" in p.stderr
    recs = read_jsonl(tmp_path / "b.jsonl")
    assert sorted({r["game"] for r in recs}) == [1, 3]


def test_fen_epd_and_stdin(tmp_path):
    from lc0_rocm.api import open_backend

    fens = ["r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3",
            "8/8/8/4k3/8/8/4P3/4K3 w - - 0 1", "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1"]
    epd = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - bm e7e5; id \"x\";"
    p = analyse("-", "--format", "fen", "--jsonl", "-", stdin="\n".join(fens) + "\n")
    recs = [json.loads(x) for x in p.stdout.splitlines()]
    (tmp_path / "p.epd").write_text(epd + "\n")
    recs += read_jsonl_via(tmp_path)
    with open_backend(None, "cpu") as ev:
        for r, fen in zip(recs, fens + [epd.split(" bm")[0] + " 0 1"]):
            truth = ev.evaluate(fen).to_json()
            assert r["played"] is None and r["loss"] is None and r["fen"] == chess.Board(fen).fen()
            assert close(r["q"], truth["q"]) and list(r["policy"]) == list(truth["policy"])[:5]
    assert recs[2]["policy"] == {} and recs[2]["best"] is None  # checkmated: no legal move


def read_jsonl_via(tmp_path) -> list[dict]:
    analyse(tmp_path / "p.epd", "--jsonl", tmp_path / "e.jsonl")
    return read_jsonl(tmp_path / "e.jsonl")


def test_worker_processes_give_the_same_output(tmp_path, games):
    write_pgn(tmp_path / "g.pgn", games)
    analyse(tmp_path / "g.pgn", "--workers", "0", "--batch-size", "64", "--jsonl", tmp_path / "a.jsonl",
            "--pgn-out", tmp_path / "a.pgn")
    analyse(tmp_path / "g.pgn", "--workers", "2", "--batch-size", "64", "--jsonl", tmp_path / "b.jsonl",
            "--pgn-out", tmp_path / "b.pgn")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (tmp_path / "a.pgn").read_bytes() == (tmp_path / "b.pgn").read_bytes()


def test_plots(tmp_path, games):
    pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")
    write_pgn(tmp_path / "g.pgn", games[:2])
    analyse(tmp_path / "g.pgn", "--plot", tmp_path / "plots", "--jsonl", tmp_path / "o.jsonl")
    pngs = sorted(os.listdir(tmp_path / "plots"))
    assert pngs == ["game-00001.png", "game-00002.png"]
    for name in pngs:
        data = (tmp_path / "plots" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and 5_000 < len(data) < 100_000


def test_search_mode(tmp_path, games):
    write_pgn(tmp_path / "g.pgn", games[:1])
    args = [tmp_path / "g.pgn", "--nodes", "12", "--plies", "1-6", "--blunder", "0.3"]
    side_by_side(lambda: analyse(*args, "--jsonl", tmp_path / "a.jsonl", "--pgn-out", tmp_path / "a.pgn",
                                 "--summary", tmp_path / "s.jsonl"),
                 lambda: analyse(*args, "--jsonl", tmp_path / "b.jsonl"))
    recs = read_jsonl(tmp_path / "a.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()  # deterministic
    from lc0_rocm.analyse.records import keys

    board = chess.Board()
    for r in recs:
        assert tuple(r) == keys("search") and r["nodes"] >= 12
        assert chess.Move.from_uci(r["best"]) in board.legal_moves and r["pv"][0] == r["best"]
        assert r["loss"] >= 0 and (r["loss"] == 0 if r["played"] == r["best"] else True)
        assert r["blunder"] == (r["loss"] >= 0.3)
        assert (r["cp"] is None) != (r["mate"] is None)
        board.push(chess.Move.from_uci(r["played"]))
    assert [r["ply"] for r in recs] == list(range(1, 7))
    # lichess's accuracy on the sequence of the positions' own search values (the last move: its played value)
    from test_analyse_accuracy import by_hand_game, by_hand_move

    movers = [100 * r["best_score"] for r in recs]
    afters = [100 - m for m in movers[1:]] + [100 * recs[-1]["played_score"]]
    assert [r["accuracy"] for r in recs] == pytest.approx([by_hand_move(b, a) for b, a in zip(movers, afters)], abs=1e-9)
    white = [m if r["turn"] == "w" else 100 - m for r, m in zip(recs, movers)] + [100 - afters[-1]]
    summary = json.loads(open(tmp_path / "s.jsonl").readline())
    assert (summary["white_accuracy"], summary["black_accuracy"]) == tuple(round(x, 1) for x in by_hand_game(white))
    g = chess.pgn.read_game(open(tmp_path / "a.pgn"))
    assert not g.errors and g.next().eval() is not None


def test_bad_arguments_are_one_line(tmp_path, games):
    write_pgn(tmp_path / "g.pgn", games[:1])
    for args, needle in [((tmp_path / "nope.pgn",), "no such input file"),
                         ((tmp_path / "g.pgn", "--plies", "9-3"), "--plies"),
                         ((tmp_path / "g.pgn", "--every", "0"), "--every"),
                         ((tmp_path / "g.pgn", "--mistake", "0.5", "--blunder", "0.2"), "--blunder"),
                         ((tmp_path / "g.pgn", "--weights", tmp_path / "none.pb.gz"), "none.pb.gz")]:
        p = analyse(*args, check=False)
        assert p.returncode == 1 and needle in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_resume_after_a_kill_mid_write(tmp_path, games):
    write_pgn(tmp_path / "g.pgn", games)
    out = ["--jsonl", tmp_path / "o.jsonl", "--pgn-out", tmp_path / "o.pgn", "--csv", tmp_path / "o.csv"]
    side_by_side(lambda: analyse(tmp_path / "g.pgn", "--jsonl", tmp_path / "ref.jsonl", "--pgn-out",  # the reference
                                 tmp_path / "ref.pgn", "--csv", tmp_path / "ref.csv"),
                 lambda: analyse(tmp_path / "g.pgn", *out, "--max-games", "2"))  # beside the first part
    with open(tmp_path / "o.jsonl", "a") as f:  # what a kill in the middle of game 3 leaves
        f.write('{"game": 3, "ply": 1, "fen": "rnbq')
    with open(tmp_path / "o.pgn", "a") as f:
        f.write('[Event "?"]\n[Site')
    p = analyse(tmp_path / "g.pgn", *out, "--resume")
    assert "resuming after game 2" in p.stderr
    same_records(read_jsonl(tmp_path / "o.jsonl"), read_jsonl(tmp_path / "ref.jsonl"))
    assert (tmp_path / "o.pgn").read_text().count("[Event") == len(games)
    assert len(open(tmp_path / "o.csv").readlines()) == len(open(tmp_path / "ref.csv").readlines())
    p = analyse(tmp_path / "g.pgn", "--jsonl", tmp_path / "o.jsonl", "--resume", check=False)  # other outputs
    assert p.returncode == 1 and "cannot resume" in p.stderr


def test_ctrl_c_leaves_whole_games_and_resume_completes(tmp_path):
    # raw mode writes 16 games at a time: a short first unit, then long games, so that the run is
    # still busy when Ctrl-C comes right after the first write (however fast or loaded the machine)
    short = [g for g in random_games(24, seed=11, max_plies=12) if g.next() is not None][:16]  # none empty
    many = short + random_games(24, seed=12, max_plies=60)
    write_pgn(tmp_path / "g.pgn", many)
    cmd = [sys.executable, "-m", "lc0_rocm.cli", "analyse", "--backend", "cpu", tmp_path / "g.pgn",
           "--batch-size", "16", "--jsonl", tmp_path / "o.jsonl"]
    # Ctrl-C as from a terminal: a test run started in the background (`cmd &` in a script, as CI may
    # start it) hands its children SIGINT ignored, and Python then never raises KeyboardInterrupt
    p = subprocess.Popen(list(map(str, cmd)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and p.poll() is None:
        if os.path.exists(tmp_path / "o.jsonl") and os.path.getsize(tmp_path / "o.jsonl") > 0:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "--resume" in err
    recs = read_jsonl(tmp_path / "o.jsonl")  # every line is whole JSON
    done = sorted({r["game"] for r in recs})
    assert done == list(range(1, len(done) + 1)) and len(done) < len(many)
    for n in done:  # whole games only
        assert len([r for r in recs if r["game"] == n]) == len(list(many[n - 1].mainline_moves()))
    analyse(tmp_path / "g.pgn", "--batch-size", "16", "--jsonl", tmp_path / "o.jsonl", "--resume")
    recs = read_jsonl(tmp_path / "o.jsonl")
    assert [(r["game"], r["ply"]) for r in recs] == [(n, k) for n, g in enumerate(many, 1)
                                                     for k in range(1, len(list(g.mainline_moves())) + 1)]


def test_accuracy_summary_pgn_tags_and_csv_agree(run_maia, games):
    """Default (lichess) thresholds; each record's accuracy is lichess's formula on 100 × its expected
    scores; the summary file is `game_summary` of the records and the input's tags; the annotated
    PGN's tags and the CSV say the same."""
    import math

    from lc0_rocm.analyse.summary import PGN_TAGS, SUMMARY_KEYS, game_summary

    d, recs = run_maia
    for r in recs:
        assert r["nag"] == ("??" if r["loss"] >= 0.15 else "?" if r["loss"] >= 0.10 else "?!" if r["loss"] >= 0.05 else None)
        before, after = 100 * r["best_score"], 100 * r["played_score"]
        want = 100.0 if after >= before else min(100.0, max(0.0, 103.1668100711649 * math.exp(
            -0.04354415386753951 * (before - after)) - 3.166924740191411 + 1))
        assert abs(r["accuracy"] - want) < 1e-9
    rows = json.load(open(d / "s.json"))
    pgns = []
    with open(d / "o.pgn", encoding="utf-8") as f:
        while (g := chess.pgn.read_game(f)) is not None:
            pgns.append(g)
    csv_acc = [float(row["accuracy"]) for row in csv.DictReader(open(d / "o.csv", newline="", encoding="utf-8"))]
    assert csv_acc == [r["accuracy"] for r in recs]
    assert [row["game"] for row in rows] == list(range(1, len(games) + 1))
    for row, src, pgn in zip(rows, games, pgns):
        mine = [r for r in recs if r["game"] == row["game"]]
        assert tuple(row) == SUMMARY_KEYS
        assert row == game_summary(mine, src.headers, row["game"], len(list(src.mainline_moves())))
        assert row["white_blunders"] == sum(r["turn"] == "w" and r["nag"] == "??" for r in mine)
        assert row["black_mistakes"] == sum(r["turn"] == "b" and r["nag"] == "?" for r in mine)
        assert 0 <= row["white_accuracy"] <= 100 and row["white"] == src.headers["White"]
        for key, tag in PGN_TAGS.items():
            assert pgn.headers[tag] == str(row[key])
