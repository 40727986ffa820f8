"""The position suites that `lc0-rocm validate` and the GPU network tests evaluate.

A position is (start FEN, UCI moves played from it), so the encoder sees a real history. The built-in
suite is a fixed list of hand-picked positions (openings, middlegames, both sides to move, castling
rights, en passant, promotions for both colours, under-promotion, endgames, checks) followed by
positions from seeded random games, so any size is available and the same size always gives the same
list. The random games are deterministic for the pinned python-chess version (its legal-move order).

`pgn_boards(path)` gives positions from real games instead: every position along the main line of
every game of a PGN file (the start position, or the game's FEN header, and the position after each
move), as boards whose move stacks hold the game so far. A file that cannot be read, holds no game
with moves, or has an illegal move, a bad FEN header or an unsupported variant raises PositionError
with a one-line message.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Optional

import chess
import chess.pgn

from .encoding.history import STARTPOS_FEN
from .errors import PositionError, one_line

# (start FEN, moves played from it). Every entry is legal; tests check that.
CURATED: tuple[tuple[str, tuple[str, ...]], ...] = (
    (STARTPOS_FEN, ()),
    (STARTPOS_FEN, ("e2e4",)),
    (STARTPOS_FEN, ("e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "b5a4", "g8f6", "e1g1")),
    (STARTPOS_FEN, ("d2d4", "g8f6", "c2c4", "e7e6", "b1c3", "f8b4", "e2e3", "e8g8")),
    (STARTPOS_FEN, ("e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4", "f3d4", "g8f6", "b1c3", "a7a6")),
    (STARTPOS_FEN, ("e2e4", "d7d5", "e4e5", "f7f5")),  # en passant e5f6 available
    (STARTPOS_FEN, ("g1f3", "g8f6", "f3g1", "f6g8", "g1f3", "g8f6", "f3g1", "f6g8")),  # repetitions
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", ()),  # kiwipete
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", ("a2a4",)),  # b4a3 e.p.
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", ()),
    ("r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1", ("f1f2",)),  # black b2xa1 promos
    ("8/2P5/8/8/8/8/5k2/K7 w - - 0 1", ()),  # promotion c8
    ("1n6/2P5/8/8/8/8/5k2/K7 w - - 0 1", ()),  # promotion with capture b8 / c8 / (d8)
    ("8/8/8/8/8/8/1p3K2/k1N5 b - - 0 1", ()),  # black promotions incl. capture
    ("8/8/8/8/8/8/1p3K2/k1N5 b - - 0 1", ("b2c1n",)),  # after an under-promotion
    ("4k3/8/8/8/8/8/8/4K2R w K - 0 1", ()),  # king-side castling only
    ("r3k3/8/8/8/8/8/8/4K3 b q - 0 1", ()),  # black queen-side castling only
    ("8/8/4k3/8/8/4K3/4P3/8 w - - 0 1", ()),  # pawn endgame
    ("8/5pk1/6p1/8/8/6P1/5PK1/8 b - - 0 40", ()),
    ("6k1/5ppp/8/8/8/8/5PPP/3R2K1 w - - 0 1", ()),  # back-rank mate in one
    ("rnb1kbnr/pppp1ppp/8/4p3/6Pq/5P2/PPPPP2P/RNBQKBNR w KQkq - 1 3", ()),  # checkmated
    ("4k3/4r3/8/8/8/8/3PPP2/4K3 w - - 0 1", ("e1d1",)),  # after leaving a pin
    ("r1bqkb1r/pppp1ppp/2n2n2/4p2Q/2B1P3/8/PPPP1PPP/RNB1K1NR w KQkq - 4 4", ()),  # scholar's threat
    ("8/8/8/3k4/8/8/8/3QK3 w - - 0 1", ()),
    ("2kr3r/ppp2ppp/2n5/2b1p3/4P1b1/2NP1N2/PPP2PPP/R1B1KB1R b KQ - 3 9", ()),
    ("r1bq1rk1/pp2bppp/2n1pn2/2pp4/3P4/2PBPN2/PP1N1PPP/R1BQ1RK1 w - - 0 8", ()),
    ("8/1P6/8/8/8/8/6p1/K6k b - - 0 1", ()),  # both sides promote, black to move
    ("8/1P6/8/8/8/8/6p1/K6k w - - 0 1", ()),  # same, white to move
)


def _random_game_positions(rng: random.Random, count: int) -> list[tuple[str, tuple[str, ...]]]:
    """Positions along seeded random games from the start: a random prefix of each game.

    Captures are preferred with some probability so that games reach middlegames and endgames with
    few pieces rather than wandering with all 32.
    """
    out: list[tuple[str, tuple[str, ...]]] = []
    while len(out) < count:
        board = chess.Board()
        length = rng.randint(1, 140)
        moves: list[str] = []
        for _ in range(length):
            legal = list(board.legal_moves)
            if not legal:
                break
            captures = [m for m in legal if board.is_capture(m) or m.promotion]
            pool = captures if captures and rng.random() < 0.25 else legal
            move = pool[rng.randrange(len(pool))]
            board.push(move)
            moves.append(move.uci())
        if board.is_game_over(claim_draw=False) and not board.is_checkmate():
            continue  # stalemates and dead positions add nothing a checkmate does not
        out.append((STARTPOS_FEN, tuple(moves)))
    return out


def suite(n: int = 512, seed: int = 20260427) -> list[tuple[str, tuple[str, ...]]]:
    """The first `n` positions of the suite: the curated list, then seeded random-game positions."""
    if n < 1:
        raise ValueError(f"the position suite needs n >= 1, got {n}")
    curated = list(CURATED[:n])
    rest = n - len(curated)
    if rest <= 0:
        return curated
    return curated + _random_game_positions(random.Random(seed), rest)


def boards(n: int = 512, seed: int = 20260427) -> list[chess.Board]:
    """The suite as python-chess boards with their move stacks (the encoder's history)."""
    return to_boards(suite(n, seed))


def to_boards(positions) -> list[chess.Board]:
    """(FEN, UCI moves) pairs, as `suite` gives them, as python-chess boards with their move stacks."""
    result = []
    for fen, moves in positions:
        board = chess.Board(fen)
        for uci in moves:
            board.push_uci(uci)
        result.append(board)
    return result


class _QuietGameBuilder(chess.pgn.GameBuilder):
    """python-chess's game builder without its error logging (errors stay in `game.errors`)."""

    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(error)


def pgn_boards(path, max_positions: Optional[int] = None) -> list[chess.Board]:
    """Every position along every game of the PGN file at `path` (at most `max_positions`), in game
    order; each board's move stack is its game up to that position."""
    if max_positions is not None and max_positions < 1:
        raise PositionError(f"--max-positions must be >= 1, got {max_positions}")
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise PositionError(f"cannot read PGN {path}: not UTF-8 text (byte {e.start})") from None
    if "\x00" in text:
        raise PositionError(f"cannot read PGN {path}: binary data")
    import io

    handle = io.StringIO(text)
    boards: list[chess.Board] = []
    games = moves_seen = 0
    while max_positions is None or len(boards) < max_positions:
        game = chess.pgn.read_game(handle, Visitor=_QuietGameBuilder)
        if game is None:
            break
        games += 1
        if game.errors:
            raise PositionError(f"bad PGN {path}: game {games}: {one_line(game.errors[0])}")
        board = game.board()
        if board.uci_variant not in ("chess",):
            raise PositionError(f"bad PGN {path}: game {games}: variant {board.uci_variant!r} is not supported")
        if not board.is_valid():
            raise PositionError(f"bad PGN {path}: game {games}: illegal start position {board.fen()}")
        moves = list(game.mainline_moves())
        moves_seen += len(moves)
        if not moves and "FEN" not in game.headers:
            continue  # text that is no game (or a game without moves from the start position)
        boards.append(board.copy())
        for move in moves:
            if max_positions is not None and len(boards) >= max_positions:
                break
            board.push(move)
            boards.append(board.copy())
    if not boards:
        raise PositionError(f"bad PGN {path}: no game with moves found")
    return boards[:max_positions] if max_positions is not None else boards
