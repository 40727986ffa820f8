"""Several search threads on one tree (Threads > 1): the tree stays a search tree.

With more than one thread the visits depend on timing (lc0's own search is nondeterministic there
too), so the truth is what any finished search must satisfy, checked with numpy float64 on the tree's
arrays: no visit left in flight, every expanded node's visits = 1 + its children's, every value the
visit-weighted mean of the node's own evaluation and its children's (a torn update between threads
breaks both), `go nodes` met exactly; and proven results (mate in two) as one thread finds them.
lc0's `random` backend keeps the network out of it (each thread evaluates its own batches, in its
compiled batch cycle: search/core/cycle.py; one case through Python's lanes).
"""

from __future__ import annotations

import threading
import time

import chess
import numpy as np
import pytest

from lc0_rocm.backends.factory import create_backend
from lc0_rocm.encoding.position import parse_position
from lc0_rocm.net.loader import load_net
from lc0_rocm.search.leaf_evaluator import LeafEvaluator
from lc0_rocm.search.limits import SearchLimits
from lc0_rocm.search.params import SearchParams, search_threads
from lc0_rocm.search.search import Search
from lc0_rocm.search.core.tree import END_OF_GAME, M_ALONE, NON_TERMINAL, WIN
from lc0_rocm.search.tree import NodeTree

from netpaths import WEIGHTS_DIR

NET = WEIGHTS_DIR / "bt-small-smolgen-pedense.pb.gz"  # the random backend ignores its weights
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"


def _evaluator(options: str = "", **kw) -> LeafEvaluator:
    backend = create_backend("random", load_net(NET), options)
    ev = LeafEvaluator(backend, backend.net.input_format)
    for k, v in kw.items():
        setattr(ev, k, v)
    return ev


def _search(ev, fen=None, nodes=4000, tree=None, limits=None, has_wdl=True, has_mlh=False, **params) -> Search:
    h = parse_position(fen, [])
    tree = tree or NodeTree()
    tree.set_position(fen or "startpos", [], h.last)
    params.setdefault("smart_pruning_factor", 0)
    return Search(tree, h.board, h.first, ev, SearchParams(**params), limits or SearchLimits(nodes=nodes),
                  has_wdl=has_wdl, has_mlh=has_mlh)


def _check_tree(s: Search) -> None:
    t = s.tree.arrays
    root, top = s.tree.root_row, int(t.meta[0])
    rows = np.arange(root, top)
    assert not t.nif[root:top].any(), "visits left in flight"
    for row in rows[(t.first_edge[rows] >= 0) & (t.n[rows] > 0)]:
        fe, ne = int(t.first_edge[row]), int(t.num_edges[row])
        kids = t.e_child[fe:fe + ne]
        kids = kids[kids >= 0]
        n_kids = t.n[kids].astype(np.int64)
        if t.term[row] != NON_TERMINAL:
            continue  # proven by its children's bounds: visited since as a terminal
        assert t.n[row] == 1 + n_kids.sum(), f"row {row}: {t.n[row]} visits, children {n_kids.sum()}"
        if (t.lower[kids] == t.upper[kids]).any() or t.term[kids].any():
            continue  # a proven child's value was replaced by its result (lc0's bounds): no mean to check
        mean = (float(t.v[row]) - np.dot(n_kids, t.wl[kids].astype(np.float64))) / t.n[row]
        assert abs(mean - t.wl[row]) < 1e-9, f"row {row}: wl {t.wl[row]} against {mean}"


@pytest.mark.parametrize("threads,minibatch,options", [
    (3, 256, {}),
    (4, 16, {}),  # many small picks: picks and backups overlap all the time
    (8, 8, {}),  # eight threads picking without a lock while the others back up (shared_worker.py)
    (3, 64, {"out_of_order_eval": False}),  # terminals and cache hits kept in the batch
    (3, 64, {"nps_limit": 1e9}),  # NodesPerSecondLimit: batches through Python (`Search._lane_loop`)
    (2, 256, {"task_workers": 2}),  # each thread's helpers extend, evaluate and expand its rows (core/team.py)
    (3, 16, {"task_workers": 1}),
    (2, 64, {"task_workers": 3, "out_of_order_eval": False}),
])
def test_threads_share_one_tree(threads, minibatch, options):
    ev = _evaluator()
    for fen in (None, KIWIPETE, "8/5pk1/6p1/3R4/8/6P1/5PK1/2r5 b - - 4 40"):
        s = _search(ev, fen, nodes=6000, threads=threads, minibatch_size=minibatch, **options)
        s.run()
        assert s.error is None, s.error
        assert len(s._lanes) == threads
        assert (s.compiled_lanes is None) == ("nps_limit" in options)  # else search/core/cycle.py's cycle
        assert s.root.n == 6000  # go nodes, exactly (ExactNodeLimit)
        assert s.bestmove in s.board.legal_moves
        _check_tree(s)


@pytest.mark.parametrize("history", [0, 7])
def test_threads_with_a_small_nn_cache(history):
    """A cache hit found outside the lock is looked up again under it (another thread may have
    replaced the entry meanwhile: a tiny cache replaces entries all the time); CacheHistoryLength 7
    keys the cache by the encoded input, so the planes come before the probe."""
    ev = _evaluator(cache_history_length=history)
    ev.cache.resize(256)
    s = _search(ev, "8/3k4/8/8/8/8/3K4/3R4 w - - 0 1", nodes=5000, threads=4, minibatch_size=32)
    s.run()
    assert s.error is None and s.root.n == 5000
    assert s.cache_hits > 0 or history == 7  # king moves transpose: the position-only key hits
    _check_tree(s)


def _forces_mate(board: chess.Board, moves: int) -> bool:
    """python-chess: the side to move mates within `moves` moves whatever the defence."""
    for m in list(board.legal_moves):
        board.push(m)
        if board.is_checkmate():
            won = True
        elif moves == 1 or board.is_game_over():
            won = False
        else:
            won = True
            for reply in list(board.legal_moves):
                board.push(reply)
                won = _forces_mate(board, moves - 1)
                board.pop()
                if not won:
                    break
        board.pop()
        if won:
            return True
    return False


def test_threads_prove_a_forced_mate():
    s = _search(_evaluator(), "7k/8/5K2/8/8/8/8/6R1 w - - 0 1", nodes=4000, threads=3, minibatch_size=32)
    s.run()
    assert s.error is None
    node = [c for m, c in zip(s.root.moves, s.root.children) if m == s.bestmove][0]
    assert node.terminal == END_OF_GAME and node.lower == node.upper == WIN  # proven
    board = s.board.copy()
    board.push(s.bestmove)
    for reply in list(board.legal_moves):  # and so it is: every defence is mated within two more moves
        board.push(reply)
        assert _forces_mate(board, 2), f"{s.bestmove} {reply}"
        board.pop()


def test_threads_stop_and_reuse_the_tree():
    """`go infinite` then `stop` with four threads: a legal bestmove, nothing left in flight, and the
    next search on the same tree (tree reuse) starts from a consistent tree."""
    ev = _evaluator()
    tree = NodeTree()
    s = _search(ev, tree=tree, threads=4, minibatch_size=64, limits=SearchLimits(infinite=True))
    done = threading.Event()
    s.on_bestmove = lambda move, ponder: done.set()
    s.start()
    time.sleep(0.5)
    s.stop()
    assert done.wait(30) and s.bestmove in s.board.legal_moves
    visits = int(s.root.n)
    assert visits > 0
    _check_tree(s)
    again = _search(ev, tree=tree, nodes=visits + 3000, threads=4, minibatch_size=64)
    again.run()
    assert again.error is None and again.root.n == visits + 3000
    _check_tree(again)


def test_one_thread_alone_then_several_on_the_same_tree():
    """One search thread writes visits in flight and new rows without atomics (core/tree.py's
    meta[M_ALONE]); the next search on the same tree with four threads must take them atomically
    again, and one thread after it may drop them again."""
    ev = _evaluator()
    tree = NodeTree()
    first = _search(ev, tree=tree, nodes=2000, threads=1, minibatch_size=64)
    first.run()
    assert first.error is None and tree.arrays.meta[M_ALONE] == 1
    _check_tree(first)
    shared = _search(ev, tree=tree, nodes=6000, threads=4, minibatch_size=64)
    shared.run()
    assert shared.error is None and shared.root.n == 6000
    assert tree.arrays.meta[M_ALONE] == 0
    _check_tree(shared)
    last = _search(ev, tree=tree, nodes=8000, threads=0, minibatch_size=64)
    last.run()
    assert last.error is None and last.root.n == 8000
    assert tree.arrays.meta[M_ALONE] == int(len(last._lanes) <= 1)
    _check_tree(last)


def test_task_workers_leave_one_thread_its_tree(monkeypatch):
    """One search thread picks alone and its batches are one at a time, so its tree is the same
    whatever its task workers (core/team.py) do of each batch's rows: the root's visits and values
    equal those of the thread alone, bit for bit, and the tree is a search tree."""
    import lc0_rocm.search.search as search_module

    monkeypatch.setattr(search_module, "search_threads", lambda params, backend, cores=None: 1)
    reports = []
    for workers in (0, 2, 1):
        ev = _evaluator()
        s = _search(ev, KIWIPETE, nodes=6000, threads=0, task_workers=workers, minibatch_size=128)
        s.run()
        assert s.error is None and s.root.n == 6000
        assert s.compiled_lanes is not None and len(s._lanes) == 1
        assert len(s._lanes[0].helper_work) == workers
        assert s.tree.arrays.meta[M_ALONE] == 1  # the helpers write no visit in flight nor a row
        _check_tree(s)
        t, root = s.tree.arrays, s.tree.root_row
        fe, ne = int(t.first_edge[root]), int(t.num_edges[root])
        kids = t.e_child[fe:fe + ne]
        reports.append([(int(t.e_code[fe + i]), int(t.n[c]) if c >= 0 else 0, float(t.wl[c]) if c >= 0 else 0.0)
                        for i, c in enumerate(kids)])
    assert reports[1] == reports[0] and reports[2] == reports[0]


def test_a_task_worker_that_fails_leaves_its_work_to_the_thread(monkeypatch):
    """A helper whose compiled call fails (compiled_lanes._TaskWorker: it stands in, claiming nothing)
    leaves every job's items to its search thread: the search ends, the failure is the search's error,
    and nothing is left in flight on a tree that is still a search tree."""
    from lc0_rocm.search.core import cycle as cy

    class HelperFailed(Exception):
        pass

    def broken(*args):
        raise HelperFailed()

    monkeypatch.setattr(cy, "run_helper", broken)
    s = _search(_evaluator(), KIWIPETE, nodes=3000, threads=2, task_workers=1, minibatch_size=64)
    s.start()
    assert s.wait(60), "the search threads wait for a task worker that never comes"
    assert isinstance(s.error, HelperFailed)
    assert s.compiled_lanes is not None
    _check_tree(s)


def test_task_workers_follow_the_host():
    """TaskWorkers -1: helpers for a backend evaluating in each search thread where the host has cores
    to spare beside them, at most AUTO_TASK_WORKERS; none for a GPU's or the cpu backend."""
    from lc0_rocm.search.params import AUTO_TASK_WORKERS, params_from_settings, task_workers

    params = SearchParams()
    random_backend = _evaluator().backend
    cpu_backend = create_backend("cpu", load_net(NET))
    assert task_workers(params, random_backend, 2, cores=2) == 0
    assert task_workers(params, random_backend, 1, cores=16) == AUTO_TASK_WORKERS
    assert task_workers(params, random_backend, 4, cores=8) == 0
    assert task_workers(params, cpu_backend, 1, cores=16) == 0
    assert task_workers(SearchParams(task_workers=2), cpu_backend, 1, cores=2) == 2
    assert params_from_settings({"TaskWorkers": 2}).task_workers == 2  # the UCI option


def test_threads_zero_follows_the_host():
    """Threads 0: one thread a core up to two cores with a backend evaluating in each thread, one with a
    backend that computes on the host, else several."""
    params = SearchParams(threads=0)
    random_backend = _evaluator().backend
    cpu_backend = create_backend("cpu", load_net(NET))
    assert search_threads(params, random_backend, cores=2) == 2  # evaluates in each thread: one a core
    assert search_threads(params, random_backend, cores=1) == 1
    assert search_threads(params, cpu_backend, cores=16) == 1
    assert search_threads(params, random_backend, cores=16) == 4  # its kernel runs on the threads; past four they wait on the lock
    assert search_threads(params, random_backend, cores=4) == 3
    assert search_threads(SearchParams(threads=1), random_backend, cores=16) == 1
    assert search_threads(SearchParams(threads=3), random_backend, cores=2) == 3

    class TwoGpus:  # what search_threads reads of a GPU backend over two cards (backends/rocm.py)
        is_async, concurrent, device_count = True, False, 2

    assert search_threads(params, TwoGpus(), cores=16) == 4  # two threads a card, each with its runner
    assert search_threads(params, TwoGpus(), cores=4) == 3  # a core left free
    assert search_threads(SearchParams(threads=1), TwoGpus(), cores=16) == 1
