"""The multi-GPU network's start (`gpu.nn.multi.MultiGpuNetwork`, `parallel_start`): the runners are
built side by side, one thread each, in device order; one that fails closes the others and its error is
raised. Host logic only: a stand-in runner (this machine has no GPU) that takes a while to build."""

from __future__ import annotations

import threading
import time

import pytest

from lc0_rocm.gpu.nn import multi


class _Runner:
    built: list = []
    closed: list = []

    def __init__(self, net, device, dtype, max_batch, **options):
        time.sleep(0.4)  # a GPU's start: weights converted and uploaded, kernels compiled
        if device == "bad":
            raise RuntimeError("device bad failed")
        self.device = device
        _Runner.built.append((device, threading.current_thread().name, time.monotonic()))

    def close(self):
        _Runner.closed.append(self.device)


@pytest.fixture
def runner(monkeypatch):
    _Runner.built, _Runner.closed = [], []
    monkeypatch.setattr(multi, "GpuNetwork", _Runner)
    return _Runner


def test_runners_start_side_by_side(runner):
    t = time.monotonic()
    m = multi.MultiGpuNetwork(None, ["d0", "d1", "d2"], max_batch=8)
    took = time.monotonic() - t
    assert [r.device for r in m.runners] == ["d0", "d1", "d2"] and m.max_batch == 24
    assert took < 1.0  # not 3 x 0.4 s
    assert len({name for _, name, _ in runner.built}) == 3


def test_one_after_the_other_without_parallel_start(runner):
    t = time.monotonic()
    m = multi.MultiGpuNetwork(None, ["d0", "d1"], max_batch=8, parallel_start=False)
    assert time.monotonic() - t >= 0.8 and [r.device for r in m.runners] == ["d0", "d1"]


def test_a_runner_that_fails_closes_the_others(runner):
    with pytest.raises(RuntimeError, match="device bad failed"):
        multi.MultiGpuNetwork(None, ["d0", "bad", "d2"], max_batch=8)
    assert sorted(runner.closed) == ["d0", "d2"]
