"""A position whose halfmove clock or fullmove number the search cannot hold is refused when it
arrives, as any bad FEN, by the one parser (encoding.position): in the engine (`info string error`,
and the `go` after it answers as for any bad FEN), in analyse (the game reported and skipped, the
others analysed) and in the API (PositionError). The limits: the search tree's int16 rule50 (one
step kept for the search's own move) and lc0's int fullmove number, which lc0 itself refuses past
(`lc0` answers "Bad fen string" from 2147483648 on, checked against the real binary)."""

from __future__ import annotations

import io
import subprocess

import chess
import numpy as np
import pytest

from lc0_oracle import require_lc0
from netpaths import MAIA_NETS, require_shared
from test_analyse import analyse, read_jsonl
from test_analyse_input import reported

import lc0_rocm
from lc0_rocm.encoding.position import FULLMOVE_NUMBER_MAX, HALFMOVE_CLOCK_MAX, parse_position
from lc0_rocm.errors import PositionError
from lc0_rocm.search.tree import NodeTree
from lc0_rocm.uci import UciEngine

BOARD = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -"
HUGE_CLOCK = f"{BOARD} 9223372036854775808 1"  # the campaign's FEN: past int64
BAD = [HUGE_CLOCK, f"{BOARD} {HALFMOVE_CLOCK_MAX + 1} 1", f"{BOARD} 5 {FULLMOVE_NUMBER_MAX + 1}",
       f"{BOARD} 5 9223372036854775808"]


def test_the_limits_are_what_the_tree_and_lc0_hold():
    assert HALFMOVE_CLOCK_MAX + 1 == np.iinfo(NodeTree().arrays.rule50.dtype).max
    assert FULLMOVE_NUMBER_MAX == np.iinfo(np.int32).max


@pytest.mark.parametrize("fen", BAD)
def test_parse_refuses_counters_past_the_limits(fen):
    with pytest.raises(PositionError, match=r"^invalid FEN '.*': (halfmove clock|fullmove number) \d+ is over \d+$"):
        parse_position(fen)


def test_moves_may_not_carry_the_clock_past_the_limit():
    fen = f"{BOARD} {HALFMOVE_CLOCK_MAX - 1} 1"
    assert parse_position(fen, ["g1f3"]).board.halfmove_clock == HALFMOVE_CLOCK_MAX
    with pytest.raises(PositionError, match=r"halfmove clock 32765 \+ 2 moves is over 32766"):
        parse_position(fen, ["g1f3", "g8f6"])
    assert parse_position(f"{BOARD} 5 {FULLMOVE_NUMBER_MAX}", ["g1f3"]).board.fullmove_number == FULLMOVE_NUMBER_MAX
    with pytest.raises(PositionError, match=r"fullmove number 2147483647 \+ 2 moves is over 2147483647"):
        parse_position(f"{BOARD} 5 {FULLMOVE_NUMBER_MAX}", ["g1f3", "g8f6"])


def test_lc0_refuses_the_fullmove_number_past_its_int_too():
    """The real lc0 agrees on the fullmove limit (and on refusing the campaign's clock)."""
    net = require_shared(MAIA_NETS[0])
    for fen, refused in ((f"{BOARD} 5 {FULLMOVE_NUMBER_MAX}", False), (f"{BOARD} 5 {FULLMOVE_NUMBER_MAX + 1}", True),
                         (HUGE_CLOCK, True)):
        out = subprocess.run([require_lc0(), "-w", str(net)], input=f"position fen {fen}\nisready\nquit\n",
                             capture_output=True, text=True, timeout=60)
        assert ("Bad fen string" in out.stdout + out.stderr) == refused, (fen, out.stdout, out.stderr)


def test_the_engine_refuses_it_at_position():
    out = io.StringIO()
    UciEngine(io.StringIO(f"position fen {HUGE_CLOCK}\ngo nodes 10\nquit\n"), out, overrides={"Backend": "cpu"}).run()
    lines = out.getvalue().splitlines()
    assert lines[0] == (f"info string error: invalid FEN '{HUGE_CLOCK}': halfmove clock 9223372036854775808 "
                        f"is over {HALFMOVE_CLOCK_MAX}"), lines
    assert lines[-1] == "bestmove (none)" and not any("OverflowError" in x for x in lines), lines


def test_the_api_refuses_it():
    with lc0_rocm.open_backend(None, backend="cpu") as ev:
        with pytest.raises(PositionError, match="halfmove clock 9223372036854775808 is over"):
            ev.evaluate(HUGE_CLOCK)
        with pytest.raises(PositionError, match="position 2: .*fullmove number"):
            ev.evaluate([BOARD + " 0 1", f"{BOARD} 5 {FULLMOVE_NUMBER_MAX + 1}"])
        # a python-chess board is checked as its FEN is, its moves counted in
        board = chess.Board(f"{BOARD} {HALFMOVE_CLOCK_MAX - 1} 1")
        ev.evaluate(board)
        board.push_uci("g1f3")
        board.push_uci("g8f6")
        with pytest.raises(PositionError, match=f"halfmove clock {HALFMOVE_CLOCK_MAX - 1} \\+ 2 moves is over"):
            ev.evaluate(board)


def test_analyse_skips_it_and_analyses_the_others(tmp_path):
    (tmp_path / "p.fen").write_text(f"{BOARD} 0 1\n{HUGE_CLOCK}\n{BOARD} 3 7\n")
    p = analyse(tmp_path / "p.fen", "--jsonl", tmp_path / "o.jsonl")
    assert reported(p.stderr) == {2: 2} and "halfmove clock 9223372036854775808 is over" in p.stderr, p.stderr
    assert [r["game"] for r in read_jsonl(tmp_path / "o.jsonl")] == [1, 3]
    pgn = f'[Event "a"]\n[SetUp "1"]\n[FEN "{BOARD} 5 {FULLMOVE_NUMBER_MAX + 1}"]\n\n1. e4 *\n\n[Event "b"]\n\n1. d4 *\n'
    (tmp_path / "g.pgn").write_text(pgn)
    p = analyse(tmp_path / "g.pgn", "--jsonl", tmp_path / "g.jsonl")
    assert reported(p.stderr) == {1: 1} and "fullmove number" in p.stderr, p.stderr
    assert [r["game"] for r in read_jsonl(tmp_path / "g.jsonl")] == [2]
