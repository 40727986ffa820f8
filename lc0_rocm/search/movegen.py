"""Legal moves and make-move on `PositionState` bitboards, without python-chess boards (search hot path).

The search needs, for every new leaf, its position (the parent's plus one move) and the legal
moves of that position with their policy indices. python-chess would need a `Board` per leaf (a
copy plus pushes, ~20 µs) and its generic legal-move generator (~2 µs per move); this module does
the same on the twelve absolute bitboards a `PositionState` already holds:

* `child_state(state, move)`: the `PositionState` after a legal move (castling rights, lc0's
  en-passant flag, rule-50 and repetitions exactly as `PositionState.from_board` gives them);
* `legal_moves(state)`: `(moves, indices, in_check)`, the python-chess `Move` objects **in
  python-chess's own generation order** (the search breaks prior ties by that order, so the order
  is part of the search result), their policy indices for transform 0, and whether the side to move
  is in check;
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

import chess

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
_E1, _E8 = chess.E1, chess.E8

# Between squares (exclusive) for every pair, as python-chess's `between`.
_BETWEEN = [[0] * 64 for _ in range(64)]
for _a in range(64):
    for _b in range(64):
        _bb = _RAYS[_a][_b] & ((_ALL << _a) ^ (_ALL << _b))
        _BETWEEN[_a][_b] = _bb & (_bb - 1)
del _a, _b, _bb

# Shared, never-mutated python-chess Move objects: plain moves by from*64+to, promotions by piece.
_MOVE = [chess.Move(a, b) for a in range(64) for b in range(64)]
_PROMOS = (chess.QUEEN, chess.ROOK, chess.BISHOP, chess.KNIGHT)  # python-chess's order
_PROMO_MOVE = {p: {} for p in _PROMOS}
for _a in list(range(8, 16)) + list(range(48, 56)):
    for _b in range(64):
        if abs((_b >> 3) - (_a >> 3)) == 1 and abs((_b & 7) - (_a & 7)) <= 1 and _b >> 3 in (0, 7):
            for _p in _PROMOS:
                _PROMO_MOVE[_p][_a * 64 + _b] = chess.Move(_a, _b, _p)
del _a, _b, _p


def _index_tables(black: bool):
    """(plain[from*64+to], promo[piece][from*64+to]) policy indices for transform 0, absolute squares."""
    plain, promo = _abs_tables(black, 0, False)
    by_piece = {p: {} for p in _PROMOS}
    for (a, b, p), idx in promo.items():
        by_piece[p][a * 64 + b] = idx
    by_piece[chess.KNIGHT] = None  # a knight promotion uses the plain from-to index
    return plain, by_piece


_IDX = (_index_tables(False), _index_tables(True))  # [black to move]
# Castling (python-chess move e1g1 / e1c1 ...) -> policy index of king-takes-rook, per colour.
_CASTLE_IDX = (
    {(_E1, chess.G1): _IDX[0][0][_E1 * 64 + chess.H1], (_E1, chess.C1): _IDX[0][0][_E1 * 64 + chess.A1]},
    {(_E8, chess.G8): _IDX[1][0][_E8 * 64 + chess.H8], (_E8, chess.C8): _IDX[1][0][_E8 * 64 + chess.A8]},
)


def _scan(bb: int):
    """Squares of `bb`, highest first (python-chess's scan_reversed)."""
    while bb:
        r = bb.bit_length() - 1
        yield r
        bb ^= 1 << r


def _attackers(sq: int, occ: int, them_white: bool, P: int, N: int, BQ: int, RQ: int, K: int) -> int:
    """Pieces of the side given by the bitboards (P N BQ RQ K, them) attacking `sq` with occupancy `occ`."""
    return ((_KNIGHT[sq] & N) | (_KING[sq] & K)
            | ((_RANK_A[sq][_RANK_M[sq] & occ] | _FILE_A[sq][_FILE_M[sq] & occ]) & RQ)
            | (_DIAG_A[sq][_DIAG_M[sq] & occ] & BQ)
            | (_PAWN_ATT[not them_white][sq] & P))


def legal_moves(state: PositionState):
    """(moves, policy indices for transform 0, in_check) of the position, in python-chess's order."""
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
    white = not black
    plain, promo_idx = _IDX[black]
    moves: list = []
    idx: list = []
    am = moves.append
    ai = idx.append
    MOVE = _MOVE

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

    def gen_pieces(from_bb: int, to_mask: int) -> None:
        # non-pawn pieces (kings excluded by the caller where needed), highest square first
        while from_bb:
            f = from_bb.bit_length() - 1
            fb = 1 << f
            from_bb ^= fb
            if fb & N:
                t = _KNIGHT[f]
            elif fb & K:
                t = _KING[f]
            else:
                t = 0
                if fb & (R | Q):
                    t = _RANK_A[f][_RANK_M[f] & occ] | _FILE_A[f][_FILE_M[f] & occ]
                if fb & (B | Q):
                    t |= _DIAG_A[f][_DIAG_M[f] & occ]
            t &= ~ours & to_mask
            if fb & K:
                base = f * 64
                while t:
                    s = t.bit_length() - 1
                    t ^= 1 << s
                    if not _attackers(s, occ, black, oP, oN, oBQ, oRQ, oK):
                        am(MOVE[base + s])
                        ai(plain[base + s])
                continue
            if fb & pinned:
                t &= _RAYS[f][king]
            base = f * 64
            while t:
                s = t.bit_length() - 1
                t ^= 1 << s
                am(MOVE[base + s])
                ai(plain[base + s])

    def add_pawn(f: int, s: int) -> None:
        if (1 << s) & _BACKRANK_PROMO:
            k = f * 64 + s
            for p in _PROMOS:
                am(_PROMO_MOVE[p][k])
                table = promo_idx[p]
                ai(plain[k] if table is None else table[k])
        else:
            am(MOVE[f * 64 + s])
            ai(plain[f * 64 + s])

    def gen_pawns(to_mask: int) -> None:
        if not P:
            return
        # captures, by from-square descending
        att = _PAWN_ATT[white]
        fr = P
        while fr:
            f = fr.bit_length() - 1
            fb = 1 << f
            fr ^= fb
            t = att[f] & theirs & to_mask
            if fb & pinned:
                t &= _RAYS[f][king]
            while t:
                s = t.bit_length() - 1
                t ^= 1 << s
                add_pawn(f, s)
        if white:
            single = P << 8 & ~occ
            double = single << 8 & ~occ & _RANK_4
            step = -8
        else:
            single = P >> 8 & ~occ
            double = single >> 8 & ~occ & _RANK_5
            step = 8
        single &= to_mask
        double &= to_mask
        while single:
            s = single.bit_length() - 1
            single ^= 1 << s
            f = s + step
            if (1 << f) & pinned and not _RAYS[f][king] & (1 << s):
                continue
            add_pawn(f, s)
        while double:
            s = double.bit_length() - 1
            double ^= 1 << s
            f = s + 2 * step
            if (1 << f) & pinned and not _RAYS[f][king] & (1 << s):
                continue
            am(MOVE[f * 64 + s])
            ai(plain[f * 64 + s])

    def gen_ep(to_mask: int) -> None:
        ep_file = state.ep_file
        if ep_file < 0:
            return
        ep = (40 if white else 16) + ep_file
        epb = 1 << ep
        if not epb & to_mask or epb & occ:
            return
        capturers = P & _PAWN_ATT[black][ep] & _EP_RANK[black]
        last_double = ep - 8 if white else ep + 8
        while capturers:
            f = capturers.bit_length() - 1
            capturers ^= 1 << f
            if (1 << f) & pinned and not _RAYS[f][king] & epb:
                continue
            # the captured pawn and the capturer leave the rank together: a rook/queen may see the king
            o = (occ & ~(1 << last_double) & ~(1 << f)) | epb
            if (_RANK_A[king][_RANK_M[king] & o] & oRQ) or (_DIAG_A[king][_DIAG_M[king] & o] & oBQ):
                continue
            am(MOVE[f * 64 + ep])
            ai(plain[f * 64 + ep])

    if not checkers:
        gen_pieces(ours & ~P, _ALL)
        castling = state.castling & (_RANK_8 if black else _RANK_1)
        if castling:
            _castles(state, black, K, occ, castling, oP, oN, oBQ, oRQ, oK, am, ai)
        gen_pawns(_ALL)
        gen_ep(_ALL)
        return moves, idx, False

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
            am(MOVE[base + s])
            ai(plain[base + s])
    checker = checkers.bit_length() - 1
    if checkers == 1 << checker:
        target = _BETWEEN[king][checker] | checkers
        gen_pieces(ours & ~P & ~K, target)
        gen_pawns(target)
        gen_ep(target)
        ep_file = state.ep_file
        if ep_file >= 0:
            ep = (40 if white else 16) + ep_file
            if not (1 << ep) & target and (ep - 8 if white else ep + 8) == checker:
                gen_ep(_ALL)
    return moves, idx, True


def _castles(state, black, K, occ, rights, oP, oN, oBQ, oRQ, oK, am, ai) -> None:
    """Castling moves (h-side rook first), python-chess's conditions on standard boards."""
    back = 56 if black else 0
    king_sq = back + 4
    if not K & (1 << king_sq):
        return
    plain_castle = _CASTLE_IDX[black]
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
        am(_MOVE[king_sq * 64 + king_to])
        ai(plain_castle[(king_sq, king_to)])


def child_state(state: PositionState, move: chess.Move) -> PositionState:
    """The position after legal `move` (python-chess form, castling e1g1) as a new PositionState."""
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


def transformed_indices(state: PositionState, moves: list, transform: int) -> list:
    """Policy indices of `moves` (legal in `state`) for a canonical transform != 0."""
    black = state.black_to_move
    plain, promo = _abs_tables(black, transform, False)
    king = state.bbs[11 if black else 5]
    out = []
    for m in moves:
        a, b = m.from_square, m.to_square
        p = m.promotion
        if p is not None and p != chess.KNIGHT:
            out.append(promo[(a, b, p)])
        elif (1 << a) & king and (b - a == 2 or a - b == 2):
            out.append(plain[a * 64 + ((b & ~7) | (7 if b > a else 0))])
        else:
            out.append(plain[a * 64 + b])
    return out
