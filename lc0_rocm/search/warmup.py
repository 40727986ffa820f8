"""A search made ready before a GUI's first `go`: the backend's batch sizes prepared and every compiled
entry point of the search run once (compiled, or loaded from the disk cache)."""

from __future__ import annotations

from .core import backup as bk
from .core import batch as bt
from .core import pick as pk
from .core import shared_worker as sw
from .core import spinlock
from .factory import GamePosition, new_search
from .leaf_evaluator import LeafEvaluator
from .limits import SearchLimits
from .params import SearchParams, search_threads, suggested_minibatch
from .tree import NodeTree


def prepare_backend(evaluator: LeafEvaluator, minibatch: int = 0, threads: int = 0) -> int:
    """The backend prepares every batch size up to the minibatch (GPU graphs and GEMM plans), and with
    several search threads (`threads` as the engine's Threads option) each thread's own evaluation
    (a GPU backend builds and prepares a runner per thread: backends/rocm.py `compiled_lanes`).
    Returns the search threads a search with these settings runs."""
    backend = evaluator.backend
    rows = max(1, min(minibatch or suggested_minibatch(backend), backend.max_batch))
    backend.prepare(rows)
    count = search_threads(SearchParams(threads=threads, minibatch_size=rows), backend)
    if count > 1:
        backend.compiled_lanes(count, rows)
    return count


def warm_up(evaluator: LeafEvaluator, has_wdl: bool = True, has_mlh: bool = False, minibatch: int = 0,
            threads: int = 0, task_workers: int = -1) -> None:
    """Get a search ready before a GUI's first `go`: `prepare_backend`, and every compiled entry
    point a search with these settings (`threads`, `task_workers` as the engine's Threads and
    TaskWorkers options) calls runs once with the types a real search uses (compiles the search, one
    to two minutes on a first start, or loads it from the disk cache). Uses its own tree and NN cache;
    the backend evaluates a few positions."""
    count = prepare_backend(evaluator, minibatch, threads)

    ev = LeafEvaluator(evaluator.backend, evaluator.input_format, 64, evaluator.policy_temperature)
    ev.fill = evaluator.fill
    ev.cache_history_length = evaluator.cache_history_length
    try:
        tree = NodeTree()
        moves: list = []
        for _ in range(2):  # the second one reuses the tree (its root is the first one's best move,
            # which was visited): the subtree copy compiles here, not during a game's first timed move
            position = GamePosition.parse(None, moves)
            # the first with the engine's Threads, the second with its search threads (at least two
            # where it runs several: the shared tree's entry points load here too; one where it runs
            # one, so that a GPU backend builds no runner for threads the engine will not run)
            # (the second with the engine's task workers, where its threads have any: theirs load
            # here too, core/team.py; not otherwise, which saves a first start ~4 s of compiling:
            # docs/perf.md "The first start's compile")
            params = SearchParams(minibatch_size=4, multipv=2, smart_pruning_factor=0,
                                  threads=(count if count > 1 else 1) if moves else threads,
                                  task_workers=task_workers)
            s = new_search(position, ev, params, SearchLimits(nodes=24), tree, has_wdl=has_wdl, has_mlh=has_mlh,
                           searchmoves=list(position.board.legal_moves)[:3], verbose_stats=True,
                           on_info=lambda lines: None, on_stats=lambda lines: None)
            s.run()
            if s.error is not None:
                raise s.error
            moves = [s.bestmove.uci()]
            t = tree.arrays
            root = tree.root_row
            fe = int(t.first_edge[root])
            pk.m_utility(t, s._packed, root, int(t.e_child[fe]), 0.5)
            bk.revert_batch(t, s.stats, bt.new_batch(1), 0)
            # a stop with batches in flight on a shared tree: compiled here, not (GIL held, ~0.7 s)
            # inside the first timed search that is stopped
            sw.revert_shared(t, s.stats, bt.new_batch(1), 0, spinlock.new_lock())
    finally:
        ev.close()
