"""Syzygy tablebases for the search (lc0_rocm.search.syzygy): lc0's root move filter and leaf probe.

Truth, in two layers:
* the tables themselves, read through python-chess's own `probe_wdl`/`probe_dtz` on a separate
  `chess.syzygy` instance: the expected root move sets are derived here child by child, in a
  case-by-case form (keep in-time wins, else the quickest wins, else draws, else the longest
  losses) rather than lc0's numeric ranks that the module uses;
* the real lc0 0.32.1 (`lc0` on PATH, eigen backend, maia-1100) with `--syzygy-paths`: with
  MultiPV above the number of legal moves and `go nodes 1` it reports every root move its filter
  keeps, which must be exactly our set (its best move among them, its tbhits 1 for a probed root
  and 0 otherwise); with VerboseMoveStats every visited child we would probe must be a terminal
  of our value.
The 3-4-piece tables come from ../shared/syzygy; both layers skip without them (and without
`lc0`), and fail instead under CI=true.
"""

from __future__ import annotations

import os
import random
import subprocess
import time
import zlib
from pathlib import Path

import chess
import chess.syzygy
import pytest

from lc0_rocm.errors import Lc0RocmError, TablebaseError
from lc0_rocm.search.syzygy import DRAW, LOSS, WIN, Tablebases, repeated_since_zeroing

from lc0_oracle import require_lc0
from netpaths import require_shared
from uci_pipe import UciPipe

TB_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "syzygy"
MAIA = Path(__file__).resolve().parent.parent.parent / "shared" / "weights" / "maia-1100.pb.gz"


@pytest.fixture(scope="module")
def tb_dir() -> Path:
    return require_shared(TB_DIR)


@pytest.fixture(scope="module")
def tables(tb_dir):
    tb = Tablebases.open(str(tb_dir))
    yield tb
    tb.close()


@pytest.fixture(scope="module")
def raw(tb_dir):
    """python-chess's own tablebase, independent of the module under test."""
    with chess.syzygy.open_tablebase(str(tb_dir)) as tb:
        yield tb


def uci_set(moves) -> set[str]:
    return {m.uci() for m in moves}


# ------------------------------------------------------------------ expectations from the tables

def move_dtz(raw, board: chess.Board, move: chess.Move) -> int:
    """Plies to the next zeroing move after `move`, signed for its mover, counted from `board`:
    a zeroing move counts 1 (win) / 101 (cursed win) / 0 / -101 / -1 by the result it reaches, a
    mate counts 1, any other move one ply more than its child's DTZ."""
    child = board.copy(stack=False)
    child.push(move)
    if child.is_checkmate():
        return 1
    if board.is_zeroing(move):
        return {2: 1, 1: 101, 0: 0, -1: -101, -2: -1}[-raw.probe_wdl(child)]
    d = -raw.probe_dtz(child)
    return d + 1 if d > 0 else d - 1 if d < 0 else 0


def expected_root(raw, board: chess.Board, rep: bool) -> set[str]:
    """lc0's root choice, case by case: with no repetition/fast play, every win that stays within
    the 50-move rule (dtz + counter <= 99); otherwise the wins of smallest DTZ; failing any win,
    every draw; failing any draw, the losses whose 50-move draw is in sight (2|dtz| + counter >=
    100) of longest DTZ, or, if there are none, every loss."""
    cnt = board.halfmove_clock
    dtz = {m.uci(): move_dtz(raw, board, m) for m in board.legal_moves}
    wins = {m: d for m, d in dtz.items() if d > 0}
    if wins:
        in_time = {m for m, d in wins.items() if d + cnt <= 99}
        if in_time and not rep:
            return in_time
        best = min(wins.values())
        return {m for m, d in wins.items() if d == best}
    draws = {m for m, d in dtz.items() if d == 0}
    if draws:
        return draws
    saving = {m: -d for m, d in dtz.items() if -2 * d + cnt >= 100}
    if saving:
        longest = max(saving.values())
        return {m for m, d in saving.items() if d == longest}
    return set(dtz)


def random_positions(material: str, count: int, seed: int, clocks=(0,)) -> list[chess.Board]:
    """`count` legal positions of `material` (e.g. 'KRvKB', white's pieces first) with legal
    moves, side to move and 50-move counter drawn at random."""
    rng = random.Random(seed)
    white, black = material.split("v")
    pieces = [chess.Piece.from_symbol(c) for c in white] + [chess.Piece.from_symbol(c.lower()) for c in black]
    out = []
    while len(out) < count:
        board = chess.Board(None)
        for square, piece in zip(rng.sample(chess.SQUARES, len(pieces)), pieces):
            board.set_piece_at(square, piece)
        board.turn = rng.choice(chess.COLORS)
        if board.pawns & chess.BB_BACKRANKS or not board.is_valid() or not any(board.legal_moves):
            continue
        board.halfmove_clock = 0 if board.pawns and rng.random() < 0.3 else rng.choice(clocks)
        out.append(board)
    return out


MATERIALS = ["KQvK", "KRvK", "KPvK", "KBNvK", "KRvKB", "KQvKR", "KPvKP", "KRvKP", "KBvKP", "KNNvK", "KRvKR"]


# ------------------------------------------------------------------------------------ opening

def test_open_empty_value_is_none():
    assert Tablebases.open("") is None
    assert Tablebases.open(os.pathsep) is None


def test_open_errors_are_one_line(tmp_path, tb_dir):
    missing = tmp_path / "nope"
    with pytest.raises(TablebaseError, match="not a directory"):
        Tablebases.open(str(missing))
    # A good directory does not excuse a bad one beside it.
    with pytest.raises(TablebaseError, match="not a directory"):
        Tablebases.open(f"{tb_dir}{os.pathsep}{missing}")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README.txt").write_text("no tables here")
    with pytest.raises(TablebaseError, match="holds no Syzygy tables") as exc:
        Tablebases.open(str(empty))
    assert "\n" not in str(exc.value) and isinstance(exc.value, Lc0RocmError)
    dtz_only = tmp_path / "dtz_only"
    dtz_only.mkdir()
    (dtz_only / "KQvK.rtbz").symlink_to(tb_dir / "KQvK.rtbz")
    with pytest.raises(TablebaseError, match="no WDL tables"):
        Tablebases.open(str(dtz_only))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "KQvK.rtbw").write_bytes(b"\0" * 80)
    with pytest.raises(TablebaseError, match="not a valid Syzygy table"):
        Tablebases.open(str(broken))


def test_open_with_skipped_leaves_out_what_it_cannot_read(tmp_path, tb_dir, raw):
    """As lc0's SyzygyTablebase::init: a missing folder, an empty one or a damaged file beside good
    tables is reported (one TablebaseError each) and left out; the good tables are used."""
    missing, empty, broken = tmp_path / "not-mounted", tmp_path / "empty", tmp_path / "broken"
    empty.mkdir()
    broken.mkdir()
    (broken / "KRvK.rtbw").write_bytes(b"\0" * 80)
    skipped: list = []
    value = os.pathsep.join(map(str, (missing, tb_dir, empty, broken)))
    with Tablebases.open(value, skipped=skipped) as tb:
        assert tb.max_pieces == 4 and tb.directories == [str(tb_dir), str(empty), str(broken)]
        board = chess.Board("8/8/8/4k3/8/8/8/KQ6 w - - 0 1")
        moves, dtz = tb.root_moves(board)
        assert dtz and moves and all(_after(board, m, raw.probe_wdl) == -2 for m in moves)
    assert [type(e) for e in skipped] == [TablebaseError] * 3
    assert "not-mounted' is not a directory" in str(skipped[0]) and "holds no Syzygy tables" in str(skipped[1])
    assert "not a valid Syzygy table" in str(skipped[2])
    skipped = []
    assert Tablebases.open(f"{missing}{os.pathsep}{empty}", skipped=skipped) is None
    assert "no WDL tables" in str(skipped[-1]) and len(skipped) == 3


def test_open_counts_largest_wdl_table(tmp_path, tb_dir, tables):
    assert tables.max_pieces == 4
    # The 3-piece tables, WDL in one directory and DTZ in another (lc0 finds each file on its own).
    wdl, dtz = tmp_path / "wdl3", tmp_path / "dtz3"
    wdl.mkdir()
    dtz.mkdir()
    for f in tb_dir.glob("K?vK.rtb?"):
        (wdl if f.suffix == ".rtbw" else dtz).joinpath(f.name).symlink_to(f)
    with Tablebases.open(f"{wdl}{os.pathsep}{dtz}{os.pathsep}") as tb:
        assert tb.max_pieces == 3
        board = chess.Board("8/8/8/4k3/8/8/8/KQR5 w - - 0 1")  # KQRvK: 4 pieces, beyond these tables
        assert tb.root_moves(board, False) == (None, False)
        assert tb.root_moves(chess.Board("8/8/8/4k3/8/8/8/KQ6 w - - 0 1"), False)[1] is True


# ------------------------------------------------------------------------------------ root

@pytest.mark.parametrize("material", MATERIALS)
def test_root_moves_match_the_tables(tables, raw, material):
    positions = random_positions(material, 12, seed=zlib.crc32(material.encode()), clocks=(0, 0, 30, 60, 85, 97))
    for board in positions:
        for fast in (False, True):
            hits = tables.hits
            moves, dtz = tables.root_moves(board, fast)
            assert dtz is True, board.fen()
            assert tables.hits == hits + 1
            assert uci_set(moves) == expected_root(raw, board, rep=fast), (board.fen(), fast)


def test_root_won_drawn_lost_by_hand(tables, raw):
    # Won: without fast play every move that keeps the (quick) win, with it only the mates.
    board = chess.Board("k7/8/1K6/8/8/8/8/6Q1 w - - 0 1")
    mates = {m.uci() for m in board.legal_moves if _mates(board, m)}
    assert mates == {"g1g8"}
    keep = {m.uci() for m in board.legal_moves if _after(board, m, raw.probe_wdl) == -2}
    assert uci_set(tables.root_moves(board, False)[0]) == keep and len(keep) > len(mates)
    assert uci_set(tables.root_moves(board, True)[0]) == mates
    # Drawn: rook moves that hang the rook (or let it be traded into a loss) are cut, the rest kept.
    board = chess.Board("r7/8/3k4/8/8/3K4/8/7R w - - 0 1")
    drawn = {m.uci() for m in board.legal_moves if _after(board, m, raw.probe_wdl) == 0}
    assert len(drawn) == 19 and board.legal_moves.count() == 22
    assert uci_set(tables.root_moves(board, False)[0]) == drawn
    assert uci_set(tables.root_moves(board, True)[0]) == drawn  # fast play changes only wins
    # Lost, far from the 50-move rule: every move loses, all are kept ...
    board = chess.Board("8/8/8/8/8/3k4/8/R3K3 b - - 0 1")
    assert uci_set(tables.root_moves(board, False)[0]) == uci_set(board.legal_moves)
    # ... near it, only the longest resistance.
    board.halfmove_clock = 80
    assert uci_set(tables.root_moves(board, False)[0]) == {"d3c4", "d3d4"}
    # Lost KBN-K (dtz -53 > 50 moves): only the longest defence.
    assert tables.root_moves(chess.Board("8/2K5/4B3/3N4/8/8/4k3/8 b - - 0 1"), False) == ([chess.Move.from_uci("e2d3")], True)


def _after(board, move, probe):
    child = board.copy(stack=False)
    child.push(move)
    return probe(child)


def _mates(board, move):
    child = board.copy(stack=False)
    child.push(move)
    return child.is_checkmate()


def test_root_fifty_move_counter(tables):
    # KPvK at counter 97: only the pawn push (a zeroing win, dtz 1) stays within the rule.
    board = chess.Board("8/8/2K5/8/k3P3/8/8/8 w - - 0 1")
    assert len(tables.root_moves(board, False)[0]) == 7
    board.halfmove_clock = 97
    assert tables.root_moves(board, False) == ([chess.Move.from_uci("e4e5")], True)
    # KQvK at counter 95: no win fits in 4 plies, so the wins are ranked by DTZ (cursed-by-clock).
    board = chess.Board("8/5K2/8/8/6k1/8/Q7/8 w - - 95 1")
    assert tables.root_moves(board, False) == ([chess.Move.from_uci("a2f2")], True)
    board.halfmove_clock = 0
    assert len(tables.root_moves(board, False)[0]) == 27


def test_root_not_probed(tables):
    hits = tables.hits
    # Castling rights (KRvK with a usable O-O-O).
    assert tables.root_moves(chess.Board("8/8/8/8/8/3k4/8/R3K3 w Q - 0 1"), False) == (None, False)
    # Five pieces.
    assert tables.root_moves(chess.Board("8/8/8/4k3/8/8/7r/KQR5 w - - 0 1"), True) == (None, False)
    assert tables.hits == hits
    # A right the FEN gives though the king has left e1: python-chess's clean rights drop it, lc0
    # keeps it (and does not probe), so neither do we.
    board = chess.Board("8/8/8/8/8/3k4/8/R2K4 w Q - 0 1")
    assert board.castling_rights and not board.clean_castling_rights()
    assert tables.root_moves(board, False) == (None, False) and tables.probe_leaf(board) is None
    assert tables.hits == hits


def test_root_without_legal_moves(tables):
    for fen in ("8/8/8/8/8/2k5/1q6/K7 w - - 0 1", "8/8/8/8/8/1k6/1p6/1K6 w - - 0 1"):  # mate, stalemate
        assert tables.root_moves(chess.Board(fen), False) == ([], True)


def test_repetitions_since_zeroing(tables, raw):
    fen = "8/5K2/8/8/6k1/8/Q7/8 w - - 0 1"
    board = chess.Board(fen)
    assert len(tables.root_moves(board, False)[0]) == 27
    for uci in ("a2a1", "g4g5", "a1a2", "g5g4"):
        board.push_uci(uci)
    # The start came back: wins are ranked by DTZ, as with fast play.
    assert board.halfmove_clock == 4 and repeated_since_zeroing(board)
    assert uci_set(tables.root_moves(board, False)[0]) == expected_root(raw, board, rep=True) == {"a2f2"}
    # A repetition before the last zeroing move does not count: KQvKR repeats, then Qxh1.
    board = chess.Board("8/5K2/8/8/6k1/8/Q7/7r w - - 0 1")
    for uci in ("a2b1", "h1h2", "b1a2", "h2h1"):
        board.push_uci(uci)
    assert repeated_since_zeroing(board)
    for uci in ("a2b1", "g4g5", "b1h1", "g5g4"):
        board.push_uci(uci)
    assert board.halfmove_clock == 1 and not repeated_since_zeroing(board)
    moves = uci_set(tables.root_moves(board, False)[0])
    assert moves == expected_root(raw, board, rep=False) != expected_root(raw, board, rep=True)


def test_repetition_window_and_en_passant_flag():
    # Start, shuffle, back: a repetition ...
    board = chess.Board("4k3/8/8/8/4P3/8/8/4K3 b - - 0 1")
    for uci in ("e8d8", "e1d1", "d8e8", "d1e1"):
        board.push_uci(uci)
    assert repeated_since_zeroing(board)
    # ... unless the start had an en-passant square (lc0 keeps the FEN's flag, so they differ) ...
    board = chess.Board("4k3/8/8/8/4P3/8/8/4K3 b - e3 0 1")
    for uci in ("e8d8", "e1d1", "d8e8", "d1e1"):
        board.push_uci(uci)
    assert not repeated_since_zeroing(board)
    # ... and not across a pawn move: after e4e5 the old positions do not count.
    board = chess.Board("4k3/8/8/8/4P3/8/8/4K3 w - - 0 1")
    for uci in ("e1d1", "e8d8", "d1e1", "d8e8", "e4e5", "e8d8", "e1d1", "d8e8", "d1e2"):
        board.push_uci(uci)
    assert not repeated_since_zeroing(board)
    for uci in ("e8d8", "e2d1", "d8e8"):  # back to the position after e4e5 e8d8 e1d1 d8e8
        board.push_uci(uci)
    assert repeated_since_zeroing(board)
    # A double push whose en-passant capture no pawn can make leaves no flag (lc0 sets it only
    # beside an enemy pawn), so the position after it can repeat.
    board = chess.Board("4k3/8/8/8/8/8/4P3/4K3 w - - 0 1")
    for uci in ("e2e4", "e8d8", "e1d1", "d8e8", "d1e1"):
        board.push_uci(uci)
    assert repeated_since_zeroing(board)
    # Beside an enemy pawn the flag is set, and the same squares later are a new position.
    board = chess.Board("4k3/8/8/8/3p4/8/4P3/4K3 w - - 0 1")
    for uci in ("e2e4", "e8d8", "e1d1", "d8e8", "d1e1"):
        board.push_uci(uci)
    assert not repeated_since_zeroing(board)


def test_wdl_fallback_without_dtz(tmp_path, tb_dir, raw):
    """Without DTZ files, root ranking falls back to WDL whenever some move's DTZ needs a DTZ table;
    draws and positions settled by a winning capture or pawn move need none (lc0 alike)."""
    wdl_only = tmp_path / "wdl"
    wdl_only.mkdir()
    for f in tb_dir.glob("*.rtbw"):
        (wdl_only / f.name).symlink_to(f)
    fallbacks = 0
    with Tablebases.open(str(wdl_only)) as tb, chess.syzygy.open_tablebase(str(wdl_only)) as no_dtz:
        assert tb.max_pieces == 4
        boards = random_positions("KQvKR", 10, seed=5) + random_positions("KPvKP", 10, seed=6)
        for board in boards:
            try:
                for m in board.legal_moves:
                    move_dtz(no_dtz, board, m)
                needs_dtz = False
            except chess.syzygy.MissingTableError:
                needs_dtz = True
            moves, dtz = tb.root_moves(board, True)
            if needs_dtz:
                fallbacks += 1
                wdl = {m.uci(): -_after(board, m, raw.probe_wdl) for m in board.legal_moves}
                best = max(wdl.values())
                assert dtz is False and uci_set(moves) == {m for m, w in wdl.items() if w == best}, board.fen()
            else:
                assert dtz is True and uci_set(moves) == expected_root(raw, board, rep=True), board.fen()
        assert tb.hits == len(boards) and fallbacks >= 10
        # Leaves are probed with WDL alone.
        assert tb.probe_leaf(chess.Board("8/8/8/8/8/3k4/8/R3K3 b - - 0 1")) == LOSS


# ------------------------------------------------------------------------------------ leaves

def test_probe_leaf_matches_the_tables(tables, raw):
    for material in MATERIALS:
        for board in random_positions(material, 15, seed=len(material) * 31 + ord(material[1])):
            board.halfmove_clock = 0
            fen = board.fen()
            hits = tables.hits
            wdl = raw.probe_wdl(board)
            assert tables.probe_leaf(board) == {2: WIN, 1: DRAW, 0: DRAW, -1: DRAW, -2: LOSS}[wdl], fen
            assert tables.hits == hits + 1 and board.fen() == fen


def test_probe_leaf_conditions(tables):
    board = chess.Board("8/8/8/8/8/3k4/8/R3K3 w - - 0 1")
    hits = tables.hits
    assert tables.probe_leaf(board) == WIN and tables.hits == hits + 1
    assert tables.probe_leaf(board, root_in_dtz=True) is None  # the root was resolved by DTZ
    board.halfmove_clock = 1
    assert tables.probe_leaf(board) is None  # only right after a capture or pawn move
    assert tables.probe_leaf(chess.Board("8/8/8/8/8/3k4/8/R3K3 w Q - 0 1")) is None  # castling
    assert tables.probe_leaf(chess.Board("8/8/8/4k3/8/8/7r/KQR5 w - - 0 1")) is None  # 5 pieces
    assert tables.hits == hits + 1
    assert tables.probe_leaf(chess.Board("8/8/8/8/8/3k4/8/R3K3 b - - 0 1")) == LOSS
    assert tables.probe_leaf(chess.Board("r7/8/3k4/8/8/3K4/8/7R w - - 0 1")) == DRAW
    assert tables.probe_leaf(chess.Board("8/8/8/8/8/2k5/1q6/K7 w - - 0 1")) == LOSS  # mated
    assert tables.probe_leaf(chess.Board("8/8/8/8/8/1k6/1p6/1K6 w - - 0 1")) == DRAW  # stalemate


def test_probe_leaf_cursed_and_failed(tables, tmp_path, tb_dir):
    # The 3-4-piece tables hold no cursed win; check the mapping on a stand-in python-chess table.
    board = chess.Board("8/8/8/8/8/3k4/8/R3K3 w - - 0 1")

    class Stub:
        def __init__(self, value):
            self.value = value

        def probe_wdl(self, _board):
            if self.value is None:
                raise chess.syzygy.MissingTableError("no table")
            return self.value

    real = tables._tb
    try:
        for value, want in ((2, WIN), (1, DRAW), (0, DRAW), (-1, DRAW), (-2, LOSS), (None, None)):
            tables._tb = Stub(value)
            assert tables.probe_leaf(board) == want
    finally:
        tables._tb = real
    # A material whose table is missing: no result, no hit.
    partial = tmp_path / "partial"
    partial.mkdir()
    for f in tb_dir.glob("K*.rtb?"):
        if not f.name.startswith("KRvKB"):
            (partial / f.name).symlink_to(f)
    with Tablebases.open(str(partial)) as tb:
        krkb = chess.Board("1b5k/8/8/5K2/8/8/5R2/8 w - - 0 1")  # no capture to resolve it
        assert tb.probe_leaf(krkb) is None and tb.root_moves(krkb, False) == (None, False)
        assert tb.hits == 0


def test_probe_leaf_is_fast(tables):
    board = chess.Board("8/2K5/4B3/3N4/8/8/4k3/8 b - - 0 1")
    t = time.perf_counter()
    for _ in range(200):
        tables.probe_leaf(board)
    assert (time.perf_counter() - t) / 200 < 2e-3


# ------------------------------------------------------------------------------------ lc0

class Lc0(UciPipe):
    """The real lc0 over pipes: one process, many `go`s. With MultiPV above the number of legal
    moves, lc0 sends one `info multipv` line per root move its tablebase filter lets through (all
    of them, visited or not), so its filtered set can be read off exactly."""

    def __init__(self, *args: str):
        super().__init__([require_lc0(), f"--weights={MAIA}", "--backend=eigen", "--threads=1", *args],
                         stderr=subprocess.DEVNULL)
        self.send("uci")
        self.until("uciok")
        self.send("setoption name MultiPV value 500")

    def wait(self, prefix: str, timeout: float = 30.0) -> list[str]:
        _, line, before = self.until(prefix, timeout)
        return before + [line]

    def go(self, fen: str, moves: list[str], nodes: int) -> tuple[str, int, set[str]]:
        """(bestmove, tbhits of the last info line, the root moves lc0 considered)."""
        self.send("ucinewgame")
        self.send(f"position fen {fen}" + (" moves " + " ".join(moves) if moves else ""))
        self.send(f"go nodes {nodes}")
        lines = self.wait("bestmove")
        info = [line for line in lines if line.startswith("info") and " tbhits " in line]
        tbhits = int(info[-1].split(" tbhits ")[1].split()[0]) if info else 0
        # The lines of the last report: after the final search step, one per root move.
        final = [line for line in info if " multipv " in line]
        last = [line for line in final if line.split(" nodes ")[1].split()[0] == final[-1].split(" nodes ")[1].split()[0]]
        considered = {line.split(" pv ")[1].split()[0] for line in last}
        return lines[-1].split()[1], tbhits, considered


# (fen, moves, nodes, the one move lc0 must play or None); the root is in the tables. The
# comments give our set's size against the legal moves.
ORACLE = [
    ("8/2K5/4B3/3N4/8/8/4k3/8 b - - 0 1", [], 1, "e2d3"),           # lost KBN-K: longest defence
    ("8/5K2/8/8/6k1/8/Q7/8 w - - 0 1", ["a2a1", "g4g5", "a1a2", "g5g4"], 1, "a2f2"),  # repetition
    ("8/5K2/8/8/6k1/8/Q7/8 w - - 95 1", [], 1, "a2f2"),             # counter 95: quickest win
    ("8/8/2K5/8/k3P3/8/8/8 w - - 97 1", [], 1, "e4e5"),             # counter 97: the pawn push
    ("8/8/8/8/3k4/8/3K4/R6r b - - 0 1", [], 1, "h1a1"),             # KRvKR: the capture wins
    ("7k/8/8/6K1/1R1b4/8/8/8 w - - 0 1", [], 50, None),             # KRvKB won: 7 of 17
    ("r7/8/3k4/8/8/3K4/8/7R w - - 0 1", [], 50, None),              # KRvKR drawn: 19 of 22
    ("8/8/8/8/8/3k4/8/R3K3 b - - 80 1", [], 1, None),               # lost, counter 80: 2 of 6
    ("r2Q4/8/8/8/6k1/8/8/2K5 w - - 0 1", [], 50, None),             # KQvKR: 12 of 26
    ("8/8/8/3PK3/7k/8/3p4/8 b - - 0 1", [], 1, None),               # KPvKP: 6 of 9
    # The start's en-passant flag (kept by lc0 from the FEN) makes the shuffle no repetition: 25
    # of 25; without it the wins are ranked by DTZ: 7 of 25.
    ("4k3/q7/8/8/4P3/8/8/4K3 b - e3 0 1", ["e8d8", "e1d1", "d8e8", "d1e1"], 1, None),
    ("4k3/q7/8/8/4P3/8/8/4K3 b - - 0 1", ["e8d8", "e1d1", "d8e8", "d1e1"], 1, None),
]
ORACLE_FAST = [
    ("8/5K2/8/8/6k1/8/Q7/8 w - - 0 1", [], 1, "a2f2"),              # 1 of 27 wins
    ("5R2/3k4/8/8/8/8/5K2/8 w - - 0 1", [], 1, "f8f6"),             # 1 of 17
    ("8/8/4K3/8/8/N2B4/8/2k5 w - - 0 1", [], 1, "a3c4"),            # 1 of 21
    ("7Q/2K5/8/8/8/8/2k5/8 w - - 0 1", [], 50, "h8d4"),             # 1 of 27
    ("k7/8/1K6/8/8/8/8/6Q1 w - - 0 1", [], 1, "g1g8"),              # the mate, 1 of 25
]
NOT_PROBED = [
    "8/8/8/8/8/3k4/8/R3K3 w Q - 0 1",  # castling rights
    "8/8/8/4k3/8/8/7r/KQR5 w - - 0 1",  # five pieces
    "8/8/8/8/8/3k4/8/R2K4 w Q - 0 1",  # a castling right lc0 keeps from the FEN, king off e1
]


@pytest.fixture(scope="module")
def lc0_bin():
    require_lc0()
    return require_shared(MAIA)


def _check_oracle(engine, tables, cases, fast) -> int:
    for fen, moves, nodes, only in cases:
        board = chess.Board(fen)
        for uci in moves:
            board.push_uci(uci)
        ours, dtz = tables.root_moves(board, fast)
        assert dtz is True and ours, fen
        ours = uci_set(ours)
        assert (only is None) == (len(ours) > 1) and (only is None or ours == {only}), (fen, ours)
        best, tbhits, considered = engine.go(fen, moves, nodes)
        assert considered == ours, (fen, moves, sorted(considered), sorted(ours))
        assert best in ours, (fen, best, sorted(ours))
        assert tbhits == 1, fen  # the root probe; with the root in DTZ lc0 probes no leaf
    return len(cases)


def test_lc0_root_filter(lc0_bin, tb_dir, tables):
    engine = Lc0(f"--syzygy-paths={tb_dir}")
    try:
        assert _check_oracle(engine, tables, ORACLE, fast=False) == 12
        for fen in NOT_PROBED:
            board = chess.Board(fen)
            assert tables.root_moves(board, False) == (None, False)
            best, tbhits, considered = engine.go(fen, [], 1)
            assert tbhits == 0 and considered == uci_set(board.legal_moves), fen  # lc0 did not probe
    finally:
        engine.close()


def test_lc0_root_filter_fast_play(lc0_bin, tb_dir, tables):
    engine = Lc0(f"--syzygy-paths={tb_dir}", "--syzygy-fast-play")
    try:
        assert _check_oracle(engine, tables, ORACLE_FAST, fast=True) == 5
    finally:
        engine.close()


@pytest.mark.parametrize("fast", [False, True], ids=["normal", "fast_play"])
def test_lc0_root_filter_random(lc0_bin, tb_dir, tables, fast):
    """Random 3-4-piece roots (counters up to 99): lc0's filtered set is exactly ours."""
    engine = Lc0(f"--syzygy-paths={tb_dir}", *(["--syzygy-fast-play"] if fast else []))
    try:
        for material in MATERIALS:
            for board in random_positions(material, 4, seed=len(material) * 7 + int(fast), clocks=(0, 40, 80, 90, 96, 99)):
                ours, dtz = tables.root_moves(board, fast)
                best, tbhits, considered = engine.go(board.fen(), [], 1)
                assert dtz and considered == uci_set(ours) and tbhits == 1, board.fen()
    finally:
        engine.close()


def test_lc0_wdl_fallback(lc0_bin, tb_dir, tmp_path):
    wdl_only = tmp_path / "wdl"
    wdl_only.mkdir()
    for f in tb_dir.glob("*.rtbw"):
        (wdl_only / f.name).symlink_to(f)
    engine = Lc0(f"--syzygy-paths={wdl_only}")
    try:
        with Tablebases.open(str(wdl_only)) as tb:
            for fen in ("r7/8/3k4/8/8/3K4/8/7R w - - 0 1", "7k/8/8/6K1/1R1b4/8/8/8 w - - 0 1",
                        "8/5K2/8/8/6k1/8/Q7/8 w - - 0 1"):
                ours, dtz = tb.root_moves(chess.Board(fen), False)
                assert dtz is False
                best, tbhits, considered = engine.go(fen, [], 1)
                assert considered == uci_set(ours) and best in considered and tbhits == 1, (fen, best)
            # The root is not in DTZ, so lc0 probes leaves after captures too (more than one hit).
            assert engine.go("r7/8/3k4/8/8/3K4/8/7R w - - 0 1", [], 50)[1] > 1
    finally:
        engine.close()


# Five-piece roots (not probed, so lc0's root is not "in DTZ") where a capture reaches a 4-piece
# tablebase leaf; the 50-move counter is 5, so only capturing children are probed. Our value of
# that leaf (side to move after the capture): +1, 0 or -1.
LEAF_ORACLE = [
    ("2K5/8/8/7r/8/4k2R/4Q3/8 b - - 5 1", {"e3e2": WIN}),
    ("8/8/5n2/5K2/1P6/3k4/2B5/8 b - - 5 1", {"d3c2": WIN}),
    ("8/8/8/4K2Q/1R6/7r/8/2k5 b - - 5 1", {"h3h5": DRAW}),
    ("8/R3K3/8/7k/8/6Q1/6r1/8 b - - 5 1", {"g2g3": DRAW}),
    ("8/6K1/8/3k4/5R2/1N6/b7/8 b - - 5 1", {"a2b3": DRAW}),
    ("1N6/1k6/8/8/K7/6R1/8/4b3 b - - 5 1", {"e1g3": DRAW}),
    ("K7/8/k7/8/8/7n/5PB1/8 b - - 5 1", {"h3f2": DRAW}),
    ("4Q3/8/8/8/2k1r3/4R3/8/3K4 w - - 5 1", {"e8e4": LOSS}),
    ("2K5/8/8/8/6k1/6rQ/8/4n3 b - - 5 1", {"g3h3": LOSS, "g4h3": LOSS}),
    ("1Q3r2/8/8/1p6/8/8/2K5/7k w - - 5 1", {"b8b5": LOSS, "b8f8": LOSS}),
    ("3K4/8/8/8/3k4/8/2P5/5rR1 b - - 5 1", {"f1g1": LOSS}),
    ("1N6/k7/2b5/8/8/1R2K3/8/8 w - - 5 1", {"b8c6": LOSS}),
]


def test_lc0_leaf_terminals(lc0_bin, tb_dir, tables):
    """Every child lc0 visits that we would probe is a tablebase terminal in lc0 (VerboseMoveStats
    `(T)`) with exactly our value; the listed captures are among them."""
    engine = Lc0(f"--syzygy-paths={tb_dir}")
    engine.send("setoption name VerboseMoveStats value true")
    try:
        checked = 0
        for fen, listed in LEAF_ORACLE:
            board = chess.Board(fen)
            assert tables.root_moves(board, False) == (None, False)
            for uci, value in listed.items():
                child = board.copy()
                child.push_uci(uci)
                assert tables.probe_leaf(child) == value, (fen, uci)
            engine.send("ucinewgame")
            engine.send(f"position fen {fen}")
            engine.send("go nodes 300")
            seen = set()
            for line in engine.wait("bestmove"):
                fields = line.split()
                if not line.startswith("info string ") or fields[2] == "node":
                    continue
                visits = int(line.split(" N:")[1].split()[0])
                if visits == 0:
                    continue
                child = board.copy()
                child.push_uci(fields[2])
                ours = tables.probe_leaf(child)
                if ours is None:
                    continue  # lc0 may still prove it (mate, two-fold), but not from the tables
                wl = float(line.split("(WL:")[1].split(")")[0])
                assert line.rstrip().endswith("(T)") and wl == -ours, (fen, line)
                seen.add(fields[2])
            assert set(listed) <= seen, (fen, sorted(seen))
            checked += len(seen)
        assert checked >= 15
    finally:
        engine.close()
