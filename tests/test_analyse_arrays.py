"""analyse's compiled per-game path (`analyse/game_arrays.py`, `work.prepare`) against the python-chess
path (`work.prepare(..., compiled=False)`) and python-chess itself: on every game of the test corpus
(tests/data/pgn_corpus) and on random games (promotions, mates, castling with a second rook on the
back rank, en passant, draws by rule, games from a FEN), the prepared task is the same field for field
(FENs, SANs, legal moves, policy indices, planes, rows, the game's end) for several input formats, and
the records written from it (JSONL, CSV, annotated PGN) are the same bytes."""

from __future__ import annotations

import glob
import os
import random
import re

import chess
import numpy as np
import pytest

from lc0_rocm.analyse.reader import RawGame, Selection, read_games
from lc0_rocm.analyse.work import FinishConfig, RowOutputs, WorkConfig, finish, move_code, prepare

HERE = os.path.dirname(__file__)
CORPUS = sorted(glob.glob(os.path.join(HERE, "data", "pgn_corpus", "*.pgn")))


def _random_pgn(rng: random.Random, plies: int, board: chess.Board) -> str:
    import chess.pgn

    start = board.copy()
    while board.ply() - start.ply() < plies and not board.is_game_over():
        moves = list(board.legal_moves)
        # favour captures, promotions and castling: more of the rare cases per game
        special = [m for m in moves if m.promotion or board.is_castling(m) or board.is_en_passant(m)]
        board.push(rng.choice(special) if special and rng.random() < 0.7 else rng.choice(moves))
    game = chess.pgn.Game.from_board(board)
    return str(game) + "\n\n"


FENS = [
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # a legal en-passant capture
    "4k3/8/8/2pP4/8/8/8/r3K2R w K c6 0 1",  # en passant, castling
    "r3k2r/8/8/8/8/8/8/R2RK2R w KQkq - 5 20",  # a second rook beside the castling one
    "8/2P5/8/8/8/8/5p2/K6k w - - 0 60",  # promotions on both sides
    "1k6/8/8/8/8/8/8/KNN5 w - - 90 70",  # knights: disambiguation, a draw by the 75-move rule soon
]


@pytest.fixture(scope="module")
def games() -> list:
    rng = random.Random(7)
    text = []
    for g in range(40):
        text.append(_random_pgn(rng, 80 if g % 2 else 300, chess.Board()))
    for fen in FENS:
        for _ in range(3):
            text.append(_random_pgn(rng, 120, chess.Board(fen)))
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"arrays-{os.getpid()}.pgn")
    with open(path, "w") as f:
        f.write("".join(text))
    out = [g for p in CORPUS + [path] for g, _ in read_games([p])]
    os.remove(path)
    return out


@pytest.fixture(scope="module")
def pairs(games) -> list:
    """(compiled task, python-chess path's task) of every game, format 1."""
    cfg = WorkConfig("raw", Selection(), 1, 5)
    return [(prepare(g, cfg), prepare(g, cfg, compiled=False)) for g in games]


def _diff(a, b):
    """The first field where two GameTasks differ (None: the same)."""
    for k in a.__dataclass_fields__:
        x, y = getattr(a, k), getattr(b, k)
        if k == "planes":
            if (x is None) != (y is None) or (x is not None and not (
                    np.array_equal(x.masks, y.masks) and np.array_equal(x.values, y.values)
                    and np.array_equal(x.transforms, y.transforms))):
                return k
        elif isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if x is None or y is None or x.dtype != y.dtype or not np.array_equal(x, y):
                return k
        elif x != y:
            return f"{k}: {x!r} != {y!r}"
    return None


def test_compiled_task_equals_python_chess_path(pairs):
    for a, b in pairs:
        assert _diff(a, b) is None, (a.source, a.number, _diff(a, b))


@pytest.mark.parametrize("input_format", [3, 5])
def test_canonical_formats_tasks_equal(games, input_format):
    cfg = WorkConfig("raw", Selection(), input_format, 5)
    for g in games[::2]:
        a, b = prepare(g, cfg), prepare(g, cfg, compiled=False)
        assert _diff(a, b) is None, (g.source, g.number, _diff(a, b))


def test_search_mode_and_selection_tasks_equal(games):
    for cfg in (WorkConfig("search", Selection(), 1, 5), WorkConfig("raw", Selection(3, 40, "black", 2), 3, 5)):
        for g in games[1::2]:
            a, b = prepare(g, cfg), prepare(g, cfg, compiled=False)
            assert _diff(a, b) is None, (g.number, _diff(a, b))


def test_fen_san_legal_moves_are_python_chess(pairs):
    """The compiled FENs, SANs and legal moves are python-chess's (replayed here), and the games hold
    the rare cases: promotions, mates, long castling, disambiguation, en passant in a FEN, a second
    rook beside a castling one, both kinds of decided ends."""
    sans, fens, ends = [], [], set()
    for t, _ in pairs:
        if t.error is not None or t.chess960:
            continue
        board = chess.Board(t.start_fen) if t.start_fen else chess.Board()
        for i, ply in enumerate(t.plies):
            assert t.fens[i] == board.fen()
            codes = t.codes[t.rec_start[i]:t.rec_start[i + 1]].tolist()
            assert codes == [move_code(m) for m in board.legal_moves]
            if ply <= len(t.moves):
                move = chess.Move.from_uci(t.moves[ply - 1])
                assert t.sans[i] == board.san(move)
                board.push(move)
        sans += [s for s in t.sans if s]
        fens += t.fens
        ends.add(t.final_score)
    text = " ".join(sans)
    for pattern in (r"=Q", r"=N", r"#", r"O-O-O", r"\bN[a-h1-8]x?[a-h][1-8]", r"\bR[a-h1-8]x?[a-h][1-8]"):
        assert re.search(pattern, text), pattern
    assert any(f.split()[3] != "-" for f in fens)  # an en-passant square shown
    # a castling right with another rook between king and castling rook (python-chess writes Q, not A)
    assert any(f.split()[0].endswith("/R2RK2R") and "Q" in f.split()[2] for f in fens)
    assert {0.5, 1.0} <= ends


@pytest.mark.parametrize("top,ties", [(3, False), (0, True)])
def test_outputs_are_the_same_bytes(pairs, top, ties):
    """JSONL, CSV and annotated PGN of every game from the compiled task and records equal the
    python-chess and numpy path's, with logits that tie (the order by UCI) and the whole policy (top 0)."""
    rng = np.random.default_rng(top)
    want = frozenset({"jsonl", "csv", "pgn"})
    fast, slow = FinishConfig("raw", top, want), FinishConfig("raw", top, want, compiled=False)
    for a, b in pairs:
        n = a.n_rows
        wdl = rng.dirichlet([1, 1, 1], n).astype(np.float32)
        entries = 0 if a.gather_col is None else len(a.gather_col)
        logits = rng.integers(-2, 2, entries) if ties else rng.normal(size=entries)
        out = RowOutputs(wdl[:, 0] - wdl[:, 2], wdl, rng.uniform(0, 90, n).astype(np.float32), logits.astype(np.float32))
        x, y = finish(a, out, fast), finish(b, out, slow)
        assert (x.jsonl, x.csv, x.pgn, x.summary) == (y.jsonl, y.csv, y.pgn, y.summary), a.number


def test_records_of_both_paths_are_one_builders(pairs):
    """Both raw paths' records (`work.raw_records`, compiled and numpy) come from `records.record`: the
    schema's keys in order, then `_after`, the same values; `_after` (the annotated PGN's comment) is
    the evaluated position after the move seen from White, its score the mover's expected score, and a
    game-ending draw a sure draw; the search mode's `after_move` gives the same from the mover's view."""
    from lc0_rocm.analyse.records import after_move, keys
    from lc0_rocm.analyse.work import raw_records

    rng = np.random.default_rng(5)
    ended = 0
    for a, b in pairs[::3]:
        if a.error is not None:
            continue
        wdl = rng.dirichlet([1, 1, 1], a.n_rows).astype(np.float32)
        out = RowOutputs(wdl[:, 0] - wdl[:, 2], wdl, None, rng.normal(size=len(a.gather_col)).astype(np.float32))
        fast, slow = raw_records(a, out, 3), raw_records(b, out, 3, compiled=False)
        assert fast == slow and all(tuple(r) == keys("raw") + ("_after",) for r in fast)
        for i, r in enumerate(fast):
            row = a.after_row[i]
            if row >= 0:
                q, w = float(out.q[row]), [float(x) for x in out.wdl[row]]  # the next mover's view
                white_q, white_wdl = (q, w) if r["turn"] == "b" else (-q, w[::-1])
                assert r["_after"] == (white_q, white_wdl, None) and r["played_score"] == (1 - q) / 2
                assert after_move(r["turn"] == "w", -q, w[::-1]) == (r["played_score"], r["_after"])
            elif r["played_score"] == 0.5:
                ended += 1
                assert r["_after"] == (0.0, [0.0, 1.0, 0.0], None)
    assert ended


def test_repetitions_are_lcs_from_the_first_position():
    """The replay's repetition counts (`board.rules.repetitions`, the search's walk) are those of the
    general encoder's history (`PositionState._compute_repetitions`) on games that come back to their
    first position (row 0, whose key the replay sets first), to later ones, and that break the chain
    with a pawn move, from the start and from a FEN with en passant and counters."""
    from lc0_rocm.analyse.game_arrays import GameArrays
    from lc0_rocm.encoding.history import History

    shuffle = ["g1f3", "g8f6", "f3g1", "f6g8"]
    cases = [(chess.Board(), shuffle * 3 + ["e2e4", "e7e5"] + shuffle * 2, 1),
             (chess.Board(FENS[0]), ["e1e2", "e8f7", "e2e1", "f7e8"] * 2 + ["b1c3", "b8c6", "c3b1", "c6b8"] * 2, 0)]
    for board, ucis, back_to_first in cases:  # the FEN's first position has an en-passant flag: never again
        moves = [chess.Move.from_uci(u) for u in ucis]
        ep0 = board.ep_square & 7 if board.ep_square is not None else -1
        ga = GameArrays(board, moves, ep0)
        assert ga.bad == -1
        h, want = History.from_board(board.copy(stack=False)), []
        b = board.copy(stack=False)
        for m in [None] + moves:
            if m is not None:
                b.push(m)
                h = h.push(m, b.copy(stack=False))
            want.append(h.last.repetitions)
        assert ga.reps.tolist() == want and max(want) >= 2 and want[4] == back_to_first, (want, ga.reps.tolist())


def test_records_with_nan_logits_are_written():
    """Logits with a NaN (a broken net) give records (NaN probabilities), not an exception."""
    cfg = WorkConfig("raw", Selection(), 1, 5)
    t = prepare(RawGame(1, "x", 1, "pgn", "1. e4 e5 2. Nf3 Nc6 *\n"), cfg)
    logits = np.linspace(-1, 1, len(t.gather_col)).astype(np.float32)
    logits[3] = np.nan
    out = RowOutputs(np.zeros(t.n_rows, np.float32), None, None, logits)
    lines = finish(t, out, FinishConfig("raw", 5, frozenset({"jsonl"}))).jsonl.splitlines()
    assert len(lines) == 4 and "NaN" in lines[0] and "NaN" not in lines[1]


def test_chess960_and_fen_lines_take_their_paths():
    """A Chess960 game is prepared by python-chess (the same task either way), a FEN line by the
    compiled path, its counters up to the limits of the one parser (encoding.position) included."""
    cfg = WorkConfig("raw", Selection(), 1, 5)
    g = next(g for g, _ in read_games([os.path.join(HERE, "data", "pgn_corpus", "chess960.pgn")]))
    a = prepare(g, cfg)
    assert a.chess960 and a.error is None and a.plies and _diff(a, prepare(g, cfg, compiled=False)) is None
    for fen in ("4k3/8/8/8/8/8/8/4K2R w K - 32766 20", "4k3/8/8/8/8/8/8/4K2R b K - 7 2147483647"):
        f = RawGame(3, "x", 1, "fen", fen)  # the longest counters the search takes
        a = prepare(f, cfg)
        assert a.fens == [fen] and _diff(a, prepare(f, cfg, compiled=False)) is None
    f = RawGame(2, "x", 1, "fen", "4k3/8/8/2pP4/8/8/8/4K3 w - c6 0 1")
    a = prepare(f, cfg)
    assert a.fens == ["4k3/8/8/2pP4/8/8/8/4K3 w - c6 0 1"] and _diff(a, prepare(f, cfg, compiled=False)) is None
