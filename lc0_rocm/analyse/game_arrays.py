"""A game as arrays, compiled: the replay of its moves, and each position's legal moves, FEN, SAN of
the move played there and input planes, in one numba call per game (`work.prepare`'s fast path).

python-chess reads the PGN text and gives the start board and the moves (`work.parse_game`); from
there everything per position is compiled code on numpy arrays, with the compiled board's move generator
and make-move (`board.rules`) and its encoder (`board.encode`), the search's own: this module is analyse's
one door to them. Each piece reproduces python-chess or the general encoder exactly, and tests/test_analyse_arrays.py
compares every game's task with the python-chess path's (`work.prepare_python`), which stays the truth:

* moves: each played move is found among the position's legal moves (python-chess's form: standard
  castling e1g1, promotion piece types), so the compiled replay takes python-chess's move exactly;
* FEN: `Board.fen()` (castling as `castling_xfen`, the en-passant square only when an en-passant
  capture is legal, half-move clock and move number);
* SAN: `Board.san()` (`_algebraic_without_suffix`: file/rank disambiguation among the legal moves of
  the same piece type to the same square, then `+` or `#` from the position after the move);
* planes: `board.encode.encode` on the game's positions chained by `parent`, with lc0's repetition
  counts (`encoding.history.PositionState._compute_repetitions`; `board.rules.repetitions`, the search's walk).

Standard chess only: a Chess960 game goes the python-chess way. The compiled code is cached on disk
under the key of this file's code and of what it imports (the compiled board among it: lc0_rocm/jit.py).
"""

from __future__ import annotations

import functools

import chess
import numpy as np

from ..jit import jit
from ..board.encode import encode
from ..board.move_codes import index_tables
from ..board.rules import legal_moves, make_move, msb, position_key, repetitions

MAX_MOVES = 256  # legal moves of one position, at most (218 in chess)
# the longest FEN of a position the search takes: 71 bytes of board (all ones and slashes), then
# " w KQkq e3 32766 2147483647" (encoding.position's HALFMOVE_CLOCK_MAX and FULLMOVE_NUMBER_MAX): 98
FEN_BYTES = 128
SAN_BYTES = 8
FILL_FEN_ONLY = 1  # `encoding.planes.FILL_CODES["fen_only"]`, the API's and `encode_positions`' default
_PROMO_OF_SLOT = np.array([0, chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT, 0], dtype=np.int32)
_PIECE_CHARS = np.frombuffer(b"PNBRQKpnbrqk", dtype=np.uint8).copy()
_PROMO_CHARS = np.frombuffer(b"?QRBN", dtype=np.uint8).copy()
_U1 = np.uint64(1)
_RANK1 = np.uint64(chess.BB_RANK_1)
_RANK8 = np.uint64(chess.BB_RANK_8)
_FILES = np.array(chess.BB_FILES, dtype=np.uint64)
_RANKS = np.array(chess.BB_RANKS, dtype=np.uint64)


@jit
def _pc_code(code):
    """python-chess's (from | to << 6 | promotion piece type << 12) of a search move code."""
    slot = code >> 12
    ft = code & 4095
    return (ft >> 6) | ((ft & 63) << 6) | (_PROMO_OF_SLOT[slot] << 12)


@jit
def _piece_at(bbs, sq):
    """0..11 (wP..bK) of the piece on sq, -1 if empty."""
    b = _U1 << np.uint64(sq)
    for k in range(12):
        if bbs[k] & b:
            return k
    return -1


@jit
def _put(out, n, ch):
    out[n] = ch
    return n + 1


@jit
def _put_int(out, n, v):
    """The decimal digits of v >= 0."""
    digits = 1
    x = v
    while x >= 10:
        x //= 10
        digits += 1
    for k in range(digits - 1, -1, -1):
        out[n + k] = 48 + v % 10
        v //= 10
    return n + digits


@jit
def _fen(bbs, black, castling, ep_square, rule50, fullmove, out):
    """python-chess's `Board.fen()` into out (uint8); returns its length."""
    n = 0
    for rank in range(7, -1, -1):
        empty = 0
        for file in range(8):
            k = _piece_at(bbs, rank * 8 + file)
            if k < 0:
                empty += 1
            else:
                if empty:
                    n = _put(out, n, 48 + empty)
                    empty = 0
                n = _put(out, n, _PIECE_CHARS[k])
        if empty:
            n = _put(out, n, 48 + empty)
        if rank:
            n = _put(out, n, 47)  # '/'
    n = _put(out, n, 32)
    n = _put(out, n, 98 if black else 119)  # b / w
    n = _put(out, n, 32)
    start = n
    cr = np.uint64(castling)
    for color in range(2):  # `castling_xfen`: White's then Black's, rooks from the highest square
        us = 6 * color
        K = bbs[us + 5]
        if not K:
            continue
        king_file = msb(K) & 7
        back = _RANK8 if color else _RANK1
        rooks = bbs[us + 3] & back
        rights = cr & back
        while rights:
            sq = msb(rights)
            rights ^= _U1 << np.uint64(sq)
            rook_file = sq & 7
            a_side = rook_file < king_file
            others = rooks & ~(_U1 << np.uint64(sq))
            same_side = False
            while others:
                o = msb(others)
                others ^= _U1 << np.uint64(o)
                if ((o & 7) < rook_file) == a_side:  # another rook further out on that side
                    same_side = True
            if same_side:
                ch = 97 + rook_file
            else:
                ch = 113 if a_side else 107  # q / k
            n = _put(out, n, ch - 32 if color == 0 else ch)
    if n == start:
        n = _put(out, n, 45)  # '-'
    n = _put(out, n, 32)
    if ep_square >= 0:
        n = _put(out, n, 97 + (ep_square & 7))
        n = _put(out, n, 49 + (ep_square >> 3))
    else:
        n = _put(out, n, 45)
    n = _put(out, n, 32)
    n = _put_int(out, n, rule50)
    n = _put(out, n, 32)
    n = _put_int(out, n, fullmove)
    return n


@jit
def _san(bbs, black, moves, n_moves, code, gives_check, mates, out):
    """python-chess's `Board.san()` of legal move `code` (search form) among the position's legal
    moves `moves[:n_moves]`; returns its length."""
    us = 6 if black else 0
    slot = code >> 12
    f = (code >> 6) & 63
    t = code & 63
    k = _piece_at(bbs, f)
    pt = k - us
    n = 0
    tb = _U1 << np.uint64(t)
    castle = slot == 5 or (pt == 5 and (bbs[us + 3] & tb) != 0)
    if castle:
        n = _put(out, n, 79)
        n = _put(out, n, 45)
        n = _put(out, n, 79)
        if (t & 7) < (f & 7):
            n = _put(out, n, 45)
            n = _put(out, n, 79)
    else:
        theirs = np.uint64(0)
        for j in range(6):
            theirs |= bbs[6 - us + j]
        capture = (theirs & tb) != 0 or (pt == 0 and (f & 7) != (t & 7))
        if pt != 0:
            n = _put(out, n, _PIECE_CHARS[pt])
            others = np.uint64(0)
            for j in range(n_moves):
                c = np.int64(moves[j])
                cf = (c >> 6) & 63
                if (c & 63) == t and cf != f and (c >> 12) != 5 and _piece_at(bbs, cf) == k:
                    others |= _U1 << np.uint64(cf)
            if others:
                row = False
                column = False
                if others & _RANKS[f >> 3]:
                    column = True
                if others & _FILES[f & 7]:
                    row = True
                else:
                    column = True
                if column:
                    n = _put(out, n, 97 + (f & 7))
                if row:
                    n = _put(out, n, 49 + (f >> 3))
        elif capture:
            n = _put(out, n, 97 + (f & 7))
        if capture:
            n = _put(out, n, 120)  # x
        n = _put(out, n, 97 + (t & 7))
        n = _put(out, n, 49 + (t >> 3))
        if slot >= 1 and slot <= 4:
            n = _put(out, n, 61)  # =
            n = _put(out, n, _PROMO_CHARS[slot])
    if mates:
        n = _put(out, n, 35)  # #
    elif gives_check:
        n = _put(out, n, 43)  # +
    return n


@jit
def replay(played, n, chess960, fullmove0, parent, key, bbs, castling, black, ep, rule50, reps, check, legal,
           legal_n, codes, fens, fen_n, sans, san_n):
    """Replay a game from position 0 (rows 0 of the arrays, filled by the caller) through its `n`
    moves `played` (python-chess codes): rows 1..n of bbs/castling/black/ep/rule50 (`make_move`), the
    position keys `key` and repetition counts `reps` (`board.rules.repetitions` along `parent`: the
    row before), each position's check flag and legal moves (`legal[i, :legal_n[i]]`),
    the played moves' search codes, every position's FEN and every move's SAN (bytes, lengths).
    Returns -1 when all moves were legal, else the ply index of the first one that is not."""
    key[0] = position_key(bbs[0], black[0], castling[0], np.int64(ep[0]))
    for i in range(n + 1):
        row = legal[i]
        cnt, chk = legal_moves(bbs[i], black[i] != 0, castling[i], np.int64(ep[i]), chess960, row)
        legal_n[i] = cnt
        check[i] = chk
        if i < n:
            want = played[i]
            code = -1
            for j in range(cnt):
                if _pc_code(np.int64(row[j])) == want:
                    code = np.int64(row[j])
                    break
            if code < 0:
                return i
            codes[i] = code
            cr, e, r = make_move(bbs[i], black[i] != 0, castling[i], np.int64(ep[i]), np.int64(rule50[i]), code,
                                 chess960, bbs[i + 1])
            castling[i + 1] = cr
            ep[i + 1] = e
            rule50[i + 1] = r
            black[i + 1] = 1 - black[i]
            key[i + 1] = position_key(bbs[i + 1], black[i + 1], castling[i + 1], np.int64(e))
            reps[i + 1] = repetitions(i + 1, parent, key, bbs, castling, black, ep, rule50, reps)  # lc0's, as the search's
    fullmove = fullmove0
    for i in range(n + 1):
        # python-chess's FEN shows the en-passant square only when a capture there is legal
        ep_sq = -1
        if ep[i] >= 0:
            target = (16 if black[i] else 40) + ep[i]
            for j in range(legal_n[i]):
                c = np.int64(legal[i, j])
                if (c & 63) == target and (c >> 12) == 0 and _piece_at(bbs[i], (c >> 6) & 63) == (6 if black[i] else 0):
                    ep_sq = target
                    break
        fen_n[i] = _fen(bbs[i], black[i] != 0, castling[i], ep_sq, np.int64(rule50[i]), fullmove, fens[i])
        if i < n:
            mates = check[i + 1] != 0 and legal_n[i + 1] == 0
            san_n[i] = _san(bbs[i], black[i] != 0, legal[i], legal_n[i], codes[i], check[i + 1] != 0, mates, sans[i])
        if black[i]:
            fullmove += 1
    return -1


@jit
def encode_rows(rows, parent, bbs, castling, black, ep, rule50, reps, first_is_startpos, input_format, masks,
                values, transforms):
    """The planes of positions `rows` (FillEmptyHistory fen_only) into masks/values/transforms."""
    for k in range(rows.shape[0]):
        transforms[k] = encode(rows[k], parent, bbs, castling, black, ep, rule50, reps, first_is_startpos,
                               input_format, FILL_FEN_ONLY, masks[k], values[k])


@jit
def legal_entries(rows, legal, legal_n, black, transforms, table, starts, codes, cols):
    """The legal moves of positions `rows` (row k encoded with transforms[k]), flat: python-chess
    codes and policy indices; `starts[k]` is row k's first entry."""
    at = 0
    for k in range(rows.shape[0]):
        starts[k] = at
        i = rows[k]
        combo = (8 if black[i] else 0) + transforms[k]
        for j in range(legal_n[i]):
            c = np.int64(legal[i, j])
            codes[at] = _pc_code(c)
            cols[at] = table[combo, c]
            at += 1
    starts[rows.shape[0]] = at
    return at


class GameArrays:
    """The positions 0..n of a game replayed (`replay`): arrays and the FEN/SAN text."""

    def __init__(self, board: chess.Board, moves: list, ep0: int):
        n = len(moves)
        self.n = n
        self.bbs = np.zeros((n + 1, 12), np.uint64)
        w, b = board.occupied_co[chess.WHITE], board.occupied_co[chess.BLACK]
        kinds = (board.pawns, board.knights, board.bishops, board.rooks, board.queens, board.kings)
        self.bbs[0] = [k & w for k in kinds] + [k & b for k in kinds]
        self.castling = np.zeros(n + 1, np.uint64)
        self.castling[0] = board.clean_castling_rights()
        self.black = np.zeros(n + 1, np.uint8)
        self.black[0] = board.turn == chess.BLACK
        self.ep = np.full(n + 1, -1, np.int8)
        self.ep[0] = ep0
        self.rule50 = np.zeros(n + 1, np.int16)
        self.rule50[0] = board.halfmove_clock
        self.reps = np.zeros(n + 1, np.int8)
        self.parent = np.arange(-1, n, dtype=np.int32)  # the game's rows chained as the search's tree
        self.key = np.zeros(n + 1, np.uint64)
        self.check = np.zeros(n + 1, np.uint8)
        self.legal = np.empty((n + 1, MAX_MOVES), np.int16)
        self.legal_n = np.zeros(n + 1, np.int32)
        self.codes = np.zeros(max(n, 1), np.int64)
        self.fens = np.empty((n + 1, FEN_BYTES), np.uint8)
        self.fen_n = np.zeros(n + 1, np.int32)
        self.sans = np.empty((max(n, 1), SAN_BYTES), np.uint8)
        self.san_n = np.zeros(max(n, 1), np.int32)
        played = np.array([m.from_square | (m.to_square << 6) | ((m.promotion or 0) << 12) for m in moves],
                          dtype=np.int64) if n else np.zeros(1, np.int64)
        self.bad = replay(played, n, False, np.int64(board.fullmove_number), self.parent, self.key, self.bbs,
                          self.castling, self.black, self.ep, self.rule50, self.reps, self.check, self.legal,
                          self.legal_n, self.codes, self.fens, self.fen_n, self.sans, self.san_n)

    def fen(self, i: int) -> str:
        return self.fens[i, :self.fen_n[i]].tobytes().decode("ascii")

    def san(self, i: int) -> str:
        return self.sans[i, :self.san_n[i]].tobytes().decode("ascii")

    def mated_or_stalemated(self, i: int):
        """1.0 (the last mover won: mate), 0.5 (stalemate) or None (moves left) at position i."""
        if self.legal_n[i]:
            return None
        return 1.0 if self.check[i] else 0.5

    def encode(self, rows: np.ndarray, first_is_startpos: bool, input_format: int):
        """(masks, values, transforms) of positions `rows`."""
        k = len(rows)
        masks = np.empty((k, 112), np.uint64)
        values = np.empty((k, 112), np.float32)
        transforms = np.zeros(k, np.int32)
        encode_rows(rows, self.parent, self.bbs, self.castling, self.black, self.ep, self.rule50, self.reps,
                    first_is_startpos, input_format, masks, values, transforms)
        return masks, values, transforms

    def legal_entries(self, rows: np.ndarray, transforms: np.ndarray):
        """(starts int32 [len(rows) + 1], python-chess codes int32, policy indices int32) of the legal
        moves of positions `rows`."""
        total = int(self.legal_n[rows].sum())
        starts = np.zeros(len(rows) + 1, np.int32)
        codes = np.zeros(total, np.int32)
        cols = np.zeros(total, np.int32)
        combos = tuple(sorted({int(8 * self.black[r] + t) for r, t in zip(rows.tolist(), transforms.tolist())}))
        legal_entries(rows, self.legal, self.legal_n, self.black, transforms, index_tables(combos), starts, codes, cols)
        return starts, codes, cols


# ------------------------------------------------------------------------------------------------
# records: the policy over the legal moves, its top moves and the played move's rank


@jit
def _uci_key(code):
    """The order of a python-chess code's UCI string: from file, from rank, to file, to rank, then
    no promotion < b < n < q < r."""
    f = code & 63
    t = (code >> 6) & 63
    promo = code >> 12
    p = 0
    if promo == 3:
        p = 1
    elif promo == 2:
        p = 2
    elif promo == 5:
        p = 3
    elif promo == 4:
        p = 4
    return ((((f & 7) * 8 + (f >> 3)) * 8 + (t & 7)) * 8 + (t >> 3)) * 5 + p


@jit
def shift_logits(logits, starts, n_rec, z):
    """z = logit - the record's max logit (float32), per record's entries: the argument of the exact
    exp (`encoding.legal_policy.softmax_logits` with temperature 1)."""
    for i in range(n_rec):
        a = starts[i]
        b = starts[i + 1]
        if b > a:
            mx = logits[a]
            for j in range(a + 1, b):
                if logits[j] > mx or np.isnan(logits[j]):  # np.max's NaN
                    mx = logits[j]
            for j in range(a, b):
                z[j] = np.float32(logits[j] - mx) * np.float32(1.0)


@jit
def policy_ranks(e, starts, n_rec, codes, played, top, probs, order, k_out, played_at, played_rank):
    """From e = exp(z) (float32): each record's probabilities (sum in move order, as `softmax_logits`),
    its top `top` moves (all with 0) in the API's order, high to low and ties by UCI (`order[i, :k_out[i]]`,
    entry indices), and the played move's entry and rank (-1 when there is none)."""
    for i in range(n_rec):
        a = starts[i]
        b = starts[i + 1]
        n = b - a
        total = np.float32(0.0)
        for j in range(a, b):
            total = np.float32(total + e[j])
        scale = np.float32(1.0) / total if total > np.float32(0.0) else np.float32(1.0)
        for j in range(a, b):
            probs[j] = np.float32(e[j] * scale)
        k = n if top <= 0 or top >= n else top
        k_out[i] = k
        # the k best by (-p, uci), by insertion into order[i, :k]
        m = 0
        for j in range(a, b):
            pj = probs[j]
            kj = _uci_key(codes[j])
            pos = m
            while pos > 0:
                o = order[i, pos - 1]
                po = probs[o]
                if po > pj or (po == pj and _uci_key(codes[o]) < kj):
                    break
                pos -= 1
            if pos < k:
                last = m if m < k else k - 1
                for q in range(last, pos, -1):
                    order[i, q] = order[i, q - 1]
                order[i, pos] = j
                if m < k:
                    m += 1
        played_at[i] = -1
        played_rank[i] = -1
        if played[i] >= 0:
            hit = -1
            for j in range(a, b):
                if codes[j] == played[i]:
                    hit = j
                    break
            if hit >= 0:
                pp = probs[hit]
                kp = _uci_key(codes[hit])
                rank = 1
                for j in range(a, b):
                    if probs[j] > pp or (probs[j] == pp and _uci_key(codes[j]) < kp):
                        rank += 1
                played_at[i] = hit
                played_rank[i] = rank


@functools.lru_cache(maxsize=None)
def uci_names() -> list:
    """UCI text of every python-chess code (from | to << 6 | promotion piece type << 12)."""
    promo = ("", "", "n", "b", "r", "q")
    return [chess.SQUARE_NAMES[c & 63] + chess.SQUARE_NAMES[(c >> 6) & 63] + promo[c >> 12] if c >> 12 != 1 else ""
            for c in range(6 << 12)]


@functools.lru_cache(maxsize=None)
def uci_codes() -> dict:
    """The python-chess code of a UCI text (`uci_names` inverted)."""
    return {u: c for c, u in enumerate(uci_names()) if u}


def policies(starts: np.ndarray, codes: np.ndarray, logits: np.ndarray, played: np.ndarray, top: int):
    """Every record's policy over its legal moves from their logits (temperature 1, exact exp, as
    `encoding.legal_policy.softmax_logits`), its top moves and the played move's entry and rank:
    (probs float32 [entries], order int32 [records, k] entry indices high to low, k int32 [records],
    played entry int32 [records] (-1: none), played rank int32 [records])."""
    n_rec = len(starts) - 1
    sizes = np.diff(starts)
    width = max(1, int(sizes.max()) if n_rec else 1)
    if top > 0:
        width = min(width, top)
    logits = np.ascontiguousarray(logits, dtype=np.float32)
    z = np.zeros(len(logits), np.float32)
    shift_logits(logits, starts, n_rec, z)
    e = np.exp(z.astype(np.float64)).astype(np.float32)  # numpy's exp, as softmax_logits takes it
    probs = np.zeros(len(logits), np.float32)
    order = np.zeros((max(n_rec, 1), width), np.int32)
    k = np.zeros(max(n_rec, 1), np.int32)
    played_at = np.zeros(max(n_rec, 1), np.int32)
    rank = np.zeros(max(n_rec, 1), np.int32)
    policy_ranks(e, starts, n_rec, codes, played, top, probs, order, k, played_at, rank)
    return probs, order, k, played_at, rank
