"""lc0's position-encoding table kPosEncoding, the 64 extra input columns of PE_MAP attention bodies.

lc0 writes the table out in `src/neural/tables/attention_policy_map.h` (`kPosEncoding`); we generate it
by its rule: entry [s, t] is -1 when t == s, +1 when t is reachable from s by a queen or knight move on
an empty board, 0 otherwise. Those are exactly the plain moves of the policy vector
(`policy_map.FROM_TO_INDEX`), so the table is read off it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .policy_map import FROM_TO_INDEX


@lru_cache(maxsize=None)
def pos_encoding_table() -> np.ndarray:
    """kPosEncoding as float32 [64 squares, 64 values] (read-only)."""
    table = (FROM_TO_INDEX.reshape(64, 64) >= 0).astype(np.float32)
    np.fill_diagonal(table, -1)
    table.setflags(write=False)
    return table
