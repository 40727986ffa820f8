"""The `random` and `trivial` backends against lc0's own (`lc0 --backend=random|trivial`, no net).

Truth: lc0 0.32.1's VerboseMoveStats after `go nodes 1` prints every root move's prior (after the
softmax at PolicyTemperature) and the root's V, from its backend's outputs; ours must print the
same text, on positions with history, castling, en passant and a black side to move, so the hashed
inputs (random) and the piece-square sums (trivial) are lc0's bit for bit. A short search at
MinibatchSize 1 then gives the same visits: the whole search with no network, beside lc0's.
"""

from __future__ import annotations

import subprocess

import pytest

from lc0_rocm.api import open_backend
from lc0_rocm.encoding.position import parse_position
from lc0_rocm.search.leaf_evaluator import LeafEvaluator
from lc0_rocm.search.params import SearchParams
from lc0_rocm.search.search import Search
from lc0_rocm.search.limits import SearchLimits
from lc0_rocm.search.tree import NodeTree

from lc0_oracle import require_lc0
from netpaths import WEIGHTS_DIR
from uci_pipe import UciPipe

NET = WEIGHTS_DIR / "bt-small-smolgen-pedense.pb.gz"  # any net: these backends ignore its weights
CASES = [
    (None, [], 1),
    (None, ["e2e4", "c7c5", "g1f3", "d7d6", "d2d4"], 1),
    ("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1", ["a2a4"], 1),  # en passant
    ("8/5pk1/6p1/3R4/8/6P1/5PK1/2r5 b - - 4 40", [], 1),  # an endgame (trivial's king table)
    (None, ["e2e4", "e7e5"], 30),
]
OPTIONS = ("VerboseMoveStats value true", "Threads value 1", "MinibatchSize value 1", "MaxPrefetch value 0",
           "SmartPruningFactor value 0", "TaskWorkers value 0")


def _lc0(backend: str) -> list[list[str]]:
    lc0 = UciPipe([require_lc0(), f"--backend={backend}"], stderr=subprocess.DEVNULL)
    try:
        for opt in OPTIONS:
            lc0.send("setoption name " + opt)
        out = []
        for fen, moves, nodes in CASES:
            pos = ("startpos" if fen is None else f"fen {fen}") + (" moves " + " ".join(moves) if moves else "")
            lc0.send("ucinewgame")
            lc0.send(f"position {pos}")
            lines = lc0.answer(f"go nodes {nodes}")
            out.append([line[len("info string "):] for line in lines if line.startswith("info string")])
    finally:
        lc0.close()
    return out


@pytest.mark.oracle
@pytest.mark.parametrize("backend", ["random", "trivial"])
def test_move_table_is_lc0s(backend):
    theirs = _lc0(backend)
    ev = open_backend(NET, backend)
    assert ev.net.input_format == 1 and ev.net.has_wdl == (backend == "random") and not ev.net.has_moves_left
    nn = LeafEvaluator(ev.backend, ev.net.input_format)
    try:
        for (fen, moves, nodes), lines in zip(CASES, theirs):
            nn.cache.clear()
            h = parse_position(fen, moves)
            tree = NodeTree()
            tree.set_position(fen or "startpos", moves, h.last)
            s = Search(tree, h.board, h.first, nn, SearchParams(minibatch_size=1, pipeline=False,
                                                                smart_pruning_factor=0),
                       SearchLimits(nodes=nodes), has_wdl=ev.net.has_wdl, verbose_stats=True)
            s.run()
            assert s.error is None
            # U and S are computed in float32 by lc0, in float64 here: the last digit may differ
            cut = lambda rows: [x.split("(U:")[0] + x.split(")")[-2].split("(V:")[-1] for x in rows]  # noqa: E731
            assert cut(s.verbose_stats_lines()) == cut(lines), (fen, moves)
    finally:
        nn.close()
        ev.close()


def test_random_backend_options():
    from lc0_rocm.encoding.planes import encode_positions
    from lc0_rocm.errors import BackendError

    h = parse_position(None, ["e2e4"])
    a = open_backend(NET, "random").backend.evaluate(encode_positions([h], 1))
    b = open_backend(NET, "random", "seed=5").backend.evaluate(encode_positions([h], 1))
    assert a.q[0] != b.q[0] and abs(a.q[0]) <= 1 and 0 <= a.d[0] <= 1 - abs(a.q[0])
    u = open_backend(NET, "random", "uniform=true").backend.evaluate(encode_positions([h], 1))
    assert u.q[0] == 0 and u.d[0] == 0 and (u.policy == 1).all()
    ev = open_backend(NET, "random", "input_mode=3")
    assert ev.net.input_format == 3
    with pytest.raises(BackendError):
        open_backend(NET, "random", "input_mode=9")
