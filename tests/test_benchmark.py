"""`lc0-rocm benchmark` / `bench`: lc0 0.32.1's positions, defaults, output format and time limits.

The positions and defaults are read from the real lc0 (`lc0 benchmark` with the random backend prints
every position it searches; `--help` shows the defaults); our command runs with tiny limits on a
committed net and its output is checked line by line against lc0's format.
"""

from __future__ import annotations

import io
import re
import subprocess

import chess
import pytest

from lc0_oracle import require_lc0
from netpaths import MAIA_NETS, WEIGHTS_DIR, require_shared

from lc0_rocm.cli import main
from lc0_rocm.commands import benchmark as bm

SMALL = WEIGHTS_DIR / "se-classical-small.pb.gz"
INFO = re.compile(r"Benchmark time \d+ ms, \d+ nodes, -?\d+ nps, move [a-h][1-8][a-h][1-8][qrbn]?")


def test_positions_are_lc0s():
    run = subprocess.run([require_lc0(), "benchmark", "--backend=random", "--nodes=1", "--movetime=-1"],
                         capture_output=True, text=True, timeout=120)
    theirs = [ln.split(" ", 2)[2] for ln in run.stdout.splitlines() if ln.startswith("Position: ")]
    assert tuple(theirs) == bm.POSITIONS


@pytest.mark.parametrize("command", ["benchmark", "bench"])
def test_defaults_are_lc0s(command):
    text = subprocess.run([require_lc0(), command, "--help"], capture_output=True, text=True, timeout=60).stdout
    defaults = {}
    for flag in ("movetime", "num-positions", "threads", "nncache", "nodes"):
        m = re.search(rf"--{flag}=\S+\n(?:.*\n)*?.*DEFAULT: (-?\d+)", text)
        defaults[flag] = int(m.group(1))
    assert (defaults["movetime"], defaults["num-positions"]) == bm.DEFAULTS[command]
    assert [("Threads", defaults["threads"]), ("NNCacheSize", defaults["nncache"])] == bm.ENGINE_DEFAULTS
    assert defaults["nodes"] == bm.BenchSettings().nodes == -1


def _report(argv: list[str]) -> list[str]:
    out = io.StringIO()
    assert bm.main("bench", ["-w", str(SMALL), "-b", "cpu", "--threads=1", *argv], out=out) == 0
    return out.getvalue().split("\n")


def test_bench_output_is_lc0s_format():
    lines = _report(["--nodes=12", "--movetime=-1", "--num-positions=3"])
    starts = [k for k, ln in enumerate(lines) if ln.startswith("Position: ")]
    assert [lines[k] for k in starts] == [f"Position: {i + 1}/3 {bm.POSITIONS[i]}" for i in range(3)]
    assert all(lines[k - 1] == "" for k in starts)
    for i, k in enumerate(starts):
        end = next(j for j in range(k, len(lines)) if lines[j].startswith("bestmove "))
        infos = lines[k + 1:end]
        assert infos and all(INFO.fullmatch(x) for x in infos), infos
        board = chess.Board(bm.POSITIONS[i])
        move = chess.Move.from_uci(lines[end].split()[1])
        assert move in board.legal_moves and infos[-1].endswith(f"move {move.uci()}")
        assert int(infos[-1].split()[4]) >= 12  # the search ran to its node limit
    tail = lines[lines.index("==========================="):]
    assert re.fullmatch(r"=+\nTotal time \(ms\) : \d+\nNodes searched  : \d+\nNodes/second    : \d+\n",
                        "\n".join(tail))
    total_ms, nodes, nps = (int(ln.split(":")[1]) for ln in tail[1:4])
    assert nodes >= 3 * 11 and nps == int(1000 * nodes / (total_ms + 1) + 0.5)


def test_fen_replaces_the_positions():
    fen = "rq3rk1/ppp2ppp/1bnpb3/3N2B1/3NP3/7P/PPPQ1PP1/2KR3R w - - 7 14 moves d4e6"
    lines = _report([f"--fen={fen}", "--nodes=3", "--num-positions=5"])
    assert [ln for ln in lines if ln.startswith("Position")] == [f"Position: 1/1 {fen}"]
    move = chess.Move.from_uci(next(ln for ln in lines if ln.startswith("bestmove")).split()[1])
    board = chess.Board(fen.split(" moves ")[0])
    board.push_uci("d4e6")
    assert move in board.legal_moves


@pytest.mark.parametrize("argv,message", [
    (["--nodes=x"], "--nodes: expected an integer"),
    (["--num-positions=35"], "out of range [1, 34]"),
    (["--movetime"], "--movetime needs a value"),
    (["--fen=8/8/8 w - - 0 1"], "invalid FEN"),
    (["--cpuct=abc"], "--cpuct"),
    (["--no-such-flag"], "unknown flag"),
])
def test_bad_flags_are_one_line(capsys, argv, message):
    assert main(["bench", "-w", str(SMALL), "-b", "cpu", *argv]) == 1
    cap = capsys.readouterr()
    assert cap.out == "" and message in cap.err and len(cap.err.strip().splitlines()) == 1, cap.err


def test_missing_net_is_an_error_line(capsys):
    assert main(["bench", "-b", "cpu", "-w", "/nonexistent/net.pb.gz"]) == 1
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.strip().splitlines()[-1] == ("lc0-rocm: error: bench: cannot load network /nonexistent/net.pb.gz: "
                                                "No such file or directory: /nonexistent/net.pb.gz")


MOVETIME, POSITIONS_TIMED = 500, 3


def _within_the_time_limit(text: str) -> None:
    """Each position's last `Benchmark time` (its bestmove's info) at most 100 ms past --movetime and
    the total time at most 25% over: what lc0 meets on its own bench (final infos 500-515 ms, totals
    1.05-1.20x here on a loaded 2-core host); the search stops at its deadline, not after the batch
    then in the network (a 64-position batch on the cpu took up to 400 ms past the limit)."""
    blocks = text.split("\nPosition: ")[1:]
    assert len(blocks) == POSITIONS_TIMED, text
    finals = [int(re.findall(r"Benchmark time (\d+) ms", b)[-1]) for b in blocks]
    total = int(re.search(r"Total time \(ms\) : (\d+)", text).group(1))
    assert all(MOVETIME <= t <= MOVETIME + 100 for t in finals) and total <= 1.25 * POSITIONS_TIMED * MOVETIME, \
        (finals, total)


def test_bench_keeps_its_time_limit():
    out = io.StringIO()
    flags = ["-b", "cpu", "--minibatch-size=64", f"--num-positions={POSITIONS_TIMED}", f"--movetime={MOVETIME}"]
    assert bm.main("bench", flags, out=out) == 0  # the bundled net: a batch of 64 takes ~0.4 s on the cpu
    _within_the_time_limit(out.getvalue())


def test_lc0_keeps_the_same_time_limit():
    net = require_shared(MAIA_NETS[0])
    run = subprocess.run([require_lc0(), "bench", "-w", str(net), f"--num-positions={POSITIONS_TIMED}",
                          f"--movetime={MOVETIME}"], capture_output=True, text=True, timeout=120)
    _within_the_time_limit(run.stdout)
