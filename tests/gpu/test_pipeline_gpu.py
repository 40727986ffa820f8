"""The evaluation pipeline: graph replay, submit/collect with several batches in flight, pinned-slot
outputs, evaluate_timed, several runners (gpus=0,0), graph capture on/off through the backend.

Truth: the float64 numpy reference (fp32 runs within 1e-4), and the eager (graph-less) GPU path for
fp16 runs, which must agree with the graph replay bit for bit (same kernels, same GEMM algorithms).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from netpaths import WEIGHTS_DIR

pytestmark = pytest.mark.gpu

FP32_ATOL = 1e-4
NET = "bt-small-smolgen-pedense.pb.gz"


def _planes(net, n, offset=0):
    from lc0_rocm import validation_positions
    from lc0_rocm.encoding.planes import encode_positions

    boards = validation_positions.boards(offset + n)[offset:]
    return encode_positions(boards, net.input_format)


def _net(name=NET):
    from lc0_rocm.net.loader import load_net

    return load_net(WEIGHTS_DIR / name)


def _same(a, b):
    np.testing.assert_array_equal(a.policy, b.policy)
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.d, b.d)
    if a.mlh is not None:
        np.testing.assert_array_equal(a.mlh, b.mlh)


def test_graph_replay_matches_eager_and_reference(gpu):
    from lc0_rocm.gpu.nn.network import GpuNetwork
    from lc0_rocm.reference import Reference

    net = _net()
    planes = _planes(net, 24)
    ref = Reference(net, np.float64).forward(planes)
    g = GpuNetwork(net, gpu, "f32", max_batch=32, graphs=True)
    try:
        first = g.evaluate(planes)  # eager; captures the graphs of size 24
        assert g.graph_captures == 1
        second = g.evaluate(planes)  # graph replay
        assert g.graph_captures == 1
        for out in (first, second):
            assert np.abs(out.policy - ref.policy).max() <= FP32_ATOL
            assert np.abs(out.q - ref.q).max() <= FP32_ATOL
            assert np.abs(out.mlh - ref.mlh).max() <= FP32_ATOL
        _same(first, second)
        other = _planes(net, 24, offset=100)  # new inputs through the same graph
        want = Reference(net, np.float64).forward(other)
        assert np.abs(g.evaluate(other).policy - want.policy).max() <= FP32_ATOL
    finally:
        g.close()


@pytest.mark.parametrize("name", ["t82-small-pemap.pb.gz", "se-classical-small.pb.gz"])
def test_fp16_graph_equals_eager_bitwise(gpu, name):
    """An attention body and a conv tower replayed from graphs give the eager run's answers bit for bit."""
    from lc0_rocm.gpu.nn.network import GpuNetwork

    net = _net(name)
    planes = _planes(net, 40)
    eager = GpuNetwork(net, gpu, "f16", max_batch=64, graphs=False)
    graph = GpuNetwork(net, gpu, "f16", max_batch=64, graphs=True)
    try:
        a = eager.evaluate(planes)
        graph.evaluate(planes)
        b = graph.evaluate(planes)
        assert graph.graph_captures == 1 and eager.graph_captures == 0
        assert np.isfinite(b.policy).all()
        _same(a, b)
    finally:
        eager.close()
        graph.close()


def test_batches_in_flight_keep_their_own_outputs(gpu):
    """Four batches submitted before any is collected (different sizes and inputs, graphs and eager
    runs interleaved): each collect returns its own batch's answers."""
    from lc0_rocm.gpu.nn.network import GpuNetwork
    from lc0_rocm.reference import Reference

    net = _net()
    g = GpuNetwork(net, gpu, "f32", max_batch=64)
    try:
        batches = [_planes(net, n, offset=o) for n, o in ((5, 0), (17, 10), (5, 40), (64, 60))]
        g.evaluate(batches[0])  # size 5 now has a graph; 17 and 64 run eagerly first
        pend = [g.submit(b) for b in batches]
        outs = [g.collect(p) for p in reversed(pend)][::-1]
        for b, out in zip(batches, outs):
            ref = Reference(net, np.float64).forward(b)
            assert np.abs(out.policy - ref.policy).max() <= FP32_ATOL
            assert np.abs(out.q - ref.q).max() <= FP32_ATOL
        assert g.pool.created >= 4
        with pytest.raises(ValueError, match="already collected"):
            g.collect(pend[0])
    finally:
        g.close()


def test_slots_return_to_the_pool_when_outputs_are_dropped(gpu):
    from lc0_rocm.gpu.nn.network import GpuNetwork

    net = _net()
    planes = _planes(net, 8)
    g = GpuNetwork(net, gpu, "f16", max_batch=16)
    try:
        for _ in range(6):
            out = g.evaluate(planes)
            del out
        gc.collect()
        assert g.pool.created == 1 and len(g.pool.free) == 1
        held = [g.evaluate(planes) for _ in range(3)]  # outputs kept alive: their slots stay leased
        assert g.pool.created == 3 and len(g.pool.free) == 0
        _same(held[0], held[2])
        del held
        gc.collect()
        assert len(g.pool.free) == 3
    finally:
        g.close()


def test_evaluate_timed_and_large_batches_in_pieces(gpu):
    from lc0_rocm.gpu.nn.network import GpuNetwork
    from lc0_rocm.reference import Reference

    net = _net()
    planes = _planes(net, 50)
    ref = Reference(net, np.float64).forward(planes)
    g = GpuNetwork(net, gpu, "f32", max_batch=16)
    try:
        out, seconds = g.evaluate_timed(planes)  # 16 + 16 + 16 + 2
        assert 0 < seconds < 5
        assert out.policy.shape == (50, 1858)
        assert np.abs(out.policy - ref.policy).max() <= FP32_ATOL
        assert np.abs(out.wdl - ref.wdl).max() <= FP32_ATOL
    finally:
        g.close()


def test_backend_options_submit_collect_and_two_runners(gpu):
    from lc0_rocm.backends.factory import create_backend
    from lc0_rocm.reference import Reference

    net = _net()
    planes = _planes(net, 33)
    ref = Reference(net, np.float64).forward(planes)
    for opts in ("graph_capture=false", "graph_precapture=4,attention=simple", "gpus=0:0,max_batch=16",
                 "gpus=0:0,max_batch=16,early_start=true"):  # batches on the runners ready so far
        b = create_backend("rocm", net, opts)
        try:
            h1 = b.submit(planes)
            h2 = b.submit(_planes(net, 3))
            out = b.collect(h1)
            b.collect(h2)
            assert np.abs(out.policy - ref.policy).max() <= FP32_ATOL, opts
            assert np.abs(out.q - ref.q).max() <= FP32_ATOL, opts
            again, seconds = b.evaluate_timed(planes)
            assert seconds > 0
            if "gpus" not in opts:
                _same(out, again)
            assert np.abs(again.policy - ref.policy).max() <= FP32_ATOL, opts
            small = b.evaluate(_planes(net, 1))  # one position on a two-runner backend
            assert small.policy.shape == (1, 1858)
            if "early_start" in opts:
                b.prepare(16)  # waits for every runner
                assert len(b.network.runners) == 2
                assert np.abs(b.evaluate(planes).policy - ref.policy).max() <= FP32_ATOL
        finally:
            b.close()


def test_conv_net_through_graphs(gpu):
    from lc0_rocm.gpu.nn.network import GpuNetwork
    from lc0_rocm.reference import Reference

    net = _net("apmish-small.pb.gz")
    planes = _planes(net, 9)
    ref = Reference(net, np.float64).forward(planes)
    g = GpuNetwork(net, gpu, "f32", max_batch=9)
    try:
        g.evaluate(planes)
        out = g.evaluate(planes)
        assert g.graph_captures == 1
        assert np.abs(out.policy - ref.policy).max() <= FP32_ATOL
        assert np.abs(out.q - ref.q).max() <= FP32_ATOL
    finally:
        g.close()


def test_outputs_outlive_the_network(gpu):
    """Outputs read after close() are still the answers (their pinned slot is freed only when dropped)."""
    from lc0_rocm.gpu.nn.network import GpuNetwork

    net = _net()
    planes = _planes(net, 4)
    g = GpuNetwork(net, gpu, "f32", max_batch=4)
    try:
        out = g.evaluate(planes)
        want = out.policy.copy()
    finally:
        g.close()
    np.testing.assert_array_equal(out.policy, want)
    del out
    gc.collect()


@pytest.mark.parametrize("opts", [dict(side_stream=False, mha_variant="simple"), dict(side_stream=True)])
def test_side_stream_and_simple_attention_paths(gpu, opts):
    """Smolgen on the side stream (eager and captured), and the simple attention kernel (the fallback for
    head depths mha_t128 cannot serve) in a whole network, give the reference."""
    from lc0_rocm.gpu.nn.network import GpuNetwork
    from lc0_rocm.reference import Reference

    net = _net()
    g = GpuNetwork(net, gpu, "f32", max_batch=16, **opts)
    try:
        assert (g.ctx.side is not None) == opts["side_stream"]
        for n in (1, 8, 16):
            planes = _planes(net, n, offset=3 * n)
            ref = Reference(net, np.float64).forward(planes)
            for _ in range(3):  # eager + capture, then graph replays
                out = g.evaluate(planes)
                assert np.abs(out.policy - ref.policy).max() <= FP32_ATOL, (n, opts)
                assert np.abs(out.q - ref.q).max() <= FP32_ATOL, (n, opts)
                assert np.abs(out.mlh - ref.mlh).max() <= FP32_ATOL, (n, opts)
    finally:
        g.close()


def test_two_devices_split_a_batch(gpu):
    """gpus=0:1 (lc0's demux): each device computes its piece; the joined outputs are the reference's."""
    from lc0_rocm.backends.factory import create_backend
    from lc0_rocm.gpu.runtime.device import device_count
    from lc0_rocm.reference import Reference

    if device_count() < 2:
        pytest.skip("one GPU here")
    net = _net()
    planes = _planes(net, 21)
    ref = Reference(net, np.float64).forward(planes)
    b = create_backend("rocm", net, "gpus=0:1,max_batch=16")
    try:
        assert b.network.max_batch == 32 and len(b.network.runners) == 2
        for _ in range(3):
            out, seconds = b.evaluate_timed(planes)  # 11 + 10 positions; eager, then graphs
            assert seconds > 0
            assert np.abs(out.policy - ref.policy).max() <= FP32_ATOL
            assert np.abs(out.q - ref.q).max() <= FP32_ATOL
        big = _planes(net, 40)  # more than both devices take at once: two rounds
        want = Reference(net, np.float64).forward(big)
        assert np.abs(b.evaluate(big).policy - want.policy).max() <= FP32_ATOL
        h = [b.submit(_planes(net, n, offset=n)) for n in (1, 2, 3)]  # small batches alternate devices
        for n, hh in zip((1, 2, 3), h):
            assert b.collect(hh).policy.shape == (n, 1858)
    finally:
        b.close()
