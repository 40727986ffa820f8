"""One search thread's whole batch cycle in one compiled call (Threads > 1 with a compiled evaluation).

With a backend whose evaluation is compiled (lc0's random and trivial: backends/compiled_eval.py), a
search thread never needs Python between batches: `run_lane` gathers a batch on the shared tree
(`shared_worker.gather_shared`: picks, extension, encoding), evaluates it (`compiled_eval.evaluate`,
the backend's kernel picked by its kind), expands and backs it up (`shared_worker.apply_shared`), and
goes on, with the GIL released, until it has to return (RC_*):

  RC_STOP   a stop flag (batch.F_STOP, the user's; F_HALT, the round's end) is set;
  RC_ROOM   the tree's rows or edges or the NN cache's table need room for the threads' next batches
            (the same test as the search's `Gate`, which then grows them while no thread is inside);
  RC_WORK   the pick's collision list needs more room (the caller doubles it);
  RC_NODES  `go nodes` is reached: every visit it allows is in the tree or held in flight
            (ExactNodeLimit's reservation), or without that option the root has the visits;
  RC_IDLE   the tree had nothing for this thread for a while (everything left is in flight);
  RC_EVAL   the evaluation of the batch just gathered did not happen in compiled code (a GPU lane,
            backends/compiled_eval.py KIND_GPU): its run size has no captured graphs yet (status
            NO_GRAPH: Python evaluates it the eager way, which captures them, and applies it), or a HIP
            call failed (a hipError_t: Python takes its visits back and raises the typed error). The
            batch (held[H_COUNT] positions, status held[H_STATUS]) is still in flight, the thread's own.

Apart from RC_EVAL it returns only between batches, with nothing of its own in flight. Python (search/compiled_lanes.py)
starts the threads, asks the stoppers, sends the info lines, and sets F_HALT; the counters it reads
are the ones core/tree.py's concurrency table lists (the stats words, the root report under the lock).
"""

from __future__ import annotations

import math

import numpy as np

from ...backends.compiled_eval import KIND_GPU, evaluate
from ...jit import jit
from . import counters as ct
from .batch import S_IN_FLIGHT
from .counters import K_EVAL, K_EXPAND, K_IDLE, K_TOTAL, N_BATCHES, N_IDLE, N_POSITIONS
from .packed_params import P_CV_END, P_CV_MAX, P_CV_POWER, P_CV_START, P_EXACT_LIMIT
from .backup import expand_range
from .shared_worker import apply_shared, back_up_shared, gather_shared, team_extend
from .spinlock import yield_core
from .team import J_EXPAND, J_EXTEND, J_QUIT, J_ROWS, TM_ARG, TM_HELPERS, TM_JOB, TM_TOTAL, claim, done, finish, \
    post, quit_team, wait_job
from .tree import M_ETOP, M_ROOT, M_TOP
from .worker import stopped

RC_STOP, RC_ROOM, RC_WORK, RC_NODES, RC_IDLE, RC_EVAL = 0, 1, 2, 3, 4, 5
H_COUNT, H_STATUS, HELD_SIZE = 0, 1, 2  # held: RC_EVAL's batch
# ctl, published by Python's watcher and read every batch: the stoppers' remaining playouts (smart
# pruning) and `go nodes` (a ponderhit changes it while the threads run)
C_REMAINING, C_NODE_LIMIT, CTL_SIZE = 0, 1, 4
R_ROWS, R_EDGES, R_ENTRIES, R_SLOTS, ROOM_SIZE = 0, 1, 2, 3, 4  # room: what the threads' next batches need
ROW_CHUNK = 16  # batch rows a task worker claims at a time (search/core/team.py)
IDLE_ROUNDS = 64  # empty gatherings in a row (the core yielded after each) before RC_IDLE


@jit
def collision_budget(p, nodes):
    """lc0's CalculateCollisionsLeft (`src/search/classic/search.cc`, with its Mix), the search's one
    (Python's gathering calls it too): 1 up to P_CV_START root visits (`nodes`, an int64 in lc0),
    P_CV_MAX from P_CV_END, a power curve between, in lc0's float32 arithmetic, rounded half up."""
    start = p[P_CV_START]
    end = p[P_CV_END]
    if nodes >= end:
        return int(p[P_CV_MAX])
    if nodes <= start:
        return 1
    f32 = np.float32
    ratio = (f32(np.int64(nodes)) - f32(start)) / f32(end - start)
    curve = f32(np.float64(ratio) ** np.float64(f32(p[P_CV_POWER])))  # powf, as std::pow of two floats
    mixed = f32(1.0) + f32(p[P_CV_MAX] - 1) * curve
    return int(math.floor(np.float64(mixed) + 0.5))


@jit
def has_room(t, c, room):
    """Whether the tree and the NN cache hold every thread's next batch (`room`: R_*); the search's one
    test (search/lanes.py's Gate asks it through search.py's `_lanes_have_room`; NNCache.make_room
    grows the table exactly when its cache half fails)."""
    if t.meta[M_TOP] + room[R_ROWS] > len(t.n) or t.meta[M_ETOP] + room[R_EDGES] > len(t.e_code):
        return False
    slots = len(c.keys)
    return c.meta[2] < 0 or slots >= room[R_SLOTS] or 2 * (c.meta[3] + room[R_ENTRIES]) <= slots


@jit
def policy_wanted(b, lo, hi, idx_tab, fixed, want, nwant, policy):
    """The policy indices of row j's legal moves (what `backup.priors` reads) into want[j, :nwant[j]],
    rows lo .. hi-1; with a backend whose policy is one fixed row (`fixed`, CompiledEval.policy_row;
    empty if none) their logits into policy[j, :nwant[j]] too (`evaluate` writes the others' there)."""
    for j in range(lo, hi):
        row = b.black[j] * 8 + b.transform[j]
        m = b.ncodes[j]
        nwant[j] = m
        for k in range(m):
            want[j, k] = idx_tab[row, b.codes[j, k]]
        if len(fixed) > 0:
            for k in range(m):
                policy[j, k] = fixed[want[j, k]]


@jit
def run_lane(t, s, p, c, b, puct_tab, allowed, use_allowed, ctl, cap, max_ooo, stop, w, w2, edge_n,
             rep, lk, clk, idx_tab, kind, ev_ints, ev_words, ev_floats, fixed, want, nwant, policy, q, d, m,
             has_mlh, room, held, ctr, tm):
    """Batches of one search thread on the shared tree until it must return (see the module docstring);
    returns the RC_* code. `policy` [rows, MAX_MOVES], `q`, `d`, `m`: the thread's output buffers for
    `evaluate` (kind, ev_*, fixed: the backend's CompiledEval; m read when `has_mlh`), the policy
    compact: row j's logits of its legal moves in generator order; `want`/`nwant` [rows, MAX_MOVES]/
    [rows] its scratch for their policy indices; `held` [HELD_SIZE] int64: RC_EVAL's batch; `ctr`
    the thread's cycle counters (search/core/counters.py; empty: off); `tm` its team word
    (search/core/team.py): its task workers (`run_helper`, started on the same arrays) return with it."""
    t_in = ct.start(ctr)
    rc = _run_lane(t, s, p, c, b, puct_tab, allowed, use_allowed, ctl, cap, max_ooo, stop, w, w2, edge_n, rep, lk,
                   clk, idx_tab, kind, ev_ints, ev_words, ev_floats, fixed, want, nwant, policy, q, d, m, has_mlh,
                   room, held, ctr, tm)
    quit_team(tm)
    ct.tick(ctr, K_TOTAL, t_in)
    return rc


@jit
def _run_lane(t, s, p, c, b, puct_tab, allowed, use_allowed, ctl, cap, max_ooo, stop, w, w2, edge_n,
              rep, lk, clk, idx_tab, kind, ev_ints, ev_words, ev_floats, fixed, want, nwant, policy, q, d, m,
              has_mlh, room, held, ctr, tm):
    root = t.meta[M_ROOT]
    exact = p[P_EXACT_LIMIT] != 0.0
    idle = 0
    while True:
        if stopped(stop):
            return RC_STOP
        if not has_room(t, c, room):
            return RC_ROOM
        remaining = ctl[C_REMAINING]
        node_limit = np.int64(ctl[C_NODE_LIMIT])
        collisions_left = collision_budget(p, min(float(t.n[root]), remaining))
        if len(w.kept_node) < collisions_left + 2:
            return RC_WORK
        n_cap = cap
        if exact:
            n_cap = min(cap, node_limit - t.n[root] - s[S_IN_FLIGHT])
        elif t.n[root] >= node_limit:
            n_cap = 0
        if n_cap <= 0:
            return RC_NODES
        count = gather_shared(t, s, p, c, b, puct_tab, allowed, use_allowed, remaining, n_cap, max_ooo,
                              collisions_left, node_limit, stop, w, edge_n, rep, lk, clk, ctr, tm)
        if count > 0:
            te = ct.start(ctr)
            if tm[TM_HELPERS] > 0 and kind != KIND_GPU and count > ROW_CHUNK:  # the team: chunks of rows each
                post(tm, J_ROWS, count, 0)
                team_rows(t, p, c, b, count, idx_tab, kind, ev_ints, ev_words, ev_floats, fixed, want, nwant,
                          policy, q, d, m, has_mlh, w2, clk, tm)
                finish(tm)
                ct.tick(ctr, K_EVAL, te)  # the rows' expansion with their evaluation (K_EXPAND none)
                ct.add(ctr, N_BATCHES, 1)
                ct.add(ctr, N_POSITIONS, count)
                back_up_shared(t, s, p, b, count, q, d, m, has_mlh, allowed, use_allowed, edge_n, rep, lk, ctr,
                               ct.start(ctr))
                idle = 0
                continue
            policy_wanted(b, 0, count, idx_tab, fixed, want, nwant, policy)
            status = evaluate(kind, ev_ints, ev_words, ev_floats, b.masks, b.values, 0, count, want, nwant, policy,
                              q, d, m)
            ct.tick(ctr, K_EVAL, te)
            ct.add(ctr, N_BATCHES, 1)
            ct.add(ctr, N_POSITIONS, count)
            if status != 0:
                held[H_COUNT] = count
                held[H_STATUS] = status
                return RC_EVAL
            if tm[TM_HELPERS] > 0 and count > ROW_CHUNK:  # a GPU's outputs: the team expands the rows
                tx = ct.start(ctr)
                post(tm, J_EXPAND, count, 0)
                team_expand(t, p, c, b, count, idx_tab, policy, q, d, m, has_mlh, w2, clk, tm)
                finish(tm)
                back_up_shared(t, s, p, b, count, q, d, m, has_mlh, allowed, use_allowed, edge_n, rep, lk, ctr,
                               ct.tick(ctr, K_EXPAND, tx))
                idle = 0
                continue
        if count > 0 or b.dcount[0] > 0:
            apply_shared(t, s, p, c, b, count, policy, q, d, m, has_mlh, idx_tab, True, w2, allowed, use_allowed,
                         edge_n, rep, lk, clk, ctr)
            idle = 0
            continue
        idle += 1  # nothing to pick (or only out-of-order visits): the others hold the tree's leaves
        if idle >= IDLE_ROUNDS:
            return RC_IDLE
        ti = ct.start(ctr)
        yield_core()
        ct.tick(ctr, K_IDLE, ti)
        ct.add(ctr, N_IDLE, 1)


@jit
def team_rows(t, p, c, b, count, idx_tab, kind, ev_ints, ev_words, ev_floats, fixed, want, nwant, policy, q, d, m,
              has_mlh, w2, clk, tm):
    """A team member's share of a host kernel's batch (job J_ROWS): chunks of ROW_CHUNK rows claimed
    until none is left, each one's policy indices, evaluation and expansion (`w2`: the member's own)."""
    while True:
        lo = claim(tm, ROW_CHUNK)
        if lo >= count:
            return
        hi = min(lo + ROW_CHUNK, count)
        policy_wanted(b, lo, hi, idx_tab, fixed, want, nwant, policy)
        evaluate(kind, ev_ints, ev_words, ev_floats, b.masks, b.values, lo, hi, want, nwant, policy, q, d, m)
        expand_range(t, c, p, b, lo, hi, policy, q, d, m, has_mlh, idx_tab, True, w2, clk)


@jit
def team_expand(t, p, c, b, count, idx_tab, policy, q, d, m, has_mlh, w2, clk, tm):
    """A team member's share of a GPU batch's expansion (job J_EXPAND), as `team_rows`."""
    while True:
        lo = claim(tm, ROW_CHUNK)
        if lo >= count:
            return
        expand_range(t, c, p, b, lo, min(lo + ROW_CHUNK, count), policy, q, d, m, has_mlh, idx_tab, True, w2, clk)


@jit
def run_helper(t, p, c, b, w, idx_tab, kind, ev_ints, ev_words, ev_floats, fixed, want, nwant, policy, q, d, m,
               has_mlh, w2, clk, tm, seen):
    """A task worker of the search thread whose team word is `tm` (search/core/team.py), on that thread's
    arrays (its batch `b`, work `w`, outputs), with an expansion scratch `w2` of its own: takes part in
    every job posted after epoch `seen` until the leader's `quit_team`. The GIL stays released."""
    root = t.meta[M_ROOT]
    while True:
        seen = wait_job(tm, seen)
        job = tm[TM_JOB]
        if job == J_QUIT:
            return
        total = tm[TM_TOTAL]
        if job == J_EXTEND:
            team_extend(t, p, c, b, root, total, tm[TM_ARG], w, tm)
        elif job == J_ROWS:
            team_rows(t, p, c, b, total, idx_tab, kind, ev_ints, ev_words, ev_floats, fixed, want, nwant, policy,
                      q, d, m, has_mlh, w2, clk, tm)
        elif job == J_EXPAND:
            team_expand(t, p, c, b, total, idx_tab, policy, q, d, m, has_mlh, w2, clk, tm)
        done(tm)
