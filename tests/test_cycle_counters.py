"""Each compiled search thread's cycle counters (search/core/counters.py) against what they count: the
playouts they count are the root's visits, their batches, positions and descents the search's own
counters, and their times (the CPU's time-stamp counter) fit inside the wall clock of the search."""

from __future__ import annotations

import time

import numpy as np
import pytest

from lc0_rocm.search.core import counters as ct

from test_compiled_cycle import _evaluator
from test_shared_tree import KIWIPETE, _check_tree, _search


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_counters_count_what_the_search_did(threads, monkeypatch):
    if threads == 1:  # Threads 0 on a one-core host: one compiled thread (lc0's Threads 1 tree)
        monkeypatch.setattr("lc0_rocm.search.params.os.cpu_count", lambda: 1)
    ev = _evaluator("random")
    _search(ev, nodes=500, threads=0 if threads == 1 else threads, minibatch_size=64).run()  # loaded, warm
    s = _search(ev, KIWIPETE, nodes=20000, threads=0 if threads == 1 else threads, minibatch_size=64)
    s.cycle_counters = True
    t0 = time.perf_counter()
    s.run()
    wall = time.perf_counter() - t0
    assert s.error is None, s.error
    assert s.compiled_lanes is not None
    _check_tree(s)
    c = s.cycle_counts()
    assert c.shape == (threads, ct.CTR_SIZE)
    total = c.sum(axis=0)
    assert total[ct.N_PLAYOUTS] == s.root.n == 20000  # a fresh tree: every visit backed up by one thread
    # the root's first batch (itself alone) is evaluated by Python before the threads start
    assert total[ct.N_BATCHES] == s.batches - 1
    assert total[ct.N_POSITIONS] == s.nn_evals - 1
    assert total[ct.N_PICKS] == s.descents
    assert total[ct.N_LOCKS] >= total[ct.N_BATCHES]  # each batch's backup takes the lock word (picks take none)
    assert total[ct.N_SPINS] >= total[ct.N_CONTENDED]
    hz = ct.cycles_per_second()
    phases = c[:, [k for _, k in ct.PHASES]]
    for k in range(threads):
        inside = c[k, ct.K_TOTAL] / hz
        assert inside <= wall * 1.03 + 2e-3, (inside, wall)  # a thread's time in run_lane is within the search
        assert phases[k].sum() <= c[k, ct.K_TOTAL]  # the phases lie inside it, none counted twice
        assert phases[k].sum() >= 0.8 * c[k, ct.K_TOTAL]  # ... and cover most of it
        for phase in (ct.K_PICK, ct.K_EXTEND, ct.K_EVAL, ct.K_EXPAND, ct.K_BACKUP):
            assert c[k, phase] > 0
    assert c[:, ct.K_TOTAL].sum() / hz >= 0.3 * wall  # the threads spend the search in the compiled cycle


def test_counting_is_off_unless_asked():
    ev = _evaluator("random")
    s = _search(ev, nodes=3000, threads=2, minibatch_size=64)
    s.run()
    assert s.error is None
    assert s.cycle_counts().shape == (0, ct.CTR_SIZE)
    assert all(len(lane.ctr) == 0 for lane in s._lanes)


def test_the_clock_is_the_wall_clocks():
    """The counter runs at a steady rate: two measurements of it agree, and it moves with the wall clock."""
    a, b = ct.cycles_per_second(0.02), ct.cycles_per_second(0.02)
    assert 1e8 < a < 1e11
    assert abs(a - b) < 0.1 * a
    c0 = ct.now()
    time.sleep(0.01)
    assert ct.now() - c0 >= 0.009 * a
    assert np.int64(ct.now()) > 0


def test_a_python_lanes_stamp_is_read_each_call_and_the_puct_table_is_shared():
    """`search._stamp` (the Python lane's entry stamp) reads the clock every call, and the searches of
    the same settings share one cpuct table (`_puct_table`, cached)."""
    from lc0_rocm.search import search as sr
    from lc0_rocm.search.lanes import Lane

    lane = Lane(8, 8, counting=True)
    first = sr._stamp(lane)
    time.sleep(0.002)
    assert sr._stamp(lane) > first
    assert sr._stamp(Lane(8, 8)) == 0
    assert sr._puct_table(1.745, 38739.0, 3.894) is sr._puct_table(1.745, 38739.0, 3.894)
