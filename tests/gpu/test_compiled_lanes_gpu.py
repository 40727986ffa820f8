"""Search threads whose batch cycle stays compiled on the GPU (backends/compiled_eval.py KIND_GPU): each
thread's own runner evaluates through compiled HIP calls exactly as the runner's own submit/collect
does (same graphs, bit for bit) and as the backend does (its main runner, to rounding); a run size
without graphs goes once the eager way and is captured; a search on them keeps the tree a search tree
(tests/test_shared_tree.py's checks) and `go nodes` exact; a failed HIP call is the runtime's typed
error and leaves no visit in flight."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ helpers

from test_compiled_cycle import outputs  # noqa: E402
from test_shared_tree import _check_tree  # noqa: E402
from test_shared_tree import _search as _shared_search  # noqa: E402

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
NETS = ["default", "weights/se-classical-small.pb.gz", "weights/bt-small-smolgen-pedense.pb.gz"]


def _net(name):
    from lc0_rocm.default_net import default_net_path
    from lc0_rocm.net.loader import load_net

    return load_net(default_net_path() if name == "default" else str(ROOT / name))


def _boards():
    from lc0_rocm.encoding.position import parse_position

    return [parse_position(None, []), parse_position(None, ["e2e4", "c7c5", "g1f3"]), parse_position(KIWIPETE, []),
            parse_position("8/5pk1/6p1/3R4/8/6P1/5PK1/2r5 b - - 4 40", []),
            parse_position(None, ["d2d4", "g8f6", "c2c4", "e7e6", "b1c3", "f8b4"])]


@pytest.mark.parametrize("backend", ["rocm", "rocm-fp16"])
@pytest.mark.parametrize("name", NETS)
def test_a_lane_evaluates_as_its_runner(gpu, backend, name):
    from lc0_rocm.backends.compiled_eval import KIND_GPU, evaluate, every_index
    from lc0_rocm.backends.factory import create_backend
    from lc0_rocm.encoding.planes import encode_positions

    net = _net(name)
    be = create_backend(backend, net)
    try:
        planes = encode_positions(_boards(), net.input_format)
        n = len(planes)
        whole = be.evaluate(planes)  # the network's runner captures size 5 here
        entries = be.compiled_lanes(2, 8)  # the second thread's runner: built and prepared for batches of 8
        assert entries is not None and all(e.kind == KIND_GPU for e in entries)
        assert entries[0].host.runner is not entries[1].host.runner
        masks = np.zeros((8, 112), np.uint64)
        values = np.zeros((8, 112), np.float32)
        masks[:n], values[:n] = planes.masks, planes.values
        for k, e in enumerate(entries):
            policy, q, d, m = outputs(e, 8)
            want, nwant = every_index(8)
            st = evaluate(e.kind, e.ints, e.words, e.floats, masks, values, 0, n, want, nwant, policy, q, d, m)
            assert st == 0  # the main runner captured size 5 in be.evaluate, the thread's own in its prepare
            runner = e.host.runner
            own = runner.collect(runner.submit(planes, be.mlh))  # the same graphs, launched from Python
            assert np.array_equal(policy[:n], own.policy) and np.array_equal(q[:n], own.q)
            assert np.array_equal(d[:n], own.d)
            if e.has_mlh:
                assert np.array_equal(m[:n], own.mlh)
            tol = 1e-5 if backend == "rocm" else 2e-3
            np.testing.assert_allclose(policy[:n], whole.policy, atol=tol * 10, rtol=tol)
            np.testing.assert_allclose(q[:n], whole.q, atol=tol)
    finally:
        be.close()


def test_a_size_without_graphs_goes_the_eager_way_once(gpu):
    from lc0_rocm.backends.compiled_eval import KIND_GPU, NO_GRAPH, evaluate, every_index
    from lc0_rocm.backends.gpu_lanes import CompiledLane
    from lc0_rocm.encoding.planes import encode_positions
    from lc0_rocm.gpu.nn.network import GpuNetwork

    net = _net("default")
    runner = GpuNetwork(net, gpu, "f16", 8)
    lane = CompiledLane(runner, True)
    try:
        planes = encode_positions(_boards(), net.input_format)
        n = len(planes)
        masks = np.zeros((8, 112), np.uint64)
        values = np.zeros((8, 112), np.float32)
        masks[:n], values[:n] = planes.masks, planes.values
        q, d, m = (np.zeros(8, np.float32) for _ in range(3))
        policy = np.zeros((8, 1858), np.float32)
        want, nwant = every_index(8)
        args = (KIND_GPU, lane.words, lane.pin_in, lane.pin_out, masks, values, 0, n, want, nwant, policy, q, d, m)
        assert evaluate(*args) == NO_GRAPH  # a fresh runner: nothing captured, nothing queued
        eager = lane.evaluate_eager(masks[:n], values[:n])  # runs it and captures size 5's graphs
        assert evaluate(*args) == 0
        assert np.array_equal(policy[:n], eager.policy) and np.array_equal(q[:n], eager.q)
    finally:
        lane.close()
        runner.close()


def _search(ev, fen, threads, nodes, minibatch=64, task_workers=-1):
    net = ev.backend.net
    return _shared_search(ev, fen, nodes=nodes, threads=threads, minibatch_size=minibatch, has_wdl=net.has_wdl,
                          has_mlh=net.has_moves_left, task_workers=task_workers)


@pytest.mark.parametrize("name,task_workers", [(NETS[0], -1), (NETS[1], -1), (NETS[0], 2)])
def test_threads_search_in_compiled_code_on_the_gpu(gpu, name, task_workers):
    """Each thread's batches through its runner from compiled code; with TaskWorkers its helpers expand
    the GPU's outputs (core/team.py's J_EXPAND)."""
    from lc0_rocm.backends.factory import create_backend
    from lc0_rocm.search.core import cycle as cy
    from lc0_rocm.search.leaf_evaluator import LeafEvaluator

    net = _net(name)
    ev = LeafEvaluator(create_backend("rocm-fp16", net), net.input_format)
    try:
        for fen in (None, KIWIPETE):
            s = _search(ev, fen, threads=3, nodes=4000, task_workers=task_workers)
            s.run()
            assert s.error is None, s.error
            assert s.compiled_lanes is not None and s.compiled_lanes.entries[0].host is not None
            assert len(s._lanes[0].helper_work) == max(0, task_workers)  # auto: none for a GPU
            returns = s.compiled_lanes.returns
            # the eager way only once per runner and run size (then its graphs are captured)
            assert returns[cy.RC_EVAL] <= 3 * len(ev.backend.network.bucket_sizes(64))
            assert s.root.n == 4000
            assert s.bestmove in s.board.legal_moves
            _check_tree(s)
    finally:
        ev.close()
        ev.backend.close()


def test_a_failed_call_is_a_typed_error_with_no_visit_left_in_flight(gpu):
    from lc0_rocm.backends.factory import create_backend
    from lc0_rocm.errors import GpuError, GpuOutOfMemoryError
    from lc0_rocm.backends import gpu_round_trip as cb
    from lc0_rocm.search.core.batch import S_IN_FLIGHT
    from lc0_rocm.search.leaf_evaluator import LeafEvaluator

    net = _net("default")
    ev = LeafEvaluator(create_backend("rocm-fp16", net), net.input_format)
    try:
        ev.backend.prepare(64)
        entries = ev.backend.compiled_lanes(3, 64)
        saved = [int(e.ints[cb.L_EVENT]) for e in entries]
        for e in entries:
            e.ints[cb.L_EVENT] = 0  # hipEventRecord on no event: the runtime answers with a status
        s = _search(ev, None, threads=3, nodes=4000)
        s.run()
        assert isinstance(s.error, GpuError) and not isinstance(s.error, GpuOutOfMemoryError)
        assert any(e.ints[cb.L_FAILED] == cb.C_RECORD for e in entries)
        t = s.tree.arrays
        assert not t.nif[s.tree.root_row:int(t.meta[0])].any() and s.stats[S_IN_FLIGHT] == 0
        for e, ev_handle in zip(entries, saved):
            e.ints[cb.L_EVENT] = ev_handle
        s = _search(ev, None, threads=3, nodes=2000)  # the same runners search on
        s.run()
        assert s.error is None, s.error
        assert s.root.n == 2000
        _check_tree(s)
    finally:
        ev.close()
        ev.backend.close()
