"""lc0's position-encoding table kPosEncoding, the 64 extra input columns of PE_MAP attention bodies.

lc0 writes the table out in `src/neural/tables/attention_policy_map.h` (`kPosEncoding`); we generate it
by its rule: entry [s, t] is -1 when t == s, +1 when t is reachable from s by a queen or knight move on
an empty board, 0 otherwise.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

_STEPS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))
_KNIGHT = ((1, 2), (2, 1), (2, -1), (1, -2), (-1, -2), (-2, -1), (-2, 1), (-1, 2))


@lru_cache(maxsize=None)
def pos_encoding_table() -> np.ndarray:
    """kPosEncoding as float32 [64 squares, 64 values] (read-only)."""
    table = np.zeros((64, 64), dtype=np.float32)
    for s in range(64):
        f0, r0 = s % 8, s // 8
        table[s, s] = -1
        for df, dr in _STEPS:
            f, r = f0 + df, r0 + dr
            while 0 <= f < 8 and 0 <= r < 8:
                table[s, r * 8 + f] = 1
                f, r = f + df, r + dr
        for df, dr in _KNIGHT:
            f, r = f0 + df, r0 + dr
            if 0 <= f < 8 and 0 <= r < 8:
                table[s, r * 8 + f] = 1
    table.setflags(write=False)
    return table
