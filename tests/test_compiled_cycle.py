"""The search threads' batch cycle in compiled code (search/core/cycle.py, search/compiled_lanes.py): lc0's
random and trivial backends at 2-4 threads never return to Python between batches.

Truth as in tests/test_shared_tree.py (its invariants, checked with numpy float64 on the tree): `go
nodes` met exactly, nothing left in flight, visits and values consistent, and again after `go infinite`
+ `stop` and on the reused tree; the compiled dispatch gives the outputs of the backends' own
`evaluate` (which tests/test_lc0_test_backends.py checks against lc0's), and the compiled collision
budget (the search's one) is lc0's CalculateCollisionsLeft.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

from lc0_rocm.backends.compiled_eval import evaluate, every_index
from lc0_rocm.backends.factory import create_backend
from lc0_rocm.encoding.planes import encode_positions
from lc0_rocm.encoding.position import parse_position
from lc0_rocm.net.loader import load_net
from lc0_rocm.search.core.cycle import RC_NODES, RC_ROOM, collision_budget
from lc0_rocm.search.leaf_evaluator import LeafEvaluator
from lc0_rocm.search.limits import SearchLimits
from lc0_rocm.search.params import SearchParams
from lc0_rocm.search.tree import NodeTree

from test_shared_tree import KIWIPETE, NET, _check_tree, _search


def _evaluator(backend: str, options: str = "") -> LeafEvaluator:
    b = create_backend(backend, load_net(NET), options)
    return LeafEvaluator(b, b.net.input_format)


@pytest.mark.parametrize("backend", ["random", "trivial"])
@pytest.mark.parametrize("threads,minibatch", [(2, 256), (3, 16), (4, 64)])
def test_the_compiled_cycle_keeps_the_tree(backend, threads, minibatch):
    ev = _evaluator(backend)
    nodes_returns = 0
    for fen in (None, KIWIPETE, "8/5pk1/6p1/3R4/8/6P1/5PK1/2r5 b - - 4 40"):
        s = _search(ev, fen, nodes=5000, threads=threads, minibatch_size=minibatch)
        s.run()
        assert s.error is None, s.error
        assert s.compiled_lanes is not None  # the whole cycle compiled
        nodes_returns += s.compiled_lanes.returns[RC_NODES]
        assert s.root.n == 5000  # exactly (ExactNodeLimit's reservation)
        assert s.bestmove in s.board.legal_moves
        _check_tree(s)
    # the threads came back when `go nodes` was reached; in one search both may instead find the halt
    # the watcher set once the last batches were backed up (a loaded CI machine once did), not in three
    assert nodes_returns >= 1


def test_infinite_stop_and_the_reused_tree():
    """`go infinite` then `stop`: the threads see F_STOP in compiled code; a legal bestmove, the tree
    consistent, and a next search on it (tree reuse, `go nodes`) exact and consistent too."""
    ev = _evaluator("trivial")
    tree = NodeTree()
    s = _search(ev, tree=tree, threads=3, minibatch_size=32, limits=SearchLimits(infinite=True))
    done = threading.Event()
    s.on_bestmove = lambda move, ponder: done.set()
    s.start()
    time.sleep(0.5)
    assert s.running
    s.stop()
    assert done.wait(30) and s.bestmove in s.board.legal_moves
    assert s.compiled_lanes is not None and s.root.n > 0
    _check_tree(s)
    visits = int(s.root.n)
    again = _search(ev, tree=tree, nodes=visits + 2000, threads=3, minibatch_size=32)
    again.run()
    assert again.error is None and again.compiled_lanes is not None
    assert again.root.n == visits + 2000
    _check_tree(again)


def test_the_nn_cache_grows_while_threads_run():
    """The NN cache's table starts small and doubles as it fills: the threads come back for room
    (RC_ROOM), the gate grows it while none is inside (the tree's arrays the same way), the search
    goes on."""
    ev = _evaluator("random")
    ev.cache.resize(1 << 16)
    slots = len(ev.cache.arrays.keys)
    s = _search(ev, nodes=20000, threads=3, minibatch_size=64)
    s.run()
    assert s.error is None and s.root.n == 20000
    assert len(ev.cache.arrays.keys) > slots and s.compiled_lanes.returns[RC_ROOM] > 0
    _check_tree(s)


def test_without_a_compiled_evaluation_batches_go_through_python():
    """A random backend that sleeps per batch (`delay`) and NodesPerSecondLimit keep the Python lanes."""
    slow = _search(_evaluator("random", "delay=1"), nodes=300, threads=2, minibatch_size=32)
    slow.run()
    assert slow.error is None and slow.compiled_lanes is None and slow.root.n == 300
    _check_tree(slow)
    limited = _search(_evaluator("random"), nodes=300, threads=2, minibatch_size=32, nps_limit=1e9)
    limited.run()
    assert limited.error is None and limited.compiled_lanes is None and limited.root.n == 300


def outputs(entry, rows: int):
    """Output buffers for `evaluate` (policy [rows, 1858], q, d, m), the policy pre-filled with the
    entry's fixed row if it has one (its kernel writes none)."""
    policy = np.zeros((rows, 1858), np.float32)
    if entry.policy_row is not None:
        policy[:] = entry.policy_row
    return policy, np.zeros(rows, np.float32), np.zeros(rows, np.float32), np.zeros(rows, np.float32)


@pytest.mark.parametrize("backend,options", [("random", ""), ("random", "seed=7"), ("random", "uniform=true"),
                                             ("trivial", "")])
def test_the_compiled_dispatch_is_the_backends_evaluation(backend, options):
    b = create_backend(backend, load_net(NET), options)
    boards = [parse_position(None, []), parse_position(None, ["e2e4", "c7c5"]),
              parse_position("8/5pk1/6p1/3R4/8/6P1/5PK1/2r5 b - - 4 40", [])]
    planes = encode_positions(boards, b.net.input_format)
    want_out = b.evaluate(planes)
    entry = b.compiled_eval()
    policy, q, d, m = outputs(entry, 8)
    masks = np.zeros((8, planes.masks.shape[1]), np.uint64)
    values = np.ones((8, planes.values.shape[1]), np.float32)
    masks[:3], values[:3] = planes.masks, planes.values
    want, nwant = every_index(8)
    assert evaluate(entry.kind, entry.ints, entry.words, entry.floats, masks, values, 0, 3, want, nwant, policy, q, d,
                    m) == 0
    assert np.array_equal(policy[:3], want_out.policy) and np.array_equal(q[:3], want_out.q)
    assert np.array_equal(d[:3], want_out.d)
    # the search threads ask for a position's legal moves' logits (cycle.policy_wanted's indices), compact:
    # the logit of want[j, k] into policy[j, k]; a kernel of one fixed policy row writes none (the cycle
    # copies them from CompiledEval.policy_row)
    policy = np.full((8, 64), -7.0, np.float32)
    untouched = policy.copy()
    rng = np.random.default_rng(1)
    want = rng.integers(0, want_out.policy.shape[1], size=(8, 40)).astype(np.int32)
    nwant = np.array([40, 0, 17, 0, 0, 0, 0, 0], np.int32)
    assert evaluate(entry.kind, entry.ints, entry.words, entry.floats, masks, values, 0, 3, want, nwant, policy, q, d,
                    m) == 0
    for j in range(3):
        asked = want_out.policy[j, want[j, :nwant[j]]]
        if entry.policy_row is None:
            assert np.array_equal(policy[j, :nwant[j]], asked)
        else:
            assert np.array_equal(entry.policy_row[want[j, :nwant[j]]], asked)
            assert np.array_equal(policy[j, :nwant[j]], untouched[j, :nwant[j]])
        assert np.array_equal(policy[j, nwant[j]:], untouched[j, nwant[j]:])
    assert np.array_equal(policy[3:], untouched[3:])
    assert np.array_equal(q[:3], want_out.q) and np.array_equal(d[:3], want_out.d)


@pytest.mark.parametrize("backend", ["random", "trivial"])
def test_one_thread_through_the_compiled_cycle_is_the_threads_1_tree(backend, monkeypatch):
    """Threads 0 on one core: one search thread, through the compiled cycle (its compact policies, its
    shared-tree gathering), builds the tree of Threads 1 (lc0's, tests/test_search.py) row for row."""
    monkeypatch.setattr("lc0_rocm.search.params.os.cpu_count", lambda: 1)
    ev = _evaluator(backend)
    for fen in (None, KIWIPETE):
        one = _search(ev, fen, nodes=3000, threads=1, pipeline=False, minibatch_size=64)
        one.run()
        ev.cache.clear()
        auto = _search(ev, fen, nodes=3000, threads=0, minibatch_size=64)
        auto.run()
        ev.cache.clear()
        assert one.error is None and auto.error is None
        assert one.compiled_lanes is None and auto.compiled_lanes is not None
        a, b = one.tree.arrays, auto.tree.arrays
        top, etop = int(a.meta[0]), int(a.meta[1])
        assert (top, etop) == (int(b.meta[0]), int(b.meta[1]))
        for name in ("n", "wl", "d", "first_edge", "num_edges", "term"):
            assert np.array_equal(getattr(a, name)[:top], getattr(b, name)[:top]), name
        for name in ("e_code", "e_p", "e_child"):
            assert np.array_equal(getattr(a, name)[:etop], getattr(b, name)[:etop]), name
        assert one.bestmove == auto.bestmove


def _lc0_collisions_left(nodes: int, params: SearchParams) -> int:
    """lc0's `src/search/classic/search.cc: CalculateCollisionsLeft` and its `Mix` as written there:
    int64 visits, float32 arithmetic (`std::pow` of two floats: powf, correctly rounded here from
    double precision), `std::round`."""
    f = np.float32
    start, end = params.max_collision_visits_scaling_start, params.max_collision_visits_scaling_end
    if nodes >= end:
        return params.max_collision_visits
    if nodes <= start:
        return 1
    ratio = (f(nodes) - f(start)) / f(end - start)
    curve = f(math.pow(float(ratio), float(f(params.max_collision_visits_scaling_power))))
    return int(math.floor(float(f(1) + f(params.max_collision_visits - 1) * curve) + 0.5))


def test_the_collision_budget_is_lc0s():
    """The search's one collision budget (compiled; Python's gathering calls it too) against lc0's
    formula: the ends, and points where float64 arithmetic would give one more or one less."""
    for params, points in (
            (SearchParams(), (0, 1, 28, 29, 800, 21966, 34055, 38948, 46256, 59199, 88193, 144999, 145000, 10**7)),
            (SearchParams(max_collision_visits=500, max_collision_visits_scaling_start=10,
                          max_collision_visits_scaling_end=20000, max_collision_visits_scaling_power=1.7),
             (0, 10, 11, 27, 800, 5000, 12345, 19999, 20000))):
        p = params.packed(False, 1, "no", 0)
        for nodes in points:
            assert collision_budget(p, float(nodes)) == _lc0_collisions_left(nodes, params), (params, nodes)
        assert collision_budget(p, float("inf")) == params.max_collision_visits  # no playout estimate yet
        assert collision_budget(p, 800.75) == _lc0_collisions_left(800, params)  # a fractional estimate: its int64


def test_the_gate_makes_the_room_the_compiled_test_asks_for():
    """The one room test (`cycle.has_room`, which the search's gate and the compiled threads both ask)
    fails exactly when the tree or the cache table is short, and the gate's growth (NodeTree.reserve,
    NNCache.make_room) makes it hold: the table doubles only as far as needed, never past its size."""
    from lc0_rocm.search.core.cycle import R_EDGES, R_ENTRIES, R_ROWS, ROOM_SIZE, has_room
    from lc0_rocm.search.core.nncache import NNCache

    tree, cache = NodeTree(16, 64), NNCache(1 << 15)
    room = np.zeros(ROOM_SIZE, np.int64)
    room[:] = (8, 32, 100, cache.slot_limit)
    assert has_room(tree.arrays, cache.arrays, room)
    slots = len(cache.arrays.keys)
    for grow_tree, entries in ((True, 100), (False, slots), (False, 1 << 20)):
        room[R_ROWS], room[R_EDGES], room[R_ENTRIES] = (64, 4096, entries) if grow_tree else (8, 32, entries)
        assert not has_room(tree.arrays, cache.arrays, room)
        tree.reserve(int(room[R_ROWS]), int(room[R_EDGES]))
        before = len(cache.arrays.keys)
        cache.make_room(entries)
        assert has_room(tree.arrays, cache.arrays, room)
        grown = len(cache.arrays.keys)
        assert grown == before if 2 * entries <= before else before < grown <= max(cache.slot_limit, 2 * entries)
    assert len(cache.arrays.keys) == cache.slot_limit
