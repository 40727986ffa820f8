"""Board symmetries used by canonical input formats: Flip, Mirror, Transpose on squares and bitboards.

A transform is an int with bits 1 = Flip (files a<->h), 2 = Mirror (ranks 1<->8) and 4 = Transpose
(reflection across the a8-h1 anti-diagonal: file f, rank r -> file 7-r, rank 7-f). When several bits
are set they are applied in the order Flip, Mirror, Transpose (lc0's order, `src/neural/encoder.cc: TransformForPosition`, `EncodePositionForNN`).

Squares are 0..63 with a1 = 0, h1 = 7, a8 = 56; bit i of a bitboard is square i. Bitboards are
python ints (scalar path) or numpy uint64 arrays (vectorised path). Everything here is derived from
the square maps `square_map(t)`; the bitboard routines just permute bits with precomputed tables.
"""

from __future__ import annotations

import numpy as np

FLIP = 1
MIRROR = 2
TRANSPOSE = 4
MASK64 = (1 << 64) - 1


def _flip(sq: int) -> int:
    return sq ^ 7


def _mirror(sq: int) -> int:
    return sq ^ 56


def _transpose(sq: int) -> int:
    f, r = sq & 7, sq >> 3
    return (7 - f) * 8 + (7 - r)


def transform_square(sq: int, t: int) -> int:
    """Image of square `sq` under transform `t` (Flip, then Mirror, then Transpose)."""
    if t & FLIP:
        sq = _flip(sq)
    if t & MIRROR:
        sq = _mirror(sq)
    if t & TRANSPOSE:
        sq = _transpose(sq)
    return sq


def inverse_transform(t: int) -> int:
    """The transform undoing `t`. Without Transpose every transform is its own inverse; with it,
    the inverse is Transpose followed by the swapped Flip/Mirror bits (T^-1 = 4 | swap(1, 2))."""
    if not t & TRANSPOSE:
        return t
    return TRANSPOSE | (MIRROR if t & FLIP else 0) | (FLIP if t & MIRROR else 0)


SQUARE_MAPS: tuple[tuple[int, ...], ...] = tuple(
    tuple(transform_square(s, t) for s in range(64)) for t in range(8)
)


def square_map(t: int) -> tuple[int, ...]:
    """`square_map(t)[s]` = image of square s under t."""
    return SQUARE_MAPS[t]


def _byte_tables(smap) -> list[list[int]]:
    """tables[k][b] = bitboard image of byte value b placed at byte k (rank k)."""
    tables = []
    for k in range(8):
        row = []
        for b in range(256):
            v = 0
            for i in range(8):
                if b >> i & 1:
                    v |= 1 << smap[8 * k + i]
            row.append(v)
        tables.append(row)
    return tables


_BYTE_TABLES = [None] + [_byte_tables(SQUARE_MAPS[t]) for t in range(1, 8)]
# Same tables as numpy [8, 256] uint64 arrays for the vectorised path.
_NP_TABLES = [None] + [np.array(_BYTE_TABLES[t], dtype=np.uint64) for t in range(1, 8)]
_RANKS = np.arange(8)
# Bit reversal of a byte (= Flip of one rank).
_REV8 = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.uint8)


def transform_bitboard(bb: int, t: int) -> int:
    """Apply transform `t` to one bitboard given as a python int."""
    if t == 0 or bb == 0 or bb == MASK64:
        return bb
    tab = _BYTE_TABLES[t]
    b = bb.to_bytes(8, "little")
    return (
        tab[0][b[0]] | tab[1][b[1]] | tab[2][b[2]] | tab[3][b[3]]
        | tab[4][b[4]] | tab[5][b[5]] | tab[6][b[6]] | tab[7][b[7]]
    )


def transform_bitboards(arr: np.ndarray, t: int) -> np.ndarray:
    """Apply transform `t` to every element of a uint64 array (returns a new array)."""
    arr = np.ascontiguousarray(arr, dtype=np.uint64)
    if t == 0:
        return arr.copy()
    if arr.dtype.byteorder == ">" or (arr.dtype.byteorder == "=" and np.little_endian is False):
        raise NotImplementedError("big-endian hosts are not supported")  # pragma: no cover
    flat = arr.reshape(-1)
    if t & FLIP:
        flat = _REV8[flat.view(np.uint8)].view(np.uint64)
    if t & MIRROR:
        flat = flat.byteswap()
    if t & TRANSPOSE:
        by = flat.view(np.uint8).reshape(-1, 8)
        flat = np.bitwise_or.reduce(_NP_TABLES[TRANSPOSE][_RANKS, by], axis=1)
    return flat.reshape(arr.shape)


def reverse_bytes(bb: int) -> int:
    """Mirror ranks of a python-int bitboard (byte swap)."""
    return int.from_bytes(bb.to_bytes(8, "little"), "big")
