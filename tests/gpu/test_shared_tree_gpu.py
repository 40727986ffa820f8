"""Several search threads on one tree with the GPU backend (Threads > 1, batches submitted from each
thread at once): the finished tree is a search tree (tests/test_shared_tree.py's checks in numpy
float64) and `go nodes` is met exactly; one thread (lc0's parity setting) checked the same way."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ helpers

from test_shared_tree import _check_tree, _search  # noqa: E402

pytestmark = pytest.mark.gpu

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"


@pytest.mark.parametrize("threads", [1, 4])
def test_threads_on_the_gpu(gpu, threads):
    from lc0_rocm.backends.factory import create_backend
    from lc0_rocm.default_net import default_net_path
    from lc0_rocm.net.loader import load_net
    from lc0_rocm.search.leaf_evaluator import LeafEvaluator

    net = load_net(default_net_path())
    ev = LeafEvaluator(create_backend("rocm-fp16", net), net.input_format)
    try:
        for fen in (None, KIWIPETE):
            s = _search(ev, fen, nodes=3000, threads=threads, minibatch_size=64, has_wdl=net.has_wdl,
                        has_mlh=net.has_moves_left)
            s.run()
            assert s.error is None, s.error
            assert len(s._lanes) == (threads if threads > 1 else 0)
            assert s.root.n == 3000
            assert s.bestmove in s.board.legal_moves
            _check_tree(s)
    finally:
        ev.close()
        ev.backend.close()
