"""One batch's round trip through a captured network, from compiled code: copy in, two graph launches,
copy out, wait — the GPU part of a search thread's compiled batch cycle (search/core/cycle.py).

A search thread that owns a network runner alone (lc0's multi-stream way: one stream, one workspace,
one set of graphs per search thread) describes it to compiled code as one int64 array, `lane`
(backends/gpu_lanes.py `CompiledLane` fills it), with the L_* words below: the HIP entry
points (lc0_rocm/ccall.py), the runner's compute stream, an event, the pinned buffers, the workspace's
input, policy and heads, and per run size the two captured graphs (parts A and B of the forward pass).
`round_trip` then queues, on that one stream:

    pinned input --H2D--> workspace input; graph A (body, policy head); graph B (value, moves left);
    workspace policy --D2H--> pinned output; workspace heads --D2H--> after it; event record; wait

and returns 0, or the failing call's hipError_t (the call's index in `lane[L_FAILED]`), or NO_GRAPH when
the batch's run size has no captured graphs yet (Python then runs that batch the eager way, which
captures them: search/compiled_lanes.py). The thread waits for its own batch in hipEventSynchronize
with the GIL released; the staging buffers and three streams of `GpuNetwork.submit` are not needed,
because nothing else uses the runner while the thread waits.

`gather_policy` then takes each position's legal moves' logits from the pinned rows in the cycle's
compact form (search/core/cycle.py).

Pinned layouts (as GpuNetwork's slots): input = masks uint64 [rs, 112] then values float32 [rs, 112];
output = policy float32 [rs, 1858] then heads float32 [rs, 5] (W, D, L, Q, M), rs = the run size.
"""

from __future__ import annotations

import numpy as np

from ..ccall import ccall
from ..encoding.outputs import POLICY_SIZE
from ..encoding.packed import NUM_PLANES
from ..jit import jit

# lane words: HIP entry points (HIP_ENTRY_POINTS's order), then handles and pointers
HIP_ENTRY_POINTS = ("hipMemcpyHtoDAsync", "hipMemcpyDtoHAsync", "hipGraphLaunch", "hipEventRecord",
                    "hipEventSynchronize")
L_H2D, L_D2H, L_LAUNCH, L_RECORD, L_SYNC = 0, 1, 2, 3, 4
L_STREAM, L_EVENT = 5, 6
L_PIN_IN, L_PIN_OUT, L_WS_IN, L_WS_POLICY, L_WS_HEADS = 7, 8, 9, 10, 11
L_WDL, L_MAX_BATCH = 12, 13
L_STATUS, L_FAILED = 14, 15  # written: the last failing call's status and its index (C_* below)
L_RUN_SIZE = 16  # lane[L_RUN_SIZE + n], n = 1..max_batch: the run size of a batch of n
# then lane[graphs_at(lane) + 2 * rs] and [... + 1]: graph A and graph B of run size rs (0: none yet)
C_H2D, C_GRAPH_A, C_GRAPH_B, C_D2H_POLICY, C_D2H_HEADS, C_RECORD, C_SYNC = range(7)
CALL_NAMES = ("hipMemcpyHtoDAsync", "hipGraphLaunch", "hipGraphLaunch", "hipMemcpyDtoHAsync",
              "hipMemcpyDtoHAsync", "hipEventRecord", "hipEventSynchronize")
NO_GRAPH = -1

IN_WORDS = NUM_PLANES + NUM_PLANES // 2  # uint64 words per position: 112 masks, 112 float32 values
HEADS = 5


def lane_size(max_batch: int) -> int:
    """Words of a lane array for batches of up to `max_batch`."""
    return L_RUN_SIZE + max_batch + 1 + 2 * (max_batch + 1)


@jit
def graphs_at(lane):
    return L_RUN_SIZE + lane[L_MAX_BATCH] + 1


@jit
def _failed(lane, status, call):
    lane[L_STATUS] = status
    lane[L_FAILED] = call
    return status


@jit
def round_trip(lane, pin_in, pin_out, masks, values, n, q, d, m):
    """Evaluate the first `n` positions of masks/values [*, 112] on the lane's runner: the policy stays
    in `pin_out` (rows 0..n-1 of its first rs * 1858 floats), q, d, m[:n] are written from the heads.
    `pin_in`: the pinned input as uint64; `pin_out`: the pinned output as float32. Returns 0, a
    hipError_t, or NO_GRAPH (nothing queued)."""
    rs = lane[L_RUN_SIZE + n]
    at = graphs_at(lane)
    graph_a = lane[at + 2 * rs]
    graph_b = lane[at + 2 * rs + 1]
    if graph_a == 0 or graph_b == 0:
        return NO_GRAPH
    vals = pin_in.view(np.float32)  # the values start after the rs * 112 masks: float32 index rs * 224
    at_vals = rs * NUM_PLANES * 2
    for j in range(n):
        for p in range(NUM_PLANES):
            pin_in[j * NUM_PLANES + p] = masks[j, p]
            vals[at_vals + j * NUM_PLANES + p] = values[j, p]
    s = lane[L_STREAM]
    policy_bytes = rs * POLICY_SIZE * 4
    st = ccall(lane[L_H2D], lane[L_WS_IN], lane[L_PIN_IN], np.int64(rs * IN_WORDS * 8), s)
    if st != 0:
        return _failed(lane, st, C_H2D)
    st = ccall(lane[L_LAUNCH], graph_a, s)
    if st != 0:
        return _failed(lane, st, C_GRAPH_A)
    st = ccall(lane[L_LAUNCH], graph_b, s)
    if st != 0:
        return _failed(lane, st, C_GRAPH_B)
    st = ccall(lane[L_D2H], lane[L_PIN_OUT], lane[L_WS_POLICY], np.int64(policy_bytes), s)
    if st != 0:
        return _failed(lane, st, C_D2H_POLICY)
    st = ccall(lane[L_D2H], lane[L_PIN_OUT] + policy_bytes, lane[L_WS_HEADS], np.int64(rs * HEADS * 4), s)
    if st != 0:
        return _failed(lane, st, C_D2H_HEADS)
    st = ccall(lane[L_RECORD], lane[L_EVENT], s)
    if st != 0:
        return _failed(lane, st, C_RECORD)
    st = ccall(lane[L_SYNC], lane[L_EVENT])
    if st != 0:
        return _failed(lane, st, C_SYNC)
    heads = rs * POLICY_SIZE
    wdl = lane[L_WDL] != 0
    for j in range(n):
        h = heads + j * HEADS
        q[j] = pin_out[h + 3]
        d[j] = pin_out[h + 1] if wdl else np.float32(0.0)
        m[j] = pin_out[h + 4]
    return 0


@jit
def gather_policy(pin_out, n, want, nwant, policy):
    """Row j's logits at the indices want[j, :nwant[j]] (its legal moves') from the pinned [rs, 1858]
    rows into policy[j, :nwant[j]], the search cycle's compact form; the whole row where nwant[j] < 0."""
    for j in range(n):
        at = j * POLICY_SIZE
        if nwant[j] < 0:
            for i in range(POLICY_SIZE):
                policy[j, i] = pin_out[at + i]
        else:
            for k in range(nwant[j]):
                policy[j, k] = pin_out[at + want[j, k]]
