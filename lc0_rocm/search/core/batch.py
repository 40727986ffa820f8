"""The arrays one minibatch is gathered into and the counters the compiled search keeps.

`BatchArrays` holds the leaves picked for the network (node, depth, cache key, legal move codes,
input planes, canonical transform, side to move, tablebase mark) and, with OutOfOrderEval off, the
terminals and cache hits lc0 keeps in the minibatch to back up with it (the d* arrays). The worker's
counters live in one int64 array `stats`, indexed by the S_* constants. Shared by the picking
(search/core/pick.py), extension (search/core/extend.py), backup (search/core/backup.py) and gathering
(search/core/worker.py) modules.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...encoding.packed import NUM_PLANES

MAX_MOVES = 256  # room for the legal moves of any position (at most 218)
INT_MAX = 2**31 - 1

# counters the worker keeps (int64 array `stats`)
(S_PLAYOUTS, S_CUM_DEPTH, S_MAX_DEPTH, S_NN_EVALS, S_CACHE_HITS, S_COLLISIONS, S_DESCENTS, S_REVERTED,
 S_IN_FLIGHT, S_BATCHES, S_OOO) = range(11)
STATS_SIZE = 16

# the stop flags the compiled gathering reads (int32 array `stop`): F_STOP, the user's `stop`, set
# by Search.stop() alone and never cleared; F_HALT, the end of a round of the search threads (the
# stoppers or an error), set by them and cleared by the search's own thread before it starts the
# next round's. Two words, so that clearing a round's halt can never erase a `stop`.
F_STOP, F_HALT = 0, 1
FLAGS_SIZE = 2

BatchArrays = namedtuple("BatchArrays", ["node", "depth", "key", "ncodes", "codes", "masks", "values",
                                         "transform", "black", "tb",
                                         "dnode", "ddepth", "dkind", "dval", "dpos", "dcount"])
# BatchArrays.d*: with OutOfOrderEval off, the batch's terminals and cache hits (lc0 keeps them in the
# minibatch and backs them up with it, in pick order): node, depth, kind (0 terminal, 1 cache hit),
# (q, d, m) of a cache hit, and `dpos`, the number of network rows picked before it; dcount[0] of them
# BatchArrays.tb: 0 a plain leaf; TB_PENDING a tablebase candidate (the search probes it between
# gathering and applying); TB_RESULT + r a proven one, r = -1/0/+1 for the side to move
TB_PENDING, TB_RESULT = 1, 3


def new_batch(capacity: int, masks: np.ndarray | None = None, values: np.ndarray | None = None) -> BatchArrays:
    """Arrays for one batch of `capacity` leaves; `masks`/`values` may be the backend's own (pinned)
    input buffers, which the encoder then fills directly."""
    cap = max(1, int(capacity))
    if masks is None:
        masks = np.zeros((cap, NUM_PLANES), dtype=np.uint64)
    if values is None:
        values = np.ones((cap, NUM_PLANES), dtype=np.float32)
    return BatchArrays(node=np.zeros(cap, np.int32), depth=np.zeros(cap, np.int32), key=np.zeros(cap, np.uint64),
                       ncodes=np.zeros(cap, np.int32), codes=np.zeros((cap, MAX_MOVES), np.int16),
                       masks=masks, values=values, transform=np.zeros(cap, np.int32), black=np.zeros(cap, np.int32),
                       tb=np.zeros(cap, np.int8), dnode=np.zeros(cap, np.int64), ddepth=np.zeros(cap, np.int64),
                       dkind=np.zeros(cap, np.int64), dval=np.zeros((cap, 3), np.float64),
                       dpos=np.zeros(cap, np.int64), dcount=np.zeros(1, np.int64))
