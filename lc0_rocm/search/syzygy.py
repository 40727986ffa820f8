"""Syzygy endgame tablebases for the search (lc0's SyzygyPath and SyzygyFastPlay).

All probing is python-chess's (`chess.syzygy`); this module decides *when* to probe and what to
do with the answer, following lc0 0.32:

* At the root (lc0 `src/search/classic/search.cc: MakeRootMoveFilter`), a position without
  castling rights and with at most `max_pieces` pieces restricts the root moves: first by DTZ
  (`src/syzygy/syzygy.cc: SyzygyTablebase::root_probe`), and when a DTZ probe fails (DTZ table
  missing) by WDL (`SyzygyTablebase::root_probe_wdl`). See `Tablebases.root_moves`.
* At a new non-root node (`SearchWorker::ExtendNode`), a position right after a capture or pawn
  move, without castling rights and with at most `max_pieces` pieces, becomes a tablebase
  terminal from its WDL value, unless the root was resolved by DTZ. See `Tablebases.probe_leaf`.

`hits` counts successful probes the way lc0's tbhits does: one per root filter, one per leaf.

"Castling rights" are python-chess's raw `castling_rights` bits (from the FEN, cleared by `push`),
not `clean_castling_rights()`: lc0 too keeps a FEN's right where the king has left its square
(and rejects a FEN whose right has no rook), and python-chess refuses to probe any set bit.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import chess
import chess.syzygy

from lc0_rocm.errors import TablebaseError

from .core.tree import DRAW, LOSS, WIN

__all__ = ["Tablebases", "TablebaseError", "repeated_since_zeroing", "WIN", "DRAW", "LOSS"]


# The DTZ a zeroing move (capture, pawn move) counts as, given the WDL of the position it leads to
# seen from the side that made it: index wdl + 2 for wdl in -2..2 (loss, blessed loss, draw,
# cursed win, win). Same table as lc0's kWdlToDtz / python-chess's WDL_TO_DTZ.
_ZEROING_DTZ = (-1, -101, 0, 101, 1)

# lc0's root_probe_wdl rank of each WDL value (index wdl + 2).
_WDL_RANK = (-1000, -899, 0, 899, 1000)

# A probe "fails" (lc0: ProbeState FAIL) when a table is missing (python-chess raises
# MissingTableError, a KeyError) or unreadable (OSError from python-chess's file checks).
_PROBE_FAILURES = (KeyError, OSError)


def _table_files(directory: str) -> tuple[list[Path], list[Path]]:
    """The WDL and DTZ files of `directory` whose names python-chess accepts as table names."""
    wdl, dtz = [], []
    for entry in sorted(os.listdir(directory)):
        stem, ext = os.path.splitext(entry)
        path = Path(directory) / entry
        if not chess.syzygy.is_tablename(stem) or not path.is_file():
            continue
        if ext == chess.Board.tbw_suffix:
            wdl.append(path)
        elif ext == chess.Board.tbz_suffix:
            dtz.append(path)
    return wdl, dtz


def _check_table(path: Path, magic: bytes) -> None:
    """A one-line TablebaseError for a file python-chess would refuse when it first maps it."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(4)
    except OSError as exc:
        raise TablebaseError(f"SyzygyPath: cannot read {path}: {exc.strerror}") from None
    if size % 64 != 16 or head != magic:
        raise TablebaseError(f"SyzygyPath: {path} is not a valid Syzygy table (bad size or header)")


def _pieces(board: chess.Board) -> int:
    return chess.popcount(board.occupied)


def _repetition_key(board: chess.Board, is_history_start: bool) -> tuple:
    """What lc0 compares when it looks for repetitions (ChessBoard ==): pieces, side to move,
    castling rights and the en-passant flag. lc0 sets that flag after a double pawn push only when
    an enemy pawn stands beside the pushed pawn (pseudo-legal capture), and from a FEN whenever the
    FEN names an en-passant square."""
    if board.ep_square is None:
        ep = None
    elif is_history_start or board.has_pseudo_legal_en_passant():
        ep = board.ep_square
    else:
        ep = None
    return (
        board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings,
        board.occupied_co[chess.WHITE], board.turn, board.castling_rights, ep,
    )


def repeated_since_zeroing(board: chess.Board) -> bool:
    """lc0's PositionHistory::DidRepeatSinceLastZeroingMove for `board` and its move stack: does
    any position since the last capture or pawn move (or since the start of the move stack, if
    none) occur twice, the current position included?"""
    walker = board.copy()
    keys = []
    while True:
        start = not walker.move_stack
        keys.append(_repetition_key(walker, start))
        if start or walker.halfmove_clock == 0:
            break
        walker.pop()
    return len(set(keys)) < len(keys)


class Tablebases:
    """Syzygy tables opened from an lc0 SyzygyPath value; see the module docstring."""

    def __init__(self, tablebase: chess.syzygy.Tablebase, max_pieces: int, directories: list[str]):
        self._tb = tablebase
        self.max_pieces = max_pieces  # lc0's max_cardinality: largest piece count of a WDL table
        self.directories = directories
        self.hits = 0  # lc0's tbhits
        self._lock = threading.Lock()

    @classmethod
    def open(cls, paths: str, skipped: list | None = None) -> Tablebases | None:
        """Open lc0's SyzygyPath value: directories separated by os.pathsep (empty entries are
        skipped). None for an empty value. When several directories hold the same table, the first
        one's file is used (lc0 looks in the listed order).

        Problems are TablebaseErrors (one line each): an entry that is not a directory or holds no
        table file (.rtbw/.rtbz), a damaged table file, and no WDL table found at all (lc0 needs the
        WDL table of a material to use it). Without `skipped` the first problem is raised. With a
        list, as lc0's SyzygyTablebase::init does, a bad directory or file is left out and its
        problem appended there, and the tables found are used; None (with "no WDL tables" appended)
        when none are left."""
        directories = [d for d in (paths or "").split(os.pathsep) if d]
        if not directories:
            return None

        def problem(message: str) -> None:
            if skipped is None:
                raise TablebaseError(message)
            skipped.append(TablebaseError(message))

        found: list[tuple[list[Path], list[Path]]] = []
        for directory in directories:
            if not os.path.isdir(directory):
                problem(f"SyzygyPath: {directory!r} is not a directory")
                continue
            try:
                wdl, dtz = _table_files(directory)
            except OSError as exc:
                problem(f"SyzygyPath: cannot list {directory!r}: {exc.strerror}")
                continue
            if not wdl and not dtz:
                problem(f"SyzygyPath: {directory!r} holds no Syzygy tables (*.rtbw, *.rtbz)")
                continue
            good: tuple[list[Path], list[Path]] = ([], [])
            for files, magic, kept in ((wdl, chess.Board.tbw_magic, good[0]), (dtz, chess.Board.tbz_magic, good[1])):
                for path in files:
                    try:
                        _check_table(path, magic)
                    except TablebaseError as exc:
                        problem(str(exc))
                        continue
                    kept.append(path)
            found.append(good)
        max_pieces = max((len(p.stem) - 1 for wdl, _ in found for p in wdl), default=0)
        if max_pieces <= 2:
            problem(f"SyzygyPath: no WDL tables (*.rtbw) in {paths!r}")
            return None
        tablebase = chess.syzygy.Tablebase(max_fds=None)
        # python-chess lets a later file of the same table replace an earlier one: add in reverse
        # so that the first directory listed wins.
        for wdl, dtz in reversed(found):
            for path in wdl + dtz:
                tablebase.add_file(str(path))
        return cls(tablebase, max_pieces, [d for d in directories if os.path.isdir(d)])

    def close(self) -> None:
        """Close the table files; afterwards nothing is probed (max_pieces becomes 0)."""
        self._tb.close()
        self.max_pieces = 0

    def __enter__(self) -> Tablebases:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _hit(self) -> None:
        with self._lock:
            self.hits += 1

    # ----------------------------------------------------------------------------------- root

    def root_moves(self, board: chess.Board, fast_play: bool = False) -> tuple[list[chess.Move] | None, bool]:
        """lc0's root move filter. Returns (moves, dtz):

        * (None, False): the root is not probed (castling rights, more than max_pieces pieces) or
          both the DTZ and the WDL ranking failed (a table missing). Search all moves.
        * (moves, True): DTZ ranking succeeded (`dtz_rank`); `moves` are the legal moves of the best
          rank, in python-chess's legal-move order. The caller must then skip leaf probes
          (lc0's root_is_in_dtz). `moves` is empty only for a root without legal moves, which,
          as in lc0, restricts nothing.
        * (moves, False): DTZ failed, WDL ranking succeeded (`wdl_rank`); same meaning.

        `fast_play` is lc0's SyzygyFastPlay; it acts exactly as a repetition since the last
        zeroing move does in lc0 (board.move_stack is searched for one): winning moves are then
        ranked by their DTZ, so only the quickest zeroing wins are kept. The 50-move counter is
        board.halfmove_clock. One hit is counted when either ranking succeeds."""
        if board.castling_rights or _pieces(board) > self.max_pieces:
            return None, False
        probe = board.copy(stack=False)
        moves = list(probe.legal_moves)
        rep = fast_play or repeated_since_zeroing(board)
        ranks = self._dtz_ranks(probe, moves, probe.halfmove_clock, rep)
        used_dtz = ranks is not None
        if ranks is None:
            ranks = self._wdl_ranks(probe, moves)
            if ranks is None:
                return None, False
        self._hit()
        best = max(ranks, default=-1000)
        return [m for m, r in zip(moves, ranks) if r == best], used_dtz

    def move_dtz(self, board: chess.Board, move: chess.Move) -> int:
        """The DTZ of `move` counted from `board` as lc0's root_probe computes it (positive: the
        mover wins, 0: draw, negative: the mover loses; |dtz| > 100: cursed win / blessed loss;
        1 for a mating move). Raises KeyError/OSError when a table is missing or unreadable."""
        zeroing = board.is_zeroing(move)
        board.push(move)
        try:
            if zeroing:
                dtz = _ZEROING_DTZ[2 - self._tb.probe_wdl(board)]
            else:
                dtz = -self._tb.probe_dtz(board)
                dtz += (dtz > 0) - (dtz < 0)
            if dtz == 2 and board.is_checkmate():
                dtz = 1
        finally:
            board.pop()
        return dtz

    @staticmethod
    def dtz_rank(dtz: int, cnt50: int, rep: bool) -> int:
        """lc0 root_probe's rank of a move of DTZ `dtz` from a root with 50-move counter `cnt50`:
        wins that surely beat the 50-move rule (and no repetition / fast play) rank 1000, other
        wins 1000 - (dtz + cnt50); draws 0; losses -1000, except those where a 50-move draw is in
        sight, which rank -1000 + (-dtz + cnt50)."""
        if dtz > 0:
            return 1000 if dtz + cnt50 <= 99 and not rep else 1000 - (dtz + cnt50)
        if dtz < 0:
            return -1000 if -2 * dtz + cnt50 < 100 else -1000 + (-dtz + cnt50)
        return 0

    def _dtz_ranks(self, board: chess.Board, moves: list[chess.Move], cnt50: int, rep: bool) -> list[int] | None:
        ranks = []
        for move in moves:
            try:
                dtz = self.move_dtz(board, move)
            except _PROBE_FAILURES:
                return None
            ranks.append(self.dtz_rank(dtz, cnt50, rep))
        return ranks

    def _wdl_ranks(self, board: chess.Board, moves: list[chess.Move]) -> list[int] | None:
        ranks = []
        for move in moves:
            board.push(move)
            try:
                wdl = -self._tb.probe_wdl(board)
            except _PROBE_FAILURES:
                return None
            finally:
                board.pop()
            ranks.append(_WDL_RANK[wdl + 2])
        return ranks

    # ----------------------------------------------------------------------------------- leaf

    def probe_leaf(self, board: chess.Board, root_in_dtz: bool = False) -> int | None:
        """lc0's tablebase terminal for a new non-root node: WIN (+1), DRAW (0) or LOSS (-1) for
        the side to move; cursed wins and blessed losses are DRAW. None (no probe, no hit) when
        `root_in_dtz` (the root filter used DTZ), board.halfmove_clock != 0, the position has more
        than max_pieces pieces or castling rights, or the probe fails. The caller has already
        handled what lc0 checks first: mate/stalemate, no mating material, the 50-move rule and
        repetitions. `board` is pushed/popped during the probe and restored."""
        if root_in_dtz or board.halfmove_clock != 0 or board.castling_rights or _pieces(board) > self.max_pieces:
            return None
        try:
            wdl = self._tb.probe_wdl(board)
        except _PROBE_FAILURES:
            return None
        self._hit()
        return WIN if wdl == 2 else LOSS if wdl == -2 else DRAW
