"""`lc0-rocm analyse` on bad input and failing outputs: a damaged game is reported by number and line
and the games around it are analysed; an unclosed comment does not swallow the games after it; a
net or other binary file given as the input, and an input without any game, are one line and a
non-zero exit; a full disk is one line and `--resume` then completes; search mode writes and
checkpoints its games (a search takes longer than the save interval); the progress line's first rate is a real one. The reader's split is checked
against python-chess reading the same games one by one."""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import subprocess
import sys
import time

import chess.pgn
import pytest

from test_analyse import analyse, random_games, read_jsonl, same_records, write_pgn

# the reproduction inputs (../shared/repro), inline so that a fresh clone has them
ILLEGAL_MOVE_PAREN_COMMENT = '[Event "good"]\n\n1. e4 e5 2. Nf3 *\n\n[Event "bad"]\n\n1. e4 Nf3 ) {x}\n\n' \
                             '[Event "good2"]\n\n1. d4 d5 *\n'
UNTERMINATED_COMMENT = '[Event "g1"]\n\n1. e4 e5 { unterminated comment *\n\n[Event "g2"]\n\n1. d4 d5 *\n\n' \
                       '[Event "g3"]\n\n1. c4 c5 *\n'


def reported(stderr: str) -> dict:
    """{game: line} of the games the run reported and skipped."""
    import re

    return {int(g): int(n) for g, n in re.findall(r"game (\d+) \(.*? line (\d+)\): .*; skipped", stderr)}


def test_illegal_move_then_paren_and_comment_is_one_bad_game(tmp_path):
    (tmp_path / "g.pgn").write_text(ILLEGAL_MOVE_PAREN_COMMENT)
    p = analyse(tmp_path / "g.pgn", "--jsonl", tmp_path / "o.jsonl")
    assert reported(p.stderr) == {2: 7} and "Nf3" in p.stderr
    recs = read_jsonl(tmp_path / "o.jsonl")
    assert [(r["game"], r["played_san"]) for r in recs] == [(1, "e4"), (1, "e5"), (1, "Nf3"), (3, "d4"), (3, "d5")]


def test_unclosed_comment_does_not_swallow_the_next_games(tmp_path):
    (tmp_path / "g.pgn").write_text(UNTERMINATED_COMMENT)
    p = analyse(tmp_path / "g.pgn", "--jsonl", tmp_path / "o.jsonl")
    assert reported(p.stderr) == {1: 3} and "never closed" in p.stderr
    assert [(r["game"], r["played"]) for r in read_jsonl(tmp_path / "o.jsonl")] == [
        (2, "d2d4"), (2, "d7d5"), (3, "c2c4"), (3, "c7c5")]


def test_reader_split_agrees_with_python_chess():
    """Games with variations, comments across lines, `;` comments, `%` lines and two `[Event` tags in
    one tag section split where python-chess, reading the whole text, finds each game."""
    from lc0_rocm.analyse.reader import _numbered, _split_pgn
    from lc0_rocm.analyse.work import parse_game
    from lc0_rocm.analyse.reader import RawGame

    text = ('[Event "a"]\n[Site "x"]\n\n1. e4 {a comment\nover [two] lines} e5 (1... c5 2. Nf3) 2. Nf3 ; rest\n'
            '2... Nc6 *\n\n%escape\n[Event "b"]\n\n1. d4 $1 d5 {[%eval 0.2]} 1/2-1/2\n\n'
            '[Event "c"]\n[Event "d"]\n\n1. c4 *\n')
    games = list(_split_pgn(_numbered(io.StringIO(text))))
    truth = []
    f = io.StringIO(text)
    while (g := chess.pgn.read_game(f)) is not None:
        truth.append([m.uci() for m in g.mainline_moves()])
    assert len(games) == len(truth) == 3 and all(err is None for *_, err in games)
    mine = [[m.uci() for m in parse_game(RawGame(i, "t", line, "pgn", t))[1]] for i, (line, t, _, _) in enumerate(games)]
    assert mine == truth  # python-chess reads c and d as one game (one tag section), and so do we


def test_net_or_binary_file_as_input_is_refused(tmp_path, weights_dir):
    net = sorted(weights_dir.glob("*.pb.gz"))[0]
    (tmp_path / "raw.pb").write_bytes(bytes(range(256)) * 20)
    for path, needle in [(net, "--weights"), (tmp_path / "raw.pb", "binary")]:
        p = analyse(path, "--jsonl", tmp_path / "o.jsonl", check=False)
        assert p.returncode == 1 and needle in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert p.stdout == ""
    p = subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "analyse", "--backend", "cpu", "-"],
                       input=net.read_bytes(), capture_output=True, timeout=600)  # the net on stdin
    err = p.stderr.decode()
    assert p.returncode == 1 and "stdin" in err and len(err.strip().splitlines()) == 1 and p.stdout == b"", err


def test_empty_input_says_no_game(tmp_path):
    (tmp_path / "e.pgn").write_text("\n\n")
    p = analyse(tmp_path / "e.pgn", "--jsonl", tmp_path / "o.jsonl", check=False)
    assert p.returncode == 1 and "no game" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_full_disk_is_one_line_and_resume_completes(tmp_path):
    games = random_games(5, seed=5, max_plies=30)
    write_pgn(tmp_path / "g.pgn", games)
    analyse(tmp_path / "g.pgn", "--jsonl", tmp_path / "ref.jsonl", "--csv", tmp_path / "ref.csv")
    limit = 20_000  # bytes per file: a few games' records
    assert os.path.getsize(tmp_path / "ref.jsonl") > 2 * limit

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    cmd = [sys.executable, "-m", "lc0_rocm.cli", "analyse", "--backend", "cpu", tmp_path / "g.pgn",
           "--jsonl", tmp_path / "o.jsonl", "--csv", tmp_path / "o.csv"]
    p = subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=600, preexec_fn=small_files)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "o.jsonl" in p.stderr and "--resume" in p.stderr
    analyse(*cmd[6:], "--resume")
    same_records(read_jsonl(tmp_path / "o.jsonl"), read_jsonl(tmp_path / "ref.jsonl"))
    assert len(open(tmp_path / "o.csv").readlines()) == len(open(tmp_path / "ref.csv").readlines())


def test_search_mode_writes_and_checkpoints_every_game(tmp_path):
    games = random_games(3, seed=9, max_plies=12)
    write_pgn(tmp_path / "g.pgn", games)
    out = tmp_path / "o.jsonl"
    cmd = [sys.executable, "-m", "lc0_rocm.cli", "analyse", "--backend", "cpu", tmp_path / "g.pgn", "--nodes", "8",
           "--jsonl", out]
    p = subprocess.Popen(list(map(str, cmd)), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    side = str(out) + ".resume.json"
    seen = None
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and p.poll() is None:
        if os.path.exists(side):
            state = json.load(open(side))
            if state["game"] >= 1:
                seen = state["game"]
                break
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    assert seen is not None and seen < len(games), "no checkpoint before the run's end"
    done = {r["game"] for r in read_jsonl(out)}
    assert set(range(1, seen + 1)) <= done
    analyse(*cmd[6:], "--resume")
    recs = read_jsonl(out)
    assert [(r["game"], r["ply"]) for r in recs] == [(n, k) for n, g in enumerate(games, 1)
                                                     for k in range(1, len(list(g.mainline_moves())) + 1)]


def test_first_progress_rate_is_a_real_rate():
    from lc0_rocm.analyse.progress import Progress

    pr = Progress(stream=io.StringIO(), enabled=True)
    t0 = time.monotonic()  # after the progress line's clock started
    pr.update(5000, 1)
    t1 = time.monotonic()  # before the rate is read
    assert 0 < pr.rate() <= 5000 / (t1 - t0)  # at most the positions over the time the run has surely taken


def test_compiled_legal_moves_equal_python_chess():
    """`work.legal_codes` (the search's compiled move generator and index table) gives python-chess's
    legal moves in its order and `policy_map.legal_move_indices`'s policy indices, Chess960 included."""
    import random

    import chess

    from lc0_rocm.analyse.work import legal_codes, move_code
    from lc0_rocm.encoding.history import History
    from lc0_rocm.encoding.policy_map import legal_move_indices

    rng = random.Random(3)
    checked = 0
    for g in range(24):
        board = chess.Board.from_chess960_pos(rng.randrange(960)) if g % 3 == 2 else chess.Board()
        h = History.from_board(board)
        for _ in range(60):
            if board.is_game_over():
                break
            for transform in (0, 1):
                moves, idx = legal_move_indices(board, transform)
                codes, mine = legal_codes(h.last, board.chess960, transform)
                assert codes.tolist() == [move_code(m) for m in moves] and mine.tolist() == idx.tolist(), board.fen()
                checked += 1
            move = rng.choice(list(board.legal_moves))
            after = board.copy(stack=False)
            after.push(move)
            h, board = h.push(move, after), after
    assert checked > 1000


def test_sigkill_at_several_points_then_resume_gives_every_position_once(tmp_path):
    """All four outputs, the run killed with SIGKILL (as a crash or the out-of-memory killer would)
    right after its sidecar appears (the CSV headers are written by then), in the middle of the
    records, and once a checkpoint has passed; each later `--resume` accepts the files, and the
    last one gives every position, summary row and annotated game exactly once."""
    games = random_games(40, seed=31, max_plies=24)
    write_pgn(tmp_path / "g.pgn", games)
    ref = ["--jsonl", tmp_path / "ref.jsonl", "--csv", tmp_path / "ref.csv", "--summary", tmp_path / "ref_s.csv",
           "--pgn-out", tmp_path / "ref.pgn"]
    out = ["--jsonl", tmp_path / "o.jsonl", "--csv", tmp_path / "o.csv", "--summary", tmp_path / "s.csv",
           "--pgn-out", tmp_path / "o.pgn"]
    cmd = [sys.executable, "-m", "lc0_rocm.cli", "analyse", "--backend", "cpu", tmp_path / "g.pgn",
           "--batch-size", "16", *out]
    side = tmp_path / "o.jsonl.resume.json"

    def sidecar_game() -> int:
        try:
            return int(json.load(open(side))["game"])
        except (OSError, ValueError, KeyError):
            return -1

    def jsonl_size() -> int:
        return os.path.getsize(tmp_path / "o.jsonl") if os.path.exists(tmp_path / "o.jsonl") else 0

    points = [lambda start: side.exists(),  # the sidecar of a fresh run: before the first game
              lambda start: jsonl_size() > start[0],  # some records written
              lambda start: sidecar_game() > start[1]]  # a checkpoint passed
    for k, reached in enumerate(points):
        start = (jsonl_size(), sidecar_game())
        p = subprocess.Popen(list(map(str, cmd + (["--resume"] if k else []))), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and p.poll() is None and not reached(start):
            time.sleep(0.002)
        p.send_signal(signal.SIGKILL)
        _, err = p.communicate(timeout=60)
        assert "Traceback" not in err and "cannot resume" not in err, err
    analyse(*cmd[6:], "--resume")
    assert not side.exists()  # a finished run leaves no sidecar
    analyse(tmp_path / "g.pgn", "--batch-size", "16", *ref)
    assert not (tmp_path / "ref.jsonl.resume.json").exists()
    plies = [(n, k) for n, g in enumerate(games, 1) for k in range(1, len(list(g.mainline_moves())) + 1)]
    assert [(r["game"], r["ply"]) for r in read_jsonl(tmp_path / "o.jsonl")] == plies
    same_records(read_jsonl(tmp_path / "o.jsonl"), read_jsonl(tmp_path / "ref.jsonl"))
    rows = open(tmp_path / "o.csv").read().splitlines()
    assert rows[0] == open(tmp_path / "ref.csv").readline().strip() and len(rows) == len(plies) + 1
    assert [tuple(map(int, r.split(",")[:2])) for r in rows[1:]] == plies
    summary = open(tmp_path / "s.csv").read().splitlines()
    assert summary[0].startswith("game,") and [int(r.split(",")[0]) for r in summary[1:]] == list(range(1, 41))
    assert (tmp_path / "o.pgn").read_text().count("[Event ") == len(games)


def test_workers_default_is_the_same_in_help_readme_and_code():
    """`analyse --help` and the README say the same default for `--workers`, and it is the code's."""
    import re
    from pathlib import Path

    from lc0_rocm.analyse.sizing import default_workers

    p = subprocess.run([sys.executable, "-m", "lc0_rocm.cli", "analyse", "--help"], capture_output=True, text=True,
                       timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert p.returncode == 0, p.stderr
    flat = " ".join(p.stdout.split())
    m = re.search(r"--workers N worker processes [^(]*\(default: ([^)]*)\)", flat)
    assert m, flat
    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8").split())
    assert f"(`--workers`, default: {m.group(1)};" in readme
    assert m.group(1) == "4 per GPU, at most one per core less two; none below 4 cores or on the CPU backend"
    for cores in (2, 3, 4, 8, 16, 64):
        assert default_workers("cpu", cores=cores) == 0
        assert default_workers("rocm", cores=cores) == (0 if cores < 4 else min(4, cores - 2))
