"""The NN cache: network evaluations by position key, as compiled code reads and writes them.

lc0 keeps a fixed-capacity hash-keyed cache of evaluations (`src/neural/cache.cc` and the backend
wrapper's `CachingBackend`): a node whose position was evaluated before needs no network call. Here
an entry is the key (a 64-bit hash of the network input, or of the last few positions), Q, D, M
and the priors of the legal moves: for each, its index in the move generator's order and its prior
in lc0's 16-bit packed form (`Edge::SetP`), sorted high to low as the node's edges are. Entries
live in a 4-way set-associative table (an insert replaces the oldest of four slots); the priors in
a ring buffer that overwrites the oldest data, an entry whose data was overwritten reads as a miss.
Capacity is in positions (`NNCacheSize`). The table starts small and doubles (entries re-inserted)
while it is more than half full, up to that capacity: a fresh cache touches little memory (the
first touch of fresh pages, not the lookups, was the cost of a large table allocated at once).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...jit import jit
from .prefetch import prefetch

CacheArrays = namedtuple("CacheArrays", ["keys", "qdm", "count", "pos", "order", "prior", "meta"])
# meta: [0] ring write position (absolute), [1] ring size, [2] slot mask (-1: cache off), [3] entries stored
AVG_MOVES = 48  # ring room per position: more than the legal moves of a typical position
WAYS = 4
FIRST_SLOTS = 1 << 12


def _slots_for(size: int) -> int:
    slots = 1
    while slots < size:
        slots *= 2
    return slots


def new_cache(size: int, slots: int = FIRST_SLOTS) -> CacheArrays:
    """A cache for `size` positions (0: off) with `slots` slots to start with."""
    size = max(0, int(size))
    slots = min(_slots_for(size), slots) if size > 0 else 1
    ring = max(256, min(size, slots) * AVG_MOVES)
    return CacheArrays(
        keys=np.zeros(slots, dtype=np.uint64), qdm=np.zeros((slots, 3), dtype=np.float32),
        count=np.zeros(slots, dtype=np.int16), pos=np.zeros(slots, dtype=np.int64),
        order=np.zeros(ring, dtype=np.uint8), prior=np.zeros(ring, dtype=np.uint16),
        meta=np.array([0, ring, slots - 1 if size > 0 else -1, 0], dtype=np.int64))


@jit
def copy_entries(src, dst):
    """Re-insert every live entry of `src` into `dst`."""
    head = src.meta[0]
    ring = src.meta[1]
    for s in range(len(src.keys)):
        p = src.pos[s]
        if p != 0 and p - 1 >= head - ring:
            off = (p - 1) % ring
            cnt = src.count[s]
            store(dst, src.keys[s], src.qdm[s, 0], src.qdm[s, 1], src.qdm[s, 2], cnt, src.order[off:off + cnt],
                  src.prior[off:off + cnt])


@jit
def prefetch_slot(c, key):
    """Start loading the lines `lookup` and `store` of `key` read first (its first slot's position and
    key, Q/D/M and count), so that a lookup a few hundred cycles later finds them in the CPU's caches
    (the table is megabytes, each probe a miss)."""
    mask = c.meta[2]
    if mask < 0:
        return
    s = np.int64(key & np.uint64(0x7FFFFFFFFFFFFFFF)) & mask
    prefetch(c.pos, s)
    prefetch(c.keys, s)
    prefetch(c.count, s)
    prefetch(c.qdm[s], 0)


@jit
def lookup(c, key):
    """Slot of `key`, or -1."""
    mask = c.meta[2]
    if mask < 0:
        return -1
    head = c.meta[0]
    ring = c.meta[1]
    h = np.int64(key & np.uint64(0x7FFFFFFFFFFFFFFF))
    for w in range(WAYS):
        s = (h + w) & mask
        p = c.pos[s]
        if p != 0 and c.keys[s] == key:
            if p - 1 >= head - ring:
                return s
            return -1
    return -1


@jit
def store(c, key, q, d, m, count, order, packed):
    """Insert an evaluation: `order[k]`, `packed[k]` (k < count) the generator index and packed prior
    of the k-th best move."""
    mask = c.meta[2]
    if mask < 0:
        return
    ring = c.meta[1]
    head = c.meta[0]
    h = np.int64(key & np.uint64(0x7FFFFFFFFFFFFFFF))
    slot = -1
    oldest = -1
    oldest_pos = np.int64(1) << 62
    for w in range(WAYS):
        s = (h + w) & mask
        p = c.pos[s]
        if p == 0 or c.keys[s] == key or p - 1 < head - ring:
            slot = s
            break
        if p < oldest_pos:
            oldest_pos = p
            oldest = s
    if slot < 0:
        slot = oldest
    if c.pos[slot] == 0:
        c.meta[3] += 1
    start = head
    if start % ring + count > ring:
        start = (start // ring + 1) * ring
    off = start % ring
    for k in range(count):
        c.order[off + k] = order[k]
        c.prior[off + k] = packed[k]
    c.meta[0] = start + count
    c.keys[slot] = key
    c.qdm[slot, 0] = q
    c.qdm[slot, 1] = d
    c.qdm[slot, 2] = m
    c.count[slot] = count
    c.pos[slot] = start + 1


@jit
def entry_offset(c, slot):
    """Ring offset of a stored entry's move data."""
    return (c.pos[slot] - 1) % c.meta[1]


class NNCache:
    """The cache's arrays and its size (`NNCacheSize`, in positions)."""

    def __init__(self, size: int = 2_000_000):
        self.size = max(0, int(size))
        self.arrays = new_cache(self.size)

    @property
    def slot_limit(self) -> int:
        """The table's slots at full size (it doubles up to them)."""
        return _slots_for(self.size)

    def make_room(self, new_entries: int) -> None:
        """Double the table (up to the capacity) while `new_entries` more would fill it over half (what
        search/core/cycle.py's `has_room` tests: nothing to do when it holds)."""
        a = self.arrays
        if a.meta[2] < 0:  # the cache is off
            return
        slots = len(a.keys)
        limit = _slots_for(self.size)
        while slots < limit and 2 * (int(a.meta[3]) + new_entries) > slots:
            slots *= 2
        if slots == len(a.keys):
            return
        bigger = new_cache(self.size, slots)
        copy_entries(a, bigger)
        self.arrays = bigger

    def clear(self) -> None:
        self.arrays = new_cache(self.size)

    def resize(self, size: int) -> None:
        if max(0, int(size)) != self.size:
            self.size = max(0, int(size))
            self.clear()

    def __len__(self) -> int:
        return int(min(self.arrays.meta[3], self.size))
