"""`lc0-rocm analyse --ray local`: a local Ray cluster with two CPU actors (cpu backend) gives the
single-process run's records, record for record, and the same annotated PGN games.

Ray is an optional extra (`lc0-rocm[ray]`): without it this test skips, except under CI=true, where
the `test` extra installs it and the test is mandatory."""

from __future__ import annotations

import os

import chess.pgn
import pytest

from test_analyse import analyse, random_games, read_jsonl, same_records, write_pgn

if os.environ.get("CI") != "true":
    pytest.importorskip("ray.data", reason="Ray Data is not installed (pip install 'lc0-rocm[ray]')")


def test_ray_run_equals_the_local_run(tmp_path):
    games = random_games(10, seed=3, max_plies=40)
    write_pgn(tmp_path / "g.pgn", games)
    common = [tmp_path / "g.pgn", "--plies", "2-", "--top", "3"]
    analyse(*common, "--jsonl", tmp_path / "local.jsonl", "--pgn-out", tmp_path / "local.pgn")
    p = analyse(*common, "--ray", "local", "--ray-actors", "2", "--jsonl", tmp_path / "ray.jsonl",
                "--pgn-out", tmp_path / "ray.pgn")
    assert "on Ray (2 actors)" in p.stderr
    local, ray = read_jsonl(tmp_path / "local.jsonl"), read_jsonl(tmp_path / "ray.jsonl")
    assert [(r["game"], r["ply"]) for r in ray] == [(r["game"], r["ply"]) for r in local]
    same_records(ray, local)
    with open(tmp_path / "ray.pgn") as f:
        moves = []
        while (g := chess.pgn.read_game(f)) is not None:
            moves.append([m.uci() for m in g.mainline_moves()])
    assert moves == [[m.uci() for m in g.mainline_moves()] for g in games]
