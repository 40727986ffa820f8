"""tools/soak.py: its numbers against independent ones (slope against numpy's polyfit, RSS against
memory this test allocates), its pass/fail verdict, bad flags (one line, exit code 2), and a short
real soak on the CPU: three games of the product engine against itself, whose CSV must be well formed
and whose PGN, replayed by python-chess, must hold only legal moves and the results the rules give.

Not a timing or leak test: the soak's numbers are recorded in docs/reliability.md from full runs.
The real games skip where maia-1100 (../shared) is missing, except under CI=true.
"""

from __future__ import annotations

import csv
import importlib.util
import mmap
import os
import subprocess
import sys

import chess
import chess.pgn
import numpy as np
import pytest

from netpaths import REPO, SHARED_WEIGHTS_DIR, require_shared

TOOL = REPO / "tools" / "soak.py"
MAIA = SHARED_WEIGHTS_DIR / "maia-1100.pb.gz"


@pytest.fixture(scope="module")
def soak():
    spec = importlib.util.spec_from_file_location("soak_tool", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_slope_matches_polyfit(soak):
    rng = np.random.default_rng(5)
    xs = np.arange(1, 201, dtype=float)
    ys = 150.0 + 0.0123 * xs + rng.normal(0, 0.5, xs.size)
    want = np.polyfit(xs, ys, 1)[0]
    assert soak.slope(xs.tolist(), ys.tolist()) == pytest.approx(want, rel=1e-9)
    assert soak.slope([1.0], [5.0]) == 0.0
    assert soak.slope([2.0, 2.0], [1.0, 3.0]) == 0.0


def _rows(values):
    return [{"game": i + 1, "plies": 80, "result": "1/2-1/2", "rss_mb": v, "gpu_mb": None}
            for i, v in enumerate(values)]


def test_summary_verdict_uses_the_second_half(soak):
    # a jump in the first half, flat afterwards: the second half passes, all games would not
    flat_late = _rows([100.0] * 40 + [140.0] * 61)  # the jump at game 41
    lines, ok = soak.summarize(flat_late, 90.0, None, 0.005)
    assert ok
    assert any(ln.startswith("rss slope MB/game: games 50-101 +0.00000, all games +0.56843") for ln in lines), lines
    # 0.01 MB/game over the second half fails a 0.005 limit, and says so
    rising = _rows([100.0 + 0.01 * i for i in range(100)])
    lines, ok = soak.summarize(rising, 100.0, None, 0.005)
    assert not ok
    assert any(ln.startswith("FAIL: rss slope 0.01000") for ln in lines), lines
    # without a limit there is no verdict to fail
    assert soak.summarize(rising, 100.0, None, None)[1]
    # second half = games N/2 .. N
    xs, ys = soak.second_half(rising, "rss_mb")
    assert xs[0] == 50 and xs[-1] == 100 and len(xs) == 51


def test_rss_follows_memory_this_process_touches(soak):
    # this process alone: the compile gate runs as a child of the test run (tests/gate_background.py),
    # and its compilers come and go while this test measures. A fresh anonymous mapping: malloc (and so
    # numpy) may hand back freed heap pages that are already resident, which moves no RSS at all
    size = 96 * 2**20
    before = soak.rss_bytes(os.getpid(), descendants=False)
    block = mmap.mmap(-1, size)
    try:
        page = mmap.PAGESIZE
        for off in range(0, size, page):  # write every page
            block[off] = 1
        after = soak.rss_bytes(os.getpid(), descendants=False)
        assert block[size - page] == 1
    finally:
        block.close()
    assert 0.85 * size < after - before < 1.25 * size, (before, after)


def test_gpu_probe_without_device_is_off(soak):
    g = soak.GpuMemory()
    if g.available:
        pytest.skip("a GPU is visible here")
    assert g.used() is None


@pytest.mark.parametrize("args", [["--games", "0"], ["--games", "2", "--nodes", "0"],
                                  ["--games", "2", "--option", "Threads"],
                                  ["--games", "2", "--weights", "/nonexistent/net.pb.gz"]])
def test_bad_flags_are_one_line(args):
    p = subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert p.stdout == ""


def test_short_soak_on_the_cpu(tmp_path, soak):
    weights = require_shared(MAIA)
    out, pgn = tmp_path / "soak.csv", tmp_path / "soak.pgn"
    p = subprocess.run([sys.executable, str(TOOL), "--games", "3", "--nodes", "8", "--backend", "cpu",
                        "--weights", str(weights), "--max-plies", "60", "--seed", "3", "--out", str(out),
                        "--pgn", str(pgn), "--max-slope", "1e9"],
                       capture_output=True, text=True, timeout=600, cwd=REPO)
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    assert "Traceback" not in p.stderr

    with open(out, newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == soak.COLUMNS
    body = [dict(zip(rows[0], r)) for r in rows[1:]]
    assert [int(r["game"]) for r in body] == [1, 2, 3]
    for r in body:
        assert r["result"] in ("1-0", "0-1", "1/2-1/2")
        assert 4 <= int(r["opening_plies"]) <= 8
        assert int(r["opening_plies"]) < int(r["plies"]) <= 60
        assert float(r["seconds"]) > 0
        assert 50 < float(r["rss_mb"]) < 4000  # an interpreter with numpy, numba and a net
        assert r["gpu_mb"] == "-"  # the CPU backend: no device memory sampled

    games = []
    with open(pgn) as f:
        while (g := chess.pgn.read_game(f)) is not None:
            games.append(g)
    assert len(games) == 3
    openings = set()
    for g, r in zip(games, body):
        assert not g.errors, g.errors  # python-chess found every move legal
        board = g.board()
        for mv in g.mainline_moves():
            assert board.is_legal(mv)
            board.push(mv)
        assert len(board.move_stack) == int(r["plies"])
        assert g.headers["Result"] == r["result"]
        outcome = board.outcome(claim_draw=True)
        if r["end"] == "max_plies":
            assert outcome is None and r["result"] == "1/2-1/2" and int(r["plies"]) == 60
        else:
            assert outcome is not None and outcome.result() == r["result"]
            assert outcome.termination.name.lower() == r["end"]
        openings.add(g.headers["Opening"])
    assert len(openings) == 3  # seeded random openings: the games differ

    summary = p.stdout
    assert "games 3," in summary
    assert "rss slope MB/game: games 1-3" in summary
    assert "FAIL" not in summary


def test_a_move_without_a_search_fails_the_soak(tmp_path, soak):
    """Without a GPU the engine answers `go` on Backend rocm with an error line and its fallback move:
    legal, but no search, so nothing was soaked; the tool must stop and say so."""
    if soak.GpuMemory().available:
        pytest.skip("a GPU is visible here: the rocm backend would search")
    weights = require_shared(MAIA)
    p = subprocess.run([sys.executable, str(TOOL), "--games", "2", "--nodes", "4", "--backend", "rocm",
                        "--weights", str(weights), "--max-plies", "20", "--out", str(tmp_path / "s.csv")],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert p.returncode == 1, p.stdout + p.stderr[-2000:]
    assert "FAIL: game 1: engine did not search" in p.stdout
    assert "error:" in p.stdout  # the engine's own reason is passed on
