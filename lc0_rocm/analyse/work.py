"""What a worker does to a game: parse it, select and encode its positions (`prepare`), and turn the
network's outputs for them into records (`raw_records`).

Both run in worker processes when the pipeline has any (everything here is picklable and imports
no backend), else on the pipeline's reader and writer threads. The history the network sees for a
position is the game's moves up to it, as `lc0-rocm eval --fen START --moves …` (and the API given a
board with that move stack) sees it; the numbers are the API's (`Evaluator.evaluate`): policy =
softmax at temperature 1 with exact exp over the legal moves, sorted high to low (ties by UCI).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Optional

import chess
import chess.pgn
import numpy as np

from ..errors import PositionError, one_line
from .reader import RawGame
from .records import Thresholds, after_move, game_end, judge_game, record


@dataclass(frozen=True)
class WorkConfig:
    """What the workers need to know (picklable)."""

    mode: str = "raw"  # "raw" or "search"
    selection: object = None  # reader.Selection
    input_format: int = 1  # the net's input format (encoding)
    top: int = 5  # policy moves per record (0: all)


@dataclass(frozen=True)
class FinishConfig:
    """How records become output (picklable): which texts, thresholds, plots."""

    mode: str = "raw"
    top: int = 5
    want: frozenset = frozenset({"jsonl"})
    thresholds: Thresholds = Thresholds()
    annotator: str = "lc0-rocm"
    plot_dir: Optional[str] = None
    keep_records: bool = False
    compiled: bool = True  # raw records' policies from compiled code (False: numpy per record, the tests' truth)


@dataclass
class GameTask:
    """One parsed game and what the backend has to evaluate for it."""

    number: int
    source: str
    line: int
    kind: str
    error: Optional[str] = None
    headers: list = field(default_factory=list)  # [(tag, value)] as in the input (PGN)
    start_fen: Optional[str] = None  # None: the standard start position
    moves: list = field(default_factory=list)  # UCI
    chess960: bool = False
    plies: list = field(default_factory=list)  # the record plies (1-based)
    fens: list = field(default_factory=list)  # per record
    white: list = field(default_factory=list)  # per record: White to move
    sans: list = field(default_factory=list)  # per record: SAN of the played move (None: none)
    final_score: Optional[float] = None  # expected score of the last mover when the game's end is decided
    # raw mode: rows to evaluate, in order; records read rows rec_row[i] (and after_row[i]: the position
    # after their move, -1 when there is none or the game ended there)
    planes: object = None  # PackedPlanes of the rows (dropped once they are in batches)
    n_rows: int = 0
    rec_row: list = field(default_factory=list)
    after_row: list = field(default_factory=list)
    # the legal moves of all records, flat: record i's are entries rec_start[i]:rec_start[i + 1]
    rec_start: object = None  # int32 [records + 1]
    codes: object = None  # int32 move codes
    gather_row: object = None  # int32: the row whose policy holds the entry (its record's row)
    gather_col: object = None  # int32: its policy index (the row's transform)


@dataclass
class RowOutputs:
    """The backend's outputs for one game's rows: q/wdl/mlh per row, and the legal moves' logits of
    all records, flat (the task's `rec_start` order)."""

    q: np.ndarray
    wdl: Optional[np.ndarray]
    mlh: Optional[np.ndarray]
    logits: np.ndarray  # float32, one per legal-move entry of the task


# ------------------------------------------------------------------------------------------------
# parsing


def parse_game(raw: RawGame):
    """(board at the start, [chess.Move], headers, error or None) of a RawGame.

    PGN goes through python-chess's reader (blank lines dropped: the reader already found where
    the game ends) with `_Mainline` as its visitor: the main line's moves only (variations are skipped unread) and nothing after the first error, which makes the game
    a bad one (reported and skipped). Any other exception of the reader on damaged text is that
    game's error too: one game never stops a run."""
    if raw.kind == "fen":
        return _counters_checked(*_parse_fen_line(raw.text))
    if raw.error is not None:
        return None, [], [], raw.error
    text = "".join(x for x in raw.text.splitlines(True) if x.strip())  # python-chess ends a game at a blank line
    try:
        game = chess.pgn.read_game(io.StringIO(text), Visitor=_Mainline)
    except Exception as e:  # noqa: BLE001 - python-chess's reader on damaged text
        return None, [], [], f"unreadable PGN ({type(e).__name__} in python-chess's reader: {one_line(e)})"
    if game is None:
        return None, [], [], "no game found"
    headers = list(game.headers.items())
    if game.errors:
        return None, [], headers, _describe_error(game.errors[0], raw)
    if not game.moves and not raw.text.lstrip().startswith("["):  # python-chess skips what it cannot read
        return None, [], headers, "no PGN tags or moves found"
    board = game.board
    if board is None:
        return None, [], headers, "no start position"
    if type(board) is not chess.Board:
        return None, [], headers, f"variant {game.headers.get('Variant', '?')!r} is not supported"
    status = board.status()
    if status != chess.STATUS_VALID:
        return None, [], headers, f"illegal start position {board.fen()!r}"
    return _counters_checked(board, game.moves, headers, None)


def _counters_checked(board, moves, headers, error):
    """parse_game's answer, with the error of counters the search cannot hold (a start position's
    halfmove clock or fullmove number past encoding.position's limits)."""
    from ..encoding.position import check_counters

    if board is not None and error is None:
        try:
            check_counters(board, len(moves))
        except PositionError as e:
            return None, [], headers, one_line(e)
    return board, moves, headers, error


@dataclass
class _Parsed:
    headers: object
    board: Optional[chess.Board] = None
    moves: list = field(default_factory=list)
    errors: list = field(default_factory=list)


class _Mainline(chess.pgn.BaseVisitor):
    """python-chess visitor that keeps the tags, the start board and the main line's moves; it skips
    variations unread and ignores everything after the first error (python-chess's reader goes on
    after an illegal move, and its `GameBuilder` can then pop the main line off its stack on a
    stray `)` and fail with an IndexError on the next comment)."""

    def begin_game(self):
        self.game = _Parsed(chess.pgn.Headers({}))

    def begin_headers(self):
        return self.game.headers

    def visit_header(self, tagname: str, tagvalue: str) -> None:
        self.game.headers[tagname] = tagvalue

    def visit_board(self, board: chess.Board) -> None:
        if self.game.board is None:
            self.game.board = board.copy(stack=False)

    def begin_variation(self):
        return chess.pgn.SKIP

    def begin_parse_san(self, board: chess.Board, san: str):
        return chess.pgn.SKIP if self.game.errors else None

    def visit_move(self, board: chess.Board, move: chess.Move) -> None:
        if not self.game.errors:
            self.game.moves.append(move)

    def handle_error(self, error: Exception) -> None:
        self.game.errors.append(error)

    def result(self) -> _Parsed:
        return self.game


def _parse_fen_line(text: str):
    try:
        board = chess.Board(text)
    except ValueError:
        try:
            board, _ = chess.Board.from_epd(text)
        except ValueError as e:
            return None, [], [], f"not a FEN or EPD position: {one_line(e)}"
    if board.status() != chess.STATUS_VALID:
        return None, [], [], f"illegal position {board.fen()!r}"
    return board, [], [], None


def _describe_error(err: Exception, raw: RawGame):
    """(input line, message) of a game's first error: the line of the token it names when found."""
    msg = one_line(err)
    line = raw.line
    m = re.search(r"san: '([^']+)'", msg) or re.search(r"'([^' ]+)'", msg)
    if m:
        token = m.group(1)
        in_moves = False
        for k, text in enumerate(raw.text.splitlines()):
            if not text.lstrip().startswith("["):
                in_moves = True
            if in_moves and re.search(r"(^|[\s.])" + re.escape(token) + r"($|[\s!?+#])", text):
                line = raw.line + k
                break
    return line, msg


# ------------------------------------------------------------------------------------------------
# prepare


def move_code(m: chess.Move) -> int:
    return m.from_square | (m.to_square << 6) | ((m.promotion or 0) << 12)


def code_uci(code: int) -> str:
    return chess.Move(code & 63, (code >> 6) & 63, (code >> 12) or None).uci()


def prepare(raw: RawGame, cfg: WorkConfig, compiled: bool = True) -> GameTask:
    """Parse a game, choose its record plies and, in raw mode, encode the rows to evaluate: the
    positions' replay, legal moves, FEN, SAN and planes in compiled code (`game_arrays`) for standard
    chess, python-chess and the general encoder otherwise (and with `compiled=False`: the truth the
    tests compare the compiled path with)."""
    task = GameTask(raw.number, raw.source, raw.line, raw.kind)
    board, moves, headers, error = parse_game(raw)
    task.headers = headers
    if error is not None:
        if isinstance(error, tuple):
            task.line, error = error
        task.error = error
        return task
    task.chess960 = board.chess960
    task.moves = [m.uci() for m in moves]
    if raw.kind == "fen":
        plies = [1]
    else:
        plies = cfg.selection.plies(len(moves), board.turn == chess.WHITE)
    task.plies = plies
    if compiled and not board.chess960 and _prepare_arrays(task, board, moves, cfg):
        return task
    _prepare_python(task, board, moves, cfg)
    return task


def _game_end_score(board: chess.Board, moves: list) -> Optional[float]:
    """The last mover's expected score when the game's end is decided after its moves (python-chess's
    `outcome`), else None."""
    end = board.copy(stack=False)
    for m in moves:
        end.push(m)
    outcome = end.outcome(claim_draw=False)
    if outcome is None:
        return None
    return 0.5 if outcome.winner is None else 1.0


def _rows_wanted(plies: list, n: int, final_score, raw_mode: bool) -> list:
    """The record plies and, in raw mode, the plies after their moves (the position after the move
    is evaluated unless the game ended there), sorted."""
    rows = set(plies)
    if raw_mode:
        rows |= {p + 1 for p in plies if p <= n and not (p == n and final_score is not None)}
    return sorted(rows)


def _prepare_python(task: GameTask, board: chess.Board, moves: list, cfg: WorkConfig) -> None:
    from ..encoding.history import History

    task.start_fen = None if board.fen() == chess.STARTING_FEN else board.fen()
    plies = task.plies
    n = len(moves)
    if n and plies and plies[-1] == n:  # the last move is analysed: is the game decided after it?
        task.final_score = _game_end_score(board, moves)
    raw_mode = cfg.mode == "raw"
    want = set(plies)
    rows_wanted = set(_rows_wanted(plies, n, task.final_score, raw_mode))
    histories, row_of = [], {}
    b = board.copy(stack=False)
    h = History.from_board(b)
    for p in range(1, max(rows_wanted, default=0) + 1):
        if p in want:
            task.fens.append(b.fen())
            task.white.append(b.turn == chess.WHITE)
            task.sans.append(b.san(moves[p - 1]) if p <= n else None)
        if p in rows_wanted:
            row_of[p] = len(histories)
            histories.append(h)
        if p <= n:
            after = b.copy(stack=False)
            after.push(moves[p - 1])
            h = h.push(moves[p - 1], after)
            b = after
    if not raw_mode:
        return
    from ..encoding.planes import encode_positions

    task.planes = encode_positions(histories, cfg.input_format)
    task.n_rows = len(task.planes)
    codes, cols, starts, rows = [], [], [0], []
    for p in plies:
        row = row_of[p]
        task.rec_row.append(row)
        task.after_row.append(row_of.get(p + 1, -1) if p <= n else -1)
        code, idx = legal_codes(histories[row].last, task.chess960, int(task.planes.transforms[row]))
        codes.append(code)
        cols.append(idx)
        rows.append(np.full(len(idx), row, dtype=np.int32))
        starts.append(starts[-1] + len(idx))
    task.rec_start = np.array(starts, dtype=np.int32)
    task.codes = np.concatenate(codes).astype(np.int32) if codes else np.zeros(0, np.int32)
    task.gather_col = np.concatenate(cols).astype(np.int32) if cols else np.zeros(0, np.int32)
    task.gather_row = np.concatenate(rows) if rows else np.zeros(0, np.int32)


_START = chess.Board()


_START_BBS = np.array([k & c for c in (_START.occupied_co[chess.WHITE], _START.occupied_co[chess.BLACK])
                       for k in (_START.pawns, _START.knights, _START.bishops, _START.rooks, _START.queens,
                                 _START.kings)], dtype=np.uint64)  # `game_arrays.GameArrays` order
_NO_DRAW_BELOW_RULE50 = 16  # fivefold repetition needs 16 reversible plies, the 75-move rule 150


def _prepare_arrays(task: GameTask, board: chess.Board, moves: list, cfg: WorkConfig) -> bool:
    """`_prepare_python` from the compiled replay (`game_arrays.GameArrays`); False (nothing set)
    when a move is not found among the compiled legal moves (never for a legal game): the python-chess
    path then takes the game. The counters are within the arrays' range: `parse_game` checked them
    (`encoding.position.check_counters`)."""
    from .game_arrays import GameArrays

    ep0 = -1
    if board.ep_square is not None and not board.status() & chess.STATUS_INVALID_EP_SQUARE:
        ep0 = board.ep_square & 7  # lc0 takes a (valid) FEN en-passant field as the flag (History.from_board)
    ga = GameArrays(board, moves, ep0)
    if ga.bad >= 0:
        return False
    start = ga.fen(0)
    task.start_fen = None if start == chess.STARTING_FEN else start
    plies = task.plies
    n = len(moves)
    if n and plies and plies[-1] == n:
        score = ga.mated_or_stalemated(n)
        if score is None:
            b = ga.bbs[n]
            heavy = b[0] | b[3] | b[4] | b[6] | b[9] | b[10]  # pawns, rooks, queens: material enough
            if ga.rule50[n] >= _NO_DRAW_BELOW_RULE50 or not heavy:  # a draw by rule may have ended it
                score = _game_end_score(board, moves)
        task.final_score = score
    raw_mode = cfg.mode == "raw"
    for p in plies:
        task.fens.append(ga.fen(p - 1))
        task.white.append(not ga.black[p - 1])
        task.sans.append(ga.san(p - 1) if p <= n else None)
    if not raw_mode:
        return True
    wanted = _rows_wanted(plies, n, task.final_score, raw_mode)
    row_of = {p: k for k, p in enumerate(wanted)}
    rows = np.array(wanted, dtype=np.int64) - 1
    first_is_startpos = (board.turn == chess.WHITE and ep0 < 0 and ga.castling[0] == _START.castling_rights
                         and board.occupied == _START.occupied and np.array_equal(ga.bbs[0], _START_BBS))
    masks, values, transforms = ga.encode(rows, first_is_startpos, cfg.input_format)
    from ..encoding.packed import PackedPlanes

    task.planes = PackedPlanes(masks, values, transforms)
    task.n_rows = len(rows)
    rec = np.array([row_of[p] for p in plies], dtype=np.int64)
    task.rec_row = rec.tolist()
    task.after_row = [row_of.get(p + 1, -1) if p <= n else -1 for p in plies]
    starts, codes, cols = ga.legal_entries(rows[rec] if len(rec) else np.zeros(0, np.int64), transforms[rec])
    task.rec_start = starts
    task.codes = codes
    task.gather_col = cols
    task.gather_row = np.repeat(rec.astype(np.int32), np.diff(starts))
    return True


_PROMO_OF_SLOT = np.array([0, chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT, 0], dtype=np.int32)
_MOVES = np.zeros(256, dtype=np.int16)  # legal_moves' output buffer (one per worker process)


def legal_codes(pos, chess960: bool, transform: int) -> tuple[np.ndarray, np.ndarray]:
    """(move codes as `move_code` gives them, policy indices) of the legal moves of a position
    (`encoding.history.PositionState`), in python-chess's order: the search's compiled move
    generator (`board.rules.legal_moves`) and its policy-index table (`board.move_codes`)."""
    from .game_arrays import index_tables, legal_moves  # analyse's one door to the compiled search

    bbs = np.array(pos.bbs, dtype=np.uint64)
    black = bool(pos.black_to_move)
    n, _ = legal_moves(bbs, black, np.uint64(pos.castling), pos.ep_file, chess960, _MOVES)
    c = _MOVES[:n].astype(np.int32)
    idx = index_tables((black * 8 + transform,))[black * 8 + transform, c]
    slot, ft = c >> 12, c & 4095  # ft = from * 64 + to; slot 5 (standard castling) is e1g1 as python-chess has it
    return (ft >> 6) | ((ft & 63) << 6) | (_PROMO_OF_SLOT[slot] << 12), idx


# ------------------------------------------------------------------------------------------------
# raw records


def raw_records(task: GameTask, out: RowOutputs, top: int, compiled: bool = True) -> list[dict]:
    """The records of a game from its rows' outputs (keys as `records.keys("raw")`; `loss`, `nag`
    and `blunder` are filled by `records.judge_game`; `_after` keeps the value after the move, White's
    view, for the annotated PGN). The policies, top moves and played ranks of all records come from one
    compiled call (`game_arrays.policies`); with `compiled=False`, from numpy per record."""
    if not compiled:
        return _raw_records_python(task, out, top)
    from .game_arrays import policies, uci_codes, uci_names

    names, code_of = uci_names(), uci_codes()
    moves = task.moves
    played = np.array([code_of[moves[p - 1]] if p <= len(moves) else -1 for p in task.plies], dtype=np.int64)
    probs, order, k, played_at, rank = policies(task.rec_start, task.codes, out.logits, played, top)
    probs, order, codes = probs.tolist(), order.tolist(), task.codes.tolist()
    k, played_at, rank = k.tolist(), played_at.tolist(), rank.tolist()
    qs = out.q.tolist()
    wdls = out.wdl.tolist() if out.wdl is not None else None
    mlhs = out.mlh.tolist() if out.mlh is not None else None
    recs = []
    for i in range(len(task.plies)):
        top_entries = order[i][:k[i]]
        policy = {names[codes[j]]: probs[j] for j in top_entries}
        best = names[codes[top_entries[0]]] if top_entries else None
        hit = played_at[i]
        recs.append(_raw_record(task, i, qs, wdls, mlhs, best, policy, probs[hit] if hit >= 0 else None,
                                rank[i] if hit >= 0 else None))
    return recs


def _raw_records_python(task: GameTask, out: RowOutputs, top: int) -> list[dict]:
    from ..encoding.legal_policy import softmax_logits

    qs = [float(x) for x in out.q]
    wdls = [[float(x) for x in w] for w in out.wdl] if out.wdl is not None else None
    mlhs = [float(x) for x in out.mlh] if out.mlh is not None else None
    recs = []
    for i, ply in enumerate(task.plies):
        played = task.moves[ply - 1] if ply <= len(task.moves) else None
        a, b = task.rec_start[i], task.rec_start[i + 1]
        probs = softmax_logits(out.logits[a:b], 1.0, use_fast_exp=False)
        policy, best, played_p, played_rank = _policy(task.codes[a:b], probs, played, top)
        recs.append(_raw_record(task, i, qs, wdls, mlhs, best, policy, played_p, played_rank))
    return recs


def _raw_record(task: GameTask, i: int, qs: list, wdls: Optional[list], mlhs: Optional[list], best, policy,
                played_p, played_rank) -> dict:
    """Record i of a game (`records.record`) from its rows' values (`qs`, `wdls`, `mlhs`: per row, as
    Python floats) and its policy's top moves, best move and played move's probability and rank."""
    ply = task.plies[i]
    row = task.rec_row[i]
    white = task.white[i]
    played = task.moves[ply - 1] if ply <= len(task.moves) else None
    after = (None, None)
    a = task.after_row[i]
    if a >= 0:  # the position after the move has the other side to move: the mover's view flips its values
        after = after_move(white, -qs[a], wdls[a][::-1] if wdls is not None else None)
    elif played is not None and ply == len(task.moves) and task.final_score is not None:
        after = game_end(task.final_score)
    return record(task.number, ply, task.fens[i], white, played, task.sans[i], best, qs[row],
                  list(wdls[row]) if wdls is not None else None, after, policy=policy,
                  mlh=mlhs[row] if mlhs is not None else None, played_p=played_p, played_rank=played_rank)


def _policy(codes: np.ndarray, probs: np.ndarray, played: Optional[str], top: int):
    """({uci: p} of the top moves, best uci, played p, played rank) in the API's order: high to low,
    ties by UCI string."""
    n = len(codes)
    if n == 0:
        return {}, None, None, None
    k = n if top <= 0 or top >= n else top
    if k == n:
        cand = np.arange(n)
    else:
        kth = np.partition(probs, n - k)[n - k]
        cand = np.nonzero(probs >= kth)[0]
    ranked = sorted(((float(probs[j]), code_uci(int(codes[j]))) for j in cand), key=lambda t: (-t[0], t[1]))[:k]
    policy = {u: p for p, u in ranked}
    played_p = played_rank = None
    if played is not None:
        hit = np.nonzero(codes == move_code(chess.Move.from_uci(played)))[0]
        if len(hit):
            pp = probs[hit[0]]
            ties = [code_uci(int(codes[t])) for t in np.nonzero(probs == pp)[0]]
            played_p = float(pp)
            played_rank = 1 + int(np.count_nonzero(probs > pp)) + sum(u < played for u in ties)
    return policy, ranked[0][1], played_p, played_rank


# ------------------------------------------------------------------------------------------------
# finish: records → judged, formatted, plotted


def finish(task: GameTask, out, cfg: FinishConfig):
    """A game's `formats.GameOutput`: `out` is its RowOutputs (raw mode) or its records (search mode)."""
    from .formats import game_output

    if task.error is not None:
        return game_output(task, [], cfg.mode, cfg.want)
    records = raw_records(task, out, cfg.top, cfg.compiled) if isinstance(out, RowOutputs) else out
    judge_game(records, cfg.thresholds, cfg.mode)
    result = game_output(task, records, cfg.mode, cfg.want, cfg.annotator, cfg.keep_records)
    if cfg.plot_dir and records and task.kind == "pgn":
        from .plot import plot_game

        plot_game(task, records, cfg.plot_dir)
    return result
