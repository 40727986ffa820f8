"""`lc0-rocm analyse` on the PGN shapes real sources write (tests/data/pgn_corpus, our own games made
by its make_corpus.py): every game python-chess reads from those files is kept, numbered as
python-chess counts them, with its tags and its main line. python-chess reads each file with the
file's own encoding (Latin-1 for latin1.pgn); the command reads them all in one run (raw mode, CPU
backend), and its summary, records and annotated PGN are compared game by game."""

from __future__ import annotations

import json
from pathlib import Path

import chess.pgn

from lc0_rocm.analyse.summary import PGN_TAGS
from test_analyse import analyse, read_jsonl

CORPUS = Path(__file__).resolve().parent / "data" / "pgn_corpus"
ENCODING = {"latin1.pgn": "latin-1"}
OURS = {"Annotator", *PGN_TAGS.values()}  # the tags the annotated PGN sets (its Annotator replaces the input's)


def python_chess_games(path: Path) -> list[chess.pgn.Game]:
    games = []
    with open(path, encoding=ENCODING.get(path.name, "utf-8-sig")) as f:
        while (game := chess.pgn.read_game(f)) is not None:
            assert not game.errors, (path.name, game.errors)
            games.append(game)
    return games


def test_corpus_covers_the_shapes():
    names = {p.name for p in CORPUS.glob("*.pgn")}
    assert names == {"database.pgn", "lichess.pgn", "variations.pgn", "crlf_bom.pgn", "latin1.pgn", "setup.pgn",
                     "empty.pgn", "escapes.pgn", "chess960.pgn"}
    raw = {n: (CORPUS / n).read_bytes() for n in names}
    assert b"[EventDate " in raw["database.pgn"] and b"[PlyCount " in raw["database.pgn"]
    assert b"[%clk " in raw["lichess.pgn"] and b"[%eval #" in raw["lichess.pgn"]
    assert raw["crlf_bom.pgn"].startswith(b"\xef\xbb\xbf[") and b"\r\n" in raw["crlf_bom.pgn"]
    assert b"\xfc" in raw["latin1.pgn"]  # ü in Latin-1, not UTF-8
    assert b'[Variant "Chess960"]' in raw["chess960.pgn"] and b'[SetUp "1"]' in raw["setup.pgn"]


def test_analyse_keeps_every_game_python_chess_reads(tmp_path):
    files = sorted(CORPUS.glob("*.pgn"))
    truth = [g for f in files for g in python_chess_games(f)]
    p = analyse(*files, "--jsonl", tmp_path / "o.jsonl", "--summary", tmp_path / "s.jsonl",
                "--pgn-out", tmp_path / "o.pgn")
    assert f"{len(truth)} games in" in p.stderr and "skipped" not in p.stderr, p.stderr
    summary = [json.loads(x) for x in open(tmp_path / "s.jsonl", encoding="utf-8")]
    assert [s["game"] for s in summary] == list(range(1, len(truth) + 1))
    records = read_jsonl(tmp_path / "o.jsonl")
    with open(tmp_path / "o.pgn", encoding="utf-8") as f:
        annotated = []
        while (game := chess.pgn.read_game(f)) is not None:
            annotated.append(game)
    assert len(annotated) == len(truth)
    for n, (want, s, got) in enumerate(zip(truth, summary, annotated), 1):
        tags = dict(want.headers)
        assert {k: v for k, v in got.headers.items() if k not in OURS} == {k: v for k, v in tags.items()
                                                                           if k != "Annotator"}, n
        assert (s["white"], s["black"], s["event"]) == (tags.get("White"), tags.get("Black"), tags.get("Event"))
        board = want.board()
        sans = []
        for move in want.mainline_moves():
            sans.append(board.san(move))
            board.push(move)
        assert s["plies"] == len(sans), n
        assert [r["played_san"] for r in records if r["game"] == n] == sans, n
        assert list(got.mainline_moves()) == list(want.mainline_moves()), n
