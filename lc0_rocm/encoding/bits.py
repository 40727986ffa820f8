"""Bit tricks on 64-bit boards for compiled code in two layers (lc0's `trivial` backend and the search's
tablebase check): numba functions, compiled into their callers (and cached with them, under the callers' own cache
locators, so nothing is written beside this file). Imported only where numba is wanted."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(nogil=True)  # no cache of its own: its code is kept in its callers' caches
def popcount(x):
    """The number of set bits of a uint64 (Kernighan's loop: one pass per set bit)."""
    n = 0
    while x:
        x &= x - np.uint64(1)
        n += 1
    return n
