"""Cycle counters of one search thread's compiled batch cycle (search/core/cycle.py): where its time goes.

Each compiled thread may be given an int64 array `ctr` of CTR_SIZE (an empty one: no counting, no
clock read). The cycle adds, per phase, the CPU's time-stamp counter cycles spent in it (K_*), and
counts (N_*), cumulatively over the thread's calls of a search; Python reads them after (or during)
the search (search/compiled_lanes.py `CompiledLanes.counters`, tools/search_bench.py --counters).
A phase's cycles run from the end of the previous phase's stamp to its own (`tick`), so one clock
read closes one phase and opens the next; K_TOTAL is the whole time inside `run_lane`, and what no
phase claims (room and stop tests, the collision budget, yields) is K_TOTAL minus their sum.

The clock is LLVM's `readcyclecounter` (x86: rdtsc, ~20-40 cycles, invariant across cores on current
CPUs), an intrinsic without an address, so the on-disk cache keeps the compiled search valid;
`cycles_per_second` (Python) converts.
"""

from __future__ import annotations

import time

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ...jit import jit

# cycles, per phase of the batch cycle
K_TOTAL = 0  # inside run_lane, from call to return
K_PICK = 1  # the descents (no lock): best edge, root skip, pick_nodes, first visits marked
K_WAIT = 2  # waiting for the tree's lock word (shared or exclusive), the taking included
K_EXTEND = 3  # first visits' node-local work, no lock: position, legal moves, terminal rules, cache probe, planes
K_COMMIT = 4  # leaves committed, collisions kept and taken back; out-of-order backups (under the lock)
K_EVAL = 5  # the backend's compiled evaluation (policy indices wanted, the kernel)
K_EXPAND = 6  # leaves expanded, no tree lock: priors, edges, cache store
K_BACKUP = 7  # under the exclusive lock: the batch's values up the tree, the root's report
# counts
N_PLAYOUTS = 8  # visits backed up by this thread (one per backup: the root's n grows by their sum)
N_COLLISIONS = 9  # collision visits kept (and taken back) by this thread's gatherings
N_BATCHES = 10  # batches evaluated
N_POSITIONS = 11  # positions (batch rows) evaluated
N_PICKS = 12  # descents (pick_nodes calls)
N_LOCKS = 13  # the tree's lock word taken (shared or exclusive)
N_CONTENDED = 14  # ... of them after waiting (at least one spin)
N_SPINS = 15  # spin rounds waited for it (a round: one look at the word, every 64th a yield or a sleep)
K_IDLE = 16  # cycles: the core yielded after a gathering that found nothing (the others hold every leaf)
N_IDLE = 17  # ... how often
CTR_SIZE = 24

PHASES = (("pick", K_PICK), ("wait", K_WAIT), ("extend", K_EXTEND), ("commit", K_COMMIT), ("eval", K_EVAL),
          ("expand", K_EXPAND), ("backup", K_BACKUP), ("idle", K_IDLE))  # every phase's cycles, in cycle order


@intrinsic
def _readcyclecounter(typingctx):
    """LLVM's llvm.readcyclecounter: the CPU's time-stamp counter (int64)."""
    sig = types.int64()

    def codegen(context, builder, signature, args):
        fnty = ir.FunctionType(ir.IntType(64), [])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.readcyclecounter")
        return builder.call(fn, [])

    return sig, codegen


@jit
def now():
    """The time-stamp counter, in cycles."""
    return _readcyclecounter()


@jit
def start(ctr):
    """A first stamp (0 when `ctr` is empty: counting off)."""
    if len(ctr) == 0:
        return 0
    return _readcyclecounter()


@jit
def tick(ctr, k, t0):
    """Phase k took the cycles since stamp t0: added to ctr[k]; returns the new stamp."""
    if len(ctr) == 0:
        return 0
    t = _readcyclecounter()
    ctr[k] += t - t0
    return t


@jit
def add(ctr, k, value):
    """ctr[k] += value (nothing when counting is off)."""
    if len(ctr) > 0:
        ctr[k] += value


@jit
def waited(ctr, spins):
    """One taking of the tree's lock word that spun `spins` rounds."""
    if len(ctr) > 0:
        ctr[N_LOCKS] += 1
        ctr[N_SPINS] += spins
        if spins > 0:
            ctr[N_CONTENDED] += 1


def cycles_per_second(seconds: float = 0.05) -> float:
    """The counter's rate, measured against the wall clock over `seconds`; each end the tightest of a
    few stamps bracketed by the wall clock (a thread preempted between the two reads would skew it)."""
    def stamp():
        best = None
        for _ in range(5):
            a = time.perf_counter()
            c = now()
            b = time.perf_counter()
            if best is None or b - a < best[0]:
                best = (b - a, c, (a + b) / 2)
        return best[1], best[2]

    c0, t0 = stamp()
    time.sleep(seconds)
    c1, t1 = stamp()
    return (c1 - c0) / (t1 - t0)
