"""Encode histories into lc0's 112 input planes (PackedPlanes) for every input format.

Input formats (lc0 `NetworkFormat.InputFormat`): 1 CLASSICAL_112_PLANE, 2 WITH_CASTLING_PLANE,
3 WITH_CANONICALIZATION, 4 ..._HECTOPLIES, 132 ..._HECTOPLIES_ARMAGEDDON, 5 ..._V2,
133 ..._V2_ARMAGEDDON. Layout and rules: lc0's `src/neural/encoder.cc: EncodePositionForNN` (bit-exact
with lc0 0.32.1, checked by tests/test_encoding_oracle.py):

* planes 13*i + k, history slot i = 0..7 (0 = now), k = 0..5 our P N B R Q K, 6..11 theirs,
  12 repetition; every slot is drawn in the CURRENT side to move's frame (ranks flipped when black
  is to move, "ours" = the current side to move);
* aux planes 104..111 (castling, side to move / en passant, rule 50, armageddon, all ones);
* history walk with FillEmptyHistory `no` / `fen_only` (lc0's default) / `always`, canonical
  formats' early stops, V2's "repeated positions only" and the en-passant undo in synthesized slots;
* canonical formats (>= 3) choose a transform (Flip / Mirror / Transpose) for the current board and
  apply it to planes 0..108; `PackedPlanes.transforms` carries it for reading the policy.

One deliberate difference: for V2 formats, FillEmptyHistory fen_only/always and a game whose first
position has rule50 > 0 and no repeated positions, lc0 0.32.1 loops past the start of the history and
crashes (`EncodePositionForNN` reads history index -1); here the history walk simply stops there.
"""

from __future__ import annotations

from typing import Iterable, Union

import chess
import numpy as np

from ..errors import NetFormatError
from .history import History
from .packed import NUM_PLANES, PackedPlanes
from .transforms import FLIP, MASK64, MIRROR, TRANSPOSE, reverse_bytes, transform_bitboard, transform_bitboards

INPUT_FORMATS = (1, 2, 3, 4, 5, 132, 133)
FILL_MODES = ("no", "fen_only", "always")  # lc0's FillEmptyHistory values
FILL_CODES = {mode: code for code, mode in enumerate(FILL_MODES)}  # the compiled encoder's codes
AUX = 104

_CANONICAL = {f: f >= 3 for f in INPUT_FORMATS}
_HECTO = {f: f >= 4 for f in INPUT_FORMATS}
_ARMAGEDDON = {f: f in (132, 133) for f in INPUT_FORMATS}
_V2 = {f: f in (5, 133) for f in INPUT_FORMATS}

HistoryLike = Union[History, chess.Board]


def _check(input_format: int, fill: str) -> None:
    if input_format not in _CANONICAL:
        raise NetFormatError(f"unsupported input format {input_format} (supported: {', '.join(map(str, INPUT_FORMATS))})")
    if fill not in FILL_MODES:
        raise ValueError(f"fill must be one of {FILL_MODES}, got {fill!r}")


def _castling_files(castling: int, king_sq: int, rank: int) -> tuple[int, int]:
    """(queenside rook file or -1, kingside rook file or -1) of one side's rights on `rank`."""
    qs = ks = -1
    bits = (castling >> (8 * rank)) & 0xFF
    kf = king_sq & 7 if king_sq is not None else 4
    for f in range(8):
        if bits >> f & 1:
            if f < kf:
                qs = f
            elif f > kf:
                ks = f
    return qs, ks


def _compare_transposing(value: int, t: int) -> int:
    if t & FLIP:
        value = transform_bitboard(value, FLIP)
    if t & MIRROR:
        value = reverse_bytes(value)
    alt = transform_bitboard(value, TRANSPOSE)
    return -1 if value < alt else (1 if value > alt else 0)


def choose_transform(masks: np.ndarray, castling: int) -> int:
    """lc0's ChooseTransform (§6.4) from the current position's 12 piece masks (STM frame)."""
    if castling:
        return 0
    m = masks[:12].tolist()
    king = m[5]
    t = 0
    if king & 0x0F0F0F0F0F0F0F0F:
        t |= FLIP
        king = transform_bitboard(king, FLIP)
    if m[0] | m[6]:
        return t
    if king & 0xFFFFFFFF00000000:
        t |= MIRROR
        king = reverse_bytes(king)
    if king & 0xE0C08000:
        t |= TRANSPOSE
    elif king & 0x10204080:
        ours = m[0] | m[1] | m[2] | m[3] | m[4] | m[5]
        theirs = m[6] | m[7] | m[8] | m[9] | m[10] | m[11]
        for v in (ours | theirs, ours, m[5] | m[11], m[4] | m[10], m[3] | m[9], m[1] | m[7], m[2] | m[8]):
            c = _compare_transposing(v, t)
            if c < 0:
                return t
            if c > 0:
                return t | TRANSPOSE
    return t


def _encode_into(history: History, input_format: int, fill: str, masks: np.ndarray, values: np.ndarray) -> int:
    """Write one position's 112 planes into `masks`/`values` (1-D views); return the transform."""
    last = history.last
    first = history.first
    black = last.black_to_move
    canonical = _CANONICAL[input_format]

    # ---- aux planes (current position)
    castling = last.castling
    if castling:
        wk = last.bbs[5]
        bk = last.bbs[11]
        wq, wks = _castling_files(castling, wk.bit_length() - 1 if wk else None, 0)
        bq, bks = _castling_files(castling, bk.bit_length() - 1 if bk else None, 7)
        oq, ok_, tq, tk = (bq, bks, wq, wks) if black else (wq, wks, bq, bks)
        if input_format == 1:
            if oq >= 0:
                masks[AUX + 0] = MASK64
            if ok_ >= 0:
                masks[AUX + 1] = MASK64
            if tq >= 0:
                masks[AUX + 2] = MASK64
            if tk >= 0:
                masks[AUX + 3] = MASK64
        else:
            masks[AUX + 0] = (1 << oq if oq >= 0 else 0) | (1 << (56 + tq) if tq >= 0 else 0)
            masks[AUX + 1] = (1 << ok_ if ok_ >= 0 else 0) | (1 << (56 + tk) if tk >= 0 else 0)
    if canonical:
        if last.ep_file >= 0:
            masks[AUX + 4] = 1 << (56 + last.ep_file)
    elif black:
        masks[AUX + 4] = MASK64
    masks[AUX + 5] = MASK64
    values[AUX + 5] = np.float32(last.rule50) / np.float32(100.0) if _HECTO[input_format] else last.rule50
    if _ARMAGEDDON[input_format] and black:
        masks[AUX + 6] = MASK64
    masks[AUX + 7] = MASK64

    # ---- history planes
    v2 = _V2[input_format]
    no_fill = fill == "no"
    fen_only_start = fill == "fen_only" and first.is_startpos_board
    last_castling = last.castling
    node = last
    idx = last.index
    i = 0
    while i < 8:
        pos = node if idx >= 0 else first
        if canonical:
            if pos.castling != last_castling:
                break
            if idx != last.index and pos.ep_file >= 0:
                break
        if idx < 0:
            if no_fill and (idx < -1 or pos.ep_file < 0):
                break
            if fen_only_start:
                break
        if v2 and i > 0 and pos.repetitions == 0:
            # lc0 0.32.1 never stops here for idx < 0 (it crashes; see the module doc); nothing can repeat there.
            if pos.rule50 == 0 or idx < 0:
                break
            idx -= 1
            node = node.prev if idx >= 0 else None
            continue
        base = 13 * i
        masks[base:base + 13] = pos.frame(black)
        if idx < 0 and pos.ep_file >= 0:
            # Synthesized copy of a first position reached by a double push: undo that push.
            f = pos.ep_file
            pusher_white = pos.black_to_move
            src, dst = (24 + f, 8 + f) if pusher_white else (32 + f, 48 + f)
            if black:
                src ^= 56
                dst ^= 56
            k = base + (0 if pusher_white != black else 6)
            masks[k] = (int(masks[k]) + (1 << dst) - (1 << src)) & MASK64
        if canonical and pos.rule50 == 0:
            break
        i += 1
        idx -= 1
        node = node.prev if idx >= 0 else None

    if not canonical:
        return 0
    t = choose_transform(masks, last_castling)
    if t:
        masks[:AUX + 5] = transform_bitboards(masks[:AUX + 5], t)
    return t


def _as_history(h: HistoryLike) -> History:
    if isinstance(h, History):
        return h
    if isinstance(h, chess.Board):
        return History.from_board(h)
    raise TypeError(f"expected a History or chess.Board, got {type(h).__name__}")


def encode_positions(histories: Iterable[HistoryLike], input_format: int, fill: str = "fen_only") -> PackedPlanes:
    """Encode a batch of histories (or python-chess boards with their move stacks)."""
    _check(input_format, fill)
    hs = [_as_history(h) for h in histories]
    n = len(hs)
    masks = np.zeros((n, NUM_PLANES), dtype=np.uint64)
    values = np.ones((n, NUM_PLANES), dtype=np.float32)
    transforms = np.zeros(n, dtype=np.int32)
    for j, h in enumerate(hs):
        transforms[j] = _encode_into(h, input_format, fill, masks[j], values[j])
    return PackedPlanes(masks, values, transforms)


def encode_position(history: HistoryLike, input_format: int, fill: str = "fen_only") -> PackedPlanes:
    """Encode one history (a batch of 1)."""
    return encode_positions([history], input_format, fill)

