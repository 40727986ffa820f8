"""The search's encoder: one leaf's 112 input planes assembled as raw bytes, for the common cases.

`encoding.planes` is the general encoder (every input format, fill mode and transform). A search
encodes a leaf per playout, so this module builds the same row faster: the history planes are the
positions' cached `frame_bytes` joined, the auxiliary planes a packed tail, and the row is written
into the batch's mask buffer with one memory copy. It covers the non-V2 input formats (1, 2, 3, 4, 132)
including the history slots before the first position that FillEmptyHistory fills with copies of it,
and, for the canonical formats, the identity and Flip transforms (every position with pawns).
Anything else (V2 formats, a synthesized copy that must undo a double push, pawnless canonical
positions) returns None and the caller uses
`encoding.planes.encode_position_into`. tests/test_fast_encode.py checks it byte for byte against it.
"""

from __future__ import annotations

import struct
from typing import Optional

import numpy as np

from ..encoding.history import MASK64, PositionState
from ..encoding.planes import AUX, _castling_files

_ZERO_FRAME = bytes(13 * 8)
_ZERO_FRAMES = [bytes(13 * 8 * k) for k in range(9)]
_FLIP_BYTES = bytes(int(f"{b:08b}"[::-1], 2) for b in range(256))  # Flip = reverse the bits of each rank
_PACK5 = struct.Struct("<5Q")
_TAIL = {(arm, blk): struct.pack("<3Q", MASK64, MASK64 if (arm and blk) else 0, MASK64)
         for arm in (False, True) for blk in (False, True)}  # planes 109..111
_FILES_A_D = 0x0F0F0F0F0F0F0F0F
_CANONICAL = {1: False, 2: False, 3: True, 4: True, 132: True}
_HECTO = {1: False, 2: False, 3: False, 4: True, 132: True}
_ARMAGEDDON = {1: False, 2: False, 3: False, 4: False, 132: True}


def _swap(x: int) -> int:
    return int.from_bytes(x.to_bytes(8, "little"), "big")


def encode_row(last: PositionState, first: PositionState, input_format: int, fill: str) -> Optional[tuple]:
    """(896 mask bytes, rule-50 plane value, transform) of the position `last`, or None when the
    general encoder is needed."""
    canonical = _CANONICAL.get(input_format)
    if canonical is None:
        return None  # V2 formats
    black = last.black_to_move
    castling = last.castling
    # ---- history planes (the walk of encoding.planes._encode_into without synthesized slots)
    frames = []
    node = last
    i = 0
    while i < 8:
        if node is None:  # before the first position: stop, or leave it to the general encoder
            if canonical and (first.castling != castling or first.ep_file >= 0):
                break
            if fill == "no" and first.ep_file < 0:
                break
            if fill == "fen_only" and first.is_startpos_board:
                break
            if first.ep_file >= 0:
                return None  # a synthesized copy undoes the first position's double push
            fb = first.frame_bytes(black)  # synthesized copies of the first position fill the rest
            while i < 8:
                frames.append(fb)
                i += 1
                if canonical and first.rule50 == 0:
                    break
            break
        if canonical:
            if node.castling != castling:
                break
            if node is not last and node.ep_file >= 0:
                break
        frames.append(node.frame_bytes(black))
        if canonical and node.rule50 == 0:
            break
        i += 1
        node = node.prev
    # ---- auxiliary planes 104..108
    a0 = a1 = a2 = a3 = 0
    if castling:
        wk, bk = last.bbs[5], last.bbs[11]
        wq, wks = _castling_files(castling, wk.bit_length() - 1 if wk else None, 0)
        bq, bks = _castling_files(castling, bk.bit_length() - 1 if bk else None, 7)
        oq, ok_, tq, tk = (bq, bks, wq, wks) if black else (wq, wks, bq, bks)
        if input_format == 1:
            a0 = MASK64 if oq >= 0 else 0
            a1 = MASK64 if ok_ >= 0 else 0
            a2 = MASK64 if tq >= 0 else 0
            a3 = MASK64 if tk >= 0 else 0
        else:
            a0 = (1 << oq if oq >= 0 else 0) | (1 << (56 + tq) if tq >= 0 else 0)
            a1 = (1 << ok_ if ok_ >= 0 else 0) | (1 << (56 + tk) if tk >= 0 else 0)
    if canonical:
        a4 = 1 << (56 + last.ep_file) if last.ep_file >= 0 else 0
    else:
        a4 = MASK64 if black else 0
    head = b"".join(frames) + _ZERO_FRAMES[8 - len(frames)] + _PACK5.pack(a0, a1, a2, a3, a4)
    # ---- canonical transform (lc0's ChooseTransform) for positions with pawns
    t = 0
    if canonical and not castling:
        bbs = last.bbs
        if not (bbs[0] | bbs[6]):
            return None  # pawnless: Mirror / Transpose may apply
        king = bbs[11] if black else bbs[5]
        if black:
            king = _swap(king)
        if king & _FILES_A_D:
            t = 1
            head = head.translate(_FLIP_BYTES)
    rule50 = float(np.float32(last.rule50) / np.float32(100.0)) if _HECTO[input_format] else float(last.rule50)
    return head + _TAIL[(_ARMAGEDDON[input_format], black)], rule50, t
