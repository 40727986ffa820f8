"""Legal moves and make-move on `PositionState` bitboards, without python-chess boards (search hot path).

The search needs, for every new leaf, its position (the parent's plus one move) and the legal
moves of that position with their policy indices. python-chess would need a `Board` per leaf (a
copy plus pushes, ~20 µs) and its generic legal-move generator (~2 µs per move); this module does
the same on the twelve absolute bitboards a `PositionState` already holds:

* `child_state(state, move)`: the `PositionState` after a legal move (castling rights, lc0's
  en-passant flag, rule-50 and repetitions exactly as `PositionState.from_board` gives them);
* `legal_moves(state)`: `(codes, in_check)`, the legal moves as int codes **in python-chess's own
  generation order** (the search breaks prior ties by that order, so the order is part of the
  search result) and whether the side to move is in check. A code is from * 64 + to + 4096 * slot
  (slot: plain, promotion to Q/R/B/N, standard castling); `MOVES[code]` is the shared python-chess
  `Move` and `index_table(black, transform)[code]` its policy index (a numpy table, so a whole
  batch of moves is mapped in one indexing operation). `board_codes(board)` gives the same codes
  for any python-chess board (Chess960 too);
* `has_mating_material(state)`: lc0's rule (queens count as rooks).

Standard chess only (castling e1g1/e1c1 with rooks on the corners, as python-chess gives it for a
non-Chess960 board); the search keeps python-chess boards for Chess960. The generator follows
python-chess's `generate_legal_moves`: without check, non-pawn pieces by descending from-square
(targets descending), castling (h-side first), pawn captures, single pushes, double pushes, en
passant; in check, king moves first, then captures/blocks of a single checker, then an en-passant
capture of a checking pawn. Pinned pieces keep the targets on their line to the king.
tests/test_movegen.py checks moves, order, indices and child states against python-chess.
"""

from __future__ import annotations

from functools import lru_cache

import chess
import numpy as np

from ..encoding.history import PositionState
from ..encoding.policy_map import _abs_tables

_KNIGHT = chess.BB_KNIGHT_ATTACKS
_KING = chess.BB_KING_ATTACKS
_PAWN_ATT = chess.BB_PAWN_ATTACKS  # [color][square]: squares a pawn of `color` on `square` attacks
_RANK_M, _RANK_A = chess.BB_RANK_MASKS, chess.BB_RANK_ATTACKS
_FILE_M, _FILE_A = chess.BB_FILE_MASKS, chess.BB_FILE_ATTACKS
_DIAG_M, _DIAG_A = chess.BB_DIAG_MASKS, chess.BB_DIAG_ATTACKS
_RAYS = chess.BB_RAYS
_ALL = chess.BB_ALL
_RANK_1, _RANK_8 = chess.BB_RANK_1, chess.BB_RANK_8
_BACKRANK_PROMO = chess.BB_RANK_1 | chess.BB_RANK_8
_RANK_4, _RANK_5 = chess.BB_RANK_4, chess.BB_RANK_5  # double-push targets (white, black)
_EP_RANK = (chess.BB_RANK_5, chess.BB_RANK_4)  # [black to move]: rank of our pawns that may take e.p.
_LIGHT, _DARK = chess.BB_LIGHT_SQUARES, chess.BB_DARK_SQUARES
_NOT_FILE_A, _NOT_FILE_H = chess.BB_ALL & ~chess.BB_FILE_A, chess.BB_ALL & ~chess.BB_FILE_H
_E1, _E8 = chess.E1, chess.E8

# Between squares (exclusive) for every pair, as python-chess's `between`.
_BETWEEN = [[0] * 64 for _ in range(64)]
for _a in range(64):
    for _b in range(64):
        _bb = _RAYS[_a][_b] & ((_ALL << _a) ^ (_ALL << _b))
        _BETWEEN[_a][_b] = _bb & (_bb - 1)
del _a, _b, _bb

# Move codes: from * 64 + to + 4096 * slot, slot 0 a plain move (castling king-takes-rook in Chess960),
# 1..4 a promotion to Q R B N, 5 standard castling (e1g1 ...: policy index of king-takes-rook).
PLAIN, PROMO_Q, PROMO_R, PROMO_B, PROMO_N, CASTLE = 0, 4096, 8192, 12288, 16384, 20480
NUM_CODES = 6 * 4096
_PROMO_PIECES = (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)  # python-chess's order
_SLOT_OF_PROMO = {chess.QUEEN: PROMO_Q, chess.ROOK: PROMO_R, chess.BISHOP: PROMO_B, chess.KNIGHT: PROMO_N}
_CASTLES = ((chess.E1, chess.G1, chess.H1), (chess.E1, chess.C1, chess.A1),
            (chess.E8, chess.G8, chess.H8), (chess.E8, chess.C8, chess.A8))


def _build_moves() -> list:
    """Shared, never-mutated python-chess Move objects by code (None where no move has that code)."""
    moves: list = [chess.Move(a, b) for a in range(64) for b in range(64)] + [None] * (NUM_CODES - 4096)
    for a in list(range(8, 16)) + list(range(48, 56)):
        for b in range(64):
            if abs((b >> 3) - (a >> 3)) == 1 and abs((b & 7) - (a & 7)) <= 1 and b >> 3 in (0, 7):
                for p in _PROMO_PIECES:
                    moves[_SLOT_OF_PROMO[p] + a * 64 + b] = chess.Move(a, b, p)
    for k, g, _ in _CASTLES:
        moves[CASTLE + k * 64 + g] = chess.Move(k, g)
    return moves


MOVES: list = _build_moves()


@lru_cache(maxsize=None)
def index_table(black: bool, transform: int = 0) -> np.ndarray:
    """int32 [NUM_CODES]: policy index of each move code for the side to move and canonical transform
    (entries of impossible codes are -1)."""
    plain, promo = _abs_tables(bool(black), int(transform), False)
    table = np.full(NUM_CODES, -1, dtype=np.int32)
    table[:4096] = plain
    table[PROMO_N:PROMO_N + 4096] = plain  # a knight promotion uses the plain from-to index
    for (a, b, p), idx in promo.items():
        table[_SLOT_OF_PROMO[p] + a * 64 + b] = idx
    for k, g, rook in _CASTLES:
        table[CASTLE + k * 64 + g] = plain[k * 64 + rook]
    table.setflags(write=False)
    return table


_ALL_TABLES = np.full((16, NUM_CODES), -1, dtype=np.int32)  # [black * 8 + transform, code]
_READY = [False] * 16


def index_tables(combos=()) -> np.ndarray:
    """The int32 [16, NUM_CODES] table of policy indices by (black * 8 + transform, code), with the
    rows of `combos` (and of transform 0) filled in."""
    for c in (0, 8, *combos):
        if not _READY[c]:
            _ALL_TABLES[c] = index_table(bool(c >> 3), c & 7)
            _READY[c] = True
    return _ALL_TABLES


def policy_indices(codes: list, black: bool, transform: int = 0) -> list:
    """Policy indices of move codes (a list of python ints)."""
    table = index_table(black, transform)
    return table[np.asarray(codes, dtype=np.int64)].tolist() if codes else []


def code_of(board: chess.Board, move: chess.Move) -> int:
    """Code of a legal python-chess move of `board` (any board, Chess960 included)."""
    k = move.from_square * 64 + move.to_square
    if move.promotion is not None:
        return _SLOT_OF_PROMO[move.promotion] + k
    if not board.chess960 and board.is_castling(move):
        return CASTLE + k
    return k


def board_codes(board: chess.Board) -> tuple[list, bool]:
    """(codes of the legal moves in python-chess order, in_check) of a python-chess board."""
    return [code_of(board, m) for m in board.generate_legal_moves()], board.is_check()


def _attackers(sq: int, occ: int, them_white: bool, P: int, N: int, BQ: int, RQ: int, K: int) -> int:
    """Pieces of the side given by the bitboards (P N BQ RQ K, them) attacking `sq` with occupancy `occ`."""
    return ((_KNIGHT[sq] & N) | (_KING[sq] & K)
            | ((_RANK_A[sq][_RANK_M[sq] & occ] | _FILE_A[sq][_FILE_M[sq] & occ]) & RQ)
            | (_DIAG_A[sq][_DIAG_M[sq] & occ] & BQ)
            | (_PAWN_ATT[not them_white][sq] & P))


def legal_moves(state: PositionState) -> tuple[list, bool]:
    """(codes of the legal moves in python-chess's order, in_check) of the position."""
    bbs = state.bbs
    black = state.black_to_move
    if black:
        P, N, B, R, Q, K = bbs[6:]
        oP, oN, oB, oR, oQ, oK = bbs[:6]
    else:
        P, N, B, R, Q, K = bbs[:6]
        oP, oN, oB, oR, oQ, oK = bbs[6:]
    ours = P | N | B | R | Q | K
    theirs = oP | oN | oB | oR | oQ | oK
    occ = ours | theirs
    oBQ = oB | oQ
    oRQ = oR | oQ
    codes: list = []
    ac = codes.append

    king = K.bit_length() - 1
    # Pinned pieces: our single blockers between the king and an enemy slider.
    pinned = 0
    snipers = (((_RANK_A[king][0] | _FILE_A[king][0]) & oRQ) | (_DIAG_A[king][0] & oBQ))
    while snipers:
        s = snipers.bit_length() - 1
        snipers ^= 1 << s
        b = _BETWEEN[king][s] & occ
        if b and not b & (b - 1):
            pinned |= b
    pinned &= ours
    checkers = _attackers(king, occ, black, oP, oN, oBQ, oRQ, oK)
    them = (black, oP, oN, oBQ, oRQ, oK)

    if not checkers:
        _pieces(codes, ours & ~P, _ALL, N, K, R | Q, B | Q, ours, occ, pinned, king, them)
        castling = state.castling & (_RANK_8 if black else _RANK_1)
        if castling:
            _castles(ac, black, K, occ, castling, them)
        if P:
            _pawns(codes, P, _ALL, black, theirs, occ, pinned, king)
        if state.ep_file >= 0:
            _ep(ac, state.ep_file, _ALL, P, black, occ, pinned, king, oBQ, oRQ)
        return codes, False

    # Evasions: king moves (off the checking lines), then blocks/captures of a single checker.
    attacked = 0
    sl = checkers & (oBQ | oRQ)
    while sl:
        c = sl.bit_length() - 1
        sl ^= 1 << c
        attacked |= _RAYS[king][c] & ~(1 << c)
    t = _KING[king] & ~ours & ~attacked
    base = king * 64
    while t:
        s = t.bit_length() - 1
        t ^= 1 << s
        if not _attackers(s, occ, black, oP, oN, oBQ, oRQ, oK):
            ac(base + s)
    checker = checkers.bit_length() - 1
    if checkers == 1 << checker:
        target = _BETWEEN[king][checker] | checkers
        _pieces(codes, ours & ~P & ~K, target, N, K, R | Q, B | Q, ours, occ, pinned, king, them)
        if P:
            _pawns(codes, P, target, black, theirs, occ, pinned, king)
        ep_file = state.ep_file
        if ep_file >= 0:
            _ep(ac, ep_file, target, P, black, occ, pinned, king, oBQ, oRQ)
            ep = (16 if black else 40) + ep_file
            if not (1 << ep) & target and (ep + 8 if black else ep - 8) == checker:
                _ep(ac, ep_file, _ALL, P, black, occ, pinned, king, oBQ, oRQ)
    return codes, True


# Memo: codes of the moves from square f to the squares of a target set, highest target first
# (python-chess's order), by target bitboard; filled as sets occur, at most _MEMO_CAP sets a square.
_TARGET_CODES: list[dict] = [{} for _ in range(64)]
_PUSH_CODES: tuple[dict, dict] = ({}, {})  # [black]: single-push codes by target bitboard
_DOUBLE_CODES: tuple[dict, dict] = ({}, {})
_MEMO_CAP = 2048  # ~64 x 2048 small tuples at most


def _target_codes(f: int, t: int) -> tuple:
    memo = _TARGET_CODES[f]
    got = memo.get(t)
    if got is None:
        key = t
        base = f * 64
        out = []
        while t:
            s = t.bit_length() - 1
            t ^= 1 << s
            out.append(base + s)
        got = tuple(out)
        if len(memo) < _MEMO_CAP:
            memo[key] = got
    return got


def _push_codes(single: int, black: bool, double: bool) -> tuple:
    """Codes of single (or double) pawn pushes onto the squares of `single`, highest first."""
    memo = (_DOUBLE_CODES if double else _PUSH_CODES)[black]
    got = memo.get(single)
    if got is None:
        step = (8 if black else -8) * (2 if double else 1)
        out = []
        t = single
        while t:
            s = t.bit_length() - 1
            t ^= 1 << s
            k = (s + step) * 64 + s
            if not double and (1 << s) & _BACKRANK_PROMO:
                out += (k + PROMO_Q, k + PROMO_R, k + PROMO_B, k + PROMO_N)
            else:
                out.append(k)
        got = tuple(out)
        if len(memo) < _MEMO_CAP:
            memo[single] = got
    return got


def _pieces(codes, from_bb, to_mask, N, K, RQ, BQ, ours, occ, pinned, king, them) -> None:
    """Knight, bishop, rook, queen and king moves, highest from-square first, targets descending."""
    notours = ~ours & to_mask
    ext = codes.extend
    memo = _TARGET_CODES
    while from_bb:
        f = from_bb.bit_length() - 1
        fb = 1 << f
        from_bb ^= fb
        if fb & N:
            t = _KNIGHT[f] & notours
        elif fb & K:
            t = _KING[f] & notours
            black, oP, oN, oBQ, oRQ, oK = them
            base = f * 64
            while t:
                s = t.bit_length() - 1
                t ^= 1 << s
                if not _attackers(s, occ, black, oP, oN, oBQ, oRQ, oK):
                    codes.append(base + s)
            continue
        else:
            t = 0
            if fb & RQ:
                t = _RANK_A[f][_RANK_M[f] & occ] | _FILE_A[f][_FILE_M[f] & occ]
            if fb & BQ:
                t |= _DIAG_A[f][_DIAG_M[f] & occ]
            t &= notours
        if fb & pinned:
            t &= _RAYS[f][king]
        if t:
            got = memo[f].get(t)
            ext(got if got is not None else _target_codes(f, t))


def _pawns(codes, P, to_mask, black, theirs, occ, pinned, king) -> None:
    """Pawn captures (by from-square), single pushes, double pushes; promotions Q R B N."""
    ac = codes.append
    ext = codes.extend
    att = _PAWN_ATT[not black]
    # only pawns that capture something: those a pawn of theirs on a target square would attack
    th = theirs & to_mask
    if black:
        fr = P & (((th & _NOT_FILE_A) << 7) | ((th & _NOT_FILE_H) << 9))
    else:
        fr = P & (((th & _NOT_FILE_H) >> 7) | ((th & _NOT_FILE_A) >> 9))
    while fr:
        f = fr.bit_length() - 1
        fb = 1 << f
        fr ^= fb
        t = att[f] & th
        if fb & pinned:
            t &= _RAYS[f][king]
        base = f * 64
        while t:
            s = t.bit_length() - 1
            t ^= 1 << s
            k = base + s
            if (1 << s) & _BACKRANK_PROMO:
                ac(k + PROMO_Q)
                ac(k + PROMO_R)
                ac(k + PROMO_B)
                ac(k + PROMO_N)
            else:
                ac(k)
    if black:
        single = P >> 8 & ~occ
        double = single >> 8 & ~occ & _RANK_5
        step = 8
    else:
        single = P << 8 & ~occ
        double = single << 8 & ~occ & _RANK_4
        step = -8
    single &= to_mask
    double &= to_mask
    if pinned & P:  # a pinned pawn may only push along its pin line
        for bb, st in ((single, step), (double, 2 * step)):
            t = bb
            while t:
                s = t.bit_length() - 1
                t ^= 1 << s
                f = s + st
                if (1 << f) & pinned and not _RAYS[f][king] & (1 << s):
                    bb &= ~(1 << s)
            if st == step:
                single = bb
            else:
                double = bb
    if single:
        got = _PUSH_CODES[black].get(single)
        ext(got if got is not None else _push_codes(single, black, False))
    if double:
        got = _DOUBLE_CODES[black].get(double)
        ext(got if got is not None else _push_codes(double, black, True))


def _ep(ac, ep_file, to_mask, P, black, occ, pinned, king, oBQ, oRQ) -> None:
    """En-passant captures onto the flagged square (pins and the rank skewer checked)."""
    ep = (16 if black else 40) + ep_file
    epb = 1 << ep
    if not epb & to_mask or epb & occ:
        return
    capturers = P & _PAWN_ATT[black][ep] & _EP_RANK[black]
    last_double = ep + 8 if black else ep - 8
    while capturers:
        f = capturers.bit_length() - 1
        capturers ^= 1 << f
        if (1 << f) & pinned and not _RAYS[f][king] & epb:
            continue
        # the captured pawn and the capturer leave the rank together: a rook/queen may see the king
        o = (occ & ~(1 << last_double) & ~(1 << f)) | epb
        if (_RANK_A[king][_RANK_M[king] & o] & oRQ) or (_DIAG_A[king][_DIAG_M[king] & o] & oBQ):
            continue
        ac(f * 64 + ep)


def _castles(ac, black, K, occ, rights, them) -> None:
    """Castling moves (h-side rook first), python-chess's conditions on standard boards."""
    _, oP, oN, oBQ, oRQ, oK = them
    back = 56 if black else 0
    king_sq = back + 4
    if not K & (1 << king_sq):
        return
    kb = 1 << king_sq
    while rights:
        rook_sq = rights.bit_length() - 1
        rights ^= 1 << rook_sq
        rb = 1 << rook_sq
        a_side = rook_sq < king_sq
        king_to = back + (2 if a_side else 6)
        rook_to = back + (3 if a_side else 5)
        king_path = _BETWEEN[king_sq][king_to]
        rook_path = _BETWEEN[rook_sq][rook_to]
        if (occ ^ kb ^ rb) & (king_path | rook_path | (1 << king_to) | (1 << rook_to)):
            continue
        o = occ ^ kb
        safe = True
        path = king_path | kb
        while path:
            s = path.bit_length() - 1
            path ^= 1 << s
            if _attackers(s, o, black, oP, oN, oBQ, oRQ, oK):
                safe = False
                break
        if not safe or _attackers(king_to, occ ^ kb ^ rb ^ (1 << rook_to), black, oP, oN, oBQ, oRQ, oK):
            continue
        ac(CASTLE + king_sq * 64 + king_to)


def child_state(state: PositionState, move: chess.Move) -> PositionState:
    """The position after legal `move` (python-chess form, standard chess: castling e1g1) as a new
    PositionState."""
    bbs = list(state.bbs)
    black = state.black_to_move
    off, toff = (6, 0) if black else (0, 6)
    f, t = move.from_square, move.to_square
    fb, tb = 1 << f, 1 << t
    pt = 0
    while not bbs[off + pt] & fb:
        pt += 1
    bbs[off + pt] ^= fb
    captured = False
    for k in range(toff, toff + 6):
        if bbs[k] & tb:
            bbs[k] ^= tb
            captured = True
            break
    rule50 = state.rule50 + 1
    ep_file = -1
    castling = state.castling & ~fb & ~tb
    if pt == 0:
        rule50 = 0
        d = t - f
        if d == 16 or d == -16:
            file = t & 7
            beside = (1 << (t - 1) if file > 0 else 0) | (1 << (t + 1) if file < 7 else 0)
            if beside & bbs[toff]:
                ep_file = file
        elif (d & 7) and not captured:  # a diagonal step onto an empty square: en passant
            victim = t + 8 if black else t - 8
            bbs[toff] ^= 1 << victim
        if move.promotion:
            pt = move.promotion - 1
    elif pt == 5:
        castling &= ~(_RANK_8 if black else _RANK_1)
        if t - f == 2:  # king side: rook h -> f
            bbs[off + 3] ^= (1 << (f + 3)) | (1 << (f + 1))
        elif f - t == 2:  # queen side: rook a -> d
            bbs[off + 3] ^= (1 << (f - 4)) | (1 << (f - 1))
    bbs[off + pt] |= tb
    if captured:
        rule50 = 0
    return PositionState(tuple(bbs), not black, castling, ep_file, rule50, state)


def in_check(state: PositionState) -> bool:
    bbs = state.bbs
    if state.black_to_move:
        K = bbs[11]
        oP, oN, oB, oR, oQ, oK = bbs[:6]
    else:
        K = bbs[5]
        oP, oN, oB, oR, oQ, oK = bbs[6:]
    occ = 0
    for x in bbs:
        occ |= x
    return bool(_attackers(K.bit_length() - 1, occ, state.black_to_move, oP, oN, oB | oQ, oR | oQ, oK))


def has_mating_material(state: PositionState) -> bool:
    """lc0's ChessBoard::HasMatingMaterial on a PositionState."""
    b = state.bbs
    if b[0] | b[3] | b[4] | b[6] | b[9] | b[10]:
        return True
    occ = b[1] | b[2] | b[5] | b[7] | b[8] | b[11]
    if occ.bit_count() < 4:
        return False
    if b[1] | b[7]:
        return True
    bishops = b[2] | b[8]
    return bool(bishops & _LIGHT) and bool(bishops & _DARK)

