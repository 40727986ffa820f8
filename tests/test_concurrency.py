"""The shared tree's concurrency contract (search/core/tree.py's table), under stress.

- The spin lock itself (search/core/spinlock.py): Python threads run compiled loops (GIL released)
  that take the lock word exclusively around a read-modify-write of a plain counter, or shared to
  read it; the count must come out exact and no reader may see a write half done.
- No arithmetic raises in compiled code (numba's error_model="numpy"): an exception inside a locked
  region would leave the lock taken and every other search thread spinning.
- Storms of go / stop / ponderhit / position through the Search API at 2, 4 and 8 search threads on
  one tree, lc0's `random` backend (so each thread's batch cycle runs compiled, search/core/cycle.py),
  with a task worker each (search/core/team.py) in about half the searches:
  every go ends with a legal bestmove, and after each the tree passes tests/test_shared_tree.py's
  invariants (nothing in flight, visits and values consistent).
"""

from __future__ import annotations

import random
import threading
import time

import chess
import numpy as np
import pytest

from lc0_rocm.encoding.position import parse_position
from lc0_rocm.jit import jit
from lc0_rocm.search.core.spinlock import fetch_add, lock, lock_shared, new_lock, unlock, unlock_shared
from lc0_rocm.search.limits import SearchLimits
from lc0_rocm.search.params import SearchParams
from lc0_rocm.search.search import Search
from lc0_rocm.search.tree import NodeTree
from test_shared_tree import KIWIPETE, _check_tree, _evaluator


@jit
def _hammer(word, counter, torn, rounds, read_every):
    """`rounds` turns: every `read_every`-th a shared read that checks both words agree, the others
    an exclusive, non-atomic increment of both."""
    for i in range(rounds):
        if i % read_every == 0:
            lock_shared(word)
            if counter[0] != counter[1]:
                fetch_add(torn, 0, 1)
            unlock_shared(word)
        else:
            lock(word)
            v = counter[0]
            counter[0] = v + 1
            counter[1] = counter[1] + 1
            unlock(word)


def test_the_spin_lock_keeps_a_plain_counter_exact():
    word, counter, torn = new_lock(), np.zeros(2, np.int64), np.zeros(1, np.int64)
    rounds, read_every, threads = 200_000, 5, 6
    _hammer(word, counter, torn, 10, read_every)  # compiled before the threads start
    counter[:] = 0
    workers = [threading.Thread(target=_hammer, args=(word, counter, torn, rounds, read_every))
               for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    writes = threads * (rounds - len(range(0, rounds, read_every)))
    assert counter.tolist() == [writes, writes]
    assert torn[0] == 0
    assert word[0] == 0  # free again: no reader nor writer left inside


@jit
def _divide(a, b, i, j):
    return a / b, i // j, i % j


def test_compiled_arithmetic_never_raises():
    """A float division by zero gives inf, an integer one 0 (numpy's rules), instead of raising;
    any other division keeps Python's rounding (floor), which the search's results depend on."""
    q, fq, r = _divide(1.0, 0.0, 7, 0)
    assert q == np.inf and fq == 0 and r == 0
    assert _divide(1.0, 4.0, -7, 2) == (0.25, -4, 1)


def _storm_search(ev, tree, board_moves, threads, limits, rng) -> Search:
    fen, moves = board_moves
    h = parse_position(fen, moves)
    tree.set_position(fen or "startpos", moves, h.last)
    params = SearchParams(threads=threads, minibatch_size=rng.choice([8, 32, 64]), smart_pruning_factor=0,
                          task_workers=rng.choice([0, 1]))  # a helper a thread or none (core/team.py)
    return Search(tree, h.board, h.first, ev, params, limits, has_wdl=True)


@pytest.mark.parametrize("threads", [2, 4, 8])
def test_go_stop_ponderhit_position_storms(threads):
    """A game of short searches on one tree with `threads` search threads: go infinite and stop,
    ponder and ponderhit, go nodes (exact), stop at once (the root perhaps unevaluated), a new
    game now and then; each move played and a random reply continue the game (tree reuse)."""
    rng = random.Random(threads)
    ev = _evaluator()
    tree = NodeTree()
    fen, moves = None, []
    compiled = 0
    for step in range(16):
        kind = step % 4
        if kind == 0:  # go infinite, stop after a while
            limits = SearchLimits(infinite=True, hold_bestmove=True)
        elif kind == 1:  # go ponder: holds at its node limit until the ponderhit
            limits = SearchLimits(nodes=200, infinite=True, hold_bestmove=True)
        elif kind == 2:  # go nodes
            limits = SearchLimits(nodes=2000)
        else:  # stop at once
            limits = SearchLimits(infinite=True, hold_bestmove=True)
        s = _storm_search(ev, tree, (fen, moves), threads, limits, rng)
        root_before = s.root.n
        done = threading.Event()
        s.on_bestmove = lambda move, ponder: done.set()
        s.start()
        if kind == 0:
            time.sleep(rng.uniform(0.0, 0.15))
            s.stop()
        elif kind == 1:
            time.sleep(rng.uniform(0.0, 0.15))
            s.ponderhit(SearchLimits(nodes=max(root_before, 200) + 1500))
        elif kind == 3:
            s.stop()
        assert done.wait(60), f"step {step}: no bestmove"
        s.wait(10)
        assert s.error is None, s.error
        assert s.bestmove in s.board.legal_moves, (step, s.bestmove)
        _check_tree(s)
        compiled += s.compiled_lanes is not None
        if kind == 2 and s.root.n > 1:
            assert s.root.n == max(2000, root_before), step  # go nodes, exactly (reused visits count)
        board = s.board.copy()
        board.push(s.bestmove)
        if step % 7 == 6 or board.is_game_over():
            fen, moves = (KIWIPETE if fen is None else None), []  # a new game: no tree reuse
            continue
        reply = rng.choice(list(board.legal_moves))
        board.push(reply)
        moves = moves + [s.bestmove.uci(), reply.uci()]
        if board.is_game_over():
            fen, moves = None, []
    assert compiled >= 8  # the threads' cycle ran compiled (search/core/cycle.py) in most searches
