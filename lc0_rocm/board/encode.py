"""The compiled input-plane encoder (the search's and analyse's): one position's 112 planes from numpy arrays.

The search keeps every position (the game's positions before the root and every tree node) as rows
of flat arrays chained by `parent`; `encode` walks that chain from a leaf and writes the leaf's 112
(mask, value) planes straight into a batch row, with numba and without Python objects, for every
input format (1, 2, 3, 4, 5, 132, 133) and FillEmptyHistory mode (0 no, 1 fen_only, 2 always). It is
a port, bit for bit, of the general encoder `encoding.planes._encode_into` (`choose_transform`,
`_castling_files`, `_compare_transposing`, `transforms.transform_bitboards` and
`history.PositionState.frame`), which reproduces lc0 0.32.1's `src/neural/encoder.cc:
EncodePositionForNN` (history walk, auxiliary planes) and `ChooseTransform` (canonical formats);
the repetition counts come precomputed in `reps` (lc0's `Position::GetRepetitions`).
tests/test_encode.py checks it against that encoder on every position of many games, for every
format and fill mode. `input_hash` is the NN-cache key of an encoded input (XXH64 of the 112 masks
plus one word holding the rule-50 value, side to move and en-passant file).
"""

from __future__ import annotations

import numpy as np

from ..encoding.packed import NUM_PLANES
from ..encoding.planes import AUX, FILL_CODES
from ..encoding.transforms import FLIP, MASK64, MIRROR, TRANSPOSE
from ..jit import jit
from .rules import msb

FILL_NO, FILL_FEN_ONLY, FILL_ALWAYS = FILL_CODES["no"], FILL_CODES["fen_only"], FILL_CODES["always"]

_ALL = np.uint64(MASK64)
_Z = np.uint64(0)
_ONE = np.uint64(1)
_FILES_A_D = np.uint64(0x0F0F0F0F0F0F0F0F)
_RANKS_5_8 = np.uint64(0xFFFFFFFF00000000)
_TRI_TRANSPOSE = np.uint64(0xE0C08000)  # king squares (after Flip/Mirror) below the a8-h1 diagonal
_DIAG_A8H1 = np.uint64(0x10204080)  # king squares on that diagonal (within ranks 1-4, files e-h)
_M8 = np.uint64(0xFF)


@jit
def _flip(x):
    """Flip (files a<->h): reverse the bits of every byte."""
    k1 = np.uint64(0x5555555555555555)
    k2 = np.uint64(0x3333333333333333)
    k4 = np.uint64(0x0F0F0F0F0F0F0F0F)
    x = ((x >> np.uint64(1)) & k1) | ((x & k1) << np.uint64(1))
    x = ((x >> np.uint64(2)) & k2) | ((x & k2) << np.uint64(2))
    return ((x >> np.uint64(4)) & k4) | ((x & k4) << np.uint64(4))


@jit
def _mirror(x):
    """Mirror (ranks 1<->8): reverse the bytes."""
    k8 = np.uint64(0x00FF00FF00FF00FF)
    k16 = np.uint64(0x0000FFFF0000FFFF)
    x = ((x >> np.uint64(8)) & k8) | ((x & k8) << np.uint64(8))
    x = ((x >> np.uint64(16)) & k16) | ((x & k16) << np.uint64(16))
    return (x >> np.uint64(32)) | (x << np.uint64(32))


@jit
def _transpose(x):
    """Transpose: reflect across the a8-h1 diagonal (file f, rank r -> file 7-r, rank 7-f)."""
    k1 = np.uint64(0xAA00AA00AA00AA00)
    k2 = np.uint64(0xCCCC0000CCCC0000)
    k4 = np.uint64(0xF0F0F0F00F0F0F0F)
    t = x ^ (x << np.uint64(36))
    x ^= k4 & (t ^ (x >> np.uint64(36)))
    t = k2 & (x ^ (x << np.uint64(18)))
    x ^= t ^ (t >> np.uint64(18))
    t = k1 & (x ^ (x << np.uint64(9)))
    x ^= t ^ (t >> np.uint64(9))
    return x


@jit
def transform_bitboard(x, t):
    """Transform `t` (bits 1 Flip, 2 Mirror, 4 Transpose, applied in that order) of a uint64
    bitboard, as `encoding.transforms.transform_bitboard`."""
    x = np.uint64(x)
    if t & FLIP:
        x = _flip(x)
    if t & MIRROR:
        x = _mirror(x)
    if t & TRANSPOSE:
        x = _transpose(x)
    return x


@jit
def _castling_files(castling, king, rank):
    """(queenside rook file or -1, kingside rook file or -1) of one side's rights on `rank`
    (`encoding.planes._castling_files`; the king's file is 4 when it has no king)."""
    qs = -1
    ks = -1
    bits = (castling >> np.uint64(8 * rank)) & _M8
    kf = (msb(king) & 7) if king else 4
    for f in range(8):
        if (bits >> np.uint64(f)) & _ONE:
            if f < kf:
                qs = f
            elif f > kf:
                ks = f
    return qs, ks


@jit
def _rook_bits(own, their):
    """One castling plane (formats >= 2): our rook file on rank 1, theirs on rank 8."""
    m = _Z
    if own >= 0:
        m |= _ONE << np.uint64(own)
    if their >= 0:
        m |= _ONE << np.uint64(56 + their)
    return m


@jit
def _compare_transposing(value, t):
    """`encoding.planes._compare_transposing` (lc0's ChooseTransform tie-break)."""
    if t & FLIP:
        value = _flip(value)
    if t & MIRROR:
        value = _mirror(value)
    alt = _transpose(value)
    if value < alt:
        return -1
    if value > alt:
        return 1
    return 0


@jit
def choose_transform(masks, castling):
    """lc0's ChooseTransform (`src/neural/encoder.cc`) from the current position's 12 piece masks
    (planes 0..11, side to move's frame), as `encoding.planes.choose_transform`."""
    if castling:
        return 0
    king = masks[5]
    t = 0
    if king & _FILES_A_D:
        t |= FLIP
        king = _flip(king)
    if masks[0] | masks[6]:
        return t
    if king & _RANKS_5_8:
        t |= MIRROR
        king = _mirror(king)
    if king & _TRI_TRANSPOSE:
        t |= TRANSPOSE
    elif king & _DIAG_A8H1:
        ours = masks[0] | masks[1] | masks[2] | masks[3] | masks[4] | masks[5]
        theirs = masks[6] | masks[7] | masks[8] | masks[9] | masks[10] | masks[11]
        for k in range(7):
            if k == 0:
                v = ours | theirs
            elif k == 1:
                v = ours
            elif k == 2:
                v = masks[5] | masks[11]
            elif k == 3:
                v = masks[4] | masks[10]
            elif k == 4:
                v = masks[3] | masks[9]
            elif k == 5:
                v = masks[1] | masks[7]
            else:
                v = masks[2] | masks[8]
            c = _compare_transposing(v, t)
            if c < 0:
                return t
            if c > 0:
                return t | TRANSPOSE
    return t


@jit
def encode(node, parent, bbs, castling, black, ep_file, rule50, reps, first_is_startpos,
           input_format, fill, masks, values):
    """Write position `node`'s 112 planes into `masks` (uint64[112]) and `values` (float32[112]),
    both fully overwritten; return the canonical transform (0 for formats 1, 2).

    Arrays, one row per position: `parent` int32 (-1 for the game's first position), `bbs`
    uint64[N, 12] (wP wN wB wR wQ wK bP bN bB bR bQ bK), `castling` uint64 (python-chess rook
    squares), `black` uint8, `ep_file` int8 (lc0's flag, -1 none), `rule50` int16, `reps` int8.
    `first_is_startpos`: the game's first position is lc0's start board. `fill`: 0 no,
    1 fen_only, 2 always. Nothing is validated (format and fill must be supported ones).
    """
    _history_planes(node, parent, bbs, castling, black, ep_file, rule50, reps, first_is_startpos, input_format,
                    fill, masks)
    _aux_planes(node, bbs, castling, black, ep_file, rule50, input_format, masks, values)
    if input_format < 3:
        return 0
    # Canonical formats: ChooseTransform on the current board, applied to planes 0..108.
    t = choose_transform(masks, castling[node])
    if t:
        for j in range(AUX + 5):
            x = masks[j]
            if x != _Z and x != _ALL:
                masks[j] = transform_bitboard(x, t)
    return t


@jit
def _history_planes(node, parent, bbs, castling, black, ep_file, rule50, reps, first_is_startpos, input_format,
                    fill, masks):
    """Planes 0..103 of `encode` (arguments as there)."""
    bl = black[node] != 0
    canonical = input_format >= 3
    v2 = input_format == 5 or input_format == 133
    last_castling = castling[node]
    # ---- history planes 0..103: EncodePositionForNN's history loop (encoder.cc), slot i = 13
    # planes of the position i plies back in the current side to move's frame; FillEmptyHistory
    # copies of the first position; canonical formats stop at a castling change, an older en-passant
    # flag or after rule50 == 0; V2 keeps only repeated positions in the older slots.
    no_fill = fill == FILL_NO
    fen_only_start = fill == FILL_FEN_ONLY and first_is_startpos
    cur = node  # the position of history index idx (-1 once idx < 0)
    first = node  # the game's first position, known once cur has walked past it
    steps = 0  # last.index - idx
    over = 0  # -idx while cur < 0
    i = 0
    written = 0  # history slots written
    while i < 8:
        pos = cur if cur >= 0 else first
        if canonical:
            if castling[pos] != last_castling:
                break
            if steps != 0 and ep_file[pos] >= 0:
                break
        if cur < 0:
            if no_fill and (over > 1 or ep_file[pos] < 0):
                break
            if fen_only_start:
                break
        if v2 and i > 0 and reps[pos] == 0:
            # V2: only repeated positions fill the older slots (lc0 0.32.1 crashes for cur < 0).
            if rule50[pos] == 0 or cur < 0:
                break
            steps += 1
            p = parent[cur]
            if p < 0:
                first = cur
                over = 1
            cur = p
            continue
        base = 13 * i
        written = i + 1
        if bl:  # black to move: black's pieces are ours, ranks mirrored
            for k in range(6):
                masks[base + k] = _mirror(bbs[pos, 6 + k])
                masks[base + 6 + k] = _mirror(bbs[pos, k])
        else:
            for k in range(12):
                masks[base + k] = bbs[pos, k]
        masks[base + 12] = _ALL if reps[pos] >= 1 else _Z
        if cur < 0 and ep_file[pos] >= 0:
            # Synthesized copy of a first position reached by a double push: undo that push.
            f = ep_file[pos]
            pusher_white = black[pos] != 0
            if pusher_white:
                src = 24 + f
                dst = 8 + f
            else:
                src = 32 + f
                dst = 48 + f
            if bl:
                src ^= 56
                dst ^= 56
            k = base + (0 if pusher_white != bl else 6)
            masks[k] = masks[k] + (_ONE << np.uint64(dst)) - (_ONE << np.uint64(src))
        if canonical and rule50[pos] == 0:
            break
        i += 1
        steps += 1
        if cur >= 0:
            p = parent[cur]
            if p < 0:
                first = cur
            cur = p
        if cur < 0:
            over += 1
    for j in range(13 * written, AUX):  # slots the walk did not reach
        masks[j] = _Z


@jit
def _aux_planes(node, bbs, castling, black, ep_file, rule50, input_format, masks, values):
    """Planes 104..111 of `encode` (arguments as there), and every plane's value."""
    bl = black[node] != 0
    canonical = input_format >= 3
    hecto = input_format >= 4
    armageddon = input_format == 132 or input_format == 133
    last_castling = castling[node]
    # ---- auxiliary planes 104..111 (EncodePositionForNN): castling (all ones per right for format
    # 1, rook files on ranks 1/8 otherwise), side to move or en passant, rule 50, armageddon, ones.
    a0 = _Z
    a1 = _Z
    a2 = _Z
    a3 = _Z
    if last_castling:
        wq, wks = _castling_files(last_castling, bbs[node, 5], 0)
        bq, bks = _castling_files(last_castling, bbs[node, 11], 7)
        if bl:
            oq, ok_, tq, tk = bq, bks, wq, wks
        else:
            oq, ok_, tq, tk = wq, wks, bq, bks
        if input_format == 1:
            a0 = _ALL if oq >= 0 else _Z
            a1 = _ALL if ok_ >= 0 else _Z
            a2 = _ALL if tq >= 0 else _Z
            a3 = _ALL if tk >= 0 else _Z
        else:
            a0 = _rook_bits(oq, tq)
            a1 = _rook_bits(ok_, tk)
    masks[AUX + 0] = a0
    masks[AUX + 1] = a1
    masks[AUX + 2] = a2
    masks[AUX + 3] = a3
    if canonical:
        ep = ep_file[node]
        masks[AUX + 4] = (_ONE << np.uint64(56 + ep)) if ep >= 0 else _Z
    else:
        masks[AUX + 4] = _ALL if bl else _Z
    masks[AUX + 5] = _ALL
    masks[AUX + 6] = _ALL if (armageddon and bl) else _Z
    masks[AUX + 7] = _ALL
    for j in range(NUM_PLANES):
        values[j] = np.float32(1.0)
    if hecto:
        values[AUX + 5] = np.float32(rule50[node]) / np.float32(100.0)
    else:
        values[AUX + 5] = np.float32(rule50[node])


_P1 = np.uint64(11400714785074694791)
_P2 = np.uint64(14029467366897019727)
_P3 = np.uint64(1609587929392839161)
_P4 = np.uint64(9650029242287828579)


@jit
def _rotl(x, r):
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


@jit
def _round(acc, w):
    return _rotl(acc + w * _P2, 31) * _P1


@jit
def _merge(h, v):
    return (h ^ _round(_Z, v)) * _P1 + _P4


@jit
def input_hash(masks, values, black, ep_file):
    """NN-cache key of one encoded input: XXH64 (seed 0) of the 904 little-endian bytes of the 112
    masks followed by one word = float32 bits of plane 109's value | side to move << 32 |
    (ep_file + 1) << 33. The other 111 values are always 1.0 and the transform is not part of the
    key: two positions that are images of each other under a canonical transform share it."""
    ext = np.uint64(values.view(np.uint32)[AUX + 5])
    ext |= np.uint64(1 if black else 0) << np.uint64(32)
    ext |= np.uint64((np.int64(ep_file) + 1) & 0xFF) << np.uint64(33)
    v1 = _P1 + _P2
    v2 = _P2
    v3 = _Z
    v4 = _Z - _P1
    for j in range(0, NUM_PLANES, 4):  # 28 stripes of 32 bytes
        v1 = _round(v1, masks[j])
        v2 = _round(v2, masks[j + 1])
        v3 = _round(v3, masks[j + 2])
        v4 = _round(v4, masks[j + 3])
    h = _rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)
    h = _merge(h, v1)
    h = _merge(h, v2)
    h = _merge(h, v3)
    h = _merge(h, v4)
    h += np.uint64(8 * (NUM_PLANES + 1))
    h ^= _round(_Z, ext)  # the 8-byte tail
    h = _rotl(h, 27) * _P1 + _P4
    h ^= h >> np.uint64(33)
    h *= _P2
    h ^= h >> np.uint64(29)
    h *= _P3
    h ^= h >> np.uint64(32)
    return h


@jit
def encode_copies(n, node, parent, bbs, castling, black, ep_file, rule50, reps, first_is_startpos,
                  input_format, fill, masks, values, transforms):
    """Encode position `node` into rows 0..n-1 (each row encoded, not copied: what lc0's
    backendbench times for a batch of n copies)."""
    for j in range(n):
        transforms[j] = encode(node, parent, bbs, castling, black, ep_file, rule50, reps, first_is_startpos,
                               input_format, fill, masks[j], values[j])
