"""The compiled chess rules (the search's hot path, analyse's replay): legal moves, make-move, check, mating
material and position keys on numpy bitboards, compiled with numba (`@jit` of lc0_rocm/jit.py).

A position is what the search keeps per tree node in arrays: `bbs` (uint64[12]: wP wN wB wR wQ wK
bP bN bB bR bQ bK, absolute squares, a1 = 0, as `PositionState.bbs`), `black` (side to move),
`castling` (np.uint64, python-chess's `Board.clean_castling_rights()`: rook squares that may still
castle), `ep_file` (lc0's en-passant flag, -1 or a file, as `_lc0_ep_file` of encoding/history.py)
and `rule50`. Standard chess and Chess960:
`legal_moves` writes the int16 move codes of move_codes.py (from * 64 + to + 4096 * slot; slot 0 plain,
1..4 promotion to Q R B N, 5 standard castling e1g1...) in the exact order of python-chess's
`Board.generate_legal_moves()` (the search breaks prior ties by it): `generate_pseudo_legal_moves`
filtered as `_is_safe` does (pins of `_slider_blockers`, `_ep_skewered`), or `_generate_evasions`
in check; castling follows `generate_castling_moves` and is coded king-takes-own-rook with slot 0
on a Chess960 board (python-chess's internal form), else as `_from_chess960` gives it (slot 5).
`make_move` is `Board.push` (castling-rights update, castling king to c/g and rook to d/f, en
passant, promotion, half-move clock) plus lc0's en-passant flag: its result equals
`PositionState.from_board` of the board after the push. `has_mating_material` is lc0's
`ChessBoard::HasMatingMaterial`; `position_key` a Zobrist hash for repetitions; `repetitions` and
`plies_since_repetition` lc0's repetition walk back over rows of position arrays chained by `parent`
(the search's and analyse's one); `perft` a check.
Pass `castling` as np.uint64 and `bbs` as a C-contiguous uint64 array (other argument types compile
extra specialisations); each side must have exactly one king. tests/test_rules.py checks it all
against python-chess.
"""

from __future__ import annotations

import chess
import numpy as np

from ..jit import jit, jit_alloc  # first: it installs the search's cache locator before numba compiles anything
from numba.cpython.unsafe.numbers import leading_zeros, trailing_zeros  # noqa: E402  (LLVM cttz/ctlz)
from .move_codes import CASTLE, MOVES, NUM_CODES, PROMO_B, PROMO_N, PROMO_Q, PROMO_R

__all__ = ["CASTLE", "NUM_CODES", "legal_moves", "make_move", "has_mating_material", "in_check",
           "position_key", "perft", "code_to_move", "move_to_code"]

# ---------------------------------------------------------------------------------------------
# Tables (module globals: numba freezes them into the compiled code)

_M64 = (1 << 64) - 1
ALL = np.uint64(_M64)
RANK_1, RANK_3, RANK_4 = np.uint64(chess.BB_RANK_1), np.uint64(chess.BB_RANK_3), np.uint64(chess.BB_RANK_4)
RANK_5, RANK_6, RANK_8 = np.uint64(chess.BB_RANK_5), np.uint64(chess.BB_RANK_6), np.uint64(chess.BB_RANK_8)
LIGHT, DARK = np.uint64(chess.BB_LIGHT_SQUARES), np.uint64(chess.BB_DARK_SQUARES)
U1, U8 = np.uint64(1), np.uint64(8)

KNIGHT = np.array(chess.BB_KNIGHT_ATTACKS, dtype=np.uint64)
KING = np.array(chess.BB_KING_ATTACKS, dtype=np.uint64)
# PAWN_ATT[side, sq]: squares a pawn of `side` (0 white, 1 black) on sq attacks.
PAWN_ATT = np.array([chess.BB_PAWN_ATTACKS[chess.WHITE], chess.BB_PAWN_ATTACKS[chess.BLACK]], dtype=np.uint64)
# LINE[a, b]: python-chess's `ray(a, b)` (the whole line through a and b, 0 if not aligned);
# BETWEEN[a, b]: `between(a, b)` (the squares strictly between).
LINE = np.array(chess.BB_RAYS, dtype=np.uint64)
BETWEEN = np.zeros((64, 64), dtype=np.uint64)
for _a in range(64):
    for _b in range(64):
        _bb = chess.BB_RAYS[_a][_b] & ((_M64 << _a) ^ (_M64 << _b)) & _M64
        BETWEEN[_a, _b] = _bb & (_bb - 1) if _bb else 0

# RAY[d, sq]: squares beyond sq in direction d (sq excluded). Directions 0..3 increase the square
# index (blocker = lowest bit), 4..7 decrease it (blocker = highest bit).
_DIRS = ((0, 1), (1, 0), (1, 1), (-1, 1), (0, -1), (-1, 0), (-1, -1), (1, -1))  # (file, rank) steps
RAY = np.zeros((8, 64), dtype=np.uint64)
for _d, (_df, _dr) in enumerate(_DIRS):
    for _sq in range(64):
        _f, _r, _bb = (_sq & 7) + _df, (_sq >> 3) + _dr, 0
        while 0 <= _f < 8 and 0 <= _r < 8:
            _bb |= 1 << (_r * 8 + _f)
            _f, _r = _f + _df, _r + _dr
        RAY[_d, _sq] = _bb
ROOK_EMPTY = RAY[0] | RAY[1] | RAY[4] | RAY[5]
BISHOP_EMPTY = RAY[2] | RAY[3] | RAY[6] | RAY[7]
del _a, _b, _bb, _d, _df, _dr, _sq, _f, _r

# Zobrist keys (fixed seed: keys are stable across runs and machines).
_rng = np.random.Generator(np.random.PCG64(0x1C0_5EA7C4))
Z_PIECE = _rng.integers(0, 2 ** 64, size=(12, 64), dtype=np.uint64)
Z_SIDE = _rng.integers(0, 2 ** 64, size=1, dtype=np.uint64)
Z_CASTLE = _rng.integers(0, 2 ** 64, size=64, dtype=np.uint64)
Z_EP = _rng.integers(0, 2 ** 64, size=8, dtype=np.uint64)
del _rng

# ---------------------------------------------------------------------------------------------
# Bit helpers and attacks


@jit
def _bit(s):
    return U1 << np.uint64(s)


@jit
def lsb(x):
    return np.int64(trailing_zeros(x))


@jit
def msb(x):
    return 63 - np.int64(leading_zeros(x))


@jit
def _ray(d, sq, occ):
    """Attacks along direction d from sq: the ray cut after its first blocker (directions 0..3
    increase the square index, so the blocker is the lowest bit; 4..7 the highest)."""
    a = RAY[d, sq]
    b = a & occ
    if b:
        a ^= RAY[d, lsb(b) if d < 4 else msb(b)]
    return a


@jit
def _rook_att(sq, occ):
    """Rook attacks from sq (classical rays)."""
    return _ray(0, sq, occ) | _ray(1, sq, occ) | _ray(4, sq, occ) | _ray(5, sq, occ)


@jit
def _rank_att(sq, occ):
    """Rook attacks along the rank only (python-chess's BB_RANK_ATTACKS)."""
    return _ray(1, sq, occ) | _ray(5, sq, occ)


@jit
def _bishop_att(sq, occ):
    """Bishop attacks from sq (both diagonals)."""
    return _ray(2, sq, occ) | _ray(3, sq, occ) | _ray(6, sq, occ) | _ray(7, sq, occ)


@jit
def _attackers(sq, occ, oP, oN, oBQ, oRQ, oK, them_black):
    """python-chess's `attackers_mask(them, sq, occ)`: pieces (oP..oK) of side `them` attacking sq."""
    a = (KNIGHT[sq] & oN) | (KING[sq] & oK) | (PAWN_ATT[0 if them_black else 1, sq] & oP)
    if oRQ:
        a |= _rook_att(sq, occ) & oRQ
    if oBQ:
        a |= _bishop_att(sq, occ) & oBQ
    return a


# ---------------------------------------------------------------------------------------------
# Legal moves (python-chess's generate_legal_moves order)


@jit
def _emit_pawn(out, n, f, s):
    """A pawn move f -> s; onto the last rank as four promotions Q R B N (python-chess's order)."""
    k = f * 64 + s
    if s >= 56 or s < 8:
        out[n] = k + PROMO_Q
        out[n + 1] = k + PROMO_R
        out[n + 2] = k + PROMO_B
        out[n + 3] = k + PROMO_N
        return n + 4
    out[n] = k
    return n + 1


@jit
def _piece_moves(out, n, from_bb, to_mask, N, K, RQ, BQ, ours, occ, pinned, king,
                 oP, oN, oBQ, oRQ, oK, them_black):
    """Knight, bishop, rook, queen and king moves: from-squares descending, targets descending;
    a king move must not land on an attacked square, a pinned piece stays on its pin line."""
    notours = ~ours & to_mask
    while from_bb:
        f = msb(from_bb)
        fb = _bit(f)
        from_bb ^= fb
        base = f * 64
        if fb & K:
            t = KING[f] & notours
            while t:
                s = msb(t)
                t ^= _bit(s)
                if not _attackers(s, occ, oP, oN, oBQ, oRQ, oK, them_black):
                    out[n] = base + s
                    n += 1
            continue
        if fb & N:
            t = KNIGHT[f] & notours
        else:
            t = np.uint64(0)
            if fb & RQ:
                t = _rook_att(f, occ)
            if fb & BQ:
                t |= _bishop_att(f, occ)
            t &= notours
        if fb & pinned:
            t &= LINE[f, king]
        while t:
            s = msb(t)
            t ^= _bit(s)
            out[n] = base + s
            n += 1
    return n


@jit
def _pawn_moves(out, n, P, to_mask, black, theirs, occ, pinned, king):
    """Pawn captures (from-squares descending), single pushes, double pushes (targets descending)."""
    side = 1 if black else 0
    th = theirs & to_mask
    fr = P
    while fr:
        f = msb(fr)
        fb = _bit(f)
        fr ^= fb
        t = PAWN_ATT[side, f] & th
        if fb & pinned:
            t &= LINE[f, king]
        while t:
            s = msb(t)
            t ^= _bit(s)
            n = _emit_pawn(out, n, f, s)
    if black:
        single = (P >> U8) & ~occ
        double = (single >> U8) & ~occ & (RANK_6 | RANK_5)
        step = 8
    else:
        single = (P << U8) & ~occ
        double = (single << U8) & ~occ & (RANK_3 | RANK_4)
        step = -8
    single &= to_mask
    double &= to_mask
    while single:
        s = msb(single)
        sb = _bit(s)
        single ^= sb
        f = s + step
        if (_bit(f) & pinned) and not (LINE[f, king] & sb):
            continue
        n = _emit_pawn(out, n, f, s)
    while double:
        s = msb(double)
        sb = _bit(s)
        double ^= sb
        f = s + 2 * step
        if (_bit(f) & pinned) and not (LINE[f, king] & sb):
            continue
        out[n] = f * 64 + s
        n += 1
    return n


@jit
def _ep_moves(out, n, ep_file, to_mask, P, black, occ, pinned, king, oBQ, oRQ):
    """En-passant captures onto the flagged square (`generate_pseudo_legal_ep`, kept when
    `_is_safe`: the pin line holds and `_ep_skewered` does not see the king)."""
    ep = (16 if black else 40) + ep_file
    epb = _bit(ep)
    if not (epb & to_mask) or (epb & occ):
        return n
    capturers = P & PAWN_ATT[0 if black else 1, ep] & (RANK_4 if black else RANK_5)
    last_double = ep + 8 if black else ep - 8
    while capturers:
        f = msb(capturers)
        fb = _bit(f)
        capturers ^= fb
        if (fb & pinned) and not (LINE[f, king] & epb):
            continue
        o = (occ & ~_bit(last_double) & ~fb) | epb
        if (_rank_att(king, o) & oRQ) or (_bishop_att(king, o) & oBQ):
            continue
        out[n] = f * 64 + ep
        n += 1
    return n


@jit
def _castle_moves(out, n, black, K, occ, rights, chess960, oP, oN, oBQ, oRQ, oK, them_black):
    """python-chess's `generate_castling_moves` (Chess960 rules; standard chess is the case king
    on e, rooks in the corners), coded king-takes-rook (chess960) or as `_from_chess960` gives."""
    back = 56 if black else 0
    kbb = K & (RANK_8 if black else RANK_1)
    if not kbb:
        return n
    king = lsb(kbb)
    kb = _bit(king)
    while rights:
        rook = msb(rights)
        rb = _bit(rook)
        rights ^= rb
        if rook < king:
            kto = back + 2
            rto = back + 3
        else:
            kto = back + 6
            rto = back + 5
        ktb = _bit(kto)
        rtb = _bit(rto)
        king_path = BETWEEN[king, kto]
        if (occ ^ kb ^ rb) & (king_path | BETWEEN[rook, rto] | ktb | rtb):
            continue
        o = occ ^ kb
        path = king_path | kb
        safe = True
        while path:
            s = msb(path)
            path ^= _bit(s)
            if _attackers(s, o, oP, oN, oBQ, oRQ, oK, them_black):
                safe = False
                break
        if not safe or _attackers(kto, occ ^ kb ^ rb ^ rtb, oP, oN, oBQ, oRQ, oK, them_black):
            continue
        if chess960:
            out[n] = king * 64 + rook
        elif king == back + 4 and rook == back + 7:
            out[n] = CASTLE + king * 64 + back + 6
        elif king == back + 4 and rook == back:
            out[n] = CASTLE + king * 64 + back + 2
        else:
            out[n] = king * 64 + rook
        n += 1
    return n


@jit
def legal_moves(bbs, black, castling, ep_file, chess960, out):
    """Legal move codes of the position into `out` (int16, length >= 256) in python-chess's
    `generate_legal_moves()` order; returns (count, side to move in check)."""
    us = 6 if black else 0
    th = 6 - us
    them_black = not black
    P, N, B, R, Q, K = bbs[us], bbs[us + 1], bbs[us + 2], bbs[us + 3], bbs[us + 4], bbs[us + 5]
    oP, oN, oB, oR, oQ, oK = bbs[th], bbs[th + 1], bbs[th + 2], bbs[th + 3], bbs[th + 4], bbs[th + 5]
    ours = P | N | B | R | Q | K
    theirs = oP | oN | oB | oR | oQ | oK
    occ = ours | theirs
    oBQ = oB | oQ
    oRQ = oR | oQ
    if not K:
        return 0, False
    king = msb(K)

    # `_slider_blockers`: our single pieces between the king and an enemy slider.
    pinned = np.uint64(0)
    snipers = (ROOK_EMPTY[king] & oRQ) | (BISHOP_EMPTY[king] & oBQ)
    while snipers:
        s = lsb(snipers)
        snipers &= snipers - U1
        b = BETWEEN[king, s] & occ
        if b and not (b & (b - U1)):
            pinned |= b
    pinned &= ours
    checkers = _attackers(king, occ, oP, oN, oBQ, oRQ, oK, them_black)

    if not checkers:
        n = _piece_moves(out, np.int64(0), ours & ~P, ALL, N, K, R | Q, B | Q, ours, occ, pinned, king,
                         oP, oN, oBQ, oRQ, oK, them_black)
        rights = np.uint64(castling) & (RANK_8 if black else RANK_1)
        if rights:
            n = _castle_moves(out, n, black, K, occ, rights, chess960, oP, oN, oBQ, oRQ, oK, them_black)
        if P:
            n = _pawn_moves(out, n, P, ALL, black, theirs, occ, pinned, king)
            if ep_file >= 0:
                n = _ep_moves(out, n, ep_file, ALL, P, black, occ, pinned, king, oBQ, oRQ)
        return n, False

    # `_generate_evasions`: king moves off the checking lines, then blocks/captures of one checker.
    attacked = np.uint64(0)
    sl = checkers & (oBQ | oRQ)
    while sl:
        c = lsb(sl)
        cb = _bit(c)
        sl ^= cb
        attacked |= LINE[king, c] & ~cb
    n = np.int64(0)
    t = KING[king] & ~ours & ~attacked
    while t:
        s = msb(t)
        t ^= _bit(s)
        if not _attackers(s, occ, oP, oN, oBQ, oRQ, oK, them_black):
            out[n] = king * 64 + s
            n += 1
    checker = msb(checkers)
    if checkers == _bit(checker):
        target = BETWEEN[king, checker] | checkers
        n = _piece_moves(out, n, ours & ~P & ~K, target, N, K, R | Q, B | Q, ours, occ, pinned, king,
                         oP, oN, oBQ, oRQ, oK, them_black)
        if P:
            n = _pawn_moves(out, n, P, target, black, theirs, occ, pinned, king)
            if ep_file >= 0:
                n = _ep_moves(out, n, ep_file, target, P, black, occ, pinned, king, oBQ, oRQ)
                ep = (16 if black else 40) + ep_file
                last_double = ep + 8 if black else ep - 8
                if not (_bit(ep) & target) and last_double == checker:
                    n = _ep_moves(out, n, ep_file, ALL, P, black, occ, pinned, king, oBQ, oRQ)
    return n, True


# ---------------------------------------------------------------------------------------------
# Make move (Board.push + PositionState.from_board)


@jit
def make_move(bbs, black, castling, ep_file, rule50, code, chess960, out_bbs):
    """The position after legal move `code` into out_bbs (uint64[12]); returns (castling, lc0 ep
    flag, rule50) of the new position (its side to move is the other one). `ep_file` and
    `chess960` are not needed (the move code says it all) and kept for a uniform signature."""
    for i in range(12):
        out_bbs[i] = bbs[i]
    us = 6 if black else 0
    th = 6 - us
    back = RANK_8 if black else RANK_1
    cr = np.uint64(castling)
    c = np.int64(code)
    slot = c >> 12
    f = (c >> 6) & 63
    t = c & 63
    if slot == 5:  # standard castling e1g1/e1c1: the king takes its corner rook
        t = (f | 7) if t > f else (f & 56)
    fb = _bit(f)
    tb = _bit(t)
    ours = bbs[us] | bbs[us + 1] | bbs[us + 2] | bbs[us + 3] | bbs[us + 4] | bbs[us + 5]
    pt = 0
    while pt < 5 and not (bbs[us + pt] & fb):
        pt += 1

    if pt == 5 and (ours & tb):  # castling (king takes own rook): king to c/g, rook to d/f
        rank = f & 56
        if t < f:
            kto = rank + 2
            rto = rank + 3
        else:
            kto = rank + 6
            rto = rank + 5
        out_bbs[us + 5] = (out_bbs[us + 5] ^ fb) | _bit(kto)
        out_bbs[us + 3] = (out_bbs[us + 3] ^ tb) | _bit(rto)
        return cr & ~fb & ~tb & ~back, np.int64(-1), np.int64(rule50) + 1

    out_bbs[us + pt] ^= fb
    captured = False
    for k in range(th, th + 6):
        if out_bbs[k] & tb:
            out_bbs[k] ^= tb
            captured = True
            break
    r50 = np.int64(rule50) + 1
    ep = np.int64(-1)
    cr &= ~fb & ~tb
    if pt == 0:
        r50 = np.int64(0)
        d = t - f
        if d == 16 or d == -16:
            file = t & 7
            beside = np.uint64(0)
            if file > 0:
                beside |= _bit(t - 1)
            if file < 7:
                beside |= _bit(t + 1)
            if beside & out_bbs[th]:
                ep = file
        elif (d & 7) != 0 and not captured:  # diagonal onto an empty square: en passant
            out_bbs[th] ^= _bit(t + 8 if black else t - 8)
        if slot >= 1 and slot <= 4:
            pt = 5 - slot  # Q R B N -> 4 3 2 1
    elif pt == 5:
        cr &= ~back
    out_bbs[us + pt] |= tb
    if captured:
        r50 = np.int64(0)
    return cr, ep, r50


# ---------------------------------------------------------------------------------------------
# Check, material, keys, perft


@jit
def in_check(bbs, black):
    """Whether the side to move is in check."""
    us = 6 if black else 0
    th = 6 - us
    K = bbs[us + 5]
    if not K:
        return False
    occ = np.uint64(0)
    for i in range(12):
        occ |= bbs[i]
    oBQ = bbs[th + 2] | bbs[th + 4]
    oRQ = bbs[th + 3] | bbs[th + 4]
    return _attackers(msb(K), occ, bbs[th], bbs[th + 1], oBQ, oRQ, bbs[th + 5], not black) != 0


@jit
def has_mating_material(bbs):
    """lc0's ChessBoard::HasMatingMaterial (queens count as rooks)."""
    if bbs[0] | bbs[3] | bbs[4] | bbs[6] | bbs[9] | bbs[10]:
        return True
    x = bbs[1] | bbs[2] | bbs[5] | bbs[7] | bbs[8] | bbs[11]
    count = 0
    while x and count < 4:
        x &= x - U1
        count += 1
    if count < 4:
        return False
    if bbs[1] | bbs[7]:
        return True
    bishops = bbs[2] | bbs[8]
    return (bishops & LIGHT) != 0 and (bishops & DARK) != 0


@jit
def position_key(bbs, black, castling, ep_file):
    """Zobrist key of (pieces, side to move, castling rook squares, lc0 ep flag)."""
    h = np.uint64(0)
    for p in range(12):
        x = bbs[p]
        while x:
            h ^= Z_PIECE[p, lsb(x)]
            x &= x - U1
    if black:
        h ^= Z_SIDE[0]
    c = np.uint64(castling)
    while c:
        h ^= Z_CASTLE[lsb(c)]
        c &= c - U1
    if ep_file >= 0:
        h ^= Z_EP[ep_file]
    return h


@jit
def same_position(bbs, castling, black, ep, a, b):
    """Whether rows a and b of position arrays hold the same position (pieces, side to move, castling,
    lc0's en-passant flag: what lc0's `Position::GetRepetitions` compares)."""
    if black[a] != black[b] or castling[a] != castling[b] or ep[a] != ep[b]:
        return False
    for k in range(12):
        if bbs[a, k] != bbs[b, k]:
            return False
    return True


@jit
def repetitions(node, parent, key, bbs, castling, black, ep, rule50, reps):
    """lc0's repetition count of row `node` (`encoding.history.PositionState._compute_repetitions`,
    lc0's `PositionHistory::ComputeLastMoveRepetitions`): 1 + that of the last earlier occurrence of
    its position, walking back the rows chained by `parent` (the search's tree and game, analyse's
    replay) over the side to move's positions from 4 plies back, within the reversible moves; `key`
    (`position_key` of each row) filters the comparisons, every earlier row's `reps` is set."""
    if rule50[node] < 4:
        return 0
    q = parent[node]
    steps = 1
    while q >= 0:
        if steps >= 4 and steps % 2 == 0:
            if key[q] == key[node] and same_position(bbs, castling, black, ep, q, node):
                return 1 + reps[q]
            if rule50[q] < 2:
                break
        q = parent[q]
        steps += 1
    return 0


@jit
def plies_since_repetition(node, parent, key, bbs, castling, black, ep, reps):
    """Plies back to the previous occurrence of row `node`'s position (0 if it is not a repetition:
    `reps[node]` 0), along the same chain as `repetitions`."""
    if reps[node] == 0:
        return 0
    q = parent[node]
    steps = 1
    while q >= 0:
        if steps >= 4 and steps % 2 == 0 and key[q] == key[node] and same_position(bbs, castling, black, ep, q, node):
            return steps
        q = parent[q]
        steps += 1
    return 0


@jit_alloc
def perft(bbs, black, castling, ep_file, chess960, depth):
    """Number of leaf positions `depth` plies below the position (legal_moves + make_move only;
    the moves of the last ply are counted, not made)."""
    if depth <= 0:
        return np.int64(1)
    bb = np.empty((depth, 12), dtype=np.uint64)
    cr = np.empty(depth, dtype=np.uint64)
    ep = np.empty(depth, dtype=np.int64)
    moves = np.empty((depth, 256), dtype=np.int16)
    count = np.zeros(depth, dtype=np.int64)
    nxt = np.zeros(depth, dtype=np.int64)
    for k in range(12):
        bb[0, k] = bbs[k]
    cr[0] = np.uint64(castling)
    ep[0] = ep_file
    b0 = 1 if black else 0
    total = np.int64(0)
    lvl = 0
    fresh = True  # the position at lvl still needs its moves
    while lvl >= 0:
        black_here = ((b0 + lvl) & 1) == 1
        if fresh:
            fresh = False
            count[lvl] = legal_moves(bb[lvl], black_here, cr[lvl], ep[lvl], chess960, moves[lvl])[0]
            nxt[lvl] = 0
            if lvl == depth - 1:
                total += count[lvl]
                lvl -= 1
                continue
        i = nxt[lvl]
        if i == count[lvl]:
            lvl -= 1
            continue
        nxt[lvl] = i + 1
        c2, e2, _ = make_move(bb[lvl], black_here, cr[lvl], ep[lvl], np.int64(0), np.int64(moves[lvl, i]),
                              chess960, bb[lvl + 1])
        lvl += 1
        cr[lvl] = c2
        ep[lvl] = e2
        fresh = True
    return total


# ---------------------------------------------------------------------------------------------
# Plain-Python helpers (not compiled)

# standard castling code -> the rook square the king takes in python-chess's Chess960 form
_CORNER_OF = {CASTLE + 4 * 64 + 6: 7, CASTLE + 4 * 64 + 2: 0,
              CASTLE + 60 * 64 + 62: 63, CASTLE + 60 * 64 + 58: 56}
_PROMO_SLOT = {chess.QUEEN: PROMO_Q, chess.ROOK: PROMO_R, chess.BISHOP: PROMO_B, chess.KNIGHT: PROMO_N}


def code_to_move(code: int, chess960: bool = False) -> chess.Move:
    """The python-chess Move of a move code (a shared object: do not mutate). Standard castling
    (slot 5) gives Move(e1, g1) etc., or king-takes-rook Move(e1, h1) etc. when `chess960`; a
    Chess960 castling code (slot 0, king takes rook) gives Move(king, rook)."""
    code = int(code)
    if chess960 and code >= CASTLE:
        return MOVES[(code >> 6 & 63) * 64 + _CORNER_OF[code]]
    return MOVES[code]


def move_to_code(board: chess.Board, move: chess.Move) -> int:
    """Code of a legal python-chess move of `board` (standard or Chess960). On a Chess960 board
    castling is king-takes-rook (slot 0; a standard-form e1g1 is read as python-chess's
    `_to_chess960` does); on a standard board castling is slot 5, king to the g/c file."""
    f, t = move.from_square, move.to_square
    if move.promotion is not None:
        return _PROMO_SLOT[move.promotion] + f * 64 + t
    if board.is_castling(move):
        own_rook = board.rooks & board.occupied_co[board.turn] & chess.BB_SQUARES[t]
        if board.chess960:
            if not own_rook and f in (chess.E1, chess.E8) and abs(t - f) == 2:
                t = f + 3 if t > f else f - 4  # e1g1 -> e1h1, e1c1 -> e1a1
            return f * 64 + t
        return CASTLE + f * 64 + (f & 56) + (6 if t > f else 2)
    return f * 64 + t


def board_from_arrays(bbs, black: bool, ep_file: int, rule50: int) -> chess.Board:
    """A python-chess board (no castling rights, no move stack) of a position in the search's
    arrays: what the tablebase probes read."""
    b = chess.Board.empty()
    v = [int(x) for x in bbs]
    b.pawns, b.knights, b.bishops = v[0] | v[6], v[1] | v[7], v[2] | v[8]
    b.rooks, b.queens, b.kings = v[3] | v[9], v[4] | v[10], v[5] | v[11]
    b.occupied_co[chess.WHITE] = v[0] | v[1] | v[2] | v[3] | v[4] | v[5]
    b.occupied_co[chess.BLACK] = v[6] | v[7] | v[8] | v[9] | v[10] | v[11]
    b.occupied = b.occupied_co[chess.WHITE] | b.occupied_co[chess.BLACK]
    b.turn = chess.BLACK if black else chess.WHITE
    b.castling_rights = chess.BB_EMPTY
    b.ep_square = None if ep_file < 0 else ep_file + (16 if black else 40)
    b.halfmove_clock = int(rule50)
    return b
