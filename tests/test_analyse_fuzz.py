"""Fuzzing `lc0-rocm analyse`'s input side under hypothesis: random damage to a PGN of good games
(illegal moves, stray brackets, braces and parentheses, `;` comments, NAGs, variations, damaged tag
lines, binary noise, set-up positions whose counters the search cannot hold) must never lose a game
silently. Every game of the file is either analysed or
reported by number and by a line inside it, and the number of games read equals an independent
count: the lines that start with `[Event ` (the damage never touches those). The good games carry
what database and lichess exports write (`[EventDate`, `[EventType`, `[PlyCount`, `%clk` comments,
Latin-1 names) and the file may have CRLF line ends. Under the damage python-chess reads the same way
(no unclosed comment, no blank line in the movetext, no binary noise), the games and their tags are
python-chess's, reading the whole file: the same count, numbers and tags.

The property runs in process on the reader and the worker's parse (`reader.read_games`,
`work.prepare`), where a game can be lost; one derandomized damaged file also goes through the
command (CPU backend) and its summary file and skip notes are checked the same way.
Budgets as tests/test_fuzz.py: a few dozen derandomized examples in CI; `LC0_ROCM_FUZZ=long`
for 2000 random ones (`LC0_ROCM_FUZZ_EXAMPLES=N`)."""

from __future__ import annotations

import json
import os
import random
import re

import chess
import chess.pgn
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from lc0_rocm.analyse.reader import Selection, read_games  # noqa: E402
from lc0_rocm.analyse.work import WorkConfig, prepare  # noqa: E402

LONG = os.environ.get("LC0_ROCM_FUZZ", "").lower() == "long"
FUZZ = settings(max_examples=int(os.environ.get("LC0_ROCM_FUZZ_EXAMPLES", "2000")) if LONG else 40,
                derandomize=not LONG, deadline=None, database=None, print_blob=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

DAMAGE = ("illegal", "bracket", "brace", "unclosed", "paren", "semicolon", "nag", "variation", "tag", "noise",
          "blank", "counters")
# a set-up position whose halfmove clock or fullmove number the search cannot hold (the one parser
# refuses it: encoding/position.check_counters); the game's moves stay legal from it
HUGE_COUNTERS = ("9223372036854775808 1", "40000 1", "0 9223372036854775808", "0 2147483648")


def good_games(seed: int, n: int) -> list[list[str]]:
    """n random legal games as lists of PGN lines (tags, blank, movetext lines)."""
    rng = random.Random(seed)
    out = []
    for g in range(n):
        board = chess.Board()
        for _ in range(rng.randint(1, 24)):
            if board.is_game_over():
                break
            board.push(rng.choice(list(board.legal_moves)))
        game = chess.pgn.Game.from_board(board)
        game.headers["Event"] = f"e{g + 1}"
        if g % 2:  # a database export's tags
            game.headers["EventDate"] = "2024.01.01"
            game.headers["EventType"] = "tourn"
            game.headers["PlyCount"] = str(board.ply())
            game.headers["White"] = "Müller, Jürgen"
        else:  # a lichess export's clock comments
            for k, node in enumerate(game.mainline()):
                node.comment = f"[%clk 0:0{k % 10}:00]"
        out.append(str(game).split("\n"))
    return out


def damage(lines: list[str], kind: str, rng: random.Random) -> list[str]:
    """One damage of `kind` to a game's lines; the `[Event ` line is never touched."""
    lines = list(lines)
    body = [i for i, x in enumerate(lines) if x and not x.startswith("[")]
    tags = [i for i, x in enumerate(lines) if x.startswith("[") and not x.startswith("[Event ")]
    if kind == "tag" and tags:
        i = rng.choice(tags)
        lines[i] = rng.choice([lines[i][:-2], lines[i].replace('"', "", 1), '[Bad tag line', lines[i] + " x",
                               '[WhiteElo "12\x00"]'])
        return lines
    if kind == "counters":
        fen = f"{chess.STARTING_BOARD_FEN} w KQkq - {rng.choice(HUGE_COUNTERS)}"
        return lines[:1] + ['[SetUp "1"]', f'[FEN "{fen}"]'] + lines[1:]
    if not body:
        return lines
    i = rng.choice(body)
    text = lines[i]
    at = rng.randint(0, len(text))
    piece = {"illegal": " Kxh8 ", "bracket": rng.choice([" [ ", " ] ", "[%clk 0:01:00]"]), "brace": " {a comment} ",
             "unclosed": " { never closed ", "paren": rng.choice([" ( ", " ) ", ")) {x}"]), "semicolon": " ; rest ",
             "nag": rng.choice([" $12 ", " !? ", " $999 ", " ?? "]), "variation": " (1. a3 h6 2. h3) ",
             "noise": "".join(chr(rng.choice([c for c in range(256) if c not in (10, 13)])) for _ in range(rng.randint(1, 12))),
             "blank": "\n\n"}[kind]
    lines[i] = text[:at] + piece + text[at:]
    return lines


def damaged_file(path, seed: int, n: int, hits: list, crlf: bool = False) -> tuple[int, list]:
    """Write the games with `hits` [(game, kind)] damage (Latin-1; CRLF line ends when `crlf`); (the
    [Event count, each game's first line)."""
    rng = random.Random(seed)
    games = good_games(seed, n)
    for g, kind in hits:
        games[g % n] = damage(games[g % n], kind, rng)
    text = "\n\n".join("\n".join(g) for g in games) + "\n"
    data = text.encode("latin-1", errors="replace")
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    path.write_bytes(data)
    starts = [k for k, line in enumerate(data.split(b"\n"), 1) if line.startswith(b"[Event ")]
    assert len(starts) == n
    return len(starts), starts


def check_every_game(count: int, starts: list, analysed: set, reported: dict) -> None:
    assert not analysed & set(reported), "a game both analysed and reported"
    assert analysed | set(reported) == set(range(1, count + 1)), (count, sorted(analysed), reported)
    for game, line in reported.items():
        end = starts[game] if game < len(starts) else float("inf")
        assert starts[game - 1] <= line < end, (game, line, starts)


@given(seed=st.integers(0, 2**31), n=st.integers(1, 6),
       hits=st.lists(st.tuples(st.integers(0, 5), st.sampled_from(DAMAGE)), max_size=6), crlf=st.booleans())
@FUZZ
def test_damage_never_loses_a_game(tmp_path_factory, seed, n, hits, crlf):
    path = tmp_path_factory.mktemp("fuzz") / "d.pgn"
    count, starts = damaged_file(path, seed, n, hits, crlf)
    cfg = WorkConfig("search", Selection())  # parse and select only: no net needed
    analysed, reported, numbers = set(), {}, []
    for raw, _ in read_games([str(path)]):
        numbers.append(raw.number)
        task = prepare(raw, cfg)
        if task.error is None:
            analysed.add(task.number)
        else:
            assert "\n" not in task.error
            reported[task.number] = task.line
    assert numbers == list(range(1, count + 1))
    check_every_game(count, starts, analysed, reported)


SAME_FOR_PYTHON_CHESS = ("illegal", "bracket", "brace", "paren", "semicolon", "nag", "variation", "tag")


@given(seed=st.integers(0, 2**31), n=st.integers(1, 6),
       hits=st.lists(st.tuples(st.integers(0, 5), st.sampled_from(SAME_FOR_PYTHON_CHESS)), max_size=6),
       crlf=st.booleans())
@FUZZ
def test_games_and_tags_are_python_chess_ones(tmp_path_factory, seed, n, hits, crlf):
    path = tmp_path_factory.mktemp("fuzz") / "d.pgn"
    damaged_file(path, seed, n, hits, crlf)
    truth = []
    with open(path, encoding="latin-1") as f:
        while (headers := chess.pgn.read_headers(f)) is not None:
            truth.append(dict(headers))
    games = []
    with open(path, encoding="latin-1") as f:
        try:
            while (game := chess.pgn.read_game(f)) is not None:
                games.append(game)
        except IndexError:  # GameBuilder after an illegal move and a stray `)` (see work._Mainline)
            pass
    cfg = WorkConfig("search", Selection())
    tasks = [prepare(raw, cfg) for raw, _ in read_games([str(path)])]
    assert [t.number for t in tasks] == list(range(1, len(truth) + 1))
    for task, headers in zip(tasks, truth):
        assert dict(task.headers) == headers, task.number
    for task, game in zip(tasks, games):
        if task.error is None and not game.errors:
            assert task.moves == [m.uci() for m in game.mainline_moves()], task.number


def test_damaged_file_through_the_command(tmp_path):
    from test_analyse import analyse

    hits = [(g, kind) for g, kind in zip(range(0, 30, 2), DAMAGE * 2)]
    count, starts = damaged_file(tmp_path / "d.pgn", 12345, 30, hits)
    p = analyse(tmp_path / "d.pgn", "--summary", tmp_path / "s.jsonl", "--jsonl", tmp_path / "o.jsonl")
    analysed = {json.loads(x)["game"] for x in open(tmp_path / "s.jsonl")}
    reported = {int(g): int(n) for g, n in re.findall(r"game (\d+) \(.*? line (\d+)\): .*; skipped", p.stderr)}
    assert 0 < len(reported) < count
    check_every_game(count, starts, analysed, reported)
    assert f"{count} games ({len(reported)} skipped)" in p.stderr
