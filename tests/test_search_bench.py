"""tools/search_bench.py on the CPU: the replay is faithful (the search asks exactly for the recorded
batches, also from a saved recording) and the nps mode reports search and raw nps."""

from __future__ import annotations

import re

import numpy as np
import pytest

from lc0_rocm.backends.replay import RecordingBackend, ReplayBackend

from netpaths import WEIGHTS_DIR

SMALL = WEIGHTS_DIR / "se-classical-small.pb.gz"


@pytest.fixture(scope="module")
def bench():
    from tools import search_bench

    return search_bench


def _value(out: str, label: str) -> float:
    m = re.search(rf"^{re.escape(label)}\s+([\d.]+)", out, re.M)
    assert m, (label, out)
    return float(m.group(1))


def test_replay_asks_for_exactly_the_recorded_batches(bench, capsys, tmp_path):
    rec = tmp_path / "rec.npz"
    argv = ["-w", str(SMALL), "--replay", "--minibatch", "16", "--nodes", "150", "--positions", "2", "--repeat", "1"]
    assert bench.main(argv + ["--save", str(rec)]) == 0
    out = capsys.readouterr().out
    assert _value(out, "batches not in the recording") == 0
    assert _value(out, "playouts per run") == 300
    assert 0 < _value(out, "µs per playout (search only)") < 5000
    assert bench.main(argv + ["--load", str(rec)]) == 0  # the saved recording replays the same search
    assert _value(capsys.readouterr().out, "batches not in the recording") == 0


def test_replay_backend_returns_the_recorded_rows(bench):
    from lc0_rocm.backends.factory import create_backend
    from lc0_rocm.net.loader import load_net

    net = load_net(SMALL)
    rec = RecordingBackend(create_backend("cpu", net))
    planes = bench.bench_planes(net, 5)
    want = rec.evaluate(planes)
    replay = ReplayBackend(net, rec.batches, 64)
    got = replay.collect(replay.submit(planes))
    assert replay.is_async and replay.misses == 0
    np.testing.assert_array_equal(got.policy, want.policy)
    np.testing.assert_array_equal(got.q, want.q)
    other = bench.bench_planes(net, 7)  # never recorded: counted, still answered
    assert len(replay.evaluate(other)) == 7 and replay.misses == 1


def test_nps_mode_reports_search_and_raw(bench, capsys):
    argv = ["-w", str(SMALL), "--minibatch", "8", "--nodes", "60", "--positions", "1", "--repeat", "1", "--batches", "3"]
    assert bench.main(argv) == 0
    out = capsys.readouterr().out
    assert _value(out, "raw evaluate nps (serial)") > 0 and _value(out, "search nps") > 0
    assert re.search(r"\(\d+ batches, mean [\d.]+ positions\)", out)
